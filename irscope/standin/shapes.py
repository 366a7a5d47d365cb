"""Torch work too big for the CPU becomes shape-only on the stand-in GPU, as Compiler Explorer does.

A benchmark tail (`torch.matmul` at 4096^3 in fp16 inside do_bench) would take hours on a CPU.
While the stand-in is up, a TorchDispatchMode estimates each aten op's CPU time before running it
(FLOPs from torch's own flop counter for matmuls, convolutions and attention; elements touched
for the rest) and, above IRSCOPE_STANDIN_OP_S seconds (default 0.5), does not compute it: the
op runs on the meta device for its output's shape, dtype and strides, and the output is an
uninitialised CPU tensor of that shape (never touched, so it costs no time) (an in-place op leaves its tensor as it was). Shapes, dtypes and strides
— all a Triton launch specializes on — stay true; the values are not computed, and the summary
counts such ops. Inside do_bench (whose results are thrown away) the limit is BENCHMARK_S.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from irscope import knobs
from irscope.standin.gemm import torch_exact
from irscope.standin.interpret import in_benchmark

DEFAULT_OP_S = knobs.STANDIN_OP_S.default
# What this CPU's torch does per second (2 cores, measured): fp32 GEMM ~2e10 FLOP, 16-bit GEMM
# ~1e9 FLOP (no fast CPU kernel), elementwise ~2e8 elements.
_FLOPS = {"float32": 2e10, "float64": 1e10}
_FLOPS_SLOW = 1e9
_ELEMENTS = 2e8
_RANDOM = 5e7  # random fills (randn, normal_, uniform_, ...): elements per second
_RANDOM_OPS = {
    "randn",
    "rand",
    "randint",
    "randn_like",
    "rand_like",
    "randint_like",
    "normal",
    "normal_",
    "uniform_",
    "random_",
    "bernoulli",
    "bernoulli_",
    "exponential_",
    "log_normal_",
    "cauchy_",
    "geometric_",
    "randperm",
    "multinomial",
}
# 16-bit norms, softmaxes and sums are computed in fp32 and rounded back, as CUDA / ROCm accumulate
# them (CPU torch's 16-bit kernels accumulate less precisely: a layer norm's weight gradient is 0.07
# off; its 16-bit GEMM is also ~50x slower than fp32); 16-bit matrix products in fp64 with one
# rounding, as the interpreter's tl.dot computes them (gemm.py: the two then agree bit for bit)
_GEMMS = {"mm", "bmm", "addmm", "baddbmm", "addbmm", "mv", "addmv", "dot", "vdot"}
_FP32 = _GEMMS | {
    "native_layer_norm",
    "native_layer_norm_backward",
    "native_group_norm",
    "native_group_norm_backward",
    "_fused_rms_norm",
    "_fused_rms_norm_backward",
    "_softmax",
    "_log_softmax",
    "_softmax_backward_data",
    "_log_softmax_backward_data",
    "sum",
    "mean",
    "var",
    "std",
    "var_mean",
    "std_mean",
    "cumsum",
}
BENCHMARK_S = 0.001  # inside do_bench the results are thrown away: only trivial ops are computed


def op_budget_s() -> float:
    """$IRSCOPE_STANDIN_OP_S (knobs.STANDIN_OP_S), else DEFAULT_OP_S."""
    return knobs.STANDIN_OP_S.get()


@dataclass
class ShapeOnly:
    """Ops not computed (shape only): how many, and the first few by name."""

    budget_s: float
    count: int = 0
    ops: dict[str, int] = field(default_factory=dict)

    def note(self) -> str | None:
        if not self.count:
            return None
        names = ", ".join(f"{k} x{v}" for k, v in sorted(self.ops.items(), key=lambda kv: -kv[1])[:4])
        return (
            f"{self.count} torch op{'s' if self.count != 1 else ''} too big for the CPU (estimated over "
            f"{self.budget_s:g} s, or inside do_bench) ran shape-only, values not computed: {names} "
            f"(IRSCOPE_STANDIN_OP_S)"
        )


class _ViewOps:
    """`func in views`: the op returns a view of an input (free; its aliasing must be kept)."""

    def __init__(self):
        self._known: dict[Any, bool] = {}

    def __contains__(self, func: Any) -> bool:
        hit = self._known.get(func)
        if hit is None:
            try:
                hit = any(r.alias_info is not None and not r.alias_info.is_write for r in func._schema.returns)
            except (AttributeError, RuntimeError):  # no schema: treated as a view (always computed)
                hit = True
            self._known[func] = hit
        return hit


def shape_only_mode(stats: ShapeOnly):  # noqa: C901, PLR0915
    """The TorchDispatchMode that runs big ops shape-only (one per session)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten, tree_map

    try:
        from torch.utils.flop_counter import flop_registry
    except ImportError:
        flop_registry = {}
    budget = stats.budget_s
    view_free = {
        torch.ops.aten.empty.memory_format,
        torch.ops.aten.empty_strided.default,
        torch.ops.aten.empty_like.default,
        torch.ops.aten.new_empty.default,
        torch.ops.aten.new_empty_strided.default,
    }
    views = _ViewOps()
    plain = (torch.Tensor, torch.nn.Parameter)

    def to_meta(x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="meta")
        if isinstance(x, torch.device) or (isinstance(x, str) and x in ("cpu", "cuda")):
            return torch.device("meta")
        return x

    def traced(args, kwargs) -> bool:
        """Whether the op is being traced, not run: a fake, functional or proxy tensor (torch.export's,
        Inductor's, Helion's tracing) or a symbolic size among its arguments. Nothing is computed, so
        nothing is estimated: an estimate would compare symbolic sizes (a guard that specialises an
        exported dynamic dimension) and a 16-bit op done in fp32 would put the casts in the graph."""
        flat, _ = tree_flatten((args, kwargs))
        return any(
            isinstance(a, (torch.SymInt, torch.SymFloat, torch.SymBool))
            or (isinstance(a, torch.Tensor) and (type(a) not in plain or a.device.type != "cpu"))
            for a in flat
        )

    def seconds(func, args, kwargs) -> float:
        """The op's estimated CPU time, from the tensors it reads (and its FLOPs if torch counts them)."""
        flat, _ = tree_flatten((args, kwargs))
        tensors = [t for t in flat if isinstance(t, torch.Tensor)]
        elements = sum(t.numel() for t in tensors)
        est = elements / _ELEMENTS
        packet = func._overloadpacket
        if str(packet).split(".")[-1] in _RANDOM_OPS:
            if not tensors or elements == 0:
                meta_out = func(*tree_map(to_meta, args), **tree_map(to_meta, kwargs))
                elements = meta_out.numel() if isinstance(meta_out, torch.Tensor) else 0
            return elements / _RANDOM
        if packet in flop_registry and tensors:
            try:
                meta_out = func(*tree_map(to_meta, args), **tree_map(to_meta, kwargs))
                flops = flop_registry[packet](*args, **kwargs, out_val=meta_out)
                dtype = str(tensors[0].dtype).replace("torch.", "")
                if dtype in ("float16", "bfloat16") and str(packet).split(".")[-1] in _GEMMS:
                    dtype = "float64"  # computed in fp64 (in_fp32, gemm.torch_exact)
                est = max(est, flops / _FLOPS.get(dtype, _FLOPS_SLOW))
            except Exception:  # noqa: BLE001, S110  no meta kernel or flop formula: the element estimate stands
                pass
        return est

    def shape_only(func, args, kwargs):
        meta_out = func(*tree_map(to_meta, args), **tree_map(to_meta, kwargs))
        schema = func._schema
        written = {}
        for i, a in enumerate(schema.arguments):
            if a.alias_info is not None and a.alias_info.is_write:
                value = kwargs.get(a.name) if a.name in kwargs else (args[i] if i < len(args) else None)
                written[a.alias_info.before_set and min(a.alias_info.before_set)] = value
        outs = []
        flat_meta = meta_out if isinstance(meta_out, (tuple, list)) else (meta_out,)
        for ret, m in zip(schema.returns, flat_meta):
            if ret.alias_info is not None and ret.alias_info.before_set:
                alias = min(ret.alias_info.before_set)
                if alias in written:
                    outs.append(written[alias])
                    continue
            if isinstance(m, torch.Tensor):
                outs.append(torch.empty_strided(m.shape, m.stride(), dtype=m.dtype))  # untouched: costs nothing
            else:
                outs.append(m)
        if isinstance(meta_out, (tuple, list)):
            return type(meta_out)(outs)
        return outs[0]

    def in_fp32(func, args, kwargs):
        """A 16-bit norm, softmax or sum computed in fp32 (a GEMM in fp64) and rounded to the dtypes
        torch gives its outputs (None: not one of those)."""
        if str(func._overloadpacket).split(".")[-1] not in _FP32 or "out" in kwargs or func._schema.name.endswith("_"):
            return None
        flat, _ = tree_flatten((args, kwargs))
        if not any(isinstance(a, torch.Tensor) and a.dtype in (torch.float16, torch.bfloat16) for a in flat):
            return None
        meta_out = func(*tree_map(to_meta, args), **tree_map(to_meta, kwargs))
        if str(func._overloadpacket).split(".")[-1] in _GEMMS:
            metas = meta_out if isinstance(meta_out, (tuple, list)) else (meta_out,)
            return torch_exact(func, args, kwargs, [m.dtype if isinstance(m, torch.Tensor) else None for m in metas])
        up = lambda a: a.float() if isinstance(a, torch.Tensor) and a.dtype in (torch.float16, torch.bfloat16) else a
        out = func(*tree_map(up, args), **tree_map(up, kwargs))
        if isinstance(out, torch.Tensor):
            return out.to(meta_out.dtype)
        if isinstance(out, (tuple, list)):
            return type(out)(
                o.to(m.dtype) if isinstance(o, torch.Tensor) and isinstance(m, torch.Tensor) else o
                for o, m in zip(out, meta_out)
            )
        return None

    class ShapeOnlyAboveBudget(TorchDispatchMode):
        """aten ops estimated over the budget: their output's shape, not their values."""

        _irscope_standin = True  # kept out of torch.compile'd code (layers.py)

        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            return False  # else torch wraps __torch_dispatch__ to import torch._dynamo (seconds) on first use

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func in view_free or budget <= 0 or func in views or traced(args, kwargs):
                return func(*args, **kwargs)
            try:
                slow = seconds(func, args, kwargs) > (BENCHMARK_S if in_benchmark() else budget)
            except Exception:  # noqa: BLE001  an op the estimate cannot read is computed
                slow = False
            if slow:
                try:
                    out = shape_only(func, args, kwargs)
                    stats.count += 1
                    name = str(func._overloadpacket).split(".")[-1]
                    stats.ops[name] = stats.ops.get(name, 0) + 1
                    return out
                except Exception:  # noqa: BLE001, S110  no meta kernel for it: computed after all
                    pass
            try:
                out = in_fp32(func, args, kwargs)
            except Exception:  # noqa: BLE001  not computable in fp32: computed as asked
                out = None
            return out if out is not None else func(*args, **kwargs)

    return ShapeOnlyAboveBudget()
