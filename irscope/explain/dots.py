"""Rule dot-not-tensor-core: a tl.dot on FMA, or on mma.sync where wgmma (sm90) / tcgen05 (sm100) was possible.

tritongpu-accelerate-matmul decides it: fp32 operands with input_precision "ieee" have no tensor-core
instruction on NVIDIA (FMA); wgmma and tcgen05 need num_warps a multiple of 4 (tcgen05: 4 or 8), the tile's M a
multiple of 64 and N of 8 (Triton's supportMMA). The rule reads the dot's result layout in the TTGIR
(blocked = FMA; nvidia_mma versionMajor 2 = mma.sync) and names the condition that failed; a dot whose cause
it cannot name is not reported. On AMD every case the rule knows gets MFMA (fp32 included), so it reports none."""

from __future__ import annotations

import re

from irscope.explain import ir
from irscope.explain.context import Context
from irscope.explain.model import Finding, Fix

_DOTS = ("tt.dot",)
_MMA_SASS = re.compile(r"\b(HMMA|HGMMA|UTC\w*MMA|FFMA|IMMA)\b")


def _const_named(ctx: Context, value: int | str) -> str | None:
    """The one constexpr argument whose value is `value` (the block size to change), else None."""
    names = [k for k, v in (ctx.manifest.get("args") or {}).items() if str(v).strip("'\"") == str(value)]
    return names[0] if len(names) == 1 else None


def _fp32_ieee(mod: ir.Module, op: ir.Op) -> bool:
    ts = mod.tensors(op)
    prec = re.search(r"inputPrecision\s*=\s*(\w+)", op.text)
    return bool(ts) and ts[0].elem == "f32" and (prec is None or prec.group(1) == "ieee")


def _causes(ctx: Context, op: ir.Op, kind: str) -> list[tuple[str, str, Fix]]:
    mod = ctx.module
    out = []
    if kind == "fma":
        if _fp32_ieee(mod, op):
            name = _const_named(ctx, "ieee")
            out.append(
                (
                    "fp32-ieee",
                    'both operands are fp32 and input_precision is "ieee": NVIDIA\'s tensor cores '
                    "take fp32 only as tf32, so tritongpu-accelerate-matmul keeps the dot on FMA",
                    Fix(
                        'tl.dot(a, b, input_precision="tf32") (or "tf32x3" for near-fp32 accuracy), or '
                        "fp16/bf16 operands" + (f"; here --const {name}=tf32" if name else ""),
                        consts={name: "'tf32'"} if name else {},
                    ),
                )
            )
        return out
    want = "wgmma" if ctx.arch == 90 else "tcgen05"
    m, n = mod.tensors(op)[-1].shape[-2:]
    warps = mod.num_warps
    if warps % 4 if ctx.arch == 90 else warps not in (4, 8):
        out.append(
            (
                "num-warps",
                f"num_warps={warps}: {want} needs "
                + ("a multiple of 4 (a warp group)" if ctx.arch == 90 else "4 or 8")
                + " warps",
                Fix("num_warps=4 (or 8)", sets={"num_warps": 4}),
            )
        )
    if m % 64:
        name = _const_named(ctx, m)
        out.append(
            (
                "block-m",
                f"the dot's M is {m}: {want} needs M a multiple of 64",
                Fix(
                    f"a block of at least 64 rows ({name}=64)" if name else "a block of at least 64 rows",
                    consts={name: 64} if name else {},
                ),
            )
        )
    if n % 8:
        out.append(
            ("block-n", f"the dot's N is {n}: {want} needs N a multiple of 8", Fix("a block of N a multiple of 8"))
        )
    return out


def rule(ctx: Context) -> list[Finding]:
    if ctx.vendor != "nvidia" or ctx.arch < 80:
        return []
    mod = ctx.module
    findings = []
    for op in mod.ops:
        if op.name not in _DOTS or not (ts := mod.tensors(op)):
            continue
        layout = mod.layouts.get(ts[-1].layout)
        if layout is None:
            continue
        if layout.kind == "blocked":
            kind, got = "fma", "FMA (no tensor core)"
        elif layout.kind == "nvidia_mma" and layout.ints.get("versionMajor") == 2 and ctx.arch in (90, 100, 103):
            kind, got = "mma.sync", "mma.sync (mma v2)"
        else:
            continue
        line = ctx.py_line(op)
        machine = [f"sass {n}: {t[:120]}" for n, t in ctx.stage_at(line, "sass") if _MMA_SASS.search(t)][:3]
        a, b = ts[0], ts[1] if len(ts) > 1 else ts[0]
        for tag, why, fix in _causes(ctx, op, kind):
            findings.append(
                Finding(
                    "dot-not-tensor-core",
                    tag,
                    f"tl.dot {a.shape[0]}x{b.shape[-1]}x{a.shape[-1]} ({a.elem}) runs on {got} on {ctx.target}",
                    ctx.where(line, [op], machine),
                    why,
                    [
                        f"TTGIR {op.n}: result layout {ts[-1].layout} = {layout.kind}<{layout.params[:90]}>",
                        "decided by tritongpu-accelerate-matmul (supportMMA)",
                    ],
                    fix,
                )
            )
    return findings
