"""Search, for spaces too large to enumerate: --search grid|random|optuna|optuna-cmaes, --trials, --time-budget.

Each generation the strategy proposes configs it has not seen; they compile in parallel (the pool
or Ray), and static pruning comes first: a config that failed to compile, does not fit, spills,
cannot place one block on a multiprocessor (occupancy 0: over the register or shared-memory
budget) or uses more registers than --max-registers is told to the strategy as infeasible and is
never timed, nor proposed again. The rest get their objective: with --time the timed estimate
(timed.py: each generation is one timing batch holding the incumbent as its reference);
without, the static rank (static_score: fewest spilled bytes, then the highest occupancy, then
the fewest registers, as one number). The strategies:

    grid          the combinations in order (what a plain sweep does), up to --trials
    random        uniformly without replacement, from a seeded generator
    optuna        Optuna's TPE through its ask/tell API (pip install irscope[search]), seeded
    optuna-cmaes  Optuna's CMA-ES over each axis's value index (ordered axes: tile sizes, stages)

A seen config that a strategy asks for again (TPE does in small spaces) is told its known result
and does not count as a trial; a space with nothing left unseen ends the search. Nor is a config
proposed that needs at least the shared memory of one that did not fit: every size axis
(BLOCK_*, num_stages: shared memory grows with each) at least as large, every other axis equal;
it is counted as skipped, never compiled.
"""

from __future__ import annotations

import importlib.util
import itertools
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from irscope.errors import BadInput
from irscope.sweep.configs import Config
from irscope.sweep.rank import row

STRATEGIES = ("grid", "random", "optuna", "optuna-cmaes")
SIZE_AXES = ("BLOCK", "num_stages")  # axes whose growth never shrinks shared memory (by name prefix)
ASK_LIMIT = 50      # asks in a row that return seen configs before the strategy counts as exhausted


def check_search(strategy: str | None, trials: int | None, time_budget: float | None, size: int) -> None:
    """--search, --trials, --time-budget, refused before anything compiles."""
    if strategy is None:
        if trials is not None or time_budget is not None:
            raise BadInput("--trials and --time-budget go with --search grid|random|optuna|optuna-cmaes")
        return
    if strategy not in STRATEGIES:
        raise BadInput(f"--search {strategy!r}: not a strategy; give one of {', '.join(STRATEGIES)}")
    if trials is not None and (isinstance(trials, bool) or not isinstance(trials, int) or trials < 1):
        raise BadInput(f"--trials {trials!r}: the number of configs to try must be 1 or more")
    if time_budget is not None and not time_budget > 0:
        raise BadInput(f"--time-budget {time_budget!r}: seconds, > 0, e.g. --time-budget 600")
    if trials is None and time_budget is None and size > 100_000:
        raise BadInput(f"--search {strategy}: the space has {size} configs; bound it with --trials N or "
                       "--time-budget S")


def available(strategy: str) -> tuple[str, str]:
    """(the strategy to run, a note when it is not the one asked for): without Optuna (or cmaes), a search
    degrades to random search, said in one line, rather than failing."""
    if strategy.startswith("optuna") and importlib.util.find_spec("optuna") is None:
        return "random", (f"--search {strategy} needs Optuna (pip install 'irscope[search]'), which is not installed: "
                          "searching with --search random instead")
    if strategy == "optuna-cmaes" and importlib.util.find_spec("cmaes") is None:  # Optuna's CMA-ES runs on it
        return "optuna", ("--search optuna-cmaes needs the cmaes package (pip install cmaes), which is not installed: "
                          "searching with --search optuna (TPE) instead")
    return strategy, ""


def pruned(cfg: Config, max_registers: int | None = None) -> str:
    """Why static checks rule the config out before timing ('' when they do not)."""
    if not cfg.usable:
        return cfg.status
    if cfg.spills:
        return "spills"
    stats = row(cfg)
    if stats.get("occupancy") == 0:
        return "no block fits a multiprocessor (registers or shared memory)"
    if max_registers is not None and (stats.get("registers") or 0) > max_registers:
        return f"{stats['registers']} registers > --max-registers {max_registers}"
    return ""


def static_score(cfg: Config) -> float:
    """The static rank as one number to minimise: spilled bytes, then occupancy, then registers."""
    r = row(cfg)
    return (r["spills"] or 0) * 1e6 + (1 - (r["occupancy"] or 0)) * 1e3 + (r["registers"] or 0) / 1e3


class Strategy:
    """Proposes combinations (value dicts) it has not seen; told each one's objective (None: pruned)."""

    def __init__(self, axes: list[tuple[str, list[Any]]], seed: int) -> None:
        self.axes, self.seed = axes, seed
        self.keys = [k for k, _ in axes]
        self.seen: dict[tuple, float | None] = {}
        self.too_big: list[dict[str, Any]] = []   # configs that did not fit (shared memory)
        self.skipped = 0

    def key(self, values: dict[str, Any]) -> tuple:
        return tuple(repr(values[k]) for k in self.keys)

    def dominated(self, values: dict[str, Any]) -> bool:
        """At least as large as a config that did not fit on every size axis, equal on the others."""
        def covers(small: dict[str, Any]) -> bool:
            for k in self.keys:
                a, b = values[k], small[k]
                if k.startswith(SIZE_AXES) and isinstance(a, (int, float)) and isinstance(b, (int, float)):
                    if a < b:
                        return False
                elif a != b:
                    return False
            return True

        if any(covers(x) for x in self.too_big):
            self.skipped += 1
            self.seen[self.key(values)] = None
            return True
        return False

    def did_not_fit(self, values: dict[str, Any]) -> None:
        self.too_big.append(values)

    def propose(self, n: int) -> list[dict[str, Any]]:
        raise NotImplementedError

    def tell(self, values: dict[str, Any], score: float | None) -> None:
        self.seen[self.key(values)] = score


class Grid(Strategy):
    def __init__(self, axes, seed):
        super().__init__(axes, seed)
        self.it = itertools.product(*[v for _, v in axes])

    def propose(self, n):
        out = []
        for combo in self.it:
            values = dict(zip(self.keys, combo))
            if not self.dominated(values):
                out.append(values)
            if len(out) == n:
                break
        return out


class Random(Strategy):
    """Uniform over the space without replacement: indices drawn from a seeded generator, decoded."""

    def __init__(self, axes, seed):
        super().__init__(axes, seed)
        self.rng = random.Random(seed)
        self.size = 1
        for _, v in axes:
            self.size *= len(v)
        self.drawn: set[int] = set()

    def propose(self, n):
        out = []
        while len(out) < n and len(self.drawn) < self.size:
            i = self.rng.randrange(self.size)
            if i in self.drawn:
                continue
            self.drawn.add(i)
            values = {}
            for k, vals in reversed(self.axes):
                i, j = divmod(i, len(vals))
                values[k] = vals[j]
            values = {k: values[k] for k in self.keys}
            if not self.dominated(values):
                out.append(values)
        return out


class Optuna(Strategy):
    """TPE (or CMA-ES) through Optuna's ask/tell: each axis a choice of value index."""

    def __init__(self, axes, seed, cmaes: bool = False):
        super().__init__(axes, seed)
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        sampler = (optuna.samplers.CmaEsSampler(seed=seed) if cmaes
                   else optuna.samplers.TPESampler(seed=seed, multivariate=True))
        self.optuna = optuna
        self.study = optuna.create_study(direction="minimize", sampler=sampler)
        self.cmaes = cmaes
        self.trials: dict[tuple, Any] = {}     # a proposed combination's open trial
        self.explorer: Random | None = None    # random draws once the sampler only repeats itself

    def _ask(self):
        trial = self.study.ask()
        if self.cmaes:
            idx = {k: trial.suggest_int(k, 0, len(v) - 1) for k, v in self.axes}
        else:
            idx = {k: trial.suggest_categorical(k, list(range(len(v)))) for k, v in self.axes}
        return trial, {k: dict(self.axes)[k][i] for k, i in idx.items()}

    def propose(self, n):
        out, repeats = [], 0
        while len(out) < n and repeats < ASK_LIMIT:
            trial, values = self._ask()
            k = self.key(values)
            if k in self.seen or k in self.trials or self.dominated(values):  # known: told again, not a trial
                self._finish(trial, self.seen.get(k))
                repeats += 1
                continue
            repeats = 0
            self.trials[k] = trial
            out.append(values)
        if len(out) < n:
            out += self._explore(n - len(out), {self.key(v) for v in out})
        return out

    def _explore(self, n: int, taken: set) -> list[dict[str, Any]]:
        """The sampler keeps proposing what is known (TPE converged on a corner of a large space): unseen
        configs drawn at random, enqueued so Optuna still learns from them. The space is exhausted only
        when no unseen, undominated config is left (the draws are bounded, then a scan decides)."""
        if self.explorer is None:
            self.explorer = Random(self.axes, self.seed + 1)
        out = []
        for values in self.explorer.propose(4 * n):
            k = self.key(values)
            if len(out) == n:
                break
            if k in self.seen or k in self.trials or k in taken:
                continue
            self.study.enqueue_trial({name: dict(self.axes)[name].index(v) for name, v in values.items()})
            trial, asked = self._ask()
            self.trials[self.key(asked)] = trial
            out.append(asked)
        return out

    def tell(self, values, score):
        super().tell(values, score)
        trial = self.trials.pop(self.key(values), None)
        if trial is not None:
            self._finish(trial, score)

    def _finish(self, trial, score):
        if score is None:
            self.study.tell(trial, state=self.optuna.trial.TrialState.FAIL)
        else:
            self.study.tell(trial, score)


def make_strategy(name: str, axes: list[tuple[str, list[Any]]], seed: int) -> Strategy:
    if name == "grid":
        return Grid(axes, seed)
    if name == "random":
        return Random(axes, seed)
    return Optuna(axes, seed, cmaes=name == "optuna-cmaes")


@dataclass
class SearchLog:
    """What a search did: its strategy, the configs it tried (in order), how it ended."""

    strategy: str
    objective: str
    proposed: int = 0
    pruned: int = 0
    skipped: int = 0        # never compiled: needs the shared memory of one that did not fit
    generations: int = 0
    stopped: str = ""


def search(strategy: Strategy, make: Callable[[int, dict[str, Any]], Config], *, trials: int | None,
           time_budget: float | None, width: int, compile_batch: Callable[[list[Config]], None],
           objective: Callable[[list[Config]], dict[int, float]] | None, max_registers: int | None,
           log: SearchLog) -> list[Config]:
    """Propose, compile, prune statically, score (objective: timed estimates by config index; None:
    the static rank), tell; until --trials, --time-budget or the space runs out. Every config tried."""
    tried: list[Config] = []
    start = time.perf_counter()
    while True:
        left = None if trials is None else trials - len(tried)
        if left is not None and left <= 0:
            log.stopped = f"--trials {trials} reached"
            break
        if time_budget is not None and time.perf_counter() - start >= time_budget:
            log.stopped = f"--time-budget {time_budget:g} s spent"
            break
        proposals = strategy.propose(width if left is None else min(width, left))
        if not proposals:
            log.stopped = "every config of the space was tried" if strategy.seen else "the strategy proposed nothing"
            break
        batch = [make(len(tried) + i, values) for i, values in enumerate(proposals)]
        tried += batch
        log.proposed += len(batch)
        log.generations += 1
        compile_batch(batch)
        live = [c for c in batch if not pruned(c, max_registers)]
        scores = objective(live) if objective is not None and live else {c.index: static_score(c) for c in live}
        for c in batch:
            why = pruned(c, max_registers)
            log.pruned += bool(why)
            if c.status == "does not fit":
                strategy.did_not_fit(c.values)
            strategy.tell(c.values, None if why else scores.get(c.index))
    log.skipped = strategy.skipped
    return tried
