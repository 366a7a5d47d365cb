"""Capture and dump the TLX tutorials that ship in the fbtriton wheel, on a CPU, per target.

The tutorials are driven by the wheel's own correctness tests (triton/language/extra/tlx/tutorials/
testing/test_correctness.py): each test function runs under `irscope dump $(which pytest) --target T
--compile-only -- -x FILE::TEST` (-x: its first parametrization, since results a stand-in cannot compute
fail the test's own check), Hopper ones for cuda:90,
Blackwell ones for cuda:100, AMD ones for gfx942 and gfx950. The table says, per test, how many
kernels were captured and dumped and, for any that were not, irscope's one-line reason.

    .venvfb/bin/python benchmarks/capture_tlx_tutorials.py [--only hopper|blackwell|amd] [--timeout 600]

Needs fbtriton (and torchao, which the test file imports) in the running environment.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGETS = {"hopper": ["cuda:90"], "blackwell": ["cuda:100"], "amd": ["hip:gfx942", "hip:gfx950"]}


def family(test: str) -> str | None:
    if "hopper" in test:
        return "hopper"
    if "blackwell" in test or "multi_cta_layer_norm" in test:
        return "blackwell"
    if "amd" in test or "hstu" in test or "ikbo" in test:
        return "amd"
    return None


def test_functions(test_file: Path) -> list[str]:
    """file::test_name for each test function (read from the file: collecting it needs a GPU driver)."""
    import ast

    tree = ast.parse(test_file.read_text())
    return [
        f"{test_file}::{n.name}" for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")
    ]


def run_one(node: str, target: str, timeout: float) -> dict:
    pytest_bin = str(Path(sys.executable).with_name("pytest"))
    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        try:
            p = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "irscope",
                    "dump",
                    pytest_bin,
                    "--target",
                    target,
                    "--compile-only",
                    "--json",
                    "-o",
                    out,
                    "--script-log",
                    os.devnull,
                    "--",
                    "-q",
                    "-x",
                    "-p",
                    "no:cacheprovider",
                    node,
                ],
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return {"node": node, "target": target, "status": f"timed out after {timeout:g} s"}
        seconds = time.perf_counter() - started
        row = {"node": node, "target": target, "seconds": round(seconds, 1), "exit": p.returncode}
        try:
            doc = json.loads(p.stdout)
        except json.JSONDecodeError:
            row["status"] = (p.stderr.strip().splitlines() or ["no output"])[-1][:300]
            return row
        caps = (doc.get("capture") or {}).get("captures") or []
        row["captured"] = len(caps)
        row["dumped"] = len(doc.get("kernels") or [])
        problems = ("not_replayable", "failed", "skipped")
        row["not_dumped"] = sorted(
            {
                f"{c['kernel']}: {next(str(c[k]) for k in problems if c.get(k))}"[:240]
                for c in caps
                if any(c.get(k) for k in problems)
            }
        )
        row["status"] = "ok" if row["captured"] and not row["not_dumped"] else "partial" if row["captured"] else "none"
        return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=sorted(TARGETS))
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--json", type=Path, help="Also write the rows here.")
    args = ap.parse_args()
    import triton

    test_file = Path(triton.__file__).parent / "language/extra/tlx/tutorials/testing/test_correctness.py"
    rows = []
    for node in test_functions(test_file):
        fam = family(node.split("::")[1])
        if fam is None or (args.only and fam != args.only):
            continue
        for target in TARGETS[fam]:
            row = run_one(node, target, args.timeout)
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    print("\n| test | target | captured | dumped | seconds | not dumped |\n| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(
            f"| {r['node'].split('::')[1]} | {r['target']} | {r.get('captured', '-')} | {r.get('dumped', '-')} | "
            f"{r.get('seconds', '-')} | {'; '.join(r.get('not_dumped') or []) or r['status']} |"
        )


if __name__ == "__main__":
    main()
