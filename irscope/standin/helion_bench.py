"""Helion's autotuner on the stand-in GPU: its timers run each candidate once and answer a placeholder.

Helion times configs with timers of its own (helion/autotuner/benchmarking.py: do_bench,
interleaved_bench and their generic/CUDA-graph forms; compute_repeat, which its examples' run_example
asks first how often to time, by timing each function through CUDA-graph replays), imported by name
into the modules that use them. On the stand-in there is nothing to time, so while it is up each of
these runs its function(s) once, inside `benchmarking()` (the Triton launches are recorded and
captured, not computed: the results are thrown away), and answers BENCH_MS — not a measurement (or,
for compute_repeat, the least count). Every config the autotuner compiles is still captured and
labelled; the one it picks is not a GPU's pick, and the run's notes say so.

A search (`BaseSearch.autotune`: the accuracy baseline, then each candidate run once to check its output,
then timed) runs inside `benchmarking()` as a whole, with Helion's accuracy check off for its duration:
on a GPU each candidate's output is compared with the baseline's, but on the stand-in neither is computed
(computing hundreds of candidates would spend the interpreter's budget of the whole run, and the launch
the script then makes with the chosen config would be left uncomputed: its own check fails). The search
picks its config from placeholder timings anyway; the script's own launches after it are computed.

Helion is loaded when the script imports it, after the stand-in is up: a finder on sys.meta_path
puts the placeholders in each `helion.autotuner.*` module as it loads (and into those already loaded),
and takes them out again when the stand-in comes down.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import sys
from collections.abc import Callable, Iterator
from typing import Any

from irscope.standin.bench import BENCH_MS
from irscope.standin.interpret import benchmarking

PACKAGE = "helion.autotuner"
SINGLE = ("do_bench", "do_bench_generic", "do_bench_cuda_graph")
MANY = ("interleaved_bench", "interleaved_bench_generic")
REPEAT = ("compute_repeat", "compute_repeat_generic")  # how many times to time: run_example's first question
SEARCH = ("helion.autotuner.base_search", "BaseSearch")  # the module and class whose autotune() is a search


class HelionTimers:
    """The placeholders, and how many timings they answered (for the run's notes)."""

    def __init__(self) -> None:
        self.timed = 0
        self.searches = 0
        self._originals: dict[tuple[str, str], Any] = {}
        self._search: tuple[type, Any] | None = None  # BaseSearch and its own autotune, while patched

    def one(self, fn: Callable[[], Any], *args: Any, quantiles: Any = None, **kwargs: Any) -> Any:
        self.timed += 1
        with benchmarking():
            fn()
        if quantiles is not None:
            return tuple(BENCH_MS for _ in quantiles)
        return BENCH_MS

    def many(self, fns: list[Callable[[], Any]], *args: Any, **kwargs: Any) -> list[float]:
        self.timed += len(fns)
        with benchmarking():
            for fn in fns:
                fn()
        return [BENCH_MS] * len(fns)

    def repeat(self, fn: Callable[[], Any], *args: Any, min_repeat: int = 10, **kwargs: Any) -> int:
        """compute_repeat: on a GPU it times `fn` a few times (through a CUDA graph's replays when asked) to
        choose how often to time it; here `fn` runs once, not computed, and the answer is the least count."""
        with benchmarking():
            fn()
        return int(min_repeat)

    def search(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """BaseSearch.autotune, run as a trial: its launches captured, not computed, no accuracy check."""
        timers = self

        def autotune(search: Any, *args: Any, **kwargs: Any) -> Any:
            timers.searches += 1
            settings: Any = getattr(search, "settings", None)
            checked = bool(getattr(settings, "autotune_accuracy_check", False))
            if checked:
                settings.autotune_accuracy_check = False
            try:
                with benchmarking():
                    return original(search, *args, **kwargs)
            finally:
                if checked:
                    settings.autotune_accuracy_check = True

        return autotune

    def patch(self, module: Any) -> None:
        placeholders = {**dict.fromkeys(SINGLE, self.one), **dict.fromkeys(MANY, self.many)}
        placeholders.update(dict.fromkeys(REPEAT, self.repeat))
        for name, placeholder in placeholders.items():
            if callable(getattr(module, name, None)) and (module.__name__, name) not in self._originals:
                self._originals[(module.__name__, name)] = getattr(module, name)
                setattr(module, name, placeholder)
        cls = getattr(module, SEARCH[1], None) if module.__name__ == SEARCH[0] else None
        if isinstance(cls, type) and self._search is None and "autotune" in vars(cls):
            self._search = (cls, vars(cls)["autotune"])
            cls.autotune = self.search(vars(cls)["autotune"])  # type: ignore[attr-defined]

    def restore(self) -> None:
        for (mod_name, name), original in self._originals.items():
            module = sys.modules.get(mod_name)
            if module is not None:
                setattr(module, name, original)
        self._originals.clear()
        if self._search is not None:
            cls, original = self._search
            cls.autotune = original  # type: ignore[attr-defined]
            self._search = None

    def notes(self) -> list[str]:
        notes = []
        if self.timed:
            notes.append(
                f"Helion's autotuner timed {self.timed} candidate{'s' if self.timed != 1 else ''} on the stand-in "
                f"GPU: each ran once (its launches captured, not computed) and was given {BENCH_MS:g} ms, not a "
                f"measurement; every config it compiled is captured, but the one it picked is not a GPU's pick"
            )
        if self.searches:
            notes.append(
                f"Helion's autotuner searched {self.searches} time{'s' if self.searches != 1 else ''} on the "
                "stand-in GPU with its accuracy check off: its baseline and candidates were launched and "
                "captured, not computed, so there was no output to check; the launches after each search are computed"
            )
        return notes


class _PatchOnLoad(importlib.abc.MetaPathFinder):
    """Puts the placeholders into each helion.autotuner module right after it executes."""

    def __init__(self, timers: HelionTimers):
        self.timers = timers

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if not name.startswith(PACKAGE):
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Patching(spec.loader, self.timers)
                return spec
        return None


class _Patching(importlib.abc.Loader):
    def __init__(self, loader: Any, timers: HelionTimers):
        self.loader, self.timers = loader, timers

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.loader.exec_module(module)
        self.timers.patch(module)


@contextlib.contextmanager
def helion_timers() -> Iterator[HelionTimers]:
    """While entered (the stand-in is up), Helion's timers are placeholders; put back on exit."""
    timers = HelionTimers()
    finder = _PatchOnLoad(timers)
    quiet = _no_tqdm_monitor()
    for name, module in list(sys.modules.items()):
        if name.startswith(PACKAGE) and module is not None:
            timers.patch(module)
    sys.meta_path.insert(0, finder)
    try:
        yield timers
    finally:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(finder)
        timers.restore()
        quiet()


def _no_tqdm_monitor() -> Callable[[], None]:
    """tqdm's monitor thread off while the stand-in is up (Helion's and torch.fx's progress bars start
    one, which outlives the script and reads as a thread the script left running); the undo."""
    try:
        import tqdm
    except ImportError:
        return lambda: None
    old = tqdm.tqdm.monitor_interval
    tqdm.tqdm.monitor_interval = 0

    def undo() -> None:
        tqdm.tqdm.monitor_interval = old

    return undo
