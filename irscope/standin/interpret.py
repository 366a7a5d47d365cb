"""The stand-in GPU computes results: each recorded launch is also run by Triton's own interpreter.

A script's checks (`torch.testing.assert_close(y, ref)`) then pass and it goes on to its next
kernel. After the Recorder has recorded a launch (its compile is skipped in compile-only mode),
`Executor.launch` runs the kernel's Python function on the stand-in tensors (real CPU tensors)
with TRITON_INTERPRET's machinery (triton/runtime/interpreter.py: the AST rewrite, the language
patched onto numpy, GridExecutor's argument conversion), one program at a time, 3.6-3.9.

Bounded, so a script that launches big kernels still ends:
    per launch   IRSCOPE_INTERPRET_LAUNCH_S (default 60 s): a launch predicted (from its first
                 program) or found to take longer is stopped and left not computed
    whole run    IRSCOPE_INTERPRET_TOTAL_S (default 120 s): once spent, no later launch is computed,
                 and the summary says from which launch on
Launches made while benchmarking (do_bench, the autotuner's trials) are not computed: their
results are thrown away. A kernel the interpreter cannot run (Gluon, an op it lacks) is named
with the reason once and not computed again; never fatal.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib
import inspect
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from irscope import adapter, knobs
from irscope.compile import status
from irscope.standin.bf16 import bf16_in_fp32
from irscope.standin.gemm import exact_dots

DEFAULT_LAUNCH_S = knobs.INTERPRET_LAUNCH_S.default
DEFAULT_TOTAL_S = knobs.INTERPRET_TOTAL_S.default

_benchmarking: contextvars.ContextVar[bool] = contextvars.ContextVar("irscope_benchmarking", default=False)


@contextlib.contextmanager
def benchmarking() -> Iterator[None]:
    """Launches inside (do_bench's one call, an autotuner trial) are recorded, not computed."""
    token = _benchmarking.set(True)
    try:
        yield
    finally:
        _benchmarking.reset(token)


def in_benchmark() -> bool:
    return _benchmarking.get()


class _OverBudget(Exception):
    """Raised inside an interpreted program when its launch's deadline has passed."""


@dataclass
class Computed:
    """What the interpreter did during a run: for the summary and --json."""

    launch_budget_s: float
    total_budget_s: float
    computed: int = 0  # launches whose results were computed
    seconds: float = 0.0  # interpreter time spent
    not_computed_from: int | None = None  # the launch from which on nothing was computed (run budget)
    over_launch_budget: list[str] = field(default_factory=list)  # "launch N (kernel)" left not computed
    cannot_run: dict[str, str] = field(default_factory=dict)  # kernel -> why the interpreter cannot run it
    off: str | None = None  # why no launch is computed at all
    # launches recorded but not computed, by why: benchmarking (do_bench, autotuner trials: results
    # thrown away), cannot_run, over_launch_budget, run_budget, off
    not_computed_by: dict[str, int] = field(default_factory=dict)

    def skip(self, why: str) -> None:
        """One launch not computed, for `why` (a key of not_computed_by)."""
        self.not_computed_by[why] = self.not_computed_by.get(why, 0) + 1

    @property
    def not_computed(self) -> int:
        return sum(self.not_computed_by.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "computed": self.computed,
            "not_computed": self.not_computed,
            "not_computed_by": dict(self.not_computed_by),
            "seconds": round(self.seconds, 2),
            "launch_budget_s": self.launch_budget_s,
            "total_budget_s": self.total_budget_s,
            "not_computed_from_launch": self.not_computed_from,
            "over_launch_budget": list(self.over_launch_budget),
            "cannot_run": dict(self.cannot_run),
            "off": self.off,
        }


class Executor:
    """Runs recorded launches with Triton's interpreter, within the budgets."""

    def __init__(self, launch_s: float | None = None, total_s: float | None = None):
        self.stats = Computed(
            float(knobs.INTERPRET_LAUNCH_S.given(launch_s)), float(knobs.INTERPRET_TOTAL_S.given(total_s))
        )
        self._lock = threading.Lock()  # the interpreter's builder is one global object
        self._refused: dict[int, str] = {}
        self._interp: Any = None  # triton.runtime.interpreter, once loaded
        if self.stats.total_budget_s <= 0 or self.stats.launch_budget_s <= 0:
            self.stats.off = "the interpreter's budget is 0"
        else:
            try:
                import numpy  # noqa: F401  (the interpreter computes with numpy)
                from triton.runtime import interpreter

                self._interp = interpreter
            except ImportError as e:
                self.stats.off = f"Triton's interpreter cannot load here ({e})"

    def launch(self, jit: Any, number: int, args: tuple, kwargs: dict[str, Any], grid: Any) -> None:
        """Compute launch `number` (1-based) of `jit` on its arguments, if the budgets allow."""
        if self._interp is None or in_benchmark():
            with self._lock:
                self.stats.skip("off" if self._interp is None else "benchmarking")
            return
        name = getattr(getattr(jit, "fn", None), "__name__", "kernel")
        with self._lock:
            left = self.stats.total_budget_s - self.stats.seconds
            if left <= 0:
                if self.stats.not_computed_from is None:
                    self.stats.not_computed_from = number
                self.stats.skip("run_budget")
                return
            why = self._refused.get(id(jit))
            if why is not None:
                self.stats.skip("cannot_run")
                return
            if adapter.is_gluon(jit):
                self._refuse(jit, name, "a Gluon kernel (Triton's interpreter runs only triton.language)")
                return
            budget = min(self.stats.launch_budget_s, left)
            start = time.monotonic()
            status.computing(number, name)  # a process this launch ends says which it was
            try:
                self._run(jit, args, kwargs, grid, start, budget)
                self.stats.computed += 1
            except _OverBudget:
                self._over(number, name, budget)
            except Exception as e:  # noqa: BLE001  the interpreter's own limits: named once, never fatal
                cause = _root(e)
                if isinstance(cause, _OverBudget):  # raised inside a helper: the interpreter wraps it
                    self._over(number, name, budget)
                    return
                text = str(cause).strip().splitlines()[0] if str(cause).strip() else ""
                self._refuse(jit, name, f"{type(cause).__name__}: {text}"[:300])
            finally:
                status.computing(0)
                self.stats.seconds += time.monotonic() - start

    def _over(self, number: int, name: str, budget: float) -> None:
        if budget < self.stats.launch_budget_s:  # the run's budget ran out during this launch
            self.stats.not_computed_from = number
            self.stats.skip("run_budget")
        else:
            self.stats.over_launch_budget.append(f"launch {number} ({name})")
            self.stats.skip("over_launch_budget")

    def _refuse(self, jit: Any, name: str, why: str) -> None:
        self._refused[id(jit)] = why
        self.stats.cannot_run.setdefault(name, why)
        self.stats.skip("cannot_run")

    def _run(self, jit: Any, args: tuple, kwargs: dict[str, Any], grid: Any, start: float, budget: float) -> None:
        """GridExecutor.__call__, with a deadline checked on every load and store."""
        import triton.language as tl
        from triton import knobs

        interp = self._interp
        fn = interp.InterpretedFunction(jit.fn).rewrite()
        params = adapter.kernel_params(jit)
        executor = interp.GridExecutor(fn, [p.name for p in params], grid)
        # The JIT's constexprs, as compiled. GridExecutor reads them from the rewritten function's
        # annotations, strings there (interpreter.py's `from __future__ import annotations` reaches its
        # compile()) that it knows only as `tl.constexpr`: `N: triton.language.constexpr` (ninetoothed's
        # generated kernels) would reach the kernel as a tensor, and plain TRITON_INTERPRET=1 fails on it.
        executor.constexprs = [p.name for p in params if p.is_constexpr]
        argspec = inspect.getfullargspec(fn)
        kw = {k: v for k, v in kwargs.items() if k in argspec.args or k in argspec.kwonlyargs}
        args_hst, kwargs_hst = executor._init_args_hst(args, kw)
        grid3 = _grid(grid, jit, args, kwargs)
        programs = grid3[0] * grid3[1] * grid3[2]
        deadline = start + budget
        builder = interp.interpreter_builder
        with contextlib.ExitStack() as stack:
            stack.enter_context(_deadline_on(builder, deadline))
            stack.enter_context(exact_dots(interp, builder))  # 16-bit tl.dot as torch's GEMMs compute it
            stack.enter_context(bf16_in_fp32(interp, builder))  # bf16 arithmetic in fp32, rounded as on the chip
            stack.enter_context(_knob(knobs.runtime, "interpret", True))
            scope = _patch_lang(interp, fn)
            stack.callback(scope.restore)
            imported = _imported_libdevice(fn.__globals__)
            _patch_libdevice(interp, scope)
            _rebind_libdevice(fn.__globals__, imported, stack)
            _loop_indices(interp, scope, fn.__globals__, stack)
            patched = {id(v) for v in fn.__globals__.values() if v is tl or v is tl.core}
            stack.enter_context(_helpers_interpreted(interp, patched, stack))
            bound = inspect.getcallargs(fn, *args_hst, **kwargs_hst)
            bound = {n: a if n in executor.constexprs else _scalar(interp, a) for n, a in bound.items()}
            builder.set_grid_dim(*grid3)
            done = 0
            for x in range(grid3[0]):
                for y in range(grid3[1]):
                    for z in range(grid3[2]):
                        builder.set_grid_idx(x, y, z)
                        fn(**bound)
                        done += 1
                        if done == 1:
                            first = time.monotonic()  # the first program pays for the rewrite and patching
                        elif done == 3 and (time.monotonic() - first) / 2 * (programs - 1) > deadline - first:
                            raise _OverBudget()  # two programs say the launch will not fit
        executor._restore_args_dev(args, args_hst, kw, kwargs_hst)


def _scalar(interp: Any, arg: Any) -> Any:
    """A launch argument as the compiled kernel sees it. Triton's interpreter leaves a float a Python
    float, where the compiled kernel gets an fp32 scalar (its `.to(...)` works: liger's RMSNorm
    calls `offset.to(tl.float32)`); bools, ints, pointers and the rest go through _implicit_cvt."""
    if isinstance(arg, float):
        import numpy as np
        import triton.language as tl

        return tl.tensor(interp.TensorHandle(np.array([arg], dtype=np.float32), tl.float32), tl.float32)
    return interp._implicit_cvt(arg)


def _patch_lang(interp: Any, fn: Any) -> Any:
    """interpreter._patch_lang, with 3.9's tensor.__index__ (int of a 1-element array, which
    NumPy 2.4 refuses: 3.6's `int(data)` fails on tl.range(tl.program_id(0), ...))."""
    import triton.language as tl

    scope = interp._patch_lang(fn)
    scope.set_attr(tl.tensor, "__index__", lambda self: int(self.handle.data.squeeze()))
    return scope


_NUMPY_LIBDEVICE = {
    "tanh": "tanh",
    "expm1": "expm1",
    "log1p": "log1p",
    "log10": "log10",
    "pow": "power",
    "atan": "arctan",
    "atan2": "arctan2",
    "asin": "arcsin",
    "acos": "arccos",
    "tan": "tan",
    "sinh": "sinh",
    "cosh": "cosh",
    "asinh": "arcsinh",
    "acosh": "arccosh",
    "atanh": "arctanh",
    "trunc": "trunc",
    "nearbyint": "rint",
    "rint": "rint",
    "fmod": "fmod",
    "hypot": "hypot",
    "copysign": "copysign",
    "nextafter": "nextafter",
    "isnan": "isnan",
    "isinf": "isinf",
    "signbit": "signbit",
    "isfinited": "isfinite",
    "finitef": "isfinite",
}
_BOOL_LIBDEVICE = {"isnan", "isinf", "signbit", "isfinited", "finitef"}


def _patch_libdevice(interp: Any, scope: Any) -> None:
    """triton.language.extra.libdevice's functions, for the interpreter.

    They are stubs that the compiler maps to the backend's libdevice (its module_map); the
    interpreter (3.6-3.9) maps nothing, so `libdevice.erf(x)` is None there. Torch Inductor's
    kernels call them (triton_helpers.libdevice). Here each is tl.math's function of the same name
    (which the interpreter runs) or NumPy's, put back with the launch's other patches.
    """
    import numpy as np
    import triton.language as tl

    try:
        from triton.language.extra import libdevice
    except ImportError:
        return
    for name in dir(libdevice):
        if name.startswith("_") or not callable(getattr(libdevice, name)):
            continue
        if callable(vars(tl.math).get(name)):
            scope.set_attr(libdevice, name, getattr(tl.math, name))
        elif name in _NUMPY_LIBDEVICE:
            scope.set_attr(
                libdevice,
                name,
                _numpy_elementwise(interp, tl, getattr(np, _NUMPY_LIBDEVICE[name]), name in _BOOL_LIBDEVICE),
            )


def _imported_libdevice(scope_globals: dict[str, Any]) -> dict[str, str]:
    """The libdevice functions a kernel's module imported by name (liger-kernel's `from
    triton.language.extra.libdevice import rsqrt`): global -> libdevice name. Patching the module
    does not reach them; read before _patch_libdevice replaces the module's functions."""

    stubs = {}
    for modname in ("triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice"):
        try:
            mod = importlib.import_module(modname)
        except ImportError:
            continue
        stubs.update({id(f): name for name, f in vars(mod).items() if callable(f) and not name.startswith("_")})
    return {k: stubs[id(v)] for k, v in scope_globals.items() if id(v) in stubs}


def _rebind_libdevice(scope_globals: dict[str, Any], imported: dict[str, str], stack: contextlib.ExitStack) -> None:
    """Each imported libdevice global is the patched function for the launch, then put back."""
    try:
        from triton.language.extra import libdevice
    except ImportError:
        return
    old = {k: scope_globals[k] for k in imported}
    stack.callback(scope_globals.update, old)
    for k, name in imported.items():
        scope_globals[k] = getattr(libdevice, name, old[k])


def _numpy_elementwise(interp: Any, tl: Any, np_fn: Any, to_bool: bool):
    def call(*args, **kwargs):
        ref = next(a for a in args if isinstance(a, tl.tensor))
        data = [a.handle.data if isinstance(a, tl.tensor) else a for a in args]
        out = np_fn(*data)
        if to_bool:
            ty = tl.block_type(tl.int1, ref.shape) if ref.type.is_block() else tl.int1
            return tl.tensor(interp.TensorHandle(np.asarray(out, dtype=np.bool_), tl.int1), ty)
        out = np.asarray(out, dtype=ref.handle.data.dtype)
        return tl.tensor(interp.TensorHandle(out, ref.dtype.scalar), ref.type)

    import numpy as np

    return call


class LoopIndex(int):
    """A `for i in range(...)` / `tl.range` loop variable under the interpreter.

    Compiled, the variable is an int32 scalar tensor (the loop is scf.for), so kernels call
    `i.to(tl.int64)` on it (liger's, fla's: 64-bit offsets); the interpreter's loop is Python's,
    whose int has no `.to`. This int has one, and its integer arithmetic stays a LoopIndex
    (`(i * BLOCK).to(tl.int64)`); anything else is the int it is."""

    interp: Any = None  # triton.runtime.interpreter, set by _loop_indices

    def to(self, dtype: Any, fp_downcast_rounding: Any = None, bitcast: bool = False) -> Any:
        tensor = LoopIndex.interp._implicit_cvt(int(self))  # int32 (int64 past its range), as compiled
        return tensor.to(dtype, fp_downcast_rounding=fp_downcast_rounding, bitcast=bitcast)


def _int_op(name: str):
    op = getattr(int, name)

    def run(self, *other):
        out = op(self, *other)
        return LoopIndex(out) if type(out) is int else out

    run.__name__ = name
    return run


for _name in (
    "__add__",
    "__radd__",
    "__sub__",
    "__rsub__",
    "__mul__",
    "__rmul__",
    "__floordiv__",
    "__rfloordiv__",
    "__mod__",
    "__rmod__",
    "__neg__",
    "__lshift__",
    "__rshift__",
    "__and__",
    "__or__",
    "__xor__",
):
    setattr(LoopIndex, _name, _int_op(_name))


def _loop_range(*args: Any, **kwargs: Any) -> Iterator[LoopIndex]:
    """range(...) (builtins) and tl.range(...) (the interpreter's _new_range) with LoopIndex values."""
    for i in _python_range(*args, **kwargs):
        yield LoopIndex(i)


def _python_range(arg1: Any, arg2: Any = None, step: Any = None, **_kwargs: Any) -> range:
    """tl.range's bounds (num_stages, loop_unroll_factor, ... change nothing here) as Python's range."""
    start, end = (0, arg1) if arg2 is None else (arg1, arg2)
    return range(start, end, 1 if step is None else step)


def _loop_indices(interp: Any, scope: Any, scope_globals: dict[str, Any], stack: contextlib.ExitStack) -> None:
    """For the launch, the kernel's module sees `range` as _loop_range (a module global shadowing
    the builtin, put back after) and, with `scope`, tl.range as well (tl.static_range stays
    Python's: compiled, its variable is a constexpr)."""
    import triton.language as tl

    LoopIndex.interp = interp
    if scope is not None:
        scope.set_attr(tl, "range", _loop_range)
    had = "range" in scope_globals
    old = scope_globals.get("range")
    scope_globals["range"] = _loop_range
    stack.callback(lambda: scope_globals.__setitem__("range", old) if had else scope_globals.pop("range", None))


def _root(e: BaseException) -> BaseException:
    """The innermost cause (InterpreterError wraps what a helper function raised)."""
    seen = 0
    while e.__cause__ is not None and seen < 20:
        e, seen = e.__cause__, seen + 1
    return e


def _grid(grid: Any, jit: Any, args: tuple, kwargs: dict[str, Any]) -> tuple[int, int, int]:
    """The launch grid as three ints, computed as JITFunction.run does (a callable gets the bound args)."""
    if callable(grid):
        sig = jit.signature
        bound = sig.bind_partial(*args, **{k: v for k, v in kwargs.items() if k in sig.parameters})
        bound.apply_defaults()
        grid = grid(dict(kwargs, **bound.arguments))
    g = [int(v) for v in grid]
    g = (g + [1, 1, 1])[:3]
    return g[0], g[1], g[2]


@contextlib.contextmanager
def _deadline_on(builder: Any, deadline: float) -> Iterator[None]:
    """Every load, store and dot of the interpreted launch checks the deadline (instance attributes)."""
    names = [
        n
        for n in dir(type(builder))
        if n.startswith("create_") and any(w in n for w in ("load", "store", "dot", "atomic"))
    ]
    originals = {}

    def checked(method):
        def run(*a, **k):
            if time.monotonic() > deadline:
                raise _OverBudget()
            return method(*a, **k)

        return run

    for n in names:
        originals[n] = getattr(builder, n)
        setattr(builder, n, checked(originals[n]))
    try:
        yield
    finally:
        for n in names:
            with contextlib.suppress(AttributeError):
                delattr(builder, n)


@contextlib.contextmanager
def _helpers_interpreted(interp: Any, patched: set[int], stack: contextlib.ExitStack) -> Iterator[None]:
    """@triton.jit helpers the kernel calls are interpreted too (under TRITON_INTERPRET they would be
    InterpretedFunctions; here they are JITFunctions, whose __call__ refuses outside a compile).

    Not InterpretedFunction.__call__: it patches triton.language on every call (tl.sum and tl.max
    are such helpers: thousands of calls) and leaves it patched (3.6). A helper whose module sees
    a language module the launch has not patched yet (tl.core, say) patches it once, put back
    with the launch's other patches (`stack`); `patched` holds the ids of the modules patched.
    """
    import triton.language as tl

    jit_cls = adapter.jit_function_type()
    cache: dict[int, Any] = {}

    def call(self, *args, **kwargs):
        f = cache.get(id(self))
        if f is None:
            f = cache[id(self)] = interp.InterpretedFunction(self.fn)
        langs = {id(v) for v in self.fn.__globals__.values() if v is tl or v is tl.core}
        if not langs <= patched:
            scope = _patch_lang(interp, self.fn)
            stack.callback(scope.restore)
            _loop_indices(interp, scope, self.fn.__globals__, stack)
            patched.update(langs)
        elif self.fn.__globals__.get("range") is not _loop_range:
            _loop_indices(interp, None, self.fn.__globals__, stack)
        try:
            return f.rewrite()(*args, **kwargs)
        except Exception as e:
            if isinstance(_root(e), _OverBudget):
                raise
            raise interp.InterpreterError(repr(e)) from e

    def bind(self, obj, owner=None):
        # `x.sum(axis=0)`: tl.core's _tensor_member_fn puts the @jit function itself on the tensor class
        # (the compiler's code generator passes the tensor); a plain TRITON_INTERPRET run has an
        # InterpretedFunction there, wrapped so that the tensor is bound. Bound here the same way, and
        # only for Triton's tensors: a @jit kernel kept as a class attribute elsewhere stays itself.
        return functools.partial(call, self, obj) if isinstance(obj, tl.core.tensor) else self

    saved = {n: vars(jit_cls).get(n) for n in ("__call__", "__get__") if n in vars(jit_cls)}
    jit_cls.__call__ = call
    jit_cls.__get__ = bind
    try:
        yield
    finally:
        for n in ("__call__", "__get__"):
            if n in saved:
                setattr(jit_cls, n, saved[n])
            else:
                delattr(jit_cls, n)


@contextlib.contextmanager
def _knob(obj: Any, name: str, value: Any) -> Iterator[None]:
    try:
        old = getattr(obj, name)
        setattr(obj, name, value)
    except (AttributeError, TypeError, ValueError):  # a knob this Triton does not have
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            setattr(obj, name, old)
