"""The real-world corpus on a CPU (issue #42 item 4): how many scripts nobody here wrote run to their end.

    python benchmarks/corpus.py [--only NAME]... [--list] [--time-limit S] [--target T] [--out DIR]

Runs each script of benchmarks/corpus/ (each names its origin, commit or version and what was changed
in its header) under

    irscope capture SCRIPT --compile-only --target cuda:90 --json --time-limit S --script-log LOG

one at a time, in a folder of its own (a tutorial that saves a plot writes it there), with a cold
irscope cache, plus the few flags a script needs from the typed table `FLAGS` below (its own
arguments, a folder on its PYTHONPATH, a longer time limit); nothing in irscope is special-cased.

For each script it records: its origin, whether it ran to its end (exit 0 and no `stopped`),
the kernels captured, the wall time, the capture's own split (`--json`'s capture.timing: the
script, the interpreter, the specs, the dumps, which dominates) and, for a stop, the capture's
one-line message and whose stop it is, read from that message (`whose`): irscope's (the stand-in
or the capture), the script's own (its own check, at a line of the script), a library's own
(raised in a named package), or the time limit. The table goes to stdout and, with the figures,
to OUT/corpus-cpu.json and OUT/corpus-cpu.md (OUT: benchmarks/results). `--only` runs and
writes only the named scripts (their results merged into the files already there).
matplotlib and pandas (Triton tutorials' plots) are tests/data/plotstubs where not installed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "benchmarks" / "corpus"
RESULTS = ROOT / "benchmarks" / "results"
STUBS = ROOT / "tests" / "data" / "plotstubs"
DUMP_GRACE_S = 900  # after the script's --time-limit, the dumps' time before the runner stops the capture


@dataclass(frozen=True)
class Flags:
    """What one script needs beyond the default command line (none of it is a hack in irscope)."""

    args: tuple[str, ...] = ()  # the script's own arguments, after --
    time_limit_s: float | None = None  # None: the run's --time-limit
    env: tuple[tuple[str, str], ...] = ()  # environment variables the script's own library reads
    why: str = ""  # why the script needs these


# Helion autotunes a kernel without a config at its first call; its own knob makes it take the default
# config instead (as on a GPU, for a quick check). The autotuner itself is exercised by helion_add.
HELION_DEFAULT_CONFIG = Flags(env=(("HELION_AUTOTUNE_EFFORT", "none"),), why="Helion's default config, no autotuning")


FLAGS: dict[str, Flags] = {
    **{
        f"helion_{n}": HELION_DEFAULT_CONFIG
        for n in ("attention", "embedding", "layer_norm", "low_mem_dropout", "matmul", "rms_norm", "softmax")
    },
    "jvp_flash_attention_test": Flags(
        args=("--bsz", "1", "--model-dim", "128", "--head-dim", "64", "--seq-lengths", "32")
        + ("--warmup-iters", "1", "--benchmark-iters", "1", "--dtype", "float32"),
        why="its own flags: one batch, two heads, sequence length 32, one timing iteration",
    ),
    "helion_add": Flags(time_limit_s=600, why="Helion's autotuner at its default effort: every candidate compiled"),
    "nanogpt_train_compile": Flags(time_limit_s=900, why="Inductor compiles forward and backward of 2 blocks"),
    "nanogpt_train_max_autotune": Flags(time_limit_s=900, why="max-autotune benchmarks every template"),
    "moe_block_compile": Flags(time_limit_s=600, why="Inductor compile of forward and backward"),
    "mnist_cnn_compile": Flags(time_limit_s=600, why="Inductor compile of forward and backward"),
}


@dataclass
class Result:
    script: str
    origin: str
    ran_to_end: bool
    exit_status: int
    kernels_captured: int
    launches: int
    wall_s: float
    split: dict[str, object] = field(default_factory=dict)
    stop: str | None = None
    whose: str | None = None
    notes: list[str] = field(default_factory=list)


def scripts() -> list[Path]:
    return sorted(CORPUS.glob("*.py"))


def origin_of(script: Path) -> str:
    """The header's `# Origin:` line, with the indented `#   ` lines that continue it."""
    lines = script.read_text().splitlines()[:30]
    for i, line in enumerate(lines):
        if line.startswith("# Origin:"):
            rest = []
            for ln in lines[i + 1 :]:
                if not ln.startswith("#   "):
                    break
                rest.append(ln[1:].strip())
            return " ".join([line.split(":", 1)[1].strip(), *rest])
    return "(no origin in header)"


def whose(stop: str, script: Path) -> str:
    """Whose stop it is, as the capture's one line names it (irscope/capture/runner.py's `stopped`:
    the script's line, the exception, and `(raised in X's own code: FILE:LINE)` when other code raised it)."""
    if stop.startswith("time limit"):
        return "time limit"
    if "where the stand-in GPU stops" in stop:
        return "the stand-in's documented limit"
    if "(raised in the kernel's own code as the interpreter ran it" in stop:
        return "the kernel's own access, as Triton's interpreter computed it"
    if "(raised in irscope's own code" in stop:
        return "irscope's"
    if "(raised in Inductor's generated code" in stop:
        return "Inductor's generated code (a check it compiled in)"
    named = re.search(r"\(raised in ([\w.-]+)'s own code", stop)
    if named:
        return f"library's own: {named.group(1)}"
    if "(raised in the script's own" in stop or stop.startswith(f"{script.name}:") or f"raised {script.name}:" in stop:
        return "script's own"
    return "unnamed (an irscope defect: the message does not say whose)"


def _whose_with_notes(stop: str, script: Path, notes: list[str]) -> str:
    """A check that failed on results Triton's interpreter could not compute is that limit's stop, which
    the notes name (`interpreter cannot run KERNEL: why`); else whose the line says."""
    cannot = [n for n in notes if n.startswith("interpreter cannot run")]
    if cannot and whose(stop, script) == "script's own":
        return f"Triton's interpreter (named in the notes: {cannot[0]})"
    return whose(stop, script)


def env_for(cache: str, flags: Flags) -> dict[str, str]:
    env = dict(os.environ, IRSCOPE_CACHE_DIR=cache, **dict(flags.env))
    extra = [str(ROOT)]
    if not (importlib.util.find_spec("matplotlib") and importlib.util.find_spec("pandas")):
        extra.append(str(STUBS))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (*extra, env.get("PYTHONPATH", "")) if p)
    return env


def run_one(script: Path, target: str, time_limit: float, keep: Path | None) -> Result:
    flags = FLAGS.get(script.stem, Flags())
    limit = flags.time_limit_s or time_limit
    with tempfile.TemporaryDirectory(prefix=f"corpus-{script.stem}-") as tmp:
        work = Path(tmp)
        log = (keep or work) / f"{script.stem}.log"
        cmd = [sys.executable, "-m", "irscope", "capture", str(script), "--compile-only", "--target", target]
        cmd += ["--json", "--time-limit", str(limit), "--script-log", str(log), "-o", str(work / "out")]
        if flags.args:
            cmd += ["--", *flags.args]
        start = time.perf_counter()
        try:
            proc = subprocess.run(
                cmd,
                cwd=work,
                env=env_for(str(work / "cache"), flags),
                capture_output=True,
                text=True,
                timeout=limit + DUMP_GRACE_S,
            )
        except subprocess.TimeoutExpired:
            wall = time.perf_counter() - start
            return Result(
                script.stem,
                origin_of(script),
                False,
                -1,
                0,
                0,
                round(wall, 1),
                {},
                f"not finished {limit + DUMP_GRACE_S:g} s after its start (the runner's hard stop: the script's "
                f"--time-limit plus {DUMP_GRACE_S} s for the dumps)",
                "the runner's hard stop",
            )
        wall = time.perf_counter() - start
    return _result(script, proc, wall)


def _result(script: Path, proc: subprocess.CompletedProcess[str], wall: float) -> Result:
    err = [ln for ln in proc.stderr.splitlines() if ln.startswith("irscope:")]
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError:
        stop = err[-1] if err else (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        stop = stop.removeprefix("irscope: error: ").removeprefix("irscope: ")
        return Result(
            script.stem, origin_of(script), False, proc.returncode, 0, 0, round(wall, 1), {}, stop, whose(stop, script)
        )
    cap = doc.get("capture", {})
    stop = cap.get("stopped") or cap.get("dumps_stopped")
    computed = cap.get("computed") or {}
    notes = [str(n) for n in cap.get("standin_notes", [])]
    notes += [f"interpreter cannot run {k}: {v}" for k, v in (computed.get("cannot_run") or {}).items()]
    return Result(
        script=script.stem,
        origin=origin_of(script),
        ran_to_end=proc.returncode == 0 and stop is None,
        exit_status=proc.returncode,
        kernels_captured=len(cap.get("specs", [])),
        launches=int(cap.get("launches", 0)),
        wall_s=round(wall, 1),
        split=dict(cap.get("timing") or {}),
        stop=stop,
        whose=_whose_with_notes(stop, script, notes) if stop else None,
        notes=notes,
    )


GOAL_S = 120.0  # issue #42 item 5: every script not dominated by its own CPU work captured within 2 minutes


def own_work_s(split: dict) -> float | None:
    """The CPU work the script costs on a GPU machine too: its own Python and torch (the script's time less
    the interpreter and irscope's launch checks) and Triton's JIT compiling its kernels (the dumps' stages up
    to the cubin, `dumps.jit_s`: serial in a GPU run's process, in irscope's workers here)."""
    if "script_own_s" not in split:
        return None
    checks = (split.get("script_parts") or {}).get("launch_checks_s", 0.0)
    jit = (split.get("dumps") or {}).get("jit_s", 0.0)
    return round(max(0.0, split["script_own_s"] - checks) + jit, 1)


def goal(r: Result) -> str:
    """Item 5's verdict: within 2 minutes, or dominated by its own CPU work (at least half the wall), or missed."""
    if r.wall_s <= GOAL_S:
        return "met"
    own = own_work_s(r.split)
    if own is None:
        return "not measured"
    return "its own work dominates" if own >= r.wall_s / 2 else "missed"


def table(results: list[Result]) -> str:
    rows = [
        "| script | ran to end | kernels | wall s | script s | dumps s | own CPU work s | 2-min goal | dominant | stop (whose) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        stop = f"{r.stop} ({r.whose})".replace("|", "\\|") if r.stop else ""
        s = r.split
        own = own_work_s(s)
        rows.append(
            f"| {r.script} | {'yes' if r.ran_to_end else 'no'} | {r.kernels_captured} | {r.wall_s} | "
            f"{s.get('script_s', '')} | {s.get('dumps_s', '')} | {'' if own is None else own} | {goal(r)} | "
            f"{s.get('dominant', '')} | {stop} |"
        )
    n, ok = len(results), sum(r.ran_to_end for r in results)
    rows.append("")
    rows.append(f"{ok} of {n} ran to their end ({100 * ok / n:.0f} %)." if n else "no scripts")
    verdicts = [goal(r) for r in results]
    rows.append(
        f"2-minute goal: {verdicts.count('met')} within it, {verdicts.count('its own work dominates')} dominated by "
        f"their own CPU work, {verdicts.count('missed')} missed"
        + (f", {verdicts.count('not measured')} not measured" if "not measured" in verdicts else "")
        + "."
    )
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", default=[], metavar="NAME", help="run only this script (repeatable)")
    ap.add_argument("--list", action="store_true", help="list the corpus and its origins, run nothing")
    ap.add_argument("--target", default="cuda:90")
    ap.add_argument("--time-limit", type=float, default=300.0, help="each script's --time-limit (s)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--logs", type=Path, default=None, help="keep each script's own output here")
    a = ap.parse_args()
    chosen = scripts()
    if a.only:
        unknown = sorted(set(a.only) - {p.stem for p in chosen})
        if unknown:
            print(f"corpus.py: no script named {', '.join(unknown)} in {CORPUS} (--list shows them)", file=sys.stderr)
            return 2
        chosen = [p for p in chosen if p.stem in a.only]
    if a.list:
        for p in chosen:
            f = FLAGS.get(p.stem)
            print(f"{p.stem}\t{origin_of(p)}" + (f"\t[{f.why}]" if f else ""))
        return 0
    if a.logs:
        a.logs.mkdir(parents=True, exist_ok=True)
    results = []
    for p in chosen:
        r = run_one(p, a.target, a.time_limit, a.logs)
        print(
            f"{r.script}: {'ran to end' if r.ran_to_end else 'stopped'}, {r.kernels_captured} kernels, {r.wall_s} s"
            + (f" -- {r.stop} ({r.whose})" if r.stop else ""),
            flush=True,
        )
        results.append(r)
    _write(results, a)
    print(table(results))
    return 0


def _write(results: list[Result], a: argparse.Namespace) -> None:
    a.out.mkdir(parents=True, exist_ok=True)
    path = a.out / "corpus-cpu.json"
    old = json.loads(path.read_text())["results"] if a.only and path.exists() else []
    merged = {r["script"]: r for r in old} | {r.script: asdict(r) for r in results}
    rows = [merged[k] for k in sorted(merged)]
    import torch
    import triton

    doc = {
        "command": "python benchmarks/corpus.py" + "".join(f" --only {n}" for n in a.only),
        "machine": "2-core VM",
        "python": platform.python_version(),
        "triton": triton.__version__,
        "torch": torch.__version__,
        "target": a.target,
        "ran_to_end": sum(r["ran_to_end"] for r in rows),
        "scripts": len(rows),
        "slowest": [
            {"script": r["script"], "wall_s": r["wall_s"], "own_work_s": own_work_s(r["split"]), "split": r["split"]}
            for r in sorted(rows, key=lambda r: -r["wall_s"])[:8]
        ],
        "results": rows,
    }
    path.write_text(json.dumps(doc, indent=1) + "\n")
    names = {f.name for f in fields(Result)}  # a row may carry more (a rerun's `first_pass`): the table's fields
    (a.out / "corpus-cpu.md").write_text(
        table([Result(**{k: v for k, v in r.items() if k in names}) for r in rows]) + "\n"
    )


if __name__ == "__main__":
    sys.exit(main())
