"""Fidelity of irscope's capture of kernel generators (issue #27): torch.compile (Inductor) and Helion.

For each script (tests/data/layers/inductor_mlp.py, helion_matmul.py, helion_two_configs.py):

  (a) plain     the script run plainly (`python SCRIPT`) with fresh TRITON_CACHE_DIR,
                TORCHINDUCTOR_CACHE_DIR and HELION_CACHE_DIR; every `*.ptx` Triton wrote in its cache
                is collected, named by the `*.json` metadata beside it (name, num_warps, num_stages).
                Needs a CUDA GPU.
  (b) stand-in  `python -m irscope capture SCRIPT --compile-only --target h200 -o OUT --json`: the
                stand-in GPU's capture, on the same machine (same torch and Triton); each dump's PTX.
                With --hide-gpu it runs under CUDA_VISIBLE_DEVICES= (a login node: a CUDA build of
                torch, no GPU visible).
  (c) gpu mode  `python -m irscope capture SCRIPT -o OUT2 --json`: the real-GPU capture; each dump's PTX.
                Needs a CUDA GPU.

Kernels are paired by (name, num_warps, num_stages). Constexprs are not in Triton's metadata json, so
when several kernels share a key (Inductor's autotune configs that differ only in XBLOCK, say) a plain
run's PTX matches if it equals ANY PTX of that key on the other side. PTX is compared after irscope's
own normalisation (compare/normalize.py: `.loc` / `.file` lines and debug sections dropped, registers
and labels renumbered, hashes and paths reduced). Printed: a table (script, kernel, config,
plain == stand-in?, plain == gpu mode?) and the counts; written: OUT/fidelity_layers.json.

    python benchmarks/fidelity_layers.py --out /tmp/fidelity            # on the GPU machine
    python benchmarks/fidelity_layers.py --dry-run --out /tmp/fidelity  # anywhere: (b) only, paired with itself

Without a CUDA GPU (torch.cuda.is_available() is False) (a) and (c) are skipped with a message and
only the stand-in capture runs. Needs only torch, Triton, irscope on PYTHONPATH and (for the Helion
scripts) helion; no network.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from irscope.compare.normalize import normalize  # noqa: E402

LAYERS = ROOT / "tests" / "data" / "layers"
SCRIPTS = [
    "inductor_mlp.py",
    "inductor_dropout_embedding.py",
    "helion_matmul.py",
    "helion_two_configs.py",
    "helion_full_like.py",
]


def _env(work: Path) -> dict[str, str]:
    """The environment of one run: fresh Triton, Inductor, Helion and irscope caches under `work`."""
    env = dict(os.environ)
    for var, sub in (
        ("TRITON_CACHE_DIR", "triton"),
        ("TORCHINDUCTOR_CACHE_DIR", "inductor"),
        ("HELION_CACHE_DIR", "helion"),
        ("IRSCOPE_CACHE_DIR", "irscope"),
    ):
        (work / sub).mkdir(parents=True, exist_ok=True)
        env[var] = str(work / sub)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def _run(cmd: list[str], env: dict[str, str], timeout: float, log: Path) -> tuple[int, float, str]:
    """(exit status, seconds, stdout); stdout and stderr also written to `log`."""
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, check=False)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = (
            124,
            (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""),
            f"timed out after {timeout:g} s\n"
            + ((e.stderr or b"").decode() if isinstance(e.stderr, bytes) else (e.stderr or "")),
        )
    log.write_text(f"$ {' '.join(cmd)}\n--- stdout\n{out}\n--- stderr\n{err}\n")
    return rc, time.monotonic() - t0, out


def _key(name: str, num_warps, num_stages) -> str:
    return f"{name} [num_warps={num_warps}, num_stages={num_stages}]"


def ptx_of_cache(cache: Path) -> dict[str, list[str]]:
    """key -> the PTX texts Triton wrote in a cache folder (each `X.ptx` beside its metadata `X.json`)."""
    out: dict[str, list[str]] = {}
    for ptx in sorted(cache.rglob("*.ptx")):
        meta_path = ptx.with_suffix(".json")
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, ValueError):
            meta = {}
        name = meta.get("name") or ptx.stem
        out.setdefault(_key(name, meta.get("num_warps"), meta.get("num_stages")), []).append(ptx.read_text())
    return out


def ptx_of_dump(doc: dict) -> dict[str, list[str]]:
    """key -> the PTX of each kernel an `irscope dump SCRIPT --json` wrote."""
    out: dict[str, list[str]] = {}
    for k in doc.get("kernels", []):
        path = (k.get("stages") or {}).get("ptx")
        if not path:
            continue
        opts = k.get("options") or {}
        out.setdefault(_key(k["name"], opts.get("num_warps"), opts.get("num_stages")), []).append(
            Path(path).read_text()
        )
    return out


def _as_triton_cache(doc: dict, cache: Path) -> dict[str, list[str]]:
    """--dry-run: each dump's PTX written as Triton's cache holds it (HASH/NAME.ptx beside HASH/NAME.json
    with name, num_warps, num_stages), then read back by ptx_of_cache, so the plain run's reader is exercised."""
    for i, k in enumerate(doc.get("kernels", [])):
        path = (k.get("stages") or {}).get("ptx")
        if not path:
            continue
        folder = cache / f"{i:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        opts = k.get("options") or {}
        (folder / f"{k['name']}.ptx").write_text(Path(path).read_text())
        (folder / f"{k['name']}.json").write_text(
            json.dumps({"name": k["name"], "num_warps": opts.get("num_warps"), "num_stages": opts.get("num_stages")})
        )
    return ptx_of_cache(cache)


def _norm(text: str) -> tuple[str, ...]:
    return tuple(normalize("ptx", text).lines)


# a device_assert's file name, as PTX holds it: `.global .align 1 .b8 assertFile_0[110] = {47, 116, ...};`
_ASSERT_FILE = re.compile(r"^(\s*\.global \.align 1 \.b8 assertFile_\d+)\[\d+\] = \{[\d, ]*\};$")


def _without_assert_files(lines: tuple[str, ...]) -> tuple[str, ...]:
    """The PTX with each assert's file-name bytes taken out. Inductor's kernels name the file it generated,
    a path in each run's own TORCHINDUCTOR_CACHE_DIR: two runs of one script differ there and nowhere else."""
    return tuple(_ASSERT_FILE.sub(r"\1[path]", ln) for ln in lines)


def _same(mine: tuple[str, ...], theirs: set[tuple[str, ...]]) -> bool | str:
    """True (an equal PTX), "path" (equal but for an assert's generated-file path), False."""
    if mine in theirs:
        return True
    masked = _without_assert_files(mine)
    return "path" if masked != mine and any(_without_assert_files(t) == masked for t in theirs) else False


def pair(reference: dict[str, list[str]], others: dict[str, dict[str, list[str]] | None]) -> list[dict]:
    """One row per reference PTX: for each other side, True (an equal PTX of that key), "path" (equal but for
    the path of the file Inductor generated, which an assert names), False (the key is there, no PTX equal),
    "missing" (no kernel of that key), None (that side did not run)."""
    rows = []
    normed = {
        side: ({k: {_norm(t) for t in v} for k, v in got.items()} if got is not None else None)
        for side, got in others.items()
    }
    for key in sorted(reference):
        for i, text in enumerate(reference[key]):
            mine = _norm(text)
            row = {
                "kernel": key.split(" [", 1)[0],
                "config": key.split(" [", 1)[1].rstrip("]"),
                "copy": i,
                "lines": len(mine),
            }
            for side, got in normed.items():
                row[side] = None if got is None else "missing" if key not in got else _same(mine, got[key])
            rows.append(row)
    return rows


def _dump(
    script: Path, work: Path, extra: list[str], timeout: float, log: Path, hide_gpu: bool = False
) -> tuple[dict | None, str]:
    out = work / "out"
    cmd = [sys.executable, "-m", "irscope", "capture", str(script), *extra, "-o", str(out), "--json"]
    # hide_gpu: the login node's case, a CUDA build of torch on a machine whose GPU is not visible
    env = dict(_env(work), CUDA_VISIBLE_DEVICES="") if hide_gpu else _env(work)
    rc, secs, stdout = _run(cmd, env, timeout, log)
    try:
        doc = json.loads(stdout)
    except ValueError:
        return None, f"exit {rc} after {secs:.0f} s, no JSON (see {log})"
    return (
        doc,
        f"exit {rc} after {secs:.0f} s, {len(doc.get('kernels', []))} kernels, mode {doc.get('capture', {}).get('mode')}",
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "irscope-fidelity-layers")
    ap.add_argument("--scripts", nargs="*", default=SCRIPTS, help="script names under tests/data/layers")
    ap.add_argument("--target", default="h200", help="the stand-in capture's --target (default h200)")
    ap.add_argument("--timeout", type=float, default=150, help="seconds per run (default 150)")
    ap.add_argument(
        "--hide-gpu",
        action="store_true",
        help="the stand-in capture (b) runs with CUDA_VISIBLE_DEVICES= (a CUDA torch with no visible GPU)",
    )
    ap.add_argument(
        "--dry-run",
        action="store_true",
        help="no GPU needed: only the stand-in capture, its PTX paired with itself (exercises the pairing)",
    )
    args = ap.parse_args(argv)
    out = args.out.resolve()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    gpu = False
    if not args.dry_run:
        try:
            import torch

            gpu = torch.cuda.is_available()
        except ImportError:
            gpu = False
        if not gpu:
            print(
                "no CUDA GPU here (torch.cuda.is_available() is False): the plain run (a) and the GPU-mode "
                "capture (c) are skipped; only the stand-in capture (b) runs. --dry-run pairs it with itself.",
                flush=True,
            )
    t_start = time.monotonic()
    report: dict = {
        "target": args.target,
        "gpu": gpu,
        "hide_gpu": args.hide_gpu,
        "dry_run": args.dry_run,
        "scripts": {},
        "rows": [],
    }
    for name in args.scripts:
        script = LAYERS / name
        stem = script.stem
        info: dict = {}
        # (b) the stand-in capture
        standin, info["standin"] = _dump(
            script,
            out / stem / "standin",
            ["--compile-only", "--target", args.target],
            args.timeout,
            out / stem / "standin.log",
            hide_gpu=args.hide_gpu,
        )
        standin_ptx = ptx_of_dump(standin) if standin else {}
        plain_ptx = gpu_ptx = None
        if gpu:
            # (a) the plain run
            work = out / stem / "plain"
            rc, secs, _ = _run([sys.executable, str(script)], _env(work), args.timeout, out / stem / "plain.log")
            plain_ptx = ptx_of_cache(work / "triton")
            info["plain"] = f"exit {rc} after {secs:.0f} s, {sum(map(len, plain_ptx.values()))} PTX in its Triton cache"
            if rc != 0:  # the plain run's own failure, readable from this log alone
                tail = (out / stem / "plain.log").read_text().splitlines()[-25:]
                print(f"{name}: the plain run exited {rc}; its log's last lines:", *tail, sep="\n    ", flush=True)
            # (c) the GPU-mode capture
            gdoc, info["gpu_mode"] = _dump(script, out / stem / "gpumode", [], args.timeout, out / stem / "gpumode.log")
            gpu_ptx = ptx_of_dump(gdoc) if gdoc else {}
        if args.dry_run:  # the stand-in's PTX laid out as Triton's cache would be, read back as a plain run's
            fake = _as_triton_cache(standin, out / stem / "fake-triton-cache") if standin else {}
            info["dry_run_cache"] = f"{sum(map(len, fake.values()))} PTX read back from a Triton-cache layout"
            rows = pair(fake, {"standin": standin_ptx, "gpu_mode": None})
        elif gpu:
            rows = pair(plain_ptx, {"standin": standin_ptx, "gpu_mode": gpu_ptx})
            # kernels the captures have that the plain run did not compile (the other direction)
            info["standin_only"] = sorted(set(standin_ptx) - set(plain_ptx))
            info["gpu_mode_only"] = sorted(set(gpu_ptx) - set(plain_ptx))
        else:
            rows = [dict(r, standin=None) for r in pair(standin_ptx, {"standin": standin_ptx, "gpu_mode": None})]
        for r in rows:
            r["script"] = name
        if gpu and plain_ptx is not None:
            _print_differences(name, plain_ptx, standin_ptx)
        report["scripts"][name] = info
        report["rows"] += rows
        for side, line in info.items():
            print(f"{name}: {side}: {line}", flush=True)
    report["seconds"] = round(time.monotonic() - t_start, 1)
    _table(report)
    (out / "fidelity_layers.json").write_text(json.dumps(report, indent=2, default=str))
    print(f"written: {out / 'fidelity_layers.json'}")
    ok = (True, "path")
    bad = [r for r in report["rows"] if r["standin"] not in ok or (gpu and r["gpu_mode"] not in ok)]
    return 1 if (bad and (gpu or args.dry_run)) or not report["rows"] else 0


def _print_differences(name: str, plain: dict[str, list[str]], standin: dict[str, list[str]], limit: int = 40) -> None:
    """For each kernel whose stand-in PTX equals none of the plain run's: the normalised diff against the
    plain run's closest copy (first `limit` lines), so a mismatch can be explained from the log alone."""
    for key, texts in sorted(standin.items()):
        refs = [_norm(t) for t in plain.get(key, [])]
        for text in texts:
            mine = _norm(text)
            if not refs or mine in refs:
                continue
            best = max(refs, key=lambda r: difflib.SequenceMatcher(None, r, mine, autojunk=False).ratio())
            diff = list(difflib.unified_diff(best, mine, "plain", "stand-in", n=1, lineterm=""))
            print(f"{name}: {key}: stand-in PTX differs from the plain run's ({len(diff)} diff lines):", flush=True)
            print("\n".join(diff[:limit]), flush=True)


def _cell(v) -> str:
    return {True: "yes", False: "NO", None: "-"}.get(v, str(v)) if not isinstance(v, str) else v


def _table(report: dict) -> None:
    ref = "stand-in (dry run)" if report["dry_run"] else "plain run" if report["gpu"] else "stand-in only"
    head = ("script", "kernel", "config", f"{ref} == stand-in", f"{ref} == gpu mode")
    rows = [
        (
            r["script"],
            r["kernel"] + (f" #{r['copy'] + 1}" if r["copy"] else ""),
            r["config"],
            _cell(r["standin"]),
            _cell(r["gpu_mode"]),
        )
        for r in report["rows"]
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    for line in (head, tuple("-" * w for w in widths), *rows):
        print("  ".join(str(x).ljust(w) for x, w in zip(line, widths)))
    n = len(report["rows"])
    for side in ("standin", "gpu_mode"):
        vals = [r[side] for r in report["rows"]]
        if all(v is None for v in vals):
            continue
        eq = sum(v is True for v in vals)
        miss = sum(v == "missing" for v in vals)
        path = sum(v == "path" for v in vals)
        report[f"{side}_equal"] = eq
        report[f"{side}_equal_but_path"] = path
        print(
            f"{side}: {eq}/{n} PTX equal, {path} equal but for the generated file's path in an assert, "
            f"{sum(v is False for v in vals)} differ, {miss} missing"
        )
    print(f"{n} kernels in {report['seconds']:g} s")


if __name__ == "__main__":
    sys.exit(main())
