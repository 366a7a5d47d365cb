"""The dump's views: the summary a person reads, one stage's text (--stage), the --json document.

Everything here formats dump results (compile.dump.DumpResult: a folder and its manifest) it is
given; nothing compiles. `irscope capture SCRIPT` (the capture) shows each kernel's dump with the
same summary; `irscope diff` and `irscope passes` have their own views.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from irscope import artifacts, explain, stages
from irscope.kernel.hardware import TARGET_CHIP, for_target
from irscope.records import Manifest
from irscope.views import explain as explain_view
from irscope.views.console import console, esc, fmt_bytes, widths

if TYPE_CHECKING:
    from rich.console import Console

    from irscope.compile.dump import DumpResult

SHOWN_OPTIONS = (
    "num_warps",
    "num_stages",
    "num_ctas",
    "maxnreg",
    "waves_per_eu",
    "matrix_instr_nonkdim",
    "kpack",
    "enable_fp_fusion",
)
LEXERS = stages.column("lexer")
PIN_STATUS_STYLE = {
    "ok": "green",
    "no effect": "yellow",
    "changed": "yellow",
    "overridden": "yellow",
    "not applicable": "dim",
    "unchecked": "dim",
}


def _size(path: Path, stage: str) -> str:
    try:
        if stage in stages.BINARY:
            return fmt_bytes(path.stat().st_size)
        with open(path, "rb") as f:
            return f"{sum(1 for _ in f)} lines"
    except OSError:
        return "?"


def _describe(stage: str) -> str:
    """A stage's row text; the source is the kernel's own, not the frontend's output."""
    return stages.description(stage)


def summary(results: list[DumpResult], out: Console | None = None) -> None:
    """Per kernel: where it went, target, options, pins, the stages table and the resources."""
    from rich.table import Table

    con = out or console()
    for r in results:
        m = r.manifest
        chip = for_target(m["target"]).family if m["target"] in TARGET_CHIP else ""
        how = "from cache" if r.cached else f"compiled in {(m.get('times_ms') or {}).get('total', 0) / 1e3:.2f} s"
        con.print(f"[bold]{m['kernel']}[/bold]  {m['file']}  ->  {r.folder}  ({how})")
        con.print(f"  target     {m['target']}  {chip}  [dim]({m['target_reason']})[/dim]")
        con.print(f"  triton     {m['triton_version']}")
        con.print(f"  signature  {m['signature']}")
        con.print("  options    " + _options_line(m))
        for line in pin_lines(m):
            con.print("  " + line)
        for note in m.get("notes") or []:
            con.print(f"  [yellow]note[/yellow]       {note}")

        t = Table(box=None, pad_edge=False, show_header=True, header_style="bold")
        t.add_column("  stage")
        t.add_column("what")
        t.add_column("size", justify="right")
        t.add_column("time", justify="right")
        t.add_column("file")
        for stage, fname in m["stages"].items():
            ms = None if stage == "source" else (m.get("times_ms") or {}).get(stage)
            t.add_row(
                f"  {stage}",
                _describe(stage),
                _size(r.folder / fname, stage),
                "" if ms is None else f"{ms:.0f} ms",
                fname,
            )
        con.print(t)
        for line in resource_lines(m):
            con.print("  " + line)
        if passes := m.get("passes") or []:  # None: dumped without --passes
            changed = sum(1 for p in passes if p.get("added") or p.get("removed"))
            con.print(
                f"  passes     {len(passes)} MLIR passes recorded, {changed} changed the IR (irscope passes {r.folder})"
            )
        for line in findings_block(r):
            con.print(line)
        con.print()


def _findings(r: DumpResult) -> list | None:
    """The dump's findings (irscope.explain), None when the engine failed on this folder (said, not hidden)."""
    try:
        return explain.findings(r.folder, r.manifest)
    except Exception:  # noqa: BLE001 - a finding engine's bug must not cost the dump its summary
        return None


def findings_block(r: DumpResult) -> list[str]:
    """The summary's short "findings" block (views/explain formats it)."""
    found = _findings(r)
    if found is None:
        return [f"  findings   could not be computed (irscope explain {r.folder} --debug shows why)"]
    return explain_view.block(found, r.folder)


def _options_line(m: Manifest) -> str:
    parts = []
    user = m.get("user_options") or {}
    sources = m.get("option_sources") or {}
    for k in SHOWN_OPTIONS:
        if k in m["options"]:
            v = m["options"][k]
            if v is None and k not in user:
                continue
            mark = f" [cyan]({esc(sources.get(k, 'set'))})[/cyan]" if k in user else ""
            parts.append(f"{k}={v}{mark}")
    for k, v in user.items():
        if k not in SHOWN_OPTIONS:
            parts.append(f"{k}={v} [cyan]({esc(sources.get(k, 'set'))})[/cyan]")
    for k, v in (m.get("env") or {}).items():
        parts.append(f"{k}={v} [cyan]({esc(sources.get('env:' + k, 'env'))})[/cyan]")
    return "  ".join(parts)


def pin_lines(m: Manifest) -> list[str]:
    """The recipe applied and each pin with its check against the output (manifest["recipe"], ["pins"])."""
    lines = []
    r = m.get("recipe")
    if r:
        lines.append(
            f"recipe     {esc(r['name'])}"
            + (f", variant {esc(r['variant'])}" if r.get("variant") else "")
            + f"  [dim]({esc(r['path'])})[/dim]"
        )
    width = max([10] + [len(p["status"]) for p in m.get("pins") or []])
    for i, p in enumerate(m.get("pins") or []):
        style = PIN_STATUS_STYLE.get(p["status"], "default")
        what = f"{p['name']} = {p['value']}" if p["kind"] == "layout" else f"{p['name']}={p['value']}"
        lines.append(
            f"{'pins' if i == 0 else '':<10} [{style}]{p['status']:<{width}}[/{style}] {p['kind']} "
            f"{esc(what)}  [cyan]({esc(p['source'])})[/cyan]  [dim]{esc(p['detail'])}[/dim]"
        )
    return lines


def resource_lines(m: Manifest) -> list[str]:
    """Registers, spills, occupancy, access widths and instruction mix, from manifest["stats"]."""
    s: Mapping[str, Any] = m.get("stats") or {}  # None or absent in an older folder's manifest
    lines = []
    occ = s.get("occupancy") or {}
    if m["target"].startswith("cuda"):
        regs = s.get("registers", "?")
        lines.append(
            f"resources  {regs} registers, spills {s.get('spill_store_bytes', 0)} B stored / "
            f"{s.get('spill_load_bytes', 0)} B loaded, stack {s.get('stack_bytes', 0)} B, "
            f"shared {fmt_bytes(s.get('shared_bytes', 0))}"
        )
        if occ:
            lines.append(
                f"occupancy  {occ['occupancy'] * 100:.0f}% ({occ['blocks_per_sm']} blocks, "
                f"{occ['warps_per_sm']} warps per SM; limited by {occ['limited_by']})"
            )
        ptx = s.get("ptx") or {}
        sass = s.get("sass") or {}
        if ptx:
            lines.append(
                f"global     loads {widths(ptx['global_load'])}; stores {widths(ptx['global_store'])} "
                f"[dim](bits per thread per PTX instruction)[/dim]"
            )
            mma = ", ".join(f"{k} {ptx[k]}" for k in ("mma.sync", "wgmma", "tcgen05.mma") if ptx.get(k))
            lines.append(
                f"mix        mma: {mma or 'none'}; cp.async {ptx['cp.async']}, TMA {ptx['tma']}, "
                f"ldmatrix {ptx['ldmatrix']}, bar.sync {ptx['bar.sync']}, mbarrier {ptx['mbarrier']}"
            )
        if sass:
            c = sass["classes"]
            lines.append(
                f"sass       {sass['instructions']} instructions: mma {c['mma']}, LDG {c['global_load']}, "
                f"STG {c['global_store']}, LDS {c['shared_load']}, STS {c['shared_store']}, "
                f"LDGSTS {c['async_copy']}, TMA {c['tma']}, LDL/STL {c['local_load']}/{c['local_store']}, "
                f"BAR {c['barrier']}"
            )
    else:
        lines.append(
            f"resources  {s.get('vgpr_count', '?')} VGPRs ({s.get('arch_vgprs', '?')} arch + {s.get('acc_vgprs', 0)} acc), "
            f"{s.get('sgpr_count', '?')} SGPRs, spills {s.get('vgpr_spill_count', 0)} VGPR / "
            f"{s.get('sgpr_spill_count', 0)} SGPR, scratch {s.get('scratch_bytes', 0)} B, "
            f"LDS {fmt_bytes(s.get('shared_bytes', 0))}"
        )
        if occ:
            lines.append(
                f"occupancy  {occ['waves_per_simd']} waves per SIMD ({occ['occupancy'] * 100:.0f}%; "
                f"limited by {occ['limited_by']})"
            )
        a = s.get("amdgcn") or {}
        if a:
            lines.append(f"global     loads {widths(a['global_load'])}; stores {widths(a['global_store'])}")
            lines.append(
                f"mix        {a['instructions']} instructions: mfma {a['mfma']}, wmma {a['wmma']}, "
                f"LDS read {a['lds_load']} / write {a['lds_store']}, async copy to LDS "
                f"{a['async_copy_to_lds']}, s_barrier {a['barrier']}"
            )
    lines += machinery_lines(s.get("machinery") or {})
    tg = s.get("ttgir") or {}
    if tg:
        lines.append(
            f"ttgir      convert_layout {tg['convert_layout']}, local_alloc {tg['local_alloc']}, "
            f"async_copy {tg['async_copy']}, tma {tg['tma_load']}, dot {tg['dot']}, loops {tg['loops']}"
        )
        for lay in tg["layouts"]:
            lines.append(f"  layout   #{lay['alias']} = {lay['kind']}<{lay['params']}>")
    return lines


OP_WORDS = {
    "tma_load": "TMA load",
    "tma_store": "TMA store",
    "mma": "MMA",
    "barrier_wait": "mbarrier wait",
    "barrier_arrive": "mbarrier arrive",
    "tmem": "TMEM",
    "shared": "shared",
    "global": "global",
}


def machinery_lines(mach: dict[str, Any]) -> list[str]:
    """Warp-specialized partitions and the Hopper/Blackwell machinery (stats["machinery"]), if any."""
    lines = []
    for name, p in (mach.get("partitions") or {}).items():
        regs = f"{p['registers']} regs ({p['registers_from']})" if p.get("registers") else "regs: compiler's choice"
        ops = ", ".join(f"{OP_WORDS.get(k, k)} {v}" for k, v in p["ops"].items()) or "no memory, MMA or barrier ops"
        warps = p.get("warps")
        lines.append(f"partition  {name:<8} {warps} warp{'s' if warps != 1 else ''}, {regs}: {ops}")
    if mach.get("partitions") and mach.get("total_warps"):
        lines.append(f"  warps    {mach['total_warps']} in all (partitions are allocated by warpgroups of 4)")
    if n := mach.get("warp_specialize_not_applied"):
        lines.append(
            f"partition  none: {n} loop(s) ask for warp_specialize but this Triton did not split them "
            f"(the attribute stays in TTGIR)"
        )
    parts = []
    if descs := mach.get("tma_descriptors"):
        boxes = ", ".join("x".join(map(str, d["block"])) + f"/{d['elem_bytes']}B" for d in descs)
        parts.append(f"{len(descs)} TMA descriptors (boxes {boxes})")
    if n := mach.get("device_descriptors"):
        parts.append(f"{n} device-side descriptors")
    for key, word in (
        ("mbarriers", "mbarriers"),
        ("wgmma", "wgmma"),
        ("tcgen05.mma", "tcgen05.mma"),
        ("tcgen05.mma.cta_pair", "2-CTA tcgen05.mma"),
        ("tmem_columns", "TMEM columns"),
        ("cluster_launch_control", "cluster launch control ops"),
    ):
        if mach.get(key):
            parts.append(f"{word} {mach[key]}")
    if cl := mach.get("cluster"):
        dims = "x".join(map(str, cl["cluster_dims"])) if cl.get("cluster_dims") else "?"
        parts.append(f"cluster {dims} (num_ctas={cl['num_ctas']}{', CTA pairs' if cl['two_ctas'] else ''})")
    if nreg := mach.get("setmaxnreg"):
        parts.append("setmaxnreg " + " ".join([f"+{n}" for n in nreg["inc"]] + [f"-{n}" for n in nreg["dec"]]))
    if parts:
        lines.append("machinery  " + "; ".join(parts))
    return lines


def print_stage(results: list[DumpResult], stage: str) -> None:
    """One stage to stdout: syntax-coloured on a terminal, plain bytes when piped."""
    many = len(results) > 1
    for r in results:
        text = artifacts.read_stage(r.folder, r.manifest, stage)
        if many:
            sys.stdout.write(f"// ===== {r.manifest['kernel']} ({r.manifest['target']}) =====\n")
        if isinstance(text, bytes):  # a binary stage (cubin, hsaco): its bytes as they are
            sys.stdout.flush()
            sys.stdout.buffer.write(text)
        elif sys.stdout.isatty():
            from rich.syntax import Syntax

            console().print(Syntax(text, LEXERS.get(stage, "llvm"), theme="ansi_dark", background_color="default"))
        else:
            sys.stdout.write(text)


def as_json(results: list[DumpResult]) -> str:
    """The --json document: {"kernels": [one entry per dump result]}."""
    kernels = []
    for r in results:
        m = r.manifest
        kernels.append(
            {
                "name": m["kernel"],
                "file": m["file"],
                "target": m["target"],
                "signature": m["signature"],
                "triton_version": m["triton_version"],
                "options": m["options"],
                "user_options": m["user_options"],
                "folder": str(r.folder),
                "cached": r.cached,
                # how a cached dump was found: "direct" (from the command line alone, Triton not imported),
                # "key" (by the full key, after loading the kernel); null when compiled now
                "cache": {"direct": "direct", "cache": "key"}.get(r.served),
                "stages": {name: str(r.folder / f) for name, f in m["stages"].items()},
                "times_ms": m["times_ms"],
                "stats": m["stats"],
                "notes": m.get("notes") or [],
                "passes": m.get("passes"),
                "option_sources": m.get("option_sources") or {},
                "recipe": m.get("recipe"),
                "pins": m.get("pins") or [],
                "findings": None if (found := _findings(r)) is None else [f.to_json() for f in found],
            }
        )
    return json.dumps({"kernels": kernels}, indent=1)


def warn_pins_without_effect(results: list[DumpResult]) -> None:
    """One stderr warning per pin that did nothing, was changed or was overridden (the summary shows them)."""
    import click  # only here: the direct cache's --json renders without loading click

    for r in results:
        for p in r.manifest.get("pins") or []:
            if p["status"] in ("no effect", "changed", "overridden"):
                click.echo(
                    f"irscope: warning: {r.manifest['kernel']}: {p['kind']} {p['name']}={p['value']} "
                    f"({p['source']}): {p['status']}: {p['detail']}",
                    err=True,
                )
