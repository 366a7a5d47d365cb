"""--search and ranges: reproducible strategies that never propose a config known not to fit, and
axis ranges (16..256:pow2, 1..8, 32..256:step32) with their bad inputs.

The strategy tests use a synthetic compile (shared memory grows with the tile and the stages, as
a matmul's does) so that hundreds of proposals cost nothing; one test compiles for real.
"""

from __future__ import annotations

import json

import pytest

from irscope import jobs
from irscope.errors import BadInput
from irscope.sweep import run as sweep
from irscope.sweep import search
from irscope.sweep.configs import (
    Config,
    expand_values,
    grid_items,
    make_config,
    parse_axes,
)
from tests.helpers import MATMUL, VECTOR_ADD, run_in

SIG = "*fp32, *fp32, *fp32, i32:16, 1024"
SIG16 = "*fp16, *fp16, *fp16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, 128, 128, 64, 8"
LIMIT = 228 * 1024  # an H100's shared memory per block


@pytest.fixture(scope="module")
def base():
    return jobs.resolve_one(jobs.Request(MATMUL, ("matmul_kernel",), SIG16, target="h100"), "a sweep explores")


def _axes(base):
    return parse_axes(
        ["BLOCK_M=16..256:pow2", "BLOCK_N=16..256:pow2", "BLOCK_K=32..128:step32", "num_stages=1..5", "num_warps=4,8"],
        base,
    )


def _fake_compile(batch: list[Config]) -> None:
    """Shared memory of a matmul's operand ring; over the limit: does not fit; num_warps=4 with 256 x 256
    tiles spills (a made-up rule); the rest compile."""
    for c in batch:
        v = c.values
        shared = v["num_stages"] * (v["BLOCK_M"] + v["BLOCK_N"]) * v["BLOCK_K"] * 2
        if shared > LIMIT:
            c.status, c.reason = "does not fit", f"needs {shared} bytes"
            continue
        c.status = "ok"
        spills = 64 if v["num_warps"] == 4 and v["BLOCK_M"] * v["BLOCK_N"] >= 256 * 256 else 0
        c.stats = {
            "registers": 40 + v["BLOCK_M"] * v["BLOCK_N"] // (32 * v["num_warps"] * 4),
            "spills": spills,
            "shared_bytes": shared,
            "occupancy": {"occupancy": max(0.125, 1 - shared / LIMIT)},
        }


def _run(base, name: str, seed: int, trials: int = 60):
    strategy = search.make_strategy(name, _axes(base), seed)
    log = search.SearchLog(name, "static")
    proposed: list[Config] = []
    tried = search.search(
        strategy,
        lambda i, v: make_config(base, i, v),
        trials=trials,
        time_budget=None,
        width=4,
        compile_batch=lambda b: (proposed.extend(b), _fake_compile(b)),
        objective=None,
        max_registers=None,
        log=log,
    )
    return tried, log


@pytest.mark.parametrize("name", ["random", "optuna", "optuna-cmaes"])
def test_a_seeded_search_is_reproducible_and_never_proposes_what_cannot_fit(base, name):
    if name.startswith("optuna"):
        pytest.importorskip("optuna")
    if name == "optuna-cmaes":
        pytest.importorskip("cmaes")
    a, log = _run(base, name, seed=11)
    b, _ = _run(base, name, seed=11)
    assert [c.label for c in a] == [c.label for c in b], "the same seed, the same proposals"
    c, _ = _run(base, name, seed=12)
    assert [x.label for x in c] != [x.label for x in a], "another seed, other proposals"
    assert len({x.label for x in a}) == len(a), "never the same config twice"
    too_big = []
    for cfg in a:  # no proposal needs the shared memory of one seen not to fit before it
        v = cfg.values
        assert not any(
            all(v[k] >= x[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_stages"))
            and v["num_warps"] == x["num_warps"]
            for x in too_big
        ), cfg.label
        if cfg.status == "does not fit":
            too_big.append(v)
    assert log.proposed == len(a) and log.pruned == sum(1 for x in a if search.pruned(x))


def test_optuna_learns_from_the_results(base):
    """TPE's later proposals prune less than uniform sampling does: it learns where configs fit."""
    pytest.importorskip("optuna")
    tpe, _ = _run(base, "optuna", seed=3, trials=80)
    rnd, _ = _run(base, "random", seed=3, trials=80)
    late = lambda tried: sum(1 for c in tried[40:] if search.pruned(c))
    assert late(tpe) < late(rnd), (late(tpe), late(rnd))


def test_grid_search_stops_at_trials_and_the_space(base):
    tried, log = _run(base, "grid", seed=0, trials=10)
    assert len(tried) == 10 and log.stopped == "--trials 10 reached"
    small = parse_axes(["num_warps=4,8", "num_stages=2,3"], base)
    s = search.make_strategy("random", small, 0)
    log = search.SearchLog("random", "static")
    tried = search.search(
        s,
        lambda i, v: make_config(base, i, v),
        trials=None,
        time_budget=None,
        width=3,
        compile_batch=_fake_compile_small,
        objective=None,
        max_registers=None,
        log=log,
    )
    assert len(tried) == 4 and log.stopped == "every config of the space was tried"


def _fake_compile_small(batch):
    for c in batch:
        c.status, c.stats = "ok", {"registers": 32, "spills": 0, "occupancy": {"occupancy": 0.5}}


def test_static_pruning_and_the_static_objective():
    ok = Config(
        0, "a", {}, None, None, status="ok", stats={"registers": 100, "spills": 0, "occupancy": {"occupancy": 0.5}}
    )
    assert search.pruned(ok) == "" and search.pruned(ok, max_registers=64).startswith("100 registers")
    assert search.pruned(Config(1, "b", {}, None, None, status="does not fit")) == "does not fit"
    assert search.pruned(Config(2, "c", {}, None, None, status="ok", stats={"spills": 8})) == "spills"
    zero = Config(3, "d", {}, None, None, status="ok", stats={"registers": 255, "occupancy": {"occupancy": 0}})
    assert "no block fits" in search.pruned(zero)
    better = Config(4, "e", {}, None, None, status="ok", stats={"registers": 120, "occupancy": {"occupancy": 0.75}})
    assert search.static_score(better) < search.static_score(ok), "occupancy first, then registers"


def test_a_real_search_compiles_only_what_it_proposes(tmp_path):
    base = jobs.resolve_one(jobs.Request(VECTOR_ADD, ("add_kernel",), SIG, target="h100"), "a sweep explores")
    axes = parse_axes(["num_warps=1..8:pow2", "BLOCK_SIZE=128..4096:pow2"], base)
    run = sweep.search_and_time(
        search.make_strategy("random", axes, 5),
        lambda i, v: make_config(base, i, v),
        tmp_path,
        sweep.Engine(jobs=2, use_cache=False),
        lambda c: None,
        trials=5,
        time_budget=None,
        max_registers=None,
        name="random",
    )
    assert len(run.configs) == 5 and {c.status for c in run.configs} == {"ok"}
    assert run.search.generations == 3 and run.search.objective.startswith("static rank (not timed)")
    assert len(list(tmp_path.glob("add_kernel/*/manifest.json"))) == 5


# ---------------------------------------------------------------- ranges


def test_ranges():
    assert expand_values("B", "16..256:pow2", "") == ["16", "32", "64", "128", "256"]
    assert expand_values("n", "1..4", "") == ["1", "2", "3", "4"]
    assert expand_values("K", "32..128:step32", "") == ["32", "64", "96", "128"]
    assert expand_values("K", "8,32..64:step32", "") == ["8", "32", "64"]
    for bad, word in (
        ("256..16", "empty"),
        ("5..7:pow2", "empty"),
        ("1..8:pow3", "not a range"),
        ("1..8:step0", "not a range"),
        ("a..b", "not a range"),
        ("1..99999999", "over"),
    ):
        with pytest.raises(BadInput, match=word):
            expand_values("B", bad, f"B={bad}")


def test_recipe_axes_share_the_grammar(base):
    items = grid_items({"BLOCK_M": "64..128:pow2", "num_warps": [4, 8], "GROUP_M": 8}, "r.toml [sweep]")
    assert dict(parse_axes(items, base)) == {"BLOCK_M": [64, 128], "num_warps": [4, 8], "GROUP_M": [8]}
    with pytest.raises(BadInput, match=r"r.toml \[sweep\]: sweep axis BLOCK_M"):
        grid_items({"BLOCK_M": []}, "r.toml [sweep]")
    with pytest.raises(BadInput, match="empty"):
        parse_axes(grid_items({"BLOCK_M": "128..64"}, "r.toml [sweep]"), base)


def test_range_on_the_command_line_and_its_bad_input(tmp_path):
    r = run_in(
        None,
        "sweep",
        str(VECTOR_ADD),
        "-s",
        SIG,
        "-t",
        "h100",
        "--axis",
        "num_warps=2..4:pow2",
        "--axis",
        "BLOCK_SIZE=512..1024:step512",
        "-o",
        str(tmp_path / "o"),
        "--json",
    )
    assert r.code == 0, r.err
    assert sorted(c["label"] for c in json.loads(r.out)["configs"]) == [
        "num_warps=2, BLOCK_SIZE=1024",
        "num_warps=2, BLOCK_SIZE=512",
        "num_warps=4, BLOCK_SIZE=1024",
        "num_warps=4, BLOCK_SIZE=512",
    ]
    base = ["sweep", str(VECTOR_ADD), "-s", SIG, "-t", "h100", "-o", str(tmp_path / "bad")]
    for argv, word in (
        (["--axis", "BLOCK_SIZE=1024..16"], "empty"),
        (["--axis", "num_warps=4,8", "--search", "annealing"], "annealing"),
        (["--axis", "num_warps=4,8", "--trials", "5"], "--search"),
        (["--axis", "num_warps=4,8", "--search", "random", "--trials", "0"], "--trials"),
        (["--axis", "num_warps=4,8", "--search", "random", "--time-budget", "-1"], "--time-budget"),
    ):
        r = run_in(None, *base, *argv)
        assert r.code == 2 and word in r.err and len(r.err.strip().splitlines()) == 1, (argv, r.err)
    assert not (tmp_path / "bad").exists()


def test_without_optuna_a_search_degrades_to_random_in_one_line(monkeypatch, tmp_path):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "optuna" else real(name, *a))
    strategy, note = search.available("optuna")
    assert strategy == "random" and "pip install 'irscope[search]'" in note and "\n" not in note
    assert search.available("random") == ("random", "")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "cmaes" else real(name, *a))
    # without cmaes, CMA-ES degrades to Optuna's TPE (or to random where Optuna itself is missing)
    assert search.available("optuna-cmaes")[0] == ("optuna" if real("optuna") is not None else "random")


def test_search_on_the_command_line(tmp_path):
    args = (
        "sweep",
        str(VECTOR_ADD),
        "-s",
        SIG,
        "-t",
        "h100",
        "--axis",
        "num_warps=1..8:pow2",
        "--axis",
        "BLOCK_SIZE=128..4096:pow2",
        "--search",
        "random",
        "--trials",
        "3",
        "--seed",
        "1",
        "-j",
        "2",
        "-o",
        str(tmp_path / "o"),
    )
    r = run_in(None, *args)
    assert r.code == 0, r.err
    assert "search random: 3 configs tried in 2 generations" in r.out and "objective: static rank" in r.out
    again = run_in(None, *args, "--json")
    doc = json.loads(again.out)
    assert len(doc["configs"]) == 3 and all(c["label"] in r.out for c in doc["configs"])
    assert {c["status"] for c in doc["configs"]} == {"cached"}, "the same seed: the same configs, from the cache"


def test_optuna_that_only_repeats_itself_explores_instead_of_stopping(monkeypatch):
    """TPE converged on one corner proposes known configs; the search draws unseen ones rather than
    declaring a 1,600-config space exhausted (on the H200 it stopped after 194 of 6,000)."""
    pytest.importorskip("optuna")
    axes = [("a", list(range(40))), ("b", list(range(40)))]
    strategy = search.make_strategy("optuna", axes, 0)
    first = strategy.propose(1)
    strategy.tell(first[0], 1.0)
    ask = strategy._ask

    def stuck():  # every later ask: the config already told (until an enqueued trial is waiting)
        trial, values = ask()
        return (
            (trial, values)
            if trial.number > 0 and strategy.study._storage.get_trial(trial._trial_id).system_attrs
            else (trial, dict(first[0]))
        )

    monkeypatch.setattr(strategy, "_ask", stuck)
    batch = strategy.propose(8)
    assert len(batch) == 8 and len({(v["a"], v["b"]) for v in batch}) == 8
    assert all((v["a"], v["b"]) != (first[0]["a"], first[0]["b"]) for v in batch)


# ---------------------------------------------------------------- the base config, local refinement

BASE = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_stages": 3, "num_warps": 4}  # SIG16's, CUDA's defaults


@pytest.mark.parametrize("name", ["random", "optuna"])
def test_the_base_config_is_proposed_first(base, name):
    """The signature's constexprs and the backend's default options (num_warps=4, num_stages=3) lie in
    the space: the first config tried is the one the sweep started from."""
    if name == "optuna":
        pytest.importorskip("optuna")
    tried, log = _run(base, name, seed=11, trials=12)
    assert tried[0].values == BASE and log.started_from == ", ".join(f"{k}={v}" for k, v in BASE.items())
    assert sum(1 for c in tried if c.values == BASE) == 1, "proposed once"
    grid, glog = _run(base, "grid", seed=0, trials=3)
    assert grid[0].values != BASE and glog.started_from == "", "a grid search keeps its order"


def test_a_base_config_outside_the_space_is_not_proposed(base):
    axes = parse_axes(["BLOCK_M=16,32", "num_warps=4,8"], base)  # BLOCK_M=128 is not an axis value
    s = search.make_strategy("random", axes, 0)
    log = search.SearchLog("random", "static")
    tried = search.search(
        s,
        lambda i, v: make_config(base, i, v),
        trials=4,
        time_budget=None,
        width=4,
        compile_batch=_fake_compile_small,
        objective=None,
        max_registers=None,
        log=log,
    )
    assert len(tried) == 4 and log.started_from == "" and s.base is None
    assert search.base_values(make_config(base, -1, {}), axes) == {"BLOCK_M": 128, "num_warps": 4}


GEMM_AXES = [
    ("BLOCK_M", [64, 128, 256]),
    ("BLOCK_N", [64, 128, 256]),
    ("BLOCK_K", [32, 64, 128]),
    ("num_warps", [4, 8]),
    ("num_stages", [2, 3, 4, 5]),
    ("GROUP_M", [1, 2, 4, 8]),
]


def _told(strategy, results):
    for values, score in results:
        strategy.tell(values, score)


def test_refinement_proposes_the_unseen_undominated_neighbours_of_the_incumbent():
    pytest.importorskip("optuna")
    s = search.make_strategy("optuna", GEMM_AXES, 0)
    best = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3, "GROUP_M": 4}
    second = {**best, "BLOCK_N": 128}
    s._open(16)
    _told(
        s,
        [
            (best, 1.0),
            (second, 1.5),
            ({**best, "GROUP_M": 8}, 2.0),  # seen: timed
            ({**best, "num_stages": 2}, None),
        ],
    )  # seen: pruned
    s.did_not_fit({**best, "num_stages": 4})  # so is BLOCK_K=128 at stages 3 (at least as large)
    s.dominated({**best, "num_stages": 4})
    s.spent = 0.2
    early = s.propose(4)
    assert s.refined == 0 and len(early) == 4, "before REFINE_FROM: the sampler's own"
    assert s.refine_quota(16) == 0
    s.spent = 0.5
    assert s.refine_quota(16) == 4 and s.refine_quota(3) == 1, "from REFINE_FROM: a quarter, at least one"
    s.spent = 0.2
    for v in early:
        s.tell(v, 9.0)
    s.spent = search.REFINE_AT
    got = s.propose(8)
    # best's: GROUP_M 8 seen, 2 new; num_stages 4 dominated (did not fit), 2 pruned (seen); BLOCK_K 128 (stages 3
    # is below the 4 that did not fit), 32; num_warps 4; BLOCK_M 256, 64; BLOCK_N 256 is the edge, 128 is
    # `second` (seen). Then `second`'s, in the same order.
    want = [
        {**best, "GROUP_M": 2},
        {**best, "BLOCK_K": 128},
        {**best, "BLOCK_K": 32},
        {**best, "num_warps": 4},
        {**best, "BLOCK_M": 256},
        {**best, "BLOCK_M": 64},
        {**second, "GROUP_M": 8},
        {**second, "GROUP_M": 2},
        {**second, "num_stages": 4},
        {**second, "num_stages": 2},
        {**second, "BLOCK_K": 128},
    ]
    want = [w for w in want if s.key(w) not in {s.key(e) for e in early}][:8]
    assert got == want and s.refined == 8
    assert all(not s.dominated(v) for v in got)
    # enqueued: Optuna's open trials are these very configs, and it learns from their results
    assert all(s.key(v) in s.trials for v in got)
    again = s.propose(8)
    assert not {s.key(v) for v in again} & {s.key(v) for v in got + early}, "never proposed twice"


def _gemm_time(v: dict) -> float:
    """A made-up GEMM time over GEMM_AXES: one best config, each axis off it costs a few percent."""
    best = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "num_warps": 8, "num_stages": 4, "GROUP_M": 8}
    cost = {"BLOCK_M": 0.3, "BLOCK_N": 0.2, "BLOCK_K": 0.08, "num_warps": 0.1, "num_stages": 0.03, "GROUP_M": 0.02}
    t = 1.0
    for k, vals in GEMM_AXES:
        t *= 1 + cost[k] * abs(vals.index(v[k]) - vals.index(best[k]))
    return t


def _timed_search(base, seed: int, trials: int):
    axes = parse_axes([f"{k}={','.join(map(str, v))}" for k, v in GEMM_AXES], base)
    s = search.make_strategy("optuna", axes, seed)
    log = search.SearchLog("optuna", "timed")
    tried = search.search(
        s,
        lambda i, v: make_config(base, i, v),
        trials=trials,
        time_budget=None,
        width=8,
        compile_batch=_fake_compile_small,
        objective=lambda live: {c.index: _gemm_time(c.values) for c in live},
        max_registers=None,
        log=log,
    )
    return tried, log, s


def test_a_refined_search_is_reproducible_and_settles_the_small_axes(base):
    pytest.importorskip("optuna")
    a, log, s = _timed_search(base, seed=5, trials=120)
    b, _, _ = _timed_search(base, seed=5, trials=120)
    assert [c.label for c in a] == [c.label for c in b], "the same seed, the same proposals"
    assert a[0].values == {**BASE, "GROUP_M": 8} and log.refined > 0
    late = a[int(120 * search.REFINE_AT) + 8 :]  # the generations after REFINE_AT was reached
    assert any(c.values in s.neighbours(x.values) for c in late for x in a[: a.index(c)]), "refines near the best"
    best = min(a, key=lambda c: _gemm_time(c.values))
    assert _gemm_time(best.values) <= 1.03, best.label
    # each generation is logged: the neighbours come only once REFINE_AT of the trials is spent
    assert sum(g["proposed"] for g in log.history) == len(a) and sum(g["refined"] for g in log.history) == log.refined
    assert all(g["refined"] == 0 for g in log.history if g["spent"] < search.REFINE_FROM - 0.001)
    assert all(g["refined"] <= max(1, g["proposed"] // 4) for g in log.history if g["spent"] < search.REFINE_AT - 0.001)
