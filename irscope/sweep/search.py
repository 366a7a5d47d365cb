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

Three things make the searches (random, optuna, optuna-cmaes) settle a GEMM-like space:

    the base config first   the first generation holds the config the sweep started from (the
                            signature's constexprs, the --set options, else the backend's defaults)
                            when it lies in the space: the kernel engineer's starting point is
                            measured, and TPE learns from it
    TPE's settings          multivariate (the axes interact: a tile's best stages depend on its
                            size), constant liar (a generation is asked before any of it is told:
                            the open trials count as bad, so one generation spreads out instead
                            of asking 16 times for the same corner), n_startup_trials of one
                            generation, and the configs pruned statically told as infeasible
                            (constraints) rather than failed: TPE learns where configs do not fit
    local refinement        (optuna, optuna-cmaes) from REFINE_FROM of the trials or the time budget
                            a quarter of each generation, from REFINE_AT all of it: the unseen
                            neighbours of the best configs so far (one axis
                            moved one value: GROUP_M, num_stages, BLOCK_K, num_warps first, then
                            the others) are proposed before the sampler's own asks: a hill climb
                            that settles the axes TPE leaves unsettled in a few hundred trials
                            (the last 2-5 % on a GEMM). Deterministic: the same seed, the same
                            proposals; never a config dominated by one that did not fit, never
                            one seen (pruned or timed) before
"""

from __future__ import annotations

import importlib.util
import itertools
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from irscope.core import adapter
from irscope.errors import BadInput
from irscope.sweep.configs import Config
from irscope.sweep.rank import row

STRATEGIES = ("grid", "random", "optuna", "optuna-cmaes")
SIZE_AXES = ("BLOCK", "num_stages")  # axes whose growth never shrinks shared memory (by name prefix)
ASK_LIMIT = 50      # asks in a row that return seen configs before the strategy counts as exhausted
REFINE_FROM = 1 / 3  # from this share of the trials or the time budget, a quarter of each generation refines
REFINE_AT = 2 / 3   # the share of the trials or the time budget after which the incumbent's neighbours come first
REFINE_TOP = 2      # refine around this many of the best configs so far (the best first): estimates carry noise
REFINE_FIRST = ("GROUP_M", "num_stages", "BLOCK_K", "num_warps")  # the axes a neighbour moves first, in order
MIN_STARTUP = 10    # TPE's random startup trials at least (Optuna's default), else one generation


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

    refines = False     # proposes the incumbent's neighbours late in the search (REFINE_AT)

    def __init__(self, axes: list[tuple[str, list[Any]]], seed: int) -> None:
        self.axes, self.seed = axes, seed
        self.keys = [k for k, _ in axes]
        self.seen: dict[tuple, float | None] = {}
        self.values: dict[tuple, dict[str, Any]] = {}   # a seen key's values
        self.proposed: set[tuple] = set()               # every key proposed so far
        self.too_big: list[dict[str, Any]] = []   # configs that did not fit (shared memory)
        self.skipped = 0
        self.start: list[dict[str, Any]] | None = None  # what to propose first (the base config); None: not set
        self.base: dict[str, Any] | None = None         # the base config, when it lies in the space
        self.spent = 0.0    # the share of the trials or the time budget spent (search() keeps it)
        self.refined = 0    # neighbours proposed by the local refinement

    def key(self, values: dict[str, Any]) -> tuple:
        return tuple(repr(values[k]) for k in self.keys)

    def start_from(self, values: dict[str, Any] | None) -> None:
        """The config the sweep started from, proposed first (None or outside the space: nothing)."""
        inside = values is not None and all(k in values and values[k] in v for k, v in self.axes)
        self.base = {k: values[k] for k in self.keys} if inside else None
        self.start = [self.base] if inside else []

    def fresh(self, values: dict[str, Any], taken: set[tuple] = frozenset()) -> bool:
        """Neither seen, proposed, taken nor dominated (a dominated one is counted as skipped)."""
        k = self.key(values)
        return k not in self.seen and k not in self.proposed and k not in taken and not self.dominated(values)

    def propose(self, n: int) -> list[dict[str, Any]]:
        """The base config (first generation), the incumbents' neighbours (late), then the strategy's own."""
        out: list[dict[str, Any]] = []
        for values in self.start or []:
            if len(out) < n and self.fresh(values):
                out.append(values)
        self.start = []
        quota = self.refine_quota(n - len(out))
        if quota:
            near = self.refinements(quota, {self.key(v) for v in out})
            self.refined += len(near)
            out += near
        out = [self.adopt(v) for v in out]
        self.proposed.update(self.key(v) for v in out)
        if len(out) < n:
            own = self._propose(n - len(out))
            self.proposed.update(self.key(v) for v in own)
            out += own
        return out

    def refine_quota(self, room: int) -> int:
        """How many of a generation's `room` slots go to the best configs' neighbours: none before
        REFINE_FROM of the budget, a quarter (at least one) until REFINE_AT, then all. A quarter early
        because one generation can take a third of a time budget (on the H200 a generation with a
        monster compile or very slow kernels took 100 s of 240): waiting for REFINE_AT at a generation's
        start, the last generations had started at 58 % and no neighbour was ever tried."""
        if not self.refines or room <= 0 or self.spent < REFINE_FROM:
            return 0
        return room if self.spent >= REFINE_AT else max(1, room // 4)

    def adopt(self, values: dict[str, Any]) -> dict[str, Any]:
        """A proposal the strategy did not draw itself (the base config, a neighbour): Optuna enqueues it."""
        return values

    def _propose(self, n: int) -> list[dict[str, Any]]:
        raise NotImplementedError

    def best(self, n: int) -> list[dict[str, Any]]:
        """The n best configs told so far, the best first (ties: the earlier told)."""
        scored = [(s, i, k) for i, (k, s) in enumerate(self.seen.items()) if s is not None and k in self.values]
        return [self.values[k] for _, _, k in sorted(scored)[:n]]

    def neighbours(self, values: dict[str, Any]) -> list[dict[str, Any]]:
        """The configs one axis away by one value: REFINE_FIRST's axes first, then the others in order;
        on each axis the next value, then the previous."""
        order = sorted(range(len(self.keys)), key=lambda i: (
            REFINE_FIRST.index(self.keys[i]) if self.keys[i] in REFINE_FIRST else len(REFINE_FIRST), i))
        out = []
        for i in order:
            k, vals = self.axes[i]
            j = vals.index(values[k])
            for step in (1, -1):
                if 0 <= j + step < len(vals):
                    out.append({**values, k: vals[j + step]})
        return out

    def refinements(self, n: int, taken: set[tuple]) -> list[dict[str, Any]]:
        """Up to n unseen, undominated neighbours of the REFINE_TOP best configs so far."""
        out: list[dict[str, Any]] = []
        for incumbent in self.best(REFINE_TOP):
            for values in self.neighbours(incumbent):
                if len(out) == n:
                    return out
                if self.fresh(values, taken):
                    taken = taken | {self.key(values)}
                    out.append(values)
        return out

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

    def tell(self, values: dict[str, Any], score: float | None) -> None:
        k = self.key(values)
        self.seen[k] = score
        self.values[k] = dict(values)


class Grid(Strategy):
    def __init__(self, axes, seed):
        super().__init__(axes, seed)
        self.it = itertools.product(*[v for _, v in axes])

    def _propose(self, n):
        out = []
        for combo in self.it:
            values = dict(zip(self.keys, combo))
            if self.key(values) not in self.proposed and not self.dominated(values):
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

    def _propose(self, n):
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
            if self.key(values) not in self.proposed and not self.dominated(values):
                out.append(values)
        return out


class Optuna(Strategy):
    """TPE (or CMA-ES) through Optuna's ask/tell: each axis a choice of value index.

    TPE: multivariate (the axes interact), constant liar (a generation's open trials count as bad
    while the rest of it is asked: it spreads out), its random startup one generation (the first is
    asked before anything is told: random whatever the setting; from the second on, the model), and
    a config pruned statically told as complete but infeasible (constraints_func): it joins the bad
    group, so TPE learns where configs do not fit, where a failed trial teaches it nothing. group=True
    is not set: it splits a space whose trials suggest different parameters, and every trial here
    suggests every axis. CMA-ES has no constraints: a pruned config is a failed trial there."""

    refines = True

    def __init__(self, axes, seed, cmaes: bool = False):
        super().__init__(axes, seed)
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.optuna = optuna
        self.study = None                      # made at the first proposal: its startup is one generation
        self.cmaes = cmaes
        self.trials: dict[tuple, Any] = {}     # a proposed combination's open trial
        self.explorer: Random | None = None    # random draws once the sampler only repeats itself
        self.worst: float | None = None        # the worst score told: what an infeasible trial is told

    def _open(self, n: int) -> None:
        if self.study is not None:
            return
        if self.cmaes:
            sampler = self.optuna.samplers.CmaEsSampler(seed=self.seed)
        else:   # Optuna 5 reads a trial's own constraints (Trial.set_constraint); before, constraints_func
            own = hasattr(self.optuna.trial.Trial, "set_constraint")
            sampler = self.optuna.samplers.TPESampler(
                seed=self.seed, multivariate=True, constant_liar=True, n_startup_trials=max(MIN_STARTUP, n),
                **({} if own else {"constraints_func": _infeasible}))
        self.study = self.optuna.create_study(direction="minimize", sampler=sampler)

    def _ask(self):
        trial = self.study.ask()
        if self.cmaes:
            idx = {k: trial.suggest_int(k, 0, len(v) - 1) for k, v in self.axes}
        else:
            idx = {k: trial.suggest_categorical(k, list(range(len(v)))) for k, v in self.axes}
        return trial, {k: dict(self.axes)[k][i] for k, i in idx.items()}

    def propose(self, n):
        self._open(n)
        return super().propose(n)

    def adopt(self, values):
        """Enqueued, so that Optuna asks for it next and learns from its result."""
        self.study.enqueue_trial({name: dict(self.axes)[name].index(v) for name, v in values.items()})
        trial, asked = self._ask()
        self.trials[self.key(asked)] = trial
        return asked

    def _propose(self, n):
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
            if k in self.seen or k in self.trials or k in taken or k in self.proposed:
                continue
            out.append(self.adopt(values))
        return out

    def tell(self, values, score):
        super().tell(values, score)
        if score is not None:
            self.worst = score if self.worst is None else max(self.worst, score)
        trial = self.trials.pop(self.key(values), None)
        if trial is not None:
            self._finish(trial, score)

    def _finish(self, trial, score):
        if score is not None:
            self.study.tell(trial, score)
        elif self.cmaes:
            self.study.tell(trial, state=self.optuna.trial.TrialState.FAIL)
        else:   # complete and infeasible: TPE puts it with the bad configs (its value plays no part)
            if hasattr(trial, "set_constraint"):
                trial.set_constraint(INFEASIBLE, 1.0)
            else:
                trial.set_user_attr(INFEASIBLE, 1.0)
            self.study.tell(trial, self.worst if self.worst is not None else 0.0)


INFEASIBLE = "irscope_infeasible"


def _infeasible(trial) -> tuple[float]:
    """TPE's constraint: above 0, the config was pruned statically (see Optuna._finish)."""
    return (trial.user_attrs.get(INFEASIBLE, 0.0),)


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
    started_from: str = ""  # the base config proposed first ("": outside the space, or a grid search)
    refined: int = 0        # configs proposed as neighbours of the best so far (local refinement)
    history: list[dict[str, Any]] = field(default_factory=list)  # per generation: when, how many, how many near the best


def base_values(base: Config, axes: list[tuple[str, list[Any]]]) -> dict[str, Any] | None:
    """Each axis's value in the config the sweep started from (make's config of no values): a constexpr
    of its signature, an option it sets (--set, a recipe), else the backend's default (num_warps=4,
    num_stages=3 on CUDA); None when an axis has no such value."""
    defaults = None
    out = {}
    for k, _ in axes:
        arg = base.spec.args.get(k) if base.spec is not None else None
        if arg is not None and arg.kind == "constexpr":
            out[k] = arg.value
        elif base.settings is not None and k in base.settings.options:
            out[k] = base.settings.options[k]
        else:
            if defaults is None:
                defaults = adapter.default_options(base.settings.target) if base.settings is not None else {}
            if k not in defaults:
                return None
            out[k] = defaults[k]
    return out


def search(strategy: Strategy, make: Callable[[int, dict[str, Any]], Config], *, trials: int | None,
           time_budget: float | None, width: int, compile_batch: Callable[[list[Config]], None],
           objective: Callable[[list[Config]], dict[int, float]] | None, max_registers: int | None,
           log: SearchLog) -> list[Config]:
    """Propose, compile, prune statically, score (objective: timed estimates by config index; None:
    the static rank), tell; until --trials, --time-budget or the space runs out. Every config tried."""
    tried: list[Config] = []
    start = time.perf_counter()
    if strategy.start is None and not isinstance(strategy, Grid):   # the base config first (make's config of no values)
        try:
            strategy.start_from(base_values(make(-1, {}), strategy.axes))
        except BadInput:
            strategy.start_from(None)
    size = 1
    for _, vals in strategy.axes:
        size *= len(vals)
    while True:
        shares = [len(tried) / trials] if trials else []
        shares += [(time.perf_counter() - start) / time_budget] if time_budget else []
        strategy.spent = max(shares) if shares else len(strategy.seen) / size
        left = None if trials is None else trials - len(tried)
        if left is not None and left <= 0:
            log.stopped = f"--trials {trials} reached"
            break
        if time_budget is not None and time.perf_counter() - start >= time_budget:
            log.stopped = f"--time-budget {time_budget:g} s spent"
            break
        refined_before = strategy.refined
        proposals = strategy.propose(width if left is None else min(width, left))
        log.history.append({"at_s": round(time.perf_counter() - start, 1), "spent": round(strategy.spent, 3),
                            "proposed": len(proposals), "refined": strategy.refined - refined_before,
                            "best": _best_text(strategy)})
        if not tried and proposals and strategy.start == [] and _is_base(strategy, proposals[0]):
            log.started_from = ", ".join(f"{k}={v}" for k, v in proposals[0].items())
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
    log.refined = strategy.refined
    return tried


def _best_text(strategy: Strategy) -> str:
    best = strategy.best(1)
    return ", ".join(f"{k}={v}" for k, v in best[0].items()) if best else ""


def _is_base(strategy: Strategy, values: dict[str, Any]) -> bool:
    return strategy.base is not None and strategy.key(values) == strategy.key(strategy.base)
