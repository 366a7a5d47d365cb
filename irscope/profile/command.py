"""`irscope profile`'s work: check every input, dump the kernel, run it once under Nsight Compute (or
Proton's PC sampling where ncu is missing), join the counters to the dump's lines, write profile.json.

Order matters: the launch language and the output folder are checked (bad input on any machine), then
the tool is chosen, then the GPU is asked for (no GPU: one line, exit 2), and only then anything is
compiled or run. What ncu says when it fails (no permission to read the counters: ERR_NVGPUCTRPERM)
is one line naming ncu and its reason.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from irscope import artifacts, jobs
from irscope.artifacts import passes, profiled, sourcemap
from irscope.compile import dump as dump_job
from irscope.errors import BadInput
from irscope.kernel import inputs
from irscope.kernel.hardware import by_device_name
from irscope.kernel.targets import local_gpu_present, local_gpu_target
from irscope.profile import child, join, ncu, proton, roofline
from irscope.records import Manifest, Profile, ProfileTotals, SourceMap
from irscope.timing.launch import Launch
from irscope.timing.plan import bench_variants
from irscope.timing.variant import Variant

TOOL_SECONDS = 900.0  # ncu's --set full replays the kernel ~40 times; a large GEMM takes a minute
TOOLS = ("auto", "ncu", "proton")  # what measures: ncu where it is on PATH, or Nsight Compute, or Proton
HISTORY_LINES = 8  # --passes: the hottest lines whose pass history is read (each reads every pass)


@dataclass
class Plan:
    variant: Variant
    launch: Launch
    out_dir: Path
    tool: str  # "ncu" or "proton"
    ncu: str | None  # ncu's path
    seed: int


def choose_tool(tool: str) -> tuple[str, str | None]:
    """('ncu', path) when ncu is on PATH (or asked for), else ('proton', None) where Triton has Proton."""
    path = shutil.which("ncu")
    if tool in ("auto", "ncu") and path:
        return "ncu", path
    if tool == "ncu":
        raise BadInput("--tool ncu: ncu (Nsight Compute) is not on PATH")
    if importlib.util.find_spec("triton.profiler") is None:
        raise BadInput(
            "profile needs Nsight Compute (ncu on PATH) or Triton's Proton (triton.profiler): neither is here"
        )
    return "proton", None


def require_gpu(target: Any) -> None:
    """A profile measures a launch: no GPU is one line (exit 2), never a simulation; and the kernel must be
    compiled for this GPU (a --target of another chip would profile nothing, or the wrong binary)."""
    if importlib.util.find_spec("torch") is None:
        raise BadInput(
            "profile needs a GPU and torch: torch is not installed here (pip install torch: the build for this GPU)"
        )
    if not local_gpu_present():
        raise BadInput(
            "profile needs a GPU: no CUDA device is visible on this machine (irscope profile DIR shows "
            "a profile.json made elsewhere)"
        )
    local = local_gpu_target()
    if local is None or target != local:
        raise BadInput(
            f"profile compiles for {target.name} but this machine's GPU is "
            f"{local.name if local else 'unknown'}; profiling needs the local target"
        )


def prepare(
    request: jobs.Request,
    variant_names: tuple[str, ...],
    launch_args: str | None,
    grid: str | None,
    out_dir: str,
    seed: int = 0,
    tool: str = "auto",
) -> Plan:
    """Every input checked, then the GPU asked for: nothing compiled yet."""
    if tool not in TOOLS:  # the CLI's click.Choice says it first; the Python API reaches here
        raise BadInput(f"tool={tool!r}: choose {', '.join(map(repr, TOOLS))}")
    timed, launch = bench_variants(request, variant_names, launch_args, grid)
    if len(timed) != 1:
        raise BadInput("profile runs one kernel once: give at most one --variant")
    inputs.check_output_dir(out_dir)
    name, path = choose_tool(tool)
    require_gpu(timed[0].settings.target)  # last: every input above is bad input on any machine
    return Plan(timed[0], launch, Path(out_dir), name, path, seed)


def run(plan: Plan, use_cache: bool = True, with_passes: bool = False) -> tuple[Path, Profile]:
    """Dump, profile, join, write profile.json into the dump folder: (folder, the document)."""
    v = plan.variant
    result = dump_job.dump(v.spec, v.settings, plan.out_dir, with_passes, use_cache)
    folder, manifest = result.folder, result.manifest
    with tempfile.TemporaryDirectory(prefix="irscope-profile-") as tmp:
        job = Path(tmp) / "job"
        child.write_job(job, v.spec, v.settings, plan.launch, plan.seed)
        launch_argv = [sys.executable, "-m", "irscope.profile.child", str(job)]
        if plan.tool == "ncu":
            assert plan.ncu is not None, "prepare() found ncu"
            doc = _with_ncu(plan.ncu, v.spec.kernel, launch_argv, Path(tmp), folder, manifest)
        else:
            doc = _with_proton(v.spec.kernel, launch_argv, Path(tmp), folder, manifest)
    if with_passes:
        _add_histories(doc, folder, manifest)
    profiled.write(folder, doc)
    written = profiled.read(folder)
    assert written is not None, "written just above"
    return folder, written


def rerender(folder: Path) -> Profile:
    """`irscope profile DIR`: the profile already there (no GPU needed)."""
    doc = profiled.read(folder)
    if doc is None:
        raise BadInput(f"{folder}: no {profiled.FILENAME} (profile a kernel file or capture spec to make one)")
    where = _past_a_float(doc)
    if where is not None:  # valid JSON that the view's figures (shares, microseconds) cannot hold
        raise BadInput(f"{folder}/{profiled.FILENAME}: {where} is an integer past any float; profile the kernel again")
    return doc


def _past_a_float(value: Any, where: str = "") -> str | None:
    """The dotted path of the first integer in `value` that no float holds (10**400), or None."""
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = ((f"[{i}]", v) for i, v in enumerate(value))
    else:
        too_big = isinstance(value, int) and not isinstance(value, bool) and abs(value) > sys.float_info.max
        return where if too_big else None
    for key, sub in items:
        found = _past_a_float(sub, f"{where}{key}" if str(key).startswith("[") else f"{where}.{key}".lstrip("."))
        if found is not None:
            return found
    return None


def _tool(argv: list[str], what: str) -> str:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=TOOL_SECONDS)
    except subprocess.TimeoutExpired:
        raise BadInput(f"{what}: no answer after {TOOL_SECONDS:.0f} s") from None
    except OSError as e:
        raise BadInput(f"{what}: could not run: {e.strerror or e}") from None
    out = (p.stdout or "") + (p.stderr or "")
    if p.returncode != 0 or "==ERROR==" in out or "No kernels were profiled" in out:
        raise BadInput(f"{what} failed: {ncu.failure(out, p.returncode)}")
    return p.stdout


def _with_ncu(path: str, kernel: str, launch_argv: list[str], tmp: Path, folder: Path, manifest: Manifest) -> Profile:
    report = str(tmp / "profile")
    argv = ncu.profile_argv(path, kernel, report, launch_argv)
    _tool(argv, "ncu")
    rep = report + ".ncu-rep"
    source = ncu.parse_source(_tool(ncu.export_argv(path, rep, "source"), "ncu --page source"))
    raw = ncu.parse_raw(_tool(ncu.export_argv(path, rep, "raw"), "ncu --page raw"))
    version = ncu.version(_tool([path, "--version"], "ncu --version"))
    listing = join.read_listing(str(artifacts.read_stage(folder, manifest, "sass")))
    joined = join.join_ncu(source, listing, sourcemap.load(folder, manifest), f"{folder}")
    return document(kernel, f"ncu {version}".strip(), raw, joined, shlex.join(argv[: -len(launch_argv)] + ["…"]))


def document(kernel: str, tool: str, raw: dict[str, Any], joined: dict[str, Any], command: str) -> Profile:
    """The profile document (records.Profile) from ncu's raw page and the join."""
    device = str(raw.get("device__attribute_display_name", ""))
    chip = by_device_name(device) if device else None
    totals = cast(ProfileTotals, dict(joined["totals"], **roofline.point(raw, chip)))
    return {
        "irscope_profile": profiled.VERSION,
        "kernel": kernel,
        "tool": tool,
        "device": device,
        "chip": chip.key if chip else "",
        "command": command,
        "bytes_from": "l2_sectors",
        "totals": totals,
        "lines": joined["lines"],
        "instructions": joined["instructions"],
        "unmapped": joined["unmapped"],
    }


def _with_proton(kernel: str, launch_argv: list[str], tmp: Path, folder: Path, manifest: Manifest) -> Profile:
    out = tmp / "proton"
    _tool([*launch_argv, "--proton", str(out)], "Proton PC sampling")
    hatchet = out.with_suffix(".hatchet")
    try:
        data = json.loads(hatchet.read_text())
    except (OSError, ValueError) as e:
        raise BadInput(f"Proton PC sampling wrote no readable {hatchet.name}: {e}") from None
    return proton_document(kernel, data, sourcemap.load(folder, manifest), "triton.profiler pcsampling")


def proton_document(kernel: str, data: Any, source_map: SourceMap, command: str) -> Profile:
    joined = join.join_lines(proton.per_line(data, kernel), source_map)
    if not joined["totals"]["samples"]:  # an empty profile would read as "nothing is hot": refuse it
        raise BadInput(
            f"Proton PC sampling recorded no samples of {kernel} (no line of it in the hatchet); "
            f"profile it with Nsight Compute (ncu on PATH) instead"
        )
    return {
        "irscope_profile": profiled.VERSION,
        "kernel": kernel,
        "tool": "proton pcsampling",
        "device": proton.device(data),
        "command": command,
        "bytes_from": "",
        "totals": joined["totals"],
        "lines": joined["lines"],
    }


def _add_histories(doc: Profile, folder: Path, manifest: Manifest) -> None:
    """--passes: for the hottest lines, the passes that added ops of that line ('Pass: +2 op')."""
    if manifest.get("passes") is None:
        return
    records, afters, first = passes.load(folder, manifest)
    kernel_file = sourcemap.kernel_file(folder, manifest)
    for line in doc["lines"][:HISTORY_LINES]:
        try:
            changes = passes.line_history(f"{line['file']}:{line['line']}", kernel_file, records, afters, first)
        except BadInput:
            continue
        line["passes"] = [
            f"{c.record.name}: " + ", ".join(f"+{n} {op}" for op, n in c.added.most_common(3))
            for c in changes
            if c.record is not None and c.added
        ]
