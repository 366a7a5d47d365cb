"""Benchmarks and CUDA graphs on the stand-in GPU: a timing loop runs its function once.

    triton.testing.do_bench / do_bench_cudagraph   run `fn` once (its Triton launches recorded,
                                                   not computed: the result is thrown away) and
                                                   return BENCH_MS, a plausible figure that is NOT
                                                   a measurement (in the shape do_bench returns:
                                                   quantiles, or return_mode "all")
    torch.cuda.CUDAGraph / torch.cuda.graph        capture runs the code once, as a plain call, and
                                                   remembers the Triton launches it made; replay()
                                                   makes those launches again (recorded, computed)

The autotuner's `use_cuda_graph=True` reaches do_bench_cudagraph, so it captures too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from irscope import adapter
from irscope.adapter import runtime as triton_runtime
from irscope.standin.interpret import benchmarking

BENCH_MS = 1.0  # what do_bench says on the stand-in: not a measurement


def do_bench(
    fn: Callable,
    warmup: Any = 25,
    rep: Any = 100,
    grad_to_none: Any = None,
    quantiles: Any = None,
    return_mode: str = "mean",
    **kwargs,
) -> Any:
    """triton.testing.do_bench on the stand-in: one call, a placeholder time (not a measurement)."""
    with benchmarking():
        fn()
    if quantiles is not None:
        return [BENCH_MS] * len(quantiles) if len(quantiles) != 1 else BENCH_MS
    if return_mode == "all":
        return [BENCH_MS]
    return BENCH_MS


def do_bench_cudagraph(
    fn: Callable, rep: Any = 20, grad_to_none: Any = None, quantiles: Any = None, return_mode: str = "mean", **kwargs
) -> Any:
    """triton.testing.do_bench_cudagraph on the stand-in: as do_bench (no graph to build)."""
    return do_bench(fn, grad_to_none=grad_to_none, quantiles=quantiles, return_mode=return_mode)


class CUDAGraph:
    """torch.cuda.CUDAGraph: the Triton launches made while capturing, made again by replay()."""

    def __init__(self, *args, **kwargs):
        self.launches: list[tuple[Any, tuple, dict]] = []
        self._stack: contextlib.ExitStack | None = None

    def capture_begin(self, *args, **kwargs) -> None:
        jit_cls = adapter.jit_function_type()
        current = jit_cls.run
        graph = self

        def run(jit, *a, grid, warmup, **k):
            if not warmup:
                graph.launches.append((jit, a, dict(k, grid=grid)))
            return current(jit, *a, grid=grid, warmup=warmup, **k)

        self._stack = contextlib.ExitStack()
        self._stack.enter_context(triton_runtime.patched(jit_cls, "run", run))

    def capture_end(self) -> None:
        if self._stack is not None:
            self._stack.close()
            self._stack = None

    def replay(self) -> None:
        for jit, a, k in self.launches:
            jit.run(*a, warmup=False, **k)

    def reset(self) -> None:
        self.launches = []

    def instantiate(self) -> None:
        pass

    def enable_debug_mode(self) -> None:
        pass

    def debug_dump(self, *args) -> None:
        pass

    def pool(self) -> tuple[int, int]:
        return (0, 0)


class graph:
    """torch.cuda.graph(g): capture into g for the block (the code runs once, as a plain call)."""

    def __init__(self, cuda_graph: CUDAGraph, pool: Any = None, stream: Any = None, **kwargs):
        self.cuda_graph = cuda_graph

    def __enter__(self):
        self.cuda_graph.capture_begin()
        return self

    def __exit__(self, *exc):
        self.cuda_graph.capture_end()
        return False


def graph_pool_handle() -> tuple[int, int]:
    return (0, 0)


def is_current_stream_capturing() -> bool:
    return False


@contextlib.contextmanager
def benchmarks_once(torch: Any) -> Iterator[None]:
    """do_bench* and CUDA graphs as above, for the session (triton.testing and torch.cuda)."""
    import triton.testing as tt

    with contextlib.ExitStack() as stack:
        stack.enter_context(triton_runtime.patched(tt, "do_bench", do_bench))
        stack.enter_context(triton_runtime.patched(tt, "do_bench_cudagraph", do_bench_cudagraph))
        for name, value in (
            ("CUDAGraph", CUDAGraph),
            ("graph", graph),
            ("graph_pool_handle", graph_pool_handle),
            ("is_current_stream_capturing", is_current_stream_capturing),
        ):
            stack.enter_context(triton_runtime.patched(torch.cuda, name, value))
        yield
