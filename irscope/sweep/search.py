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
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from irscope import adapter
from irscope.errors import BadInput
from irscope.sweep.configs import Config
from irscope.sweep.rank import row
from irscope.sweep.strategies import (  # noqa: F401 - the strategies' names, where callers find them
    REFINE_AT,
    REFINE_FROM,
    STRATEGIES,
    Grid,
    Strategy,
    make_strategy,
)


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
        raise BadInput(
            f"--search {strategy}: the space has {size} configs; bound it with --trials N or --time-budget S"
        )


def available(strategy: str) -> tuple[str, str]:
    """(the strategy to run, a note when it is not the one asked for): without Optuna (or cmaes), a search
    degrades to random search, said in one line, rather than failing."""
    if strategy.startswith("optuna") and importlib.util.find_spec("optuna") is None:
        return "random", (
            f"--search {strategy} needs Optuna (pip install 'irscope[search]'), which is not installed: "
            "searching with --search random instead"
        )
    if strategy == "optuna-cmaes" and importlib.util.find_spec("cmaes") is None:  # Optuna's CMA-ES runs on it
        return "optuna", (
            "--search optuna-cmaes needs the cmaes package (pip install 'irscope[search]'), which is not installed: "
            "searching with --search optuna (TPE) instead"
        )
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


@dataclass
class SearchLog:
    """What a search did: its strategy, the configs it tried (in order), how it ended."""

    strategy: str
    objective: str
    proposed: int = 0
    pruned: int = 0
    skipped: int = 0  # never compiled: needs the shared memory of one that did not fit
    generations: int = 0
    stopped: str = ""
    started_from: str = ""  # the base config proposed first ("": outside the space, or a grid search)
    refined: int = 0  # configs proposed as neighbours of the best so far (local refinement)
    history: list[dict[str, Any]] = field(
        default_factory=list
    )  # per generation: when, how many, how many near the best


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


def search(  # noqa: PLR0913
    strategy: Strategy,
    make: Callable[[int, dict[str, Any]], Config],
    *,
    trials: int | None,
    time_budget: float | None,
    width: int,
    compile_batch: Callable[[list[Config]], None],
    objective: Callable[[list[Config]], dict[int, float]] | None,
    max_registers: int | None,
    log: SearchLog,
) -> list[Config]:
    """Propose, compile, prune statically, score (objective: timed estimates by config index; None:
    the static rank), tell; until --trials, --time-budget or the space runs out. Every config tried."""
    tried: list[Config] = []
    start = time.perf_counter()
    if strategy.start is None and not isinstance(strategy, Grid):  # the base config first (make's config of no values)
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
        log.history.append(
            {
                "at_s": round(time.perf_counter() - start, 1),
                "spent": round(strategy.spent, 3),
                "proposed": len(proposals),
                "refined": strategy.refined - refined_before,
                "best": _best_text(strategy),
            }
        )
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
