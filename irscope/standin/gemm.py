"""16-bit GEMMs on the stand-in GPU: summed exactly and rounded once, by torch and by tl.dot alike.

A script's check `torch.allclose(triton_out, torch_out, atol=1e-2, rtol=0)` (Triton's matmul
tutorial) needs the two bit for bit: at 512^3 in fp16 the outputs are ~20, where one fp16 step is
0.016. On the H200 they are (Triton's wgmma and cuBLAS sum k in the same order), though neither is
exactly rounded. On a CPU each side summed in fp32 in its own order (torch over all of K, the
interpreter per BLOCK_K tile), so they differed by a step in ~300 of 262,144 elements and the
check failed. The stand-in cannot reproduce a tensor core's order, so both sides compute what is
order-free: the products summed in fp64 (exact for products of fp16/bf16 values unless the sum
spans more than ~2^30 in magnitude) and one rounding to the output type. Both sides round fp64 the
same way (round to odd into fp32, then torch's or NumPy's round-to-nearest-even, which together
are one correct rounding), so they agree bit for bit whatever the tile sizes.

Under the interpreter the fp32 accumulator carries its fp64 value on the side (`_irscope_exact`
on the TensorHandle): its `.data` stays the fp32 rounding of it, so every other op, store and
bitcast sees an ordinary fp32 tensor; only tl.dot, fp32 addition (`acc += tl.dot(a, b)`) and the
cast to fp16/bf16 read the side value.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

EXACT = "_irscope_exact"


def round_to_odd_fp32(x64: Any) -> Any:
    """fp64 values as fp32, rounded to odd: inexact results get an odd last bit. A later
    round-to-nearest-even to fp16 or bf16 (<= 11 significant bits of fp32's 24) is then the
    correct rounding of the fp64 value (no double rounding)."""
    import numpy as np

    x64 = np.asarray(x64, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):  # past fp32's range: inf, as fp16's cast gives
        f = x64.astype(np.float32)
        back = f.astype(np.float64)
        inexact = (back != x64) & ~np.isnan(x64)
        over = inexact & (np.abs(back) > np.abs(x64))
    bits = f.view(np.uint32).copy()
    bits[over] -= 1  # one step toward zero: the truncation (sign-magnitude bits)
    bits[inexact] |= 1
    return bits.view(np.float32)


def bf16_bits(f32: Any) -> Any:
    """fp32 values rounded to nearest even as bf16, as the interpreter stores bf16 (uint16)."""
    import numpy as np

    bits = np.asarray(f32, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(f32, dtype=np.float32))
    return np.where(nan, (bits >> 16).astype(np.uint16) | 0x40, rounded)


def torch_exact(func: Any, args: Any, kwargs: Any, out_dtypes: list[Any]) -> Any:
    """A 16-bit aten GEMM (mm, bmm, addmm, ...) in fp64, each output rounded once to its dtype
    (`out_dtypes`, from the op's meta run). None: not one to compute so."""
    import torch
    from torch.utils._pytree import tree_map

    up = lambda a: a.double() if isinstance(a, torch.Tensor) and a.dtype in (torch.float16, torch.bfloat16) else a
    out = func(*tree_map(up, args), **tree_map(up, kwargs))
    outs = out if isinstance(out, (tuple, list)) else (out,)
    done = []
    for o, dtype in zip(outs, out_dtypes):
        if isinstance(o, torch.Tensor) and o.dtype == torch.float64 and dtype in (torch.float16, torch.bfloat16):
            once = torch.from_numpy(round_to_odd_fp32(o.numpy())).to(dtype)
            o = torch.empty_strided(o.shape, o.stride(), dtype=dtype).copy_(once)  # the layout torch gives it
        elif isinstance(o, torch.Tensor) and dtype is not None:
            o = o.to(dtype)
        done.append(o)
    return type(out)(done) if isinstance(out, (tuple, list)) else done[0]


@contextlib.contextmanager
def exact_dots(interp: Any, builder: Any) -> Iterator[None]:  # noqa: C901
    """While a launch is interpreted: tl.dot of fp16/bf16/fp8 into fp32 sums exactly (fp64), fp32
    additions keep that exact value, and a cast of it to fp16/bf16 rounds it once (fp32 to bf16 to
    nearest even, always). Instance
    attributes over whatever the builder has (the deadline checks), put back on exit."""
    import numpy as np
    import triton.language as tl

    sixteen = (tl.float16, tl.bfloat16)
    dot, fadd, trunc, fp_to_fp = (
        builder.create_dot,
        builder.create_fadd,
        builder.create_fp_trunc,
        builder.create_fp_to_fp,
    )
    had = {n: n in vars(builder) for n in ("create_dot", "create_fadd", "create_fp_trunc", "create_fp_to_fp")}
    old = {n: vars(builder).get(n) for n in had}

    def wide(h: Any) -> Any:
        """A handle's value in fp64: its exact side value, or its data."""
        side = getattr(h, EXACT, None)
        if side is not None:
            return side
        if h.dtype.scalar == tl.bfloat16:
            return (h.data.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        if h.dtype.scalar.is_fp8():  # as the interpreter's own dot reads fp8: exactly, through fp16
            return interp._convert_float(h.data, h.dtype.scalar, tl.float16, None).view(np.float16).astype(np.float64)
        return h.data.astype(np.float64)

    def narrow(h: Any) -> bool:
        """fp16, bf16 or fp8: products exact in fp64, as tensor cores take them."""
        return h.dtype.scalar in sixteen or h.dtype.scalar.is_fp8()

    def exact_handle(value: Any) -> Any:
        h = interp.TensorHandle(value.astype(np.float32), tl.float32)
        setattr(h, EXACT, value)
        return h

    def create_dot(a, b, d, *rest):
        if narrow(a) and narrow(b) and d.dtype.scalar == tl.float32:
            return exact_handle(np.matmul(wide(a), wide(b)) + wide(d))
        return dot(a, b, d, *rest[:2])  # input_precision, max_num_imprecise_acc (fbtriton adds two_ctas)

    def create_fadd(lhs, rhs):
        if (
            (getattr(lhs, EXACT, None) is not None or getattr(rhs, EXACT, None) is not None)
            and lhs.dtype.scalar == tl.float32
            and rhs.dtype.scalar == tl.float32
        ):
            return exact_handle(wide(lhs) + wide(rhs))
        return fadd(lhs, rhs)

    def rounded(src, dst_type) -> Any:
        """The exact value's one rounding to fp16/bf16; any fp32 to bf16 rounded to nearest even, as
        a GPU's cvt.rn.bf16.f32 (the interpreter truncates). None: neither."""
        side = getattr(src, EXACT, None)
        if side is None and src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16:
            return interp.TensorHandle(bf16_bits(src.data), tl.bfloat16)
        if side is None or dst_type.scalar not in sixteen:
            return None
        odd = round_to_odd_fp32(side)
        data = odd.astype(np.float16) if dst_type.scalar == tl.float16 else bf16_bits(odd)
        return interp.TensorHandle(data, dst_type.scalar)

    def create_fp_trunc(src, dst_type):
        out = rounded(src, dst_type)
        return out if out is not None else trunc(src, dst_type)

    def create_fp_to_fp(src, dst_type, rounding_mode):
        rtne = rounding_mode is None or "RTNE" in str(rounding_mode)
        out = rounded(src, dst_type) if rtne else None
        return out if out is not None else fp_to_fp(src, dst_type, rounding_mode)

    builder.create_dot, builder.create_fadd = create_dot, create_fadd
    builder.create_fp_trunc, builder.create_fp_to_fp = create_fp_trunc, create_fp_to_fp
    try:
        yield
    finally:
        for n, present in had.items():
            if present:
                setattr(builder, n, old[n])
            else:
                with contextlib.suppress(AttributeError):
                    delattr(builder, n)
