"""--ref: what a user would call instead of the kernel, timed in the same rounds by the same method.

A reference is one call of torch (torch.*, torch.nn.functional.* as F.*, torch.linalg.*,
torch.special.*) over the names of --args, e.g.

    --ref "torch.matmul(a_ptr, b_ptr)"        --ref "F.softmax(x_ptr, -1)"
    --ref "F.scaled_dot_product_attention(q, k, v, is_causal=True)"
    --ref "torch.matmul(a, b.T).to(torch.float16)" is refused (methods are not calls of the grammar)

The grammar (parsed with Python's ast, never evaluated as Python): a call of a whitelisted function
(ALLOWED) whose arguments are names of --args (tensors or scalars), numbers (a leading minus allowed),
strings, True/False/None, tuples or lists of these, a dtype (torch.float16 ... or fp16 ...), `.T` or
`.mT` after a name, and calls of the grammar (nested: F.gelu(torch.matmul(a, b))); keyword arguments
alike, except out=. Functions that write their inputs (a trailing underscore) are not in it.
Bad input is refused in one line (exit 2) before anything runs: parse() checks the grammar, the
names and the functions in the parent; check() the shapes and dtypes, on torch's meta device (no
GPU), in the timing process before it makes the inputs.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from irscope.errors import BadInput
from irscope.timing.inputs import meta_tensor
from irscope.timing.launch import DTYPES, MAX_EXPR_CHARS, Launch, TensorSpec


def _words(text: str) -> list[str]:
    return text.split()


NAMESPACES = {
    "torch": "torch",
    "F": "torch.nn.functional",
    "torch.nn.functional": "torch.nn.functional",
    "torch.linalg": "torch.linalg",
    "torch.special": "torch.special",
}
ALLOWED = {
    "torch": set(
        _words("""matmul mm bmm baddbmm addmm addmv addbmm mv dot vdot outer einsum tensordot add sub mul div
        true_divide exp exp2 expm1 log log2 log10 log1p sqrt rsqrt abs neg reciprocal sin cos tan tanh sigmoid
        relu erf erfc softmax log_softmax logsumexp sum mean amax amin max min prod cumsum cumprod var std norm
        maximum minimum where clamp pow square lerp addcmul addcdiv transpose permute reshape flatten t cat
        stack topk sort argsort argmax argmin any all gather index_select masked_fill clone contiguous
        flip roll tril triu cross diag cdist kron repeat_interleave nan_to_num sign floor ceil round""")
    ),
    "torch.nn.functional": set(
        _words("""softmax log_softmax softmin gelu silu relu relu6 leaky_relu elu selu celu mish
        sigmoid tanh softplus hardswish hardsigmoid hardtanh logsigmoid glu linear bilinear layer_norm rms_norm
        group_norm normalize scaled_dot_product_attention cross_entropy nll_loss mse_loss l1_loss
        smooth_l1_loss kl_div binary_cross_entropy_with_logits embedding conv1d conv2d conv3d
        conv_transpose1d conv_transpose2d pad max_pool1d max_pool2d avg_pool1d avg_pool2d adaptive_avg_pool2d
        interpolate one_hot cosine_similarity pairwise_distance unfold fold""")
    ),
    "torch.linalg": set(
        _words("""matmul vecdot vector_norm matrix_norm norm solve inv cholesky qr svd svdvals eigh
        eigvalsh det slogdet lstsq cross""")
    ),
    "torch.special": set(_words("""erf erfc erfinv expit logit log_softmax softmax logsumexp i0 ndtr""")),
}
DTYPE_NAMES = set(DTYPES.values())
GRAMMAR = (
    "a call of torch.*, F.* (torch.nn.functional), torch.linalg.* or torch.special.* over names of --args, "
    "numbers, strings, True/False/None, tuples, dtypes, name.T, and such calls"
)


@dataclass(frozen=True)
class Reference:
    """A parsed --ref: the text as given, and the call as plain data (picklable, for the timing process)."""

    text: str
    call: tuple  # ("call", "torch.nn.functional.softmax", (args...), (("dim", arg), ...))

    @property
    def label(self) -> str:
        return f"ref: {self.text}"


def parse(text: str, launch: Launch | dict[str, Any], flag: str = "--ref") -> Reference:
    """The reference, or BadInput in one line (what was wrong, where, what would be valid)."""
    args = launch.args if isinstance(launch, Launch) else launch
    where = f"{flag} {text!r}"
    if not text.strip():
        raise BadInput(f'{where}: empty; give {GRAMMAR}, e.g. --ref "torch.matmul(a_ptr, b_ptr)"')
    if len(text) > MAX_EXPR_CHARS:
        raise BadInput(f"{where}: {len(text)} characters long; at most {MAX_EXPR_CHARS}")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise BadInput(f"{where}: cannot parse it: {e.msg}; give {GRAMMAR}") from None
    except (RecursionError, MemoryError, ValueError):
        raise BadInput(f"{where}: nested too deeply") from None
    if not isinstance(tree.body, ast.Call):
        raise BadInput(f"{where}: not a call; give {GRAMMAR}, e.g. torch.matmul(a_ptr, b_ptr)")
    try:
        return Reference(text.strip(), _node(tree.body, args, where))
    except RecursionError:
        raise BadInput(f"{where}: nested too deeply") from None


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


def _function(node: ast.AST, where: str) -> str:
    dotted = _dotted(node)
    if dotted is None or "." not in dotted:
        raise BadInput(f"{where}: {ast.unparse(node)!r} is not a function of the grammar; give {GRAMMAR}")
    space, _, name = dotted.rpartition(".")
    module = NAMESPACES.get(space)
    if module is None:
        raise BadInput(
            f"{where}: {dotted}(…) is not allowed: functions come from "
            f"torch, F (torch.nn.functional), torch.linalg or torch.special"
        )
    if name not in ALLOWED[module]:
        hint = " (it writes its inputs)" if name.endswith("_") else ""
        raise BadInput(
            f"{where}: {dotted}(…) is not a known reference function{hint}; "
            f"{space}. allows {', '.join(sorted(ALLOWED[module])[:12])}, … (irscope/timing/reference.py)"
        )
    return f"{module}.{name}"


def _call(node: ast.Call, args: dict[str, Any], where: str) -> tuple:
    fn = _function(node.func, where)
    pos = tuple(_node(a, args, where) for a in node.args)
    kws = []
    for kw in node.keywords:
        if kw.arg is None:
            raise BadInput(f"{where}: **kwargs is not part of the grammar")
        if kw.arg == "out":
            raise BadInput(f"{where}: out= would write into an argument; a reference returns its result")
        kws.append((kw.arg, _node(kw.value, args, where)))
    return ("call", fn, pos, tuple(kws))


def _node(node: ast.AST, args: dict[str, Any], where: str) -> tuple:
    if isinstance(node, ast.Call):
        return _call(node, args, where)
    if isinstance(node, ast.Starred):
        raise BadInput(f"{where}: *args is not part of the grammar")
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool, str, type(None))):
        return ("const", node.value)
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, (int, float))
        and not isinstance(node.operand.value, bool)
    ):
        return ("const", -node.operand.value)
    if isinstance(node, (ast.Tuple, ast.List)):
        return ("tuple" if isinstance(node, ast.Tuple) else "list", tuple(_node(e, args, where) for e in node.elts))
    if isinstance(node, ast.Name):
        if node.id in args:
            return ("arg", node.id)
        if node.id in DTYPES:
            return ("dtype", DTYPES[node.id])
        known = ", ".join(args) or "none given"
        raise BadInput(f"{where}: unknown name {node.id!r}: a reference uses the names of --args ({known})")
    if isinstance(node, ast.Attribute):
        dotted = _dotted(node)
        if dotted and dotted.startswith("torch.") and dotted[6:] in DTYPE_NAMES:
            return ("dtype", dotted[6:])
        if node.attr in ("T", "mT"):
            inner = _node(node.value, args, where)
            if inner[0] != "arg" or not isinstance(args[inner[1]], TensorSpec):
                raise BadInput(
                    f"{where}: .{node.attr} follows the name of a tensor of --args, not {ast.unparse(node.value)!r}"
                )
            return ("attr", inner, node.attr)
    raise BadInput(f"{where}: {ast.unparse(node)!r} is not allowed; give {GRAMMAR}")


def _module(name: str):
    return importlib.import_module(name)


def _builder(node: tuple, values: dict[str, Any]) -> Callable[[], Any]:
    """A function that computes `node` over `values` (tensors resolved once; nested calls run each time)."""
    import torch

    kind = node[0]
    if kind == "call":
        module, _, name = node[1].rpartition(".")
        fn = getattr(_module(module), name, None)
        if fn is None:
            raise BadInput(f"--ref: {node[1]} does not exist in torch {torch.__version__}")
        pos = [_builder(a, values) for a in node[2]]
        kws = [(k, _builder(v, values)) for k, v in node[3]]
        return lambda: fn(*(p() for p in pos), **{k: v() for k, v in kws})
    if kind == "const":
        value = node[1]
    elif kind == "dtype":
        value = getattr(torch, node[1])
    elif kind == "arg":
        value = values[node[1]]
    elif kind == "attr":
        value = getattr(values[node[1][1]], node[2])
    else:  # tuple, list: constant when every item is; else built each time
        items = [_builder(e, values) for e in node[1]]
        make = tuple if kind == "tuple" else list
        return lambda: make(i() for i in items)
    return lambda: value


def bind(ref: Reference, values: dict[str, Any]) -> Callable[[], Any]:
    """The call over the launch's tensors, ready to run (what the rounds time)."""
    return _builder(ref.call, values)


def check(ref: Reference, launch: Launch) -> None:
    """Shapes and dtypes, on torch's meta device (no GPU, no memory): BadInput in one line if they do not fit."""
    import torch

    values = {k: meta_tensor(v) if isinstance(v, TensorSpec) else v for k, v in launch.args.items()}
    try:
        result = bind(ref, values)()
    except NotImplementedError:
        return  # no meta kernel for this function: the GPU run will tell
    except (RuntimeError, TypeError, ValueError, IndexError, AssertionError) as e:
        # AssertionError: torch 2.11's Python meta kernels check dims with assert ("dim 5 out of bounds")
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise BadInput(f"--ref {ref.text!r}: does not fit the --args: {first[:200]}") from None
    if not isinstance(result, torch.Tensor) and not (
        isinstance(result, (tuple, list)) and result and isinstance(result[0], torch.Tensor)
    ):
        raise BadInput(f"--ref {ref.text!r}: returns {type(result).__name__}, not a tensor: nothing a kernel computes")
