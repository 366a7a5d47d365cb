"""Views: turn dump manifests into what a person reads (rich) or a script reads (JSON).

Everything here reads manifests (dump.DumpResult), never compiles.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from irscope.core.compiler import STAGE_DESCRIPTIONS
from irscope.core.hardware import TARGET_CHIP, for_target

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
        chip = for_target(m["target"]).family if m["target"] in TARGET_CHIP else ""
        how = "from cache" if r.cached else f"compiled in {m['times_ms'].get('total', 0) / 1e3:.2f} s"
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
            mark = f" [cyan]({_esc(sources.get(k, 'set'))})[/cyan]" if k in user else ""
            parts.append(f"{k}={v}{mark}")
    for k, v in user.items():
        if k not in SHOWN_OPTIONS:
            parts.append(f"{k}={v} [cyan]({_esc(sources.get(k, 'set'))})[/cyan]")
    for k, v in (m.get("env") or {}).items():
        parts.append(f"{k}={v} [cyan]({_esc(sources.get('env:' + k, 'env'))})[/cyan]")
    return "  ".join(parts)


def _esc(text: str) -> str:
    """Rich markup escaped: a source like 'recipe h100 [variant x]' is text, not a style tag."""
    from rich.markup import escape

    return escape(str(text))


PIN_STATUS_STYLE = {"ok": "green", "no effect": "yellow", "changed": "yellow", "overridden": "yellow",
                    "not applicable": "dim", "unchecked": "dim"}


def pin_lines(m: dict[str, Any]) -> list[str]:
    """The recipe applied and each pin with its check against the output (manifest["recipe"], ["pins"])."""
    from rich.markup import escape

    lines = []
    r = m.get("recipe")
    if r:
        lines.append(f"recipe     {escape(r['name'])}" + (f", variant {escape(r['variant'])}" if r.get("variant") else "")
                     + f"  [dim]({escape(r['path'])})[/dim]")
    width = max([10] + [len(p["status"]) for p in m.get("pins") or []])
    for i, p in enumerate(m.get("pins") or []):
        style = PIN_STATUS_STYLE.get(p["status"], "default")
        what = f"{p['name']} = {p['value']}" if p["kind"] == "layout" else f"{p['name']}={p['value']}"
        lines.append(f"{'pins' if i == 0 else '':<10} [{style}]{p['status']:<{width}}[/{style}] {p['kind']} "
                     f"{escape(what)}  [cyan]({escape(p['source'])})[/cyan]  [dim]{escape(p['detail'])}[/dim]")
    return lines


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
            "option_sources": m.get("option_sources") or {},
            "recipe": m.get("recipe"),
            "pins": m.get("pins") or [],
        })
    return json.dumps({"kernels": kernels}, indent=1)


# ------------------------------------------------------------------ diff (irscope diff)

DIFF_JSON_VERSION = 1
_STATUS_WORDS = {"equal": "equal", "changed": "changed", "only_a": "only in a", "only_b": "only in b"}


def _diff_value(name: str, v: Any) -> str:
    """One stat or input value, as a person reads it."""
    if v is None:
        return "-"
    if name == "ttgir.layouts":
        return f"{len(v)} layout{'s' if len(v) != 1 else ''}"
    if isinstance(v, dict):
        unit = "" if name.endswith("widths") else "b"
        return _widths(v, unit) if all(isinstance(n, int) for n in v.values()) else json.dumps(v)
    if name == "occupancy.occupancy" and isinstance(v, (int, float)):
        return f"{v * 100:.0f}%"
    if name.endswith("_bytes") and isinstance(v, int) and not isinstance(v, bool):
        return _fmt_bytes(v)
    if isinstance(v, (list, tuple)):
        text = ", ".join(str(x) for x in v)
    else:
        text = str(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _diff_change(name: str, a: Any, b: Any) -> str:
    num = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
    if not (num(a) and num(b)):
        return ""
    if name == "occupancy.occupancy":
        return f"{(b - a) * 100:+.0f} pts"
    d = b - a
    if name.endswith("_bytes") and isinstance(d, int):
        text = ("+" if d >= 0 else "-") + _fmt_bytes(abs(d))
    else:
        text = f"{d:+d}" if isinstance(d, int) else f"{d:+.3g}"
    if not a:
        return text
    pct = d / a * 100
    return text + (f" ({pct:+.0f}%)" if abs(pct) >= 1 else f" ({pct:+.1f}%)")


def _side_line(side) -> str:
    m = side.manifest
    how = "" if side.cached is None else ("  (from cache)" if side.cached else "  (compiled)")
    where = "" if side.label == str(side.folder) else f"  {side.folder}"
    return f"{side.label}  [dim]{m['target']}{where}{how}[/dim]"


def diff_summary(result, out=None) -> None:
    """Stats that changed, stages that differ, passes that behaved differently."""
    from rich.markup import escape
    from rich.table import Table

    con = out or console()
    a, b = result.a, result.b
    con.print(f"[bold]diff[/bold]  {a.manifest['kernel']}  {a.manifest.get('file', '')}")
    con.print(f"  a  {_side_line(a)}")
    con.print(f"  b  {_side_line(b)}")
    user = set(a.manifest.get("user_options") or {}) | set(b.manifest.get("user_options") or {})
    # options of one backend only (cross-target) are noise here; what the user set always shows
    shown = [d for d in result.inputs if (d.a is not None and d.b is not None) or d.name.split(".", 1)[-1] in user]
    if shown:
        t = Table(box=None, pad_edge=False, header_style="bold")
        for col in ("  input", "a", "b"):
            t.add_column(col)
        for d in shown:
            t.add_row(f"  {d.name}", escape(_diff_value(d.name, d.a)), escape(_diff_value(d.name, d.b)))
        con.print(t)
    if len(shown) < len(result.inputs):
        con.print(f"  [dim]{len(result.inputs) - len(shown)} options of one backend only (--json lists them)[/dim]")

    con.print()
    if result.stats.changed:
        both = [d for d in result.stats.deltas if d.a is not None and d.b is not None]
        one = len(result.stats.deltas) - len(both)
        con.print(f"[bold]stats[/bold]  {len(both)} changed" + (f", {one} on one side only (--json lists them)"
                                                                  if one else ""))
        t = Table(box=None, pad_edge=False, header_style="bold")
        for col, just in (("  stat", "left"), ("a", "right"), ("b", "right"), ("change", "right")):
            t.add_column(col, justify=just)
        for d in both:
            t.add_row(f"  {d.name}", escape(_diff_value(d.name, d.a)), escape(_diff_value(d.name, d.b)),
                      _diff_change(d.name, d.a, d.b))
        if both:
            con.print(t)
        for d in both:
            if d.name == "ttgir.layouts":  # which layouts went and came, by value (alias names aside)
                la, lb = d.a or [], d.b or []
                for lay in la:
                    if lay not in lb:
                        con.print(f"    [red]- {escape(lay)}[/red]")
                for lay in lb:
                    if lay not in la:
                        con.print(f"    [green]+ {escape(lay)}[/green]")
    else:
        con.print("[bold]stats[/bold]  no change")

    con.print()
    how = "after normalisation; --raw for the compiler's own text" if result.normalized else "raw text"
    differ = [s for s in result.stages if not s.equal]
    con.print(f"[bold]stages[/bold]  {len(differ)} of {len(result.stages)} differ [dim]({how})[/dim]")
    t = Table(box=None, pad_edge=False, header_style="bold")
    for col, just in (("  stage", "left"), ("", "left"), ("+lines", "right"), ("-lines", "right"),
                      ("lines a", "right"), ("lines b", "right")):
        t.add_column(col, justify=just)
    for s in result.stages:
        style = "" if s.equal else "yellow"
        word = _STATUS_WORDS[s.status]
        t.add_row(f"  {s.stage}", f"[{style}]{word}[/{style}]" if style else word,
                  str(s.added) if s.added else "", str(s.removed) if s.removed else "",
                  "-" if s.a is None else str(len(s.a.lines)), "-" if s.b is None else str(len(s.b.lines)))
    con.print(t)

    if result.passes is not None:
        _passes_summary(con, result.passes)

    con.print()
    if result.equal:
        scope = f" in {', '.join(result.selected)}" if result.selected else ""
        con.print(f"[green]no differences{scope}[/green]" + (" after normalisation" if result.normalized else ""))
    elif not result.selected and differ:
        con.print(f"[dim]see a stage's changes with --stage {differ[0].stage}[/dim]")


def _passes_summary(con, p, limit: int = 25) -> None:
    from rich.markup import escape
    from rich.table import Table

    con.print()
    con.print(f"[bold]passes[/bold]  a: {p.a_count} MLIR passes, b: {p.b_count}; "
              f"{len(p.deltas)} behaved differently")
    d = p.divergence
    if d.where == "frontend":
        con.print("  the IR differs already out of the frontend, before any pass")
    elif d.where == "pass":
        idx = " / ".join(f"#{i}" if i is not None else "-" for i in (d.a_index, d.b_index))
        con.print(f"  the IR first differs after pass [bold]{escape(d.name)}[/bold] ({d.stage}, {idx})")
    else:
        con.print("  the IR is the same after every pass (after normalisation)")
    if not p.deltas:
        return
    t = Table(box=None, pad_edge=False, header_style="bold")
    for col, just in (("  stage", "left"), ("pass", "left"), ("a", "right"), ("b", "right")):
        t.add_column(col, justify=just)
    rec = lambda r: "not run" if r is None else (f"+{r.added} -{r.removed}" if r.changed else "no change")
    for delta in p.deltas[:limit]:
        t.add_row(f"  {delta.stage}", escape(delta.name), rec(delta.a), rec(delta.b))
    con.print(t)
    if len(p.deltas) > limit:
        con.print(f"  [dim]... and {len(p.deltas) - limit} more (--json lists all)[/dim]")


def _diff_groups(opcodes, n: int = 3):
    """difflib.SequenceMatcher.get_grouped_opcodes, over precomputed opcodes."""
    codes = list(opcodes)
    if not codes or all(c[0] == "equal" for c in codes):
        return []
    if codes[0][0] == "equal":
        t, i1, i2, j1, j2 = codes[0]
        codes[0] = t, max(i1, i2 - n), i2, max(j1, j2 - n), j2
    if codes[-1][0] == "equal":
        t, i1, i2, j1, j2 = codes[-1]
        codes[-1] = t, i1, min(i2, i1 + n), j1, min(j2, j1 + n)
    nn = n + n
    groups, group = [], []
    for t, i1, i2, j1, j2 in codes:
        if t == "equal" and i2 - i1 > nn:
            group.append((t, i1, min(i2, i1 + n), j1, min(j2, j1 + n)))
            groups.append(group)
            group = []
            i1, j1 = max(i1, i2 - n), max(j1, j2 - n)
        group.append((t, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        groups.append(group)
    return groups


def _origin(norm, i: int) -> int:
    if norm is None or not norm.origin:
        return 0
    return norm.origin[min(i, len(norm.origin) - 1)]


def _stage_path(side, stage: str) -> str:
    f = side.manifest["stages"].get(stage)
    return str(side.folder / f) if f else f"{side.folder} (no {stage})"


def unified_lines(result, sd, context: int = 3) -> list[str]:
    """One stage's diff in unified format (the lines compared, i.e. normalised unless --raw)."""
    if sd.equal:
        return []
    a_lines = sd.a.lines if sd.a is not None else []
    b_lines = sd.b.lines if sd.b is not None else []
    out = [f"--- a/{sd.stage}  {_stage_path(result.a, sd.stage)}  ({result.a.label})",
           f"+++ b/{sd.stage}  {_stage_path(result.b, sd.stage)}  ({result.b.label})"]
    for group in _diff_groups(sd.opcodes, context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        ra = f"{i1 + 1},{i2 - i1}" if i2 > i1 else f"{i1},0"
        rb = f"{j1 + 1},{j2 - j1}" if j2 > j1 else f"{j1},0"
        where = f" file lines {_origin(sd.a, i1) or '-'} / {_origin(sd.b, j1) or '-'}"
        out.append(f"@@ -{ra} +{rb} @@{where}")
        for t, x1, x2, y1, y2 in group:
            if t == "equal":
                out.extend(" " + line for line in a_lines[x1:x2])
                continue
            if t in ("replace", "delete"):
                out.extend("-" + line for line in a_lines[x1:x2])
            if t in ("replace", "insert"):
                out.extend("+" + line for line in b_lines[y1:y2])
    return out


def print_unified(result, sd, context: int = 3) -> None:
    lines = unified_lines(result, sd, context)
    if not sys.stdout.isatty():
        if lines:
            sys.stdout.write("\n".join(lines) + "\n")
        return
    from rich.text import Text

    con = console()
    styles = {"-": "red", "+": "green", "@": "cyan"}
    text = Text()
    for k, line in enumerate(lines):
        style = "bold" if k < 2 else styles.get(line[:1], "")
        text.append(line + "\n", style=style)
    con.print(text, soft_wrap=True, end="")


def print_side_by_side(result, sd, context: int = 3) -> None:
    """Two columns, a left and b right; marks like sdiff: | changed, < only a, > only b."""
    from rich.table import Table
    from rich.text import Text

    if sd.equal:
        return
    con = console()
    a_lines = sd.a.lines if sd.a is not None else []
    b_lines = sd.b.lines if sd.b is not None else []
    t = Table(box=None, pad_edge=False, expand=True, show_header=True, header_style="bold")
    t.add_column("", justify="right", no_wrap=True, style="dim")
    t.add_column(f"a/{sd.stage}  ({result.a.label})", ratio=1, overflow="fold")
    t.add_column("", width=1, no_wrap=True)
    t.add_column("", justify="right", no_wrap=True, style="dim")
    t.add_column(f"b/{sd.stage}  ({result.b.label})", ratio=1, overflow="fold")
    for k, group in enumerate(_diff_groups(sd.opcodes, context)):
        if k:
            t.add_row("", Text("⋯", style="dim"), "", "", Text("⋯", style="dim"))
        for tag, x1, x2, y1, y2 in group:
            if tag == "equal":
                for x, y in zip(range(x1, x2), range(y1, y2)):
                    t.add_row(str(_origin(sd.a, x)), Text(a_lines[x]), " ", str(_origin(sd.b, y)), Text(b_lines[y]))
                continue
            left, right = list(range(x1, x2)), list(range(y1, y2))
            for r in range(max(len(left), len(right))):
                x = left[r] if r < len(left) else None
                y = right[r] if r < len(right) else None
                mark = "|" if x is not None and y is not None else ("<" if y is None else ">")
                t.add_row("" if x is None else str(_origin(sd.a, x)),
                          Text("" if x is None else a_lines[x], style="red"), Text(mark, style="yellow"),
                          "" if y is None else str(_origin(sd.b, y)),
                          Text("" if y is None else b_lines[y], style="green"))
    con.print(t)


def print_stage_diffs(result, side_by_side: bool | None = None, context: int = 3) -> None:
    """The chosen stages' diffs; side by side on a wide terminal unless told otherwise."""
    if side_by_side is None:
        import shutil

        side_by_side = sys.stdout.isatty() and shutil.get_terminal_size().columns >= 160
    for name in result.selected:
        sd = result.stage(name)
        sys.stdout.flush()
        if sd.equal:
            if not result.equal:  # else the summary said so already
                console().print(f"[dim]{name}: no differences[/dim]")
        elif side_by_side:
            print_side_by_side(result, sd, context)
        else:
            print_unified(result, sd, context)


def diff_json(result, context: int = 3) -> str:
    """The schema (irscope_diff 1; keys are stable, new keys may be added):

    {"irscope_diff": 1, "equal": bool, "normalized": bool, "kernel": str, "file": str,
     "a"/"b": {"label", "folder", "target", "signature", "triton_version", "user_options", "cached"},
     "inputs": {name: {"a", "b"}},           what went in differently (target, options.*, ...)
     "stats":  {name: {"a", "b"}},           stats that changed (dotted names into manifest stats)
     "stages": {stage: {"status", "added", "removed", "lines_a", "lines_b", "diff"}},
                                             diff: unified text for --stage stages, else null
     "passes": null | {"a_count", "b_count", "first_divergence": {"where", "stage", "pass", "a_index",
               "b_index"}, "differ": [{"stage", "pass", "a", "b"}]}}   a/b: {"index", "added", "removed"} | null
    """
    def side(s):
        m = s.manifest
        return {"label": s.label, "folder": str(s.folder), "target": m.get("target"),
                "signature": m.get("signature"), "triton_version": m.get("triton_version"),
                "user_options": m.get("user_options") or {}, "cached": s.cached}

    stages = {}
    for s in result.stages:
        stages[s.stage] = {
            "status": s.status, "added": s.added, "removed": s.removed,
            "lines_a": None if s.a is None else len(s.a.lines), "lines_b": None if s.b is None else len(s.b.lines),
            "diff": "\n".join(unified_lines(result, s, context)) + "\n"
            if s.stage in result.selected and not s.equal else ("" if s.stage in result.selected else None),
        }
    passes = None
    if result.passes is not None:
        p = result.passes
        rec = lambda r: None if r is None else {"index": r.index, "added": r.added, "removed": r.removed}
        d = p.divergence
        passes = {
            "a_count": p.a_count, "b_count": p.b_count,
            "first_divergence": {"where": d.where, "stage": d.stage or None, "pass": d.name or None,
                                 "a_index": d.a_index, "b_index": d.b_index},
            "differ": [{"stage": x.stage, "pass": x.name, "a": rec(x.a), "b": rec(x.b)} for x in p.deltas],
        }
    doc = {
        "irscope_diff": DIFF_JSON_VERSION,
        "equal": result.equal,
        "normalized": result.normalized,
        "kernel": result.a.manifest["kernel"],
        "file": result.a.manifest.get("file"),
        "a": side(result.a),
        "b": side(result.b),
        "inputs": {d.name: {"a": d.a, "b": d.b} for d in result.inputs},
        "stats": {d.name: {"a": d.a, "b": d.b} for d in result.stats.deltas},
        "stages": stages,
        "passes": passes,
    }
    return json.dumps(doc, indent=1, default=str)


# ---------------------------------------------------------------- bench


def bench_summary(result, out=None) -> None:
    from rich.table import Table

    con = out or console()
    con.print(f"[bold]{result.device}[/bold]  triton {result.triton_version}  {result.rounds} interleaved rounds "
              f"in {result.seconds:.1f} s (target: ratio CI within ±{result.precision_target * 100:.2g}%)"
              + (f"; {result.method}" if result.method else ""))
    if result.phases:
        p = result.phases
        con.print(f"[dim]timing process: torch and CUDA up in {p.get('start', 0):.1f} s (while irscope compiled), "
                  f"binaries loaded and preflighted in {p.get('preflight', 0):.1f} s, rounds {p.get('measure', 0):.1f} s"
                  "[/dim]")
    t = Table(box=None, header_style="bold")
    for col in ("variant", "median", "IQR", "95% CI", "vs baseline", "verdict", "throughput"):
        t.add_column(col, justify="right" if col in ("median", "IQR") else "left")
    for v in result.variants:
        if v.summary is None:
            t.add_row(v.name, "", "", "", "", f"[red]{v.status}[/red]: {v.reason}", "")
            continue
        s = v.summary
        vs = v.versus_baseline
        ratio = (f"{vs.delta_percent:+.2f}% [{(vs.ci_low - 1) * 100:+.2f}, {(vs.ci_high - 1) * 100:+.2f}]"
                 if vs else "baseline")
        verdict = vs.verdict if vs else ""
        if v.dropped:
            verdict = f"{verdict}; {v.dropped}" if verdict else v.dropped
        if v.status != "ok":
            verdict = f"[red]{v.status}[/red]: {v.reason}"
        thr = []
        if v.tflops is not None:
            thr.append(f"{v.tflops:.1f} TFLOP/s")
        if v.gbps is not None:
            thr.append(f"{v.gbps:.0f} GB/s")
        if v.peak_fraction is not None:
            thr.append(f"{v.peak_fraction * 100:.0f}% of peak")
        t.add_row(v.name, f"{s.median * 1e3:.1f} us", f"{s.iqr * 1e3:.1f} us",
                  f"[{s.ci_low * 1e3:.1f}, {s.ci_high * 1e3:.1f}] us", ratio, verdict, ", ".join(thr))
    con.print(t)


def bench_json(result) -> str:
    import dataclasses

    def conv(o):
        if dataclasses.is_dataclass(o):
            d = {k: conv(v) for k, v in dataclasses.asdict(o).items()}
            if hasattr(o, "delta_percent"):
                d["delta_percent"] = o.delta_percent
            return d
        if isinstance(o, list):
            return [conv(x) for x in o]
        if isinstance(o, dict):
            return {k: conv(v) for k, v in o.items()}
        return o

    doc = conv(result)
    for row, v in zip(doc["variants"], result.variants):
        row["summary"] = conv(v.summary) if v.summary else None
        row["versus_baseline"] = conv(v.versus_baseline) if v.versus_baseline else None
    return json.dumps(doc, indent=1, default=str)


# ---------------------------------------------------------------- sweep


class _NoProgress:
    def __enter__(self):
        return lambda cfg: None

    def __exit__(self, *exc):
        return False


def sweep_progress(total: int, enabled: bool = True):
    """A rich progress bar on stderr while configs compile (only on a terminal)."""
    if not enabled or not sys.stderr.isatty():
        return _NoProgress()
    from contextlib import contextmanager

    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    @contextmanager
    def bar():
        with Progress(TextColumn("compiling"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      TextColumn("{task.description}"), console=console(stderr=True), transient=True) as p:
            task = p.add_task("", total=total)
            yield lambda cfg: p.update(task, advance=1, description=f"{cfg.label}: {cfg.status}")

    return bar()


def sweep_table(configs, timed=None, out=None) -> None:
    from rich.table import Table

    from irscope.sweep.run import row

    con = out or console()
    times = {v.name: v for v in timed.variants} if timed else {}
    t = Table(box=None, header_style="bold")
    cols = ["#", "config", "status", "regs", "spills", "shared", "occupancy", "mma", "ld128"]
    winner = sweep_winner(timed) if timed else None
    if timed:
        cols += ["median", "vs winner"]
    for c in cols:
        t.add_column(c, justify="left" if c in ("config", "status") else "right")
    for cfg in configs:
        r = row(cfg)
        status = cfg.status if cfg.usable else f"[red]{cfg.status}[/red]: {cfg.reason[:80]}"
        if cfg.usable and cfg.spills:
            status = f"{cfg.status} [yellow](spills)[/yellow]"
        cells = [str(cfg.index), cfg.label, status,
                 *("" if r[k] is None else (f"{r[k] * 100:.0f}%" if k == "occupancy" else
                                            _fmt_bytes(r[k]) if k == "shared" else str(r[k]))
                   for k in ("registers", "spills", "shared", "occupancy", "mma", "ld128"))]
        if timed:
            v = times.get(cfg.label)
            if v and v.summary:
                vs = _versus(timed, winner[0], v.name) if winner and v.name != winner[0] else None
                cells += [f"{v.summary.median * 1e3:.1f} us" + (" [dim](dropped)[/dim]" if v.dropped else ""),
                          f"{vs.delta_percent:+.2f}%" if vs else "winner"]
            else:
                cells += ["", v.status if v else ""]
        t.add_row(*cells)
    con.print(t)
    done = sum(c.usable for c in configs)
    con.print(f"{done} of {len(configs)} configs compiled "
              f"({sum(c.status == 'cached' for c in configs)} from cache); "
              f"{sum(c.usable and c.spills for c in configs)} spill")
    if timed:
        dropped = sum(1 for v in timed.variants if v.dropped)
        con.print(f"timed {sum(1 for v in timed.variants if v.summary)} configs in {timed.rounds} interleaved rounds "
                  f"({timed.seconds:.1f} s); {dropped} dropped early as clearly slower than the leader"
                  + (f"; {timed.method}" if timed.method else ""))
        if winner:
            name, median, margin = winner
            con.print(f"[bold]winner[/bold]: {name} at {median * 1e3:.1f} us{margin}")


def _versus(timed, reference: str, name: str):
    """`name` against `reference` from the rounds both ran (a dropped config stopped early)."""
    from irscope.timing import statistics as timing

    return timing.compare_shared_rounds(timed.samples[reference], timed.samples[name])


def sweep_winner(timed):
    """(name, median ms, text on the margin over the runner-up) of the fastest correct variant timed to the end."""
    finalists = [v for v in timed.variants if v.status == "ok" and v.summary and not v.dropped]
    if not finalists:
        return None
    by_time = sorted(finalists, key=lambda v: v.summary.median)
    best = by_time[0]
    margin = ""
    if len(by_time) > 1:
        runner = by_time[1]  # paired ratio runner-up / best, from the same interleaved rounds
        c = _versus(timed, best.name, runner.name)
        margin = (f", {c.delta_percent:.2f}% ahead of {runner.name} (95% CI [{(c.ci_low - 1) * 100:+.2f}, "
                  f"{(c.ci_high - 1) * 100:+.2f}]%: {'significant' if c.ci_low > 1 else 'not significant'})")
    else:
        others = [v for v in timed.variants if v.dropped]
        if others:
            margin = " (every other config was dropped as clearly slower; see their rows)"
    return best.name, best.summary.median, margin


def sweep_json(configs, timed=None, compile_seconds: float | None = None, compile_end: float | None = None) -> str:
    from irscope.sweep.run import to_json

    doc = {"configs": to_json(configs)}
    if compile_seconds is not None:
        doc["compile_seconds"] = round(compile_seconds, 3)  # the parallel compile phase, wall clock
        doc["compile_end"] = compile_end                     # when it ended (epoch seconds)
    if timed:
        doc["timing"] = json.loads(bench_json(timed))
        w = sweep_winner(timed)
        doc["winner"] = {"config": w[0], "median_ms": w[1]} if w else None
    return json.dumps(doc, indent=1, default=str)
