"""Every pin, and every option a recipe or --set gave, checked against the compiled output.

A compile that was steered says whether it obeyed: one record per option, env knob, constexpr,
loop attribute and layout, kept in manifest["pins"] (records.PinCheck):

    {kind, name, value, source, status, detail}

status is "ok", "no effect" (set, but nothing in this kernel follows it), "changed" (the output
holds something else), "overridden" (a later pin of the same key, or the command line, wins),
"not applicable" (a recipe default that does not fit this kernel) or "unchecked". The details
cite what the output holds (TTIR attributes, TTGIR layouts and buffers, PTX, LLVM IR, AMDGCN).
"""

from __future__ import annotations

import os
import re
from typing import Any

from irscope import adapter
from irscope.artifacts import Artifacts
from irscope.kernel.settings import Settings
from irscope.kernel.spec import KernelSpec
from irscope.records import PinCheck, PinKind, PinStatus
from irscope.steer.loops import loop_matches
from irscope.steer.mlir import (
    find_loops,
    layout_aliases,
    module_int_attr,
    parse_layout,
    squash,
)
from irscope.steer.pins import LOOP_ATTRS, ConstPin, LayoutPin, LoopPin, py_text, sets_again


def check(
    spec: KernelSpec,
    settings: Settings,
    loop_done: list[dict],
    layout_done: list[dict],
    art: Artifacts,
    partition_done: list[dict] | None = None,
) -> list[PinCheck]:
    """Confirm each pin (and each option a recipe or --set gave) in the compiled output.

    `loop_done` and `layout_done` are what the rewrites did (loops.rewrite_loops, layouts.apply_layout_pins).
    """
    pins = settings.pins
    gluon = adapter.is_gluon(spec.fn)
    stages = art.stages
    ttir = text if isinstance(text := stages.get("ttir"), str) else ""
    ttgir = text if isinstance(text := stages.get("ttgir"), str) else ""
    records: list[PinCheck] = []
    for name, value in settings.options.items():
        records.append(_check_option(name, value, settings.sources.get(name, "--set"), art, ttir, ttgir, gluon))
    for name, value in settings.env.items():
        records.append(_check_env(name, value, settings.sources.get(f"env:{name}", "recipe"), art, ttgir))
    if pins:
        for name, c in pins.constexprs.items():
            records.append(_check_constexpr(name, c, pins.overridden, art, ttgir))
        for pin in pins.loops:
            records.extend(_check_loop(pin, loop_done, ttir, ttgir, gluon, spec.file))
        for pin in pins.layouts:
            records.append(_check_layout(pin, layout_done, ttgir))
        for pin in pins.partitions:
            records.append(_check_partition(pin, partition_done or [], art))
    return records


def _check_partition(pin, done: list[dict], art: Artifacts) -> PinCheck:
    """The worker's budget in the compiled output: the machinery facts (TTGIR) and setmaxnreg in PTX."""
    mach = (art.stats or {}).get("machinery") or {}
    got = ((mach.get("partitions") or {}).get(f"worker{pin.index}") or {}).get("registers")
    ptx = text if isinstance(text := art.stages.get("ptx"), str) else ""
    before = next((d["before"] for d in done if d["pin"] is pin), None)
    was = f" (was {before})" if before else ""
    # the warpgroup a worker shares with others gets the largest budget among them: setmaxnreg inc or dec
    in_ptx = re.search(rf"setmaxnreg\.(?:inc|dec)\.sync\.aligned\.u32\s+{pin.registers};", ptx) if ptx else None
    if got == pin.registers and (not ptx or in_ptx):
        where = f"; {in_ptx.group(0).split('.sync')[0]} {pin.registers} in PTX" if in_ptx else ""
        return _rec(
            "partition",
            f"worker{pin.index}",
            pin.registers,
            pin.source,
            "ok",
            f"requestedRegisters {pin.registers} in TTGIR{was}{where}",
        )
    detail = (
        f"worker{pin.index} has {got} registers in TTGIR, not {pin.registers}"
        if got != pin.registers
        else f"requestedRegisters {pin.registers} in TTGIR but no setmaxnreg {pin.registers} in PTX"
    )
    return _rec("partition", f"worker{pin.index}", pin.registers, pin.source, "changed", detail)


def _rec(kind: PinKind, name: str, value: Any, source: str, status: PinStatus, detail: str) -> PinCheck:
    return {"kind": kind, "name": name, "value": value, "source": source, "status": status, "detail": detail}


def _check_option(name, value, source, art, ttir, ttgir, gluon) -> PinCheck:
    eff = art.options.get(name, value)
    shown = f"{name}={value}"
    if name in ("num_warps", "num_ctas"):
        attr = "ttg.num-warps" if name == "num_warps" else "ttg.num-ctas"
        got = module_int_attr(ttgir, attr)
        if got == value:
            return _rec("option", name, value, source, "ok", f"{attr} = {got} in TTGIR")
        return _rec("option", name, value, source, "changed", f"TTGIR has {attr} = {got}")
    if eff != value and not (isinstance(value, (list, tuple)) and list(value) == list(eff or [])):
        return _rec("option", name, value, source, "changed", f"Triton compiled with {name}={eff}")
    if name == "num_stages":
        if gluon:
            return _rec(
                "option",
                name,
                value,
                source,
                "no effect",
                "Gluon kernels skip the pipeliner; num_stages changes nothing",
            )
        loops = find_loops(ttir) if ttir else []
        if not loops:
            return _rec("option", name, value, source, "no effect", "the kernel has no scf.for loop to pipeline")
        own = [lp for lp in loops if "tt.num_stages" in lp.attrs]
        if len(own) == len(loops):
            return _rec(
                "option",
                name,
                value,
                source,
                "no effect",
                "every loop sets its own tt.num_stages (tl.range or a loop pin), which wins",
            )
        return _rec(
            "option",
            name,
            value,
            source,
            "ok",
            f"num_stages={eff}; {len(loops) - len(own)} of {len(loops)} loops follow it",
        )
    if name == "maxnreg" and value is not None and "ptx" in art.stages:
        m = re.search(r"^\s*\.maxnreg\s+(\d+)", art.stages["ptx"], re.M)
        if m and int(m.group(1)) == value:
            return _rec(
                "option",
                name,
                value,
                source,
                "ok",
                f".maxnreg {value} in PTX; ptxas used {art.stats.get('registers', '?')}",
            )
        return _rec("option", name, value, source, "changed", "no matching .maxnreg in PTX")
    if name == "waves_per_eu" and value and "llir" in art.stages:
        if f'"amdgpu-waves-per-eu"="{value}' in art.stages["llir"]:
            return _rec("option", name, value, source, "ok", f'"amdgpu-waves-per-eu"="{value}" in LLVM IR')
        return _rec("option", name, value, source, "changed", "no amdgpu-waves-per-eu attribute in LLVM IR")
    if name == "matrix_instr_nonkdim" and value:
        shapes = re.findall(r"amd_mfma<\{[^}]*instrShape = \[(\d+), (\d+)", ttgir)
        if not shapes:
            return _rec("option", name, value, source, "no effect", "no MFMA layout in TTGIR (no tt.dot)")
        ok = all(int(a) == value for a, _ in shapes)
        return _rec(
            "option",
            name,
            value,
            source,
            "ok" if ok else "changed",
            f"MFMA instrShape {', '.join(f'{a}x{b}' for a, b in shapes)} in TTGIR",
        )
    return _rec("option", name, value, source, "ok", f"Triton compiled with {shown}")


def _check_env(name, value, source, art, ttgir) -> PinCheck:
    on = str(value).lower() in ("1", "true", "on", "yes")
    if name == "TRITON_HIP_USE_ASYNC_COPY":
        n = len(re.findall(r"ttg\.async_copy_global_to_local|amdg(?:pu)?\.buffer_load_to_local", ttgir))
        if on:
            return _rec(
                "env",
                name,
                value,
                source,
                "ok" if n else "no effect",
                f"{n} async copies to LDS in TTGIR" if n else "no async copy to LDS in TTGIR",
            )
        return _rec("env", name, value, source, "ok" if not n else "changed", f"{n} async copies to LDS in TTGIR")
    if name == "TRITON_HIP_USE_BLOCK_PINGPONG" and "amdgcn" in art.stages:
        n = len(re.findall(r"^\s*s_setprio\b", art.stages["amdgcn"], re.M))
        if on:
            return _rec(
                "env",
                name,
                value,
                source,
                "ok" if n else "no effect",
                f"{n} s_setprio (ping-pong priority switches) in AMDGCN"
                if n
                else "no s_setprio in AMDGCN: the ping-pong pass found no loop it applies to",
            )
        return _rec("env", name, value, source, "ok", f"{n} s_setprio in AMDGCN")
    return _rec("env", name, value, source, "unchecked", "set for the compile; nothing in the output shows it")


def _check_constexpr(name, c: ConstPin, overridden: dict[str, str], art, ttgir) -> PinCheck:
    if name in overridden:
        return _rec(
            "constexpr", name, c.text, c.source, "overridden", f"the command line gives {overridden[name]}, which wins"
        )
    got = art.args.get(name)
    if got is None:
        return _rec("constexpr", name, c.text, c.source, "changed", f"{name} is not in the specialization")
    m = re.match(
        r"gl\.(?:\w+\.)*BlockedLayout\(size_per_thread=(\[[^\]]*\]), threads_per_warp=(\[[^\]]*\]), "
        r"warps_per_cta=(\[[^\]]*\]), order=(\[[^\]]*\])",
        got,
    )
    if m:
        want = (
            f"sizePerThread = {m.group(1)}, threadsPerWarp = {m.group(2)}, warpsPerCTA = {m.group(3)}, "
            f"order = {m.group(4)}"
        )
        hit = [a for a, v in layout_aliases(ttgir).items() if squash(want) in squash(v)]
        if hit:
            return _rec("constexpr", name, got, c.source, "ok", f"TTGIR has it as #{hit[0]}")
        return _rec("constexpr", name, got, c.source, "changed", "the TTGIR holds no such blocked layout")
    if got.startswith("gl."):
        return _rec("constexpr", name, got, c.source, "unchecked", "bound as the constexpr (layout not matched)")
    return _rec("constexpr", name, got, c.source, "ok", "bound in the specialization")


def _check_loop(
    pin: LoopPin, loop_done: list[dict], ttir: str, ttgir: str, gluon: bool, kernel_file: str
) -> list[PinCheck]:
    out: list[PinCheck] = []
    i, done = next(((i, d) for i, d in enumerate(loop_done) if d["pin"] is pin), (-1, None))
    for name, value in pin.attrs:
        label = f"{pin.where}:{name}"
        if gluon:
            out.append(
                _rec(
                    "loop",
                    label,
                    value,
                    pin.source,
                    "no effect",
                    "Gluon kernels have no TTIR and skip the pipeliner; per-loop attributes change nothing",
                )
            )
            continue
        if done and "skipped" in done:
            out.append(_rec("loop", label, value, pin.source, "not applicable", done["skipped"]))
            continue
        attr = LOOP_ATTRS[name][0]
        loops = [lp for lp in find_loops(ttir) if loop_matches(pin, lp, kernel_file)]
        # a later pin that sets the same attribute on the same loop wins there (recipe < variant < --pin-loop)
        winners = {}
        for d in loop_done[i + 1 :] if done else []:
            if sets_again(d["pin"], pin, name):
                v = dict(d["pin"].attrs)[name]
                winners.update({where: (d["pin"], v) for where in d["loops"]})
        if loops and all(lp.lines[:1] and lp.lines[0] in winners for lp in loops):
            by = dict.fromkeys(
                f"{w.source} gives {w.where}:{name}={py_text(v)}" for w, v in (winners[lp.lines[0]] for lp in loops)
            )
            out.append(_rec("loop", label, value, pin.source, "overridden", "; ".join(by) + ", which wins"))
            continue
        loops = [lp for lp in loops if not (lp.lines[:1] and lp.lines[0] in winners)]
        if not loops:
            out.append(_rec("loop", label, value, pin.source, "no effect", "no loop matches in TTIR"))
            continue
        want = value if LOOP_ATTRS[name][1] is int else (True if value else None)
        got = [lp.attr_value(attr) for lp in loops]
        where = ", ".join(f"{os.path.basename(f)}:{ln}" for f, ln in (lp.lines[0] for lp in loops if lp.lines))
        if all(g == want for g in got) and name == "loop_unroll_factor":
            # Triton unrolls inside make_ttir, before the TTIR irscope edits: the attribute is there,
            # the unrolling is not. Say so rather than "ok".
            out.append(
                _rec(
                    "loop",
                    label,
                    value,
                    pin.source,
                    "no effect",
                    f"scf.for at {where} carries {attr} = {value}, but Triton unrolls in the TTIR "
                    f"stage, before the pinned TTIR; use tl.range(..., loop_unroll_factor={value})",
                )
            )
        elif (
            all(g == want for g in got)
            and name == "warp_specialize"
            and value
            and not re.search(r"ttg\.warp_specialize\b", ttgir)
        ):
            out.append(
                _rec(
                    "loop",
                    label,
                    value,
                    pin.source,
                    "no effect",
                    f"scf.for at {where} carries {attr}, but the TTGIR has no ttg.warp_specialize op "
                    f"(this target or Triton version does not warp-specialize this loop)",
                )
            )
        elif all(g == want for g in got):
            text = f"{attr} = {value}" if LOOP_ATTRS[name][1] is int else (attr if value else f"no {attr}")
            detail = f"scf.for at {where}: {text} in TTIR"
            if name == "num_stages":
                bufs = multibuffers(ttgir)
                if bufs:
                    detail += f"; TTGIR buffers {', '.join(bufs)}"
            out.append(_rec("loop", label, value, pin.source, "ok", detail))
        else:
            out.append(_rec("loop", label, value, pin.source, "changed", f"TTIR loop at {where} has {attr} = {got}"))
    return out


def multibuffers(ttgir: str) -> list[str]:
    """Shapes of the multi-buffered shared allocations (depth x tile), e.g. ['4x128x64xf16']."""
    return [
        m.group(1)
        for m in re.finditer(r"ttg\.local_alloc\s*:\s*\(\)\s*->\s*!ttg\.memdesc<(\d+x[\dx]+\w+),", ttgir)
        if not m.group(1).endswith("xi64")
    ]  # i64: mbarriers


def _check_layout(pin: LayoutPin, layout_done: list[dict], ttgir: str) -> PinCheck:
    i, done = next(((i, d) for i, d in enumerate(layout_done) if d["pin"] is pin), (-1, None))
    if done is None:
        return _rec("layout", f"#{pin.alias}", pin.text(), pin.source, "no effect", "not applied")
    if "skipped" in done:
        return _rec("layout", f"#{pin.alias}", pin.text(), pin.source, "not applicable", done["skipped"])
    # later pins of the alias: one that sets a field this pin sets wins (pins.sets_again, the one rule)
    later = [d for d in layout_done[i + 1 :] if d["alias"] == pin.alias and "skipped" not in d]
    winners = [d["pin"] for d in later if sets_again(d["pin"], pin)]
    if winners:
        return _rec(
            "layout",
            f"#{pin.alias}",
            done["after"],
            pin.source,
            "overridden",
            "; ".join(f"{w.source} gives {w.text()}" for w in winners) + ", which wins",
        )
    after = done["after"]
    final = later[-1]["after"] if later else after  # later edits of other fields build on this one
    hit = [a for a, v in layout_aliases(ttgir).items() if squash(v) == squash(final)]
    if squash(done["before"]) == squash(after):
        return _rec("layout", f"#{pin.alias}", after, pin.source, "no effect", f"#{pin.alias} already was {after}")
    if hit:
        was = parse_layout(done["before"])
        now = parse_layout(after)
        changed = (
            ", ".join(f"{k} {was.fields.get(k)} -> {v}" for k, v in now.fields.items() if was.fields.get(k) != v)
            if was and now and was.kind == now.kind
            else done["before"]
        )
        return _rec("layout", f"#{pin.alias}", after, pin.source, "ok", f"in TTGIR as #{hit[0]} ({changed})")
    return _rec("layout", f"#{pin.alias}", after, pin.source, "changed", "the TTGIR no longer holds the pinned layout")
