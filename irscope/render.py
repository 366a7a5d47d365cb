"""Views: turn dump manifests into what a person reads (rich) or a script reads (JSON).

Everything here reads manifests (dump.DumpResult), never compiles.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from .compiler import STAGE_DESCRIPTIONS
from .targets import HARDWARE

SHOWN_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "waves_per_eu", "matrix_instr_nonkdim",
                 "kpack", "enable_fp_fusion")
LEXERS = {"ptx": "ptx", "llir": "llvm", "amdgcn": "gas", "sass": "nasm", "source": "python"}


def console(stderr: bool = False):
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    # piped output keeps whole lines (grep-able); a terminal gets its own width
    width = None if stream.isatty() else 200
    return Console(stderr=stderr, highlight=False, width=width)


def _fmt_bytes(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB"


def _size(path: Path, stage: str) -> str:
    try:
        if stage in ("cubin", "hsaco"):
            return _fmt_bytes(path.stat().st_size)
        with open(path, "rb") as f:
            return f"{sum(1 for _ in f)} lines"
    except OSError:
        return "?"


def summary(results: list, out=None) -> None:
    from rich.table import Table

    con = out or console()
    for r in results:
        m = r.manifest
        chip = HARDWARE.get(m["target"]).chip if m["target"] in HARDWARE else ""
        how = "from cache" if r.cached else f"compiled in {m['times_ms'].get('total', 0) / 1e3:.2f} s"
        con.print(f"[bold]{m['kernel']}[/bold]  {m['file']}  ->  {r.folder}  ({how})")
        con.print(f"  target     {m['target']}  {chip}  [dim]({m['target_reason']})[/dim]")
        con.print(f"  triton     {m['triton_version']}")
        con.print(f"  signature  {m['signature']}")
        con.print("  options    " + _options_line(m))
        for note in m.get("notes") or []:
            con.print(f"  [yellow]note[/yellow]       {note}")

        t = Table(box=None, pad_edge=False, show_header=True, header_style="bold")
        t.add_column("  stage")
        t.add_column("what")
        t.add_column("size", justify="right")
        t.add_column("time", justify="right")
        t.add_column("file")
        for stage, fname in m["stages"].items():
            ms = None if stage == "source" else m["times_ms"].get(stage)
            t.add_row(f"  {stage}", STAGE_DESCRIPTIONS.get(stage, ""), _size(r.folder / fname, stage),
                      "" if ms is None else f"{ms:.0f} ms", fname)
        con.print(t)
        for line in resource_lines(m):
            con.print("  " + line)
        if m.get("passes"):
            changed = sum(1 for p in m["passes"] if p["added"] or p["removed"])
            con.print(f"  passes     {len(m['passes'])} MLIR passes recorded, {changed} changed the IR "
                      f"(irscope passes {r.folder})")
        con.print()


def _options_line(m: dict[str, Any]) -> str:
    parts = []
    user = m.get("user_options") or {}
    sources = m.get("option_sources") or {}
    for k in SHOWN_OPTIONS:
        if k in m["options"]:
            v = m["options"][k]
            if v is None and k not in user:
                continue
            mark = f" [cyan]({sources.get(k, 'set')})[/cyan]" if k in user else ""
            parts.append(f"{k}={v}{mark}")
    for k, v in user.items():
        if k not in SHOWN_OPTIONS:
            parts.append(f"{k}={v} [cyan]({sources.get(k, 'set')})[/cyan]")
    for k, v in (m.get("env") or {}).items():
        parts.append(f"{k}={v} [cyan](env)[/cyan]")
    return "  ".join(parts)


def _widths(d: dict[str, int], unit: str = "b") -> str:
    return ", ".join(f"{n}x{w}{unit}" for w, n in d.items()) or "none"


def resource_lines(m: dict[str, Any]) -> list[str]:
    s = m["stats"]
    lines = []
    occ = s.get("occupancy") or {}
    if m["target"].startswith("cuda"):
        regs = s.get("registers", "?")
        lines.append(
            f"resources  {regs} registers, spills {s.get('spill_store_bytes', 0)} B stored / "
            f"{s.get('spill_load_bytes', 0)} B loaded, stack {s.get('stack_bytes', 0)} B, "
            f"shared {_fmt_bytes(s.get('shared_bytes', 0))}")
        if occ:
            lines.append(f"occupancy  {occ['occupancy'] * 100:.0f}% ({occ['blocks_per_sm']} blocks, "
                         f"{occ['warps_per_sm']} warps per SM; limited by {occ['limited_by']})")
        ptx = s.get("ptx") or {}
        sass = s.get("sass") or {}
        if ptx:
            lines.append(f"global     loads {_widths(ptx['global_load'])}; stores {_widths(ptx['global_store'])} "
                         f"[dim](bits per thread per PTX instruction)[/dim]")
            mma = ", ".join(f"{k} {ptx[k]}" for k in ("mma.sync", "wgmma", "tcgen05.mma") if ptx.get(k))
            lines.append(f"mix        mma: {mma or 'none'}; cp.async {ptx['cp.async']}, TMA {ptx['tma']}, "
                         f"ldmatrix {ptx['ldmatrix']}, bar.sync {ptx['bar.sync']}, mbarrier {ptx['mbarrier']}")
        if sass:
            c = sass["classes"]
            lines.append(f"sass       {sass['instructions']} instructions: mma {c['mma']}, LDG {c['global_load']}, "
                         f"STG {c['global_store']}, LDS {c['shared_load']}, STS {c['shared_store']}, "
                         f"LDGSTS {c['async_copy']}, TMA {c['tma']}, LDL/STL {c['local_load']}/{c['local_store']}, "
                         f"BAR {c['barrier']}")
    else:
        lines.append(
            f"resources  {s.get('vgpr_count', '?')} VGPRs ({s.get('arch_vgprs', '?')} arch + {s.get('acc_vgprs', 0)} acc), "
            f"{s.get('sgpr_count', '?')} SGPRs, spills {s.get('vgpr_spill_count', 0)} VGPR / "
            f"{s.get('sgpr_spill_count', 0)} SGPR, scratch {s.get('scratch_bytes', 0)} B, "
            f"LDS {_fmt_bytes(s.get('shared_bytes', 0))}")
        if occ:
            lines.append(f"occupancy  {occ['waves_per_simd']} waves per SIMD ({occ['occupancy'] * 100:.0f}%; "
                         f"limited by {occ['limited_by']})")
        a = s.get("amdgcn") or {}
        if a:
            lines.append(f"global     loads {_widths(a['global_load'])}; stores {_widths(a['global_store'])}")
            lines.append(f"mix        {a['instructions']} instructions: mfma {a['mfma']}, wmma {a['wmma']}, "
                         f"LDS read {a['lds_load']} / write {a['lds_store']}, async copy to LDS "
                         f"{a['async_copy_to_lds']}, s_barrier {a['barrier']}")
    tg = s.get("ttgir") or {}
    if tg:
        lines.append(f"ttgir      convert_layout {tg['convert_layout']}, local_alloc {tg['local_alloc']}, "
                     f"async_copy {tg['async_copy']}, tma {tg['tma_load']}, dot {tg['dot']}, loops {tg['loops']}")
        for lay in tg["layouts"]:
            lines.append(f"  layout   #{lay['alias']} = {lay['kind']}<{lay['params']}>")
    return lines


def print_stage(results: list, stage: str) -> None:
    """One stage to stdout: syntax-coloured on a terminal, plain bytes when piped."""
    many = len(results) > 1
    for r in results:
        text = (r.folder / r.manifest["stages"][stage]).read_text()
        if many:
            sys.stdout.write(f"// ===== {r.manifest['kernel']} ({r.manifest['target']}) =====\n")
        if sys.stdout.isatty():
            from rich.syntax import Syntax

            console().print(Syntax(text, LEXERS.get(stage, "llvm"), theme="ansi_dark", background_color="default"))
        else:
            sys.stdout.write(text)


def as_json(results: list) -> str:
    kernels = []
    for r in results:
        m = r.manifest
        kernels.append({
            "name": m["kernel"],
            "file": m["file"],
            "target": m["target"],
            "signature": m["signature"],
            "triton_version": m["triton_version"],
            "options": m["options"],
            "user_options": m["user_options"],
            "folder": str(r.folder),
            "cached": r.cached,
            "stages": {name: str(r.folder / f) for name, f in m["stages"].items()},
            "times_ms": m["times_ms"],
            "stats": m["stats"],
            "notes": m.get("notes") or [],
            "passes": m.get("passes"),
        })
    return json.dumps({"kernels": kernels}, indent=1)
