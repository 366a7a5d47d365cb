"""The search strategies: what proposes the next configs (sweep/search.py runs the generations).

    grid          the combinations in order (what a plain sweep does), up to --trials
    random        uniformly without replacement, from a seeded generator
    optuna        Optuna's TPE through its ask/tell API (pip install irscope[search]), seeded
    optuna-cmaes  Optuna's CMA-ES over each axis's value index (ordered axes: tile sizes, stages)

Every strategy proposes the base config first when it lies in the space, never a config seen or
dominated by one that did not fit, and (optuna, optuna-cmaes) the neighbours of the best configs so far
from REFINE_FROM of the budget on: search.py's docstring says why each.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

STRATEGIES = ("grid", "random", "optuna", "optuna-cmaes")
SIZE_AXES = ("BLOCK", "num_stages")  # axes whose growth never shrinks shared memory (by name prefix)
ASK_LIMIT = 50  # asks in a row that return seen configs before the strategy counts as exhausted
REFINE_FROM = 1 / 3  # from this share of the trials or the time budget, a quarter of each generation refines
REFINE_AT = 2 / 3  # the share of the trials or the time budget after which the incumbent's neighbours come first
REFINE_TOP = 2  # refine around this many of the best configs so far (the best first): estimates carry noise
REFINE_FIRST = ("GROUP_M", "num_stages", "BLOCK_K", "num_warps")  # the axes a neighbour moves first, in order
MIN_STARTUP = 10  # TPE's random startup trials at least (Optuna's default), else one generation


class Strategy:
    """Proposes combinations (value dicts) it has not seen; told each one's objective (None: pruned)."""

    refines = False  # proposes the incumbent's neighbours late in the search (REFINE_AT)

    def __init__(self, axes: list[tuple[str, list[Any]]], seed: int) -> None:
        self.axes, self.seed = axes, seed
        self.keys = [k for k, _ in axes]
        self.seen: dict[tuple, float | None] = {}
        self.values: dict[tuple, dict[str, Any]] = {}  # a seen key's values
        self.proposed: set[tuple] = set()  # every key proposed so far
        self.too_big: list[dict[str, Any]] = []  # configs that did not fit (shared memory)
        self.skipped = 0
        self.start: list[dict[str, Any]] | None = None  # what to propose first (the base config); None: not set
        self.base: dict[str, Any] | None = None  # the base config, when it lies in the space
        self.spent = 0.0  # the share of the trials or the time budget spent (search() keeps it)
        self.refined = 0  # neighbours proposed by the local refinement

    def key(self, values: dict[str, Any]) -> tuple:
        return tuple(repr(values[k]) for k in self.keys)

    def start_from(self, values: dict[str, Any] | None) -> None:
        """The config the sweep started from, proposed first (None or outside the space: nothing)."""
        if values is None or not all(k in values and values[k] in v for k, v in self.axes):
            self.base, self.start = None, []
            return
        self.base = {k: values[k] for k in self.keys}
        self.start = [self.base]

    def fresh(self, values: dict[str, Any], taken: set[tuple] | frozenset[tuple] = frozenset()) -> bool:
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
        order = sorted(
            range(len(self.keys)),
            key=lambda i: (REFINE_FIRST.index(self.keys[i]) if self.keys[i] in REFINE_FIRST else len(REFINE_FIRST), i),
        )
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
        out: list[dict[str, Any]] = []
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
        self.study: Any = (
            None  # an optuna.Study (untyped here), made at the first proposal: its startup is one generation
        )
        self.cmaes = cmaes
        self.trials: dict[tuple, Any] = {}  # a proposed combination's open trial
        self.explorer: Random | None = None  # random draws once the sampler only repeats itself
        self.worst: float | None = None  # the worst score told: what an infeasible trial is told

    def _open(self, n: int) -> None:
        if self.study is not None:
            return
        if self.cmaes:
            sampler = self.optuna.samplers.CmaEsSampler(seed=self.seed)
        else:  # Optuna 5 reads a trial's own constraints (Trial.set_constraint); before, constraints_func
            own = hasattr(self.optuna.trial.Trial, "set_constraint")
            sampler = self.optuna.samplers.TPESampler(
                seed=self.seed,
                multivariate=True,
                constant_liar=True,
                n_startup_trials=max(MIN_STARTUP, n),
                **({} if own else {"constraints_func": _infeasible}),
            )
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
        out: list[dict[str, Any]] = []
        repeats = 0
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
        out: list[dict[str, Any]] = []
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
        else:  # complete and infeasible: TPE puts it with the bad configs (its value plays no part)
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
