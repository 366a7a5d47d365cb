"""A launch described as data: tensor arguments, scalar values and the grid, for timing on a GPU.

Two sources:
  --args/--grid on the command line (hand-written), or the `launch` record of a capture spec file.

Hand-written syntax (arguments separated by commas or spaces around '='):

    --args "a=randn(4096, 4096, fp16), b=randn(4096, 4096, fp16), c=empty(4096, 4096, fp16),
            M=4096, N=4096, K=4096, stride_am=K, stride_ak=1, ..."
    --grid "cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)"      (or "(cdiv(M, 128), cdiv(N, 128))")
    --flops "2*M*N*K"  --bytes "(M*K + K*N + M*N) * 2"

Tensor makers: randn, rand, zeros, ones, empty, arange (shape…, dtype), dtype one of fp16 bf16
fp32 fp64 fp8e4nv fp8e5 i8 i16 i32 i64 u8 bool; `.T` (transposed view) and `[o:]` (an offset view,
for unaligned pointers) may follow. Scalars are arithmetic over numbers and earlier names; functions
cdiv, min, max, numel(t), size(t, d), stride(t, d). Everything is parsed as data (a small
arithmetic grammar), never executed as Python.
"""

from __future__ import annotations

import ast
import math
import operator
from dataclasses import dataclass, field
from typing import Any

from irscope.errors import BadInput
from irscope.kernel.spec import split_signature
from irscope.records import Launch as LaunchRecord

DTYPES = {
    "fp16": "float16",
    "bf16": "bfloat16",
    "fp32": "float32",
    "fp64": "float64",
    "fp8e4nv": "float8_e4m3fn",
    "fp8e5": "float8_e5m2",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "u8": "uint8",
    "bool": "bool",
}
MAKERS = ("randn", "rand", "zeros", "ones", "empty", "arange")
FUNCTIONS = ("cdiv", "min", "max", "numel", "size", "stride")
BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Div: operator.truediv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
ELEM_BYTES = {
    "fp16": 2,
    "bf16": 2,
    "fp32": 4,
    "fp64": 8,
    "fp8e4nv": 1,
    "fp8e5": 1,
    "i8": 1,
    "i16": 2,
    "i32": 4,
    "i64": 8,
    "u8": 1,
    "bool": 1,
}
# bounds: the arithmetic is data, and data must not hang or exhaust the machine (9**9**9 would)
MAX_EXPR_CHARS = 2000  # longer is no launch description; also keeps the tree shallow
MAX_MAGNITUDE = 2**63  # any integer result, as a launch argument could hold (u64 at most)
MAX_DIMS = 8
MAX_TENSOR_BYTES = 2**38  # 256 GiB: more than any one GPU holds
GRID_LIMITS = (2**31 - 1, 65535, 65535)  # CUDA's grid limits (x, y, z)


@dataclass
class TensorSpec:
    maker: str
    shape: tuple[int, ...]
    dtype: str  # irscope short name (fp16, ...)
    transpose: bool = False
    offset: int = 0  # elements: a view starting this far in (unaligned pointers)
    strides: tuple[int, ...] | None = None  # from a capture: the exact strides

    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def dims(self) -> tuple[int, ...]:
        return tuple(reversed(self.shape)) if self.transpose else self.shape

    def stride_of(self, d: int) -> int:
        if self.strides is not None:
            return self.strides[d]
        base = [1] * len(self.shape)
        for i in range(len(self.shape) - 2, -1, -1):
            base[i] = base[i + 1] * self.shape[i + 1]
        s = list(reversed(base)) if self.transpose else base
        return s[d]


@dataclass
class Launch:
    args: dict[str, Any] = field(default_factory=dict)  # name -> TensorSpec | int | float | bool
    grid: tuple[int, int, int] = (1, 1, 1)
    grid_expr: str | None = None  # evaluated per variant, over the args and that variant's constexprs
    flops: float | None = None
    bytes: float | None = None


def parse_args(text: str, known: dict[str, Any] | None = None) -> dict[str, Any]:
    env: dict[str, Any] = dict(known or {})
    out: dict[str, Any] = {}
    for item in split_signature(text):
        item = item.strip()
        if not item:
            continue
        name, sep, expr = item.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise BadInput(f"--args {item!r}: expected NAME=VALUE, e.g. x=randn(4096, fp32) or n=4096")
        value = evaluate(expr.strip(), env, f"--args {name}")
        env[name] = value
        out[name] = value
    return out


def evaluate(expr: str, env: dict[str, Any], where: str) -> Any:
    """The value of one expression of the launch grammar; every failure is BadInput naming `where`."""
    if len(expr) > MAX_EXPR_CHARS:
        raise BadInput(f"{where}: the expression is {len(expr)} characters long; at most {MAX_EXPR_CHARS}")
    if not expr.strip():
        raise BadInput(f"{where}: an empty expression; give a number, a name or a tensor maker, e.g. randn(4096, fp32)")
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as e:
        raise BadInput(f"{where}: cannot parse {expr!r}: {e.msg}") from None
    except (RecursionError, MemoryError, ValueError):
        raise BadInput(f"{where}: cannot parse {expr!r}: nested too deeply") from None
    try:
        return _eval(tree.body, env, where, expr)
    except BadInput:
        raise
    except ZeroDivisionError:
        raise BadInput(f"{where}: division by zero in {expr!r}") from None
    except (RecursionError, MemoryError):
        raise BadInput(f"{where}: {expr!r} is nested too deeply") from None
    except OverflowError:
        raise BadInput(f"{where}: {expr!r} overflows (results must stay below 2**63 in magnitude)") from None
    except (TypeError, ValueError, IndexError) as e:
        raise BadInput(f"{where}: cannot evaluate {expr!r}: {e}") from None


def _bounded(value: Any, node: ast.AST, where: str, whole: str) -> Any:
    """A number within the grammar's bounds, else BadInput."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and abs(value) >= MAX_MAGNITUDE:
        raise BadInput(
            f"{where}: {ast.unparse(node)!r} in {whole!r} is too large (results must stay below 2**63 in magnitude)"
        )
    if isinstance(value, float) and not math.isfinite(value):
        raise BadInput(f"{where}: {ast.unparse(node)!r} in {whole!r} is not a finite number")
    if not isinstance(value, (int, float)):  # (-8) ** 0.5 is complex
        raise BadInput(f"{where}: {ast.unparse(node)!r} in {whole!r} is not a real number")
    return value


def _power(base: float, exp: float, node: ast.AST, where: str, whole: str) -> float:
    """base ** exp, refused before computing an integer power that would leave the bounds (float
    powers overflow by themselves: OverflowError, reported by evaluate)."""
    if (
        isinstance(base, int)
        and isinstance(exp, int)
        and abs(base) > 1
        and exp > 0
        and exp * math.log2(abs(base)) >= 63
    ):
        raise BadInput(
            f"{where}: {ast.unparse(node)!r} in {whole!r} is too large (results must stay below 2**63 in magnitude)"
        )
    return base**exp


def _eval(node: ast.AST, env: dict[str, Any], where: str, whole: str) -> Any:  # noqa: C901
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)):
        return _bounded(node.value, node, where, whole)
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        if node.id in ("True", "False"):
            return node.id == "True"
        raise BadInput(f"{where}: unknown name {node.id!r} in {whole!r} (define it earlier in --args)")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _number(_eval(node.operand, env, where, whole), node, where, whole)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp) and type(node.op) in BINOPS:
        a = _number(_eval(node.left, env, where, whole), node, where, whole)
        b = _number(_eval(node.right, env, where, whole), node, where, whole)
        if isinstance(node.op, ast.Pow):
            return _bounded(_power(a, b, node, where, whole), node, where, whole)
        return _bounded(BINOPS[type(node.op)](a, b), node, where, whole)
    if isinstance(node, ast.Tuple):
        return tuple(_eval(e, env, where, whole) for e in node.elts)
    if isinstance(node, ast.Attribute) and node.attr == "T":
        t = _eval(node.value, env, where, whole)
        if not isinstance(t, TensorSpec) or len(t.shape) != 2:
            raise BadInput(f"{where}: .T needs a 2-D tensor in {whole!r}")
        return TensorSpec(t.maker, t.shape, t.dtype, not t.transpose, t.offset)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice) and node.slice.upper is None:
        t = _eval(node.value, env, where, whole)
        off = _eval(node.slice.lower, env, where, whole) if node.slice.lower is not None else 0
        if not isinstance(t, TensorSpec):
            raise BadInput(f"{where}: [o:] needs a tensor in {whole!r}")
        if not isinstance(off, int) or isinstance(off, bool) or not 0 <= t.offset + off < t.numel():
            raise BadInput(
                f"{where}: the offset in {ast.unparse(node)!r} must be an integer from 0 to "
                f"{t.numel() - t.offset - 1} (the tensor has {t.numel()} elements), got {off!r}"
            )
        return TensorSpec(t.maker, t.shape, t.dtype, t.transpose, t.offset + off)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        fname = node.func.id
        if fname not in MAKERS + FUNCTIONS:
            raise BadInput(
                f"{where}: {fname}(…) in {whole!r} is not allowed: not a function of the grammar; functions: "
                f"{', '.join(FUNCTIONS)}, and the tensor makers {', '.join(MAKERS)}"
            )
        if node.keywords:
            raise BadInput(f"{where}: {fname}(…) in {whole!r} takes no keyword arguments")
        args = [
            _eval(a, env, where, whole) if not (isinstance(a, ast.Name) and a.id in DTYPES) else a.id for a in node.args
        ]
        if fname in MAKERS:
            if not args or not isinstance(args[-1], str):
                raise BadInput(f"{where}: {fname}(…) needs a dtype last, one of {', '.join(DTYPES)}")
            shape = tuple(d for d in args[:-1] if isinstance(d, int) and not isinstance(d, bool) and d > 0)
            if not shape or len(shape) < len(args) - 1:
                raise BadInput(f"{where}: {fname}(…) needs a shape of positive integers in {whole!r}")
            if len(shape) > MAX_DIMS:
                raise BadInput(f"{where}: {fname}(…) has {len(shape)} dimensions in {whole!r}; at most {MAX_DIMS}")
            spec = TensorSpec(fname, shape, args[-1])
            if spec.numel() * ELEM_BYTES[spec.dtype] > MAX_TENSOR_BYTES:
                raise BadInput(
                    f"{where}: {fname}{shape} of {spec.dtype} would take "
                    f"{spec.numel() * ELEM_BYTES[spec.dtype] / 2**30:.0f} GiB; at most "
                    f"{MAX_TENSOR_BYTES // 2**30} GiB per tensor"
                )
            return spec
        if any(isinstance(a, str) for a in args):
            raise BadInput(f"{where}: a dtype is only the last argument of a tensor maker, in {whole!r}")
        if fname == "cdiv" and len(args) == 2:
            a, b = (_integer(x, node, where, whole) for x in args)
            return -(-a // b)
        if fname in ("min", "max") and args:
            return (min if fname == "min" else max)(_number(a, node, where, whole) for a in args)
        if fname == "numel" and len(args) == 1 and isinstance(args[0], TensorSpec):
            return args[0].numel()
        if fname in ("size", "stride") and len(args) == 2 and isinstance(args[0], TensorSpec):
            d, rank = _integer(args[1], node, where, whole), len(args[0].shape)
            if not -rank <= d < rank:
                raise BadInput(
                    f"{where}: {ast.unparse(node)!r} in {whole!r}: dimension {d} of a rank-{rank} "
                    f"tensor (0 to {rank - 1})"
                )
            return args[0].dims()[d] if fname == "size" else args[0].stride_of(d)
    raise BadInput(
        f"{where}: {ast.unparse(node)!r} in {whole!r} is not allowed (numbers, names, + - * / // % **, "
        f"cdiv/min/max/numel/size/stride, and {'/'.join(MAKERS)}(shape…, dtype))"
    )


def _number(value: Any, node: ast.AST, where: str, whole: str) -> int | float:
    if isinstance(value, (int, float)):
        return value
    raise BadInput(
        f"{where}: {ast.unparse(node)!r} in {whole!r} needs numbers, not a "
        f"{'tensor' if isinstance(value, TensorSpec) else type(value).__name__}"
    )


def _integer(value: Any, node: ast.AST, where: str, whole: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise BadInput(f"{where}: {ast.unparse(node)!r} in {whole!r} needs integers, got {value!r}")


def parse_grid(text: str, env: dict[str, Any]) -> tuple[int, int, int]:
    value = evaluate(text, env, "--grid")
    dims = value if isinstance(value, tuple) else (value,)
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims):
        raise BadInput(f"--grid {text!r}: must give 1 to 3 positive integers, got {value!r}")
    for d, limit, axis in zip(dims, GRID_LIMITS, "xyz"):
        if d > limit:
            raise BadInput(f"--grid {text!r}: {d} programs along {axis}; a launch allows at most {limit}")
    x, y, z = list(dims) + [1] * (3 - len(dims))
    return x, y, z


def spec_element(value: Any) -> str:
    """The signature element a launch with this value gets (see spec.py's grammar)."""
    if isinstance(value, TensorSpec):
        off = value.offset * ELEM_BYTES[value.dtype]
        align = 16 if off % 16 == 0 else (off & -off)
        ptr = "i1" if value.dtype == "bool" else value.dtype
        return f"*{ptr}:{align}"
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        kind = "i32" if -(2**31) <= value < 2**31 else ("i64" if -(2**63) <= value < 2**63 else "u64")
        if value == 1:
            return f"{kind}:1"
        return f"{kind}:16" if value % 16 == 0 else kind
    if isinstance(value, float):
        return "fp32"
    raise BadInput(f"cannot launch with an argument of type {type(value).__name__}")


def from_capture(record: LaunchRecord) -> Launch:
    """A capture spec file's `launch` record -> Launch (tensors re-made at their shapes/strides)."""
    args: dict[str, Any] = {}
    for name, a in (record.get("args") or {}).items():
        if isinstance(a, dict) and "shape" in a:
            dtype = _short_dtype(a.get("dtype", "fp32"))
            strides = tuple(a["strides"]) if a.get("strides") else None
            args[name] = TensorSpec(
                "randn" if dtype.startswith(("fp", "bf")) else "zeros",
                tuple(a["shape"]),
                dtype,
                strides=strides,
                offset=int(a.get("offset", 0)),
            )
        elif isinstance(a, dict) and "value" in a:
            args[name] = a["value"]
        else:
            args[name] = a
    grid = list(record.get("grid") or (1, 1, 1))
    x, y, z = grid + [1] * (3 - len(grid))
    return Launch(args, (x, y, z))


def _short_dtype(name: str) -> str:
    name = name.replace("torch.", "")
    for short, long in DTYPES.items():
        if name in (short, long):
            return short
    return name
