"""The capture's views: its summary (rich), its --json document, and its one-line messages on stderr.

`irscope capture SCRIPT` shows a header (script, kernels, launches, target, mode), then per capture
its config (and whether the autotuner chose it), grid, tensors, spec file and what became of its
dump (not dumped, skipped, failed, identical to the launched kernel), followed by the dump's own
summary (views/dump.py). The --json document is views/dump.as_json's, with each kernel's capture
record and the run's. Everything here formats a ScriptRun (capture/records.py) it is given.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from irscope.capture import command as capture
from irscope.capture.records import Capture, ScriptRun
from irscope.capture.runner import stopped_from_outside, threads_note
from irscope.kernel.settings import jsonable
from irscope.standin.aoti import AotiBuildSkipped
from irscope.views import dump as dump_view
from irscope.views.console import console


def render(run: ScriptRun, stage: str | None, as_json: bool, debug: bool = False) -> None:
    """The capture's whole output: how the run went (with --debug, the script's own traceback under
    its failure line), then one stage's text (--stage), the --json document or the summary, then
    one line per failed dump."""
    print_run(run, debug)
    if stage and run.dumps_stopped and not capture.results(run):
        pass  # stopped before the first dump finished: the line below says so
    elif stage:
        dump_view.print_stage(capture.with_stage(capture.results(run), stage, run.target), stage)
    elif as_json:
        print_json(run, capture.results(run))
    else:
        summary(run)
    print_failures(run)
    if run.dumps_stopped:
        print_dumps_stopped(run)
    if (stage or as_json) and (line := long_line(run)) is not None:
        _err(f"irscope: {line}")


def print_dumps_stopped(run: ScriptRun) -> None:
    """The one stderr line that says a signal stopped the dumps, and how far they got."""
    specs = sum(1 for c in run.captures if c.spec_path)
    _err(
        f"irscope: stopped by {run.dumps_stopped}; the dumps finished are kept, and the spec files of all "
        f"{specs} capture{'s' if specs != 1 else ''} are written (irscope dump CAPTURE.json dumps one)"
    )


def print_run(run: ScriptRun, debug: bool = False) -> None:
    """How the script's run went, on stderr: that it stopped early (and what is kept; with --debug
    the script's traceback), threads left."""
    if run.stopped:
        print_stopped(run)
        if debug and run.stopped_traceback:
            _err(run.stopped_traceback)
    if run.threads_left:
        print_warning(threads_note(run.threads_left))
    for line in computed_notes(run):
        _err(f"irscope: note: {line}")


def computed_notes(run: ScriptRun) -> list[str]:
    """What the stand-in GPU did not compute, one line each (results a script checks may be wrong there)."""
    c = run.computed
    lines = list(run.standin_notes)
    if c is None:
        return lines
    if c.off:
        lines.append(f"results are not computed: {c.off}")
    for kernel, why in c.cannot_run.items():
        lines.append(f"{kernel}: Triton's interpreter cannot run it ({why}); its results are not computed")
    if c.over_launch_budget:
        shown = ", ".join(c.over_launch_budget[:3]) + (" ..." if len(c.over_launch_budget) > 3 else "")
        lines.append(
            f"{len(c.over_launch_budget)} launch{'es' if len(c.over_launch_budget) != 1 else ''} over the "
            f"per-launch budget of {c.launch_budget_s:g} s not computed: {shown} "
            f"(IRSCOPE_INTERPRET_LAUNCH_S)"
        )
    if c.not_computed_from is not None:
        lines.append(
            f"results are not computed from launch {c.not_computed_from} on: the interpreter's budget of "
            f"{c.total_budget_s:g} s for the run was spent (IRSCOPE_INTERPRET_TOTAL_S)"
        )
    return lines


def print_stopped(run: ScriptRun) -> None:
    """The one stderr line that says the script stopped early (and what is kept)."""
    if stopped_from_outside(run.stopped):  # SIGINT, SIGTERM, --time-limit: the count is in `stopped`
        _err(f"irscope: the script stopped: {run.stopped}; the captures up to there are kept")
        return
    uncomputed = run.computed is not None and bool(
        run.computed.off
        or run.computed.cannot_run
        or run.computed.over_launch_budget
        or run.computed.not_computed_from
        or run.standin_notes
    )
    why = (
        "on the stand-in GPU some results the script checks were not computed: see the notes"
        if run.mode == "compile-only" and uncomputed and not (run.stopped or "").startswith("called os._exit")
        else "the captures up to there are kept"
    )
    if f": {AotiBuildSkipped.__name__}: " in (run.stopped or ""):  # the stand-in's stop, by design (standin/aoti.py)
        why = "where the stand-in GPU stops AOTInductor, once every kernel it generated is captured"
    n = len(run.captures)
    _err(f"irscope: the script stopped: {run.stopped} ({why}); {n} kernel{'s' if n != 1 else ''} captured")


def print_warning(text: str) -> None:
    """An irscope warning on stderr, one line."""
    _err(f"irscope: warning: {text}")


def print_old_spelling() -> None:
    """The one stderr line `irscope dump SCRIPT` (no --signature/--arg/--const) says before it captures."""
    _err(
        "irscope: note: 'irscope dump SCRIPT' is now 'irscope capture SCRIPT'; the old form goes away in the "
        "next release"
    )


def print_failures(run: ScriptRun) -> None:
    """One stderr line per capture whose dump failed."""
    for cap in run.captures:
        if cap.failure:
            _err(f"irscope: error: capture {cap.index} ({cap.label}): {cap.failure}")


def print_json(run: ScriptRun, results: list) -> None:
    """The --json document on stdout."""
    _out(json_document(run, dump_view.as_json(results)))


def capture_dict(cap: Capture) -> dict[str, Any]:
    """One capture as the --json document has it (under each kernel, and in the run's list)."""
    return {
        "index": cap.index,
        "kernel": cap.name,
        "config": cap.config,
        "generated_by": cap.generated_by,
        "winner": cap.winner,
        "warmup": cap.warmup,
        "launches": cap.launches,
        "grid": cap.launch.get("grid"),
        "spec": str(cap.spec_path) if cap.spec_path else None,
        "signature": cap.spec.signature_text() if cap.spec is not None else None,
        "options": jsonable(cap.launch_options),
        "triton_cache_hit": cap.cache_hit,
        "matches_launch": cap.matches_launch,
        "notes": list(cap.notes),
        "not_replayable": cap.problem,
        "skipped": cap.skipped,
        "failed": cap.failure,
        "folder": str(cap.result.folder) if cap.result is not None else None,
        "dumped_in": cap.dumped_in,
        "dump_s": round(cap.dump_s, 2) if cap.dump_s is not None else None,
        "served": cap.result.served if cap.result is not None else None,
        "in_process_why": cap.in_process_why if cap.dumped_in == "in-process" else None,
    }


def json_document(run: ScriptRun, kernels_json: str) -> str:
    """views/dump.as_json's document with the capture records added (each kernel's, and the run's)."""
    doc = json.loads(kernels_json)
    by_folder = {str(c.result.folder): c for c in run.captures if c.result is not None}
    for k in doc["kernels"]:
        cap = by_folder.get(k["folder"])
        if cap is not None:
            k["capture"] = capture_dict(cap)
    doc["capture"] = {
        "script": str(run.script),
        "args": run.args,
        "mode": run.mode,
        "target": run.target.name,
        "target_reason": run.target_reason,
        "launches": run.launches,
        "stopped": run.stopped,
        "dumps_stopped": run.dumps_stopped,
        "threads_left": run.threads_left,
        "computed": run.computed.as_dict() if run.computed is not None else None,
        "standin_notes": list(run.standin_notes),
        "script_log": str(run.script_log) if run.script_log else None,
        "specs": [str(c.spec_path) for c in run.captures if c.spec_path],
        "timing": {k: (round(v, 2) if isinstance(v, float) else v) for k, v in run.timing.items()},
        "captures": [capture_dict(c) for c in run.captures],
    }
    return json.dumps(doc, indent=1, default=str)


def summary(run: ScriptRun) -> None:
    """The capture summary on stdout: the run, then each capture and its dump's summary."""
    from rich.markup import escape

    con = console()
    how = "ran on the local GPU" if run.mode == "gpu" else "compile-only: launches recorded"
    if run.mode != "gpu" and run.computed is not None:
        how += f"; {run.computed.computed} computed by Triton's interpreter on the CPU"
    n = len(run.captures)
    con.print(
        f"[bold]capture[/bold]  {escape(str(run.script))}{' ' + escape(' '.join(run.args)) if run.args else ''}"
        f"  ->  {n} kernel{'s' if n != 1 else ''} from {run.launches} launch"
        f"{'es' if run.launches != 1 else ''} on {run.target.name} ({how})"
    )
    if run.script_log:
        con.print(f"  script output in {escape(str(run.script_log))}")
    if (line := timing_line(run)) is not None:
        con.print(f"  {escape(line)}")
    if (line := long_line(run)) is not None:
        con.print(f"  {escape(line)}")
    con.print()
    said = dump_view.run_notes([c.result.manifest for c in run.captures if c.result is not None])
    dump_view.print_run_notes(said, sum(c.result is not None for c in run.captures), con)
    for cap in run.captures:
        _capture_lines(con, cap, n, tuple(said))


def timing_line(run: ScriptRun) -> str | None:
    """Where the time went, in one line, naming the part that dominates (replay.timing_split's)."""
    t = run.timing
    if "dominant" not in t:
        return None
    here = t["dumped_in_process"]
    why = sorted({c.in_process_why for c in run.captures if c.dumped_in == "in-process" and c.in_process_why})
    return (
        f"time: script {t['script_s']:.1f} s (interpreter {t['interpreter_s']:.1f} s, "
        f"{t['shape_only_ops']} shape-only torch ops), specs {t['specs_s']:.1f} s, dumps {t['dumps_s']:.1f} s "
        f"({t['dumped_in_workers']} in workers, {here} here{': ' + '; '.join(why[:2]) if why else ''})"
        f"; {t['dominant']} dominate{'s' if t['dominant'] != 'the dumps' else ''}"
    )


LONG_S = 30.0  # a capture that took longer says in one line where its time went


def long_line(run: ScriptRun) -> str | None:
    """For a capture that took over LONG_S seconds: its wall time, the script's biggest part, the dumps'
    compiled count and the stages that cost most, and the slowest dump (replay.timing_split's figures)."""
    t = run.timing
    if t.get("wall_s", 0.0) <= LONG_S or "dumps" not in t:
        return None
    parts = t["script_parts"]
    named = {"Inductor's compiles": parts["inductor_compiles_s"], "launch checks": parts["launch_checks_s"]}
    named["the interpreter"] = parts["interpreter_s"]
    inside = ", ".join(f"{k} {v:.0f} s" for k, v in sorted(named.items(), key=lambda kv: -kv[1]) if v >= 0.5)
    d = t["dumps"]
    stages = sorted(d["stages_s"].items(), key=lambda kv: -kv[1])[:3]
    work = ", ".join(f"{'nvdisasm (sass)' if k == 'sass' else k} {v:.0f} s" for k, v in stages)
    top = t["top_kernels"][0] if t["top_kernels"] else None
    sass = d["stages_s"].get("sass", 0.0)
    work_s = sum(d["stages_s"].values())
    hint = f"; --no-sass skips nvdisasm ({sass:.0f} s of the dumps' work)" if work_s and sass >= work_s / 5 else ""
    return (
        f"the capture took {t['wall_s']:.0f} s: script {t['script_s']:.0f} s"
        + (f" ({inside})" if inside else "")
        + f", dumps {t['dumps_s']:.0f} s ({d['compiled']} compiled"
        + (f" ({d['reused']} reusing the script's compile)" if d.get("reused") else "")
        + f", {d['from_cache']} from cache"
        + (f"; most compile work: {work}" if work else "")
        + ")"
        + (f"; slowest dump: {top['kernel']} {top['dump_s']:.1f} s" if top else "")
        + hint
        + " (--json: capture.timing)"
    )


def _capture_lines(con: Any, cap: Capture, n: int, said: tuple[str, ...] = ()) -> None:
    from rich.markup import escape

    bits = []
    if cap.config:
        won = {
            True: "  [green](chosen by the autotuner)[/green]",
            False: "  (not chosen)",
            None: "  [dim](no timing in compile-only mode)[/dim]",
        }[cap.winner]
        bits.append(f"config {escape(cap.config)}{won}")
    grid = cap.launch.get("grid")
    if grid:
        bits.append(f"grid {tuple(grid)}")
    elif cap.warmup:
        bits.append(".warmup")
    if cap.cache_hit:
        bits.append("from Triton's cache")
    con.print(f"[bold cyan]capture {cap.index}/{n}[/bold cyan]  {escape(cap.name)}  " + "  ·  ".join(bits))
    tensors = [
        f"{name} {tuple(a['shape'])} {a['dtype']}" + (f" align {a['align']}" if a.get("align", 16) < 16 else "")
        for name, a in (cap.launch.get("args") or {}).items()
        if isinstance(a, dict) and "shape" in a
    ]
    if tensors:
        con.print(f"  tensors    {escape(', '.join(tensors))}")
    if (made := made_by(cap.generated_by)) is not None:
        con.print(f"  made by    {escape(made)}")
    if cap.spec_path:
        con.print(f"  spec       {escape(str(cap.spec_path))}")
    if cap.problem:
        con.print(f"  [yellow]not dumped[/yellow] {escape(cap.problem)}")
    if cap.skipped:
        con.print(f"  [yellow]skipped[/yellow]    ({escape(cap.skipped)}; the autotuner drops this config)")
    if cap.failure:
        con.print(f"  [red]failed[/red]     {escape(cap.failure)}")
    if cap.matches_launch:
        same = [s for s, ok in cap.matches_launch.items() if ok]
        diff = [s for s, ok in cap.matches_launch.items() if not ok]
        con.print(
            f"  launched   {'identical ' + ', '.join(same) if same else ''}"
            f"{'; [red]differs[/red] in ' + ', '.join(diff) if diff else ''}"
        )
    if cap.result is not None:
        dump_view.summary([cap.result], out=con, said=said)
    else:
        con.print()


def made_by(gen: dict[str, Any] | None) -> str | None:
    """The kernel generator that made a capture, in one line: its layer, graph, ATen ops and (AOTInductor)
    the package the kernel went into."""
    if not isinstance(gen, dict) or not gen.get("layer"):
        return None
    bits = [str(gen["layer"])]
    graph = gen.get("graph") if isinstance(gen.get("graph"), dict) else None
    if graph and graph.get("kind"):
        bits.append(f"{graph['kind']} graph {graph.get('id')}")
    if gen.get("aten_ops"):
        bits.append(", ".join(str(op) for op in gen["aten_ops"]))
    aoti = gen.get("aoti") if isinstance(gen.get("aoti"), dict) else None
    if aoti and aoti.get("package"):
        bits.append(f"package {aoti['package']}{'' if aoti.get('package_written') else ' (not written)'}")
    return "  ·  ".join(bits)


def _out(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _err(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()
