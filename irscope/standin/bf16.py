"""bf16 arithmetic on the stand-in GPU: computed in fp32 and rounded to bf16, as the chip does.

Triton's interpreter keeps a bf16 tensor as its bits in uint16 (NumPy has no bfloat16) and applies
NumPy's operators to those bits: `x * y + x` on bf16 values multiplies integers, so a script's
results came back as 2e34, inf or NaN (cut-cross-entropy's loss; Triton 3.9's own TRITON_INTERPRET
does the same), and irscope counted the launch as computed. On the chip each bf16 operation is done
in fp32 (or natively, to the same result for one multiply or add) and rounded to bf16, to nearest
even. Here the interpreter builder's elementwise entry points — binary and unary operators, clamps,
fma — read bf16 operands as fp32, compute, and round the float result back to bf16 bits;
comparisons give their booleans as they would for fp32, and selects move bits untouched (already
right). Instance attributes over whatever the builder has, put back on exit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

ENTRY_POINTS = ("binary_op", "unary_op", "ternary_op", "create_fma")


def to_fp32(bits: Any) -> Any:
    """bf16 bits (uint16) as the fp32 values they are: the high half of an fp32."""
    import numpy as np

    return (np.asarray(bits).astype(np.uint32) << 16).view(np.float32)


def to_bf16(values: Any) -> Any:
    """fp32 values rounded to bf16 (nearest, ties to even) as uint16 bits; a NaN stays a quiet NaN."""
    import numpy as np

    f = np.asarray(values, dtype=np.float32)
    u = f.view(np.uint32)
    rounded = ((u + (((u >> 16) & 1) + 0x7FFF)) >> 16).astype(np.uint16)
    return np.where(np.isnan(f), np.uint16(0x7FC0), rounded)


@contextlib.contextmanager
def bf16_in_fp32(interp: Any, builder: Any) -> Iterator[None]:
    """While a launch is interpreted, bf16 elementwise arithmetic is done in fp32 and rounded back."""
    import numpy as np
    import triton.language as tl

    bf16 = tl.bfloat16
    original = {n: getattr(builder, n) for n in ENTRY_POINTS}
    had = {n: vars(builder)[n] for n in ENTRY_POINTS if n in vars(builder)}
    handle = interp.TensorHandle

    def is_bf16(*hs: Any) -> bool:
        return any(getattr(h.dtype, "scalar", h.dtype) == bf16 and h.data.dtype == np.uint16 for h in hs)

    def result(out: Any, dtype: Any) -> Any:
        if out.dtype == np.float32:  # an arithmetic result: rounded to bf16, as the chip stores it
            return handle(to_bf16(out), bf16)
        return handle(out, dtype)  # a comparison's booleans: as the interpreter gives them

    def binary_op(lhs: Any, rhs: Any, op: Any) -> Any:
        if not is_bf16(lhs, rhs):
            return original["binary_op"](lhs, rhs, op)
        return result(op(to_fp32(lhs.data), to_fp32(rhs.data)), lhs.dtype.scalar)

    def unary_op(arg: Any, op: Any) -> Any:
        if not is_bf16(arg):
            return original["unary_op"](arg, op)
        return result(op(to_fp32(arg.data)), arg.dtype.scalar)

    def ternary_op(a: Any, b: Any, c: Any, op: Any) -> Any:
        if op is np.where or not is_bf16(a, b, c):  # a select moves bits: right as it is
            return original["ternary_op"](a, b, c, op)
        wide = [to_fp32(h.data) if is_bf16(h) else h.data for h in (a, b, c)]
        return result(op(*wide).astype(np.float32), c.dtype.scalar)

    def create_fma(x: Any, y: Any, z: Any) -> Any:
        if not is_bf16(x, y, z):
            return original["create_fma"](x, y, z)
        product = np.multiply(to_fp32(x.data), to_fp32(y.data), dtype=np.float64)  # exact: 8-bit mantissas
        return handle(to_bf16(np.add(product, to_fp32(z.data), dtype=np.float64).astype(np.float32)), bf16)

    for name, fn in zip(ENTRY_POINTS, (binary_op, unary_op, ternary_op, create_fma)):
        setattr(builder, name, fn)
    try:
        yield
    finally:
        for name in ENTRY_POINTS:
            if name in had:
                setattr(builder, name, had[name])
            else:
                with contextlib.suppress(AttributeError):
                    delattr(builder, name)
