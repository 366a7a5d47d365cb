"""Does each explain fix pay off? Times every pitfall kernel before and after its fix on this machine's GPU.

For each case of examples/pitfalls/findings.toml with launch arguments (`args`, `grid`), the kernel is
dumped for the local GPU (no --target: the findings are re-derived for the chip that runs it), and each
finding with a fix `explain --try` can apply is timed with irscope's bench path:
  - a fix of compile options (num_warps): one `irscope bench ... --try KEY=VALUE` (same rounds, a verdict);
  - a fix of the specialization (--arg NAME=TYPE:16, a constexpr): two `irscope bench` runs on the same
    launch arguments, the signature before and after.
Prints a Markdown table (case, finding, fix, before, after, change, paid off?) for docs/benchmarks.md.

    PYTHONPATH=$PWD python benchmarks/explain_fix_timing.py [--only NAME] [--max-seconds 10] [--dry-run]

--dry-run prints the bench command lines without a GPU (what the lead runs is then visible first).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PITFALLS = ROOT / "examples" / "pitfalls"


def signature_with(manifest: dict, fix) -> str:
    """The dump's positional signature with the fix's --arg and --const overrides."""
    args = dict(manifest["args"])
    args.update(fix.args)
    args.update({k: str(v) for k, v in fix.consts.items()})
    return ", ".join(args.values())


def bench_cmd(case: dict, signature: str, sets: dict, tries: dict, max_seconds: float) -> list[str]:
    cmd = [sys.executable, "-m", "irscope", "bench", str(PITFALLS / case["file"]), "--signature", signature]
    for k, v in sets.items():
        cmd += ["--set", f"{k}={v}"]
    cmd += ["--args", case["args"], "--grid", case["grid"], "--max-seconds", str(max_seconds), "--json"]
    if tries:
        cmd += ["--try", ",".join(f"{k}={v}" for k, v in tries.items())]
    return cmd


def medians(cmd: list[str]) -> list[float | None]:
    """Each variant's median (ms) from bench --json, in order; None for a variant that did not run."""
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}")
    doc = json.loads(p.stdout)
    return [(v.get("summary") or {}).get("median") for v in doc["variants"]]


def plan(case: dict, out: Path) -> list[tuple[object, list[list[str]]]]:
    """Each tryable finding of the case on the local GPU, with the bench command lines that time its fix."""
    import irscope

    sets = dict(case.get("sets") or {})
    d = irscope.dump(str(PITFALLS / case["file"]), signature=case["signature"], set=sets or None, out=out)
    todo = []
    seen = set()
    for f in d.findings:
        key = (
            tuple(sorted(f.fix.args.items())),
            tuple(sorted(f.fix.consts.items())),
            tuple(sorted(f.fix.sets.items())),
        )
        if not f.fix.tryable or key in seen:  # one fix for two findings (a narrow load left out of the pipeline)
            continue
        seen.add(key)
        if f.fix.sets and not (f.fix.args or f.fix.consts):
            todo.append((f, [bench_cmd(case, case["signature"], sets, f.fix.sets, MAX_SECONDS)]))
        else:
            after_sets = {**sets, **f.fix.sets}
            todo.append(
                (
                    f,
                    [
                        bench_cmd(case, case["signature"], sets, {}, MAX_SECONDS),
                        bench_cmd(case, signature_with(d.manifest, f.fix), after_sets, {}, MAX_SECONDS),
                    ],
                )
            )
    return todo


MAX_SECONDS = 10.0


def main() -> int:
    global MAX_SECONDS
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", help="one case by name")
    ap.add_argument("--max-seconds", type=float, default=10.0, help="bench's time budget per run")
    ap.add_argument("--out", default="/tmp/irscope-explain-timing", help="dump folder")
    ap.add_argument("--dry-run", action="store_true", help="print the bench commands; time nothing")
    a = ap.parse_args()
    MAX_SECONDS = a.max_seconds
    cases = [c for c in tomllib.loads((PITFALLS / "findings.toml").read_text())["case"] if "args" in c]
    if a.only:
        cases = [c for c in cases if c["name"] == a.only]
    print("| case | finding | fix | before | after | change | paid off |")
    print("| --- | --- | --- | ---: | ---: | ---: | --- |")
    for case in cases:
        try:
            todo = plan(case, Path(a.out))
        except Exception as e:  # noqa: BLE001 - a case that cannot compile here is said, the others go on
            print(f"| {case['name']} | - | - | - | - | - | not compiled here: {e} |")
            continue
        if not todo:
            print(f"| {case['name']} | none on this GPU | - | - | - | - | - |")
        for f, cmds in todo:
            label = f"{f.kind}@{f.where.line} ({f.cause})"
            if a.dry_run:
                for cmd in cmds:
                    print(f"| {case['name']} | {label} | {f.fix.text[:60]} | `{' '.join(cmd[2:])}` | | | |")
                continue
            try:
                if len(cmds) == 1:
                    before, after = medians(cmds[0])[:2]
                else:
                    before, after = medians(cmds[0])[0], medians(cmds[1])[0]
            except Exception as e:  # noqa: BLE001
                print(f"| {case['name']} | {label} | {f.fix.text[:60]} | - | - | - | bench failed: {e} |")
                continue
            if before is None or after is None:
                print(
                    f"| {case['name']} | {label} | {f.fix.text[:60]} | {before} | {after} | - | a variant did not run |"
                )
                continue
            change = (after - before) / before * 100
            paid = "yes" if change < -2 else ("no (slower)" if change > 2 else "no (within 2%)")
            print(
                f"| {case['name']} | {label} | {f.fix.text[:60]} | {before * 1e3:.1f} us | {after * 1e3:.1f} us "
                f"| {change:+.1f}% | {paid} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
