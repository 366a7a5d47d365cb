"""Sweep results that persist (--db, --history): every timed config recorded with its conditions; a
repeated or widened sweep reuses what was measured under the same conditions and times only the
rest; concurrent sweeps on one database are safe.

A CPU cannot time a kernel: StandInTimers (the timers' interface, as timers.LocalTimers and
ray_engine.Timers have it) reports synthetic times and counts what it was asked to time; the
compiles, cache keys, database and reuse are real.
"""

from __future__ import annotations

import json
import multiprocessing
import sqlite3

import pytest

from irscope import jobs
from irscope.errors import BadInput
from irscope.sweep import run as sweep
from irscope.sweep import search
from irscope.sweep.configs import Config, expand, make_config, parse_axes
from irscope.sweep.history import History, check_db_path
from irscope.sweep.timed import Batch
from irscope.timing import statistics
from irscope.timing.bench import BenchReport, VariantReport
from tests.helpers import VECTOR_ADD, run_in

SIG = "*fp32, *fp32, *fp32, i32:16, 1024"


def true_ms(label: str) -> float:
    """The stand-in's time of a config: fastest at num_warps=4, a little slower for larger blocks."""
    warps = int(label.split("num_warps=")[1].split(",")[0])
    block = int(label.split("BLOCK_SIZE=")[1]) if "BLOCK_SIZE=" in label else 1024
    return 0.010 * (1 + abs(warps - 4) / 8) + block * 1e-7


class StandInTimers:
    """timers' interface; synthetic timings; remembers every batch it was given."""

    def __init__(self, device: str = "Stand-in GPU"):
        self.name, self.batches, self.current, self.notes, self.more = device, [], None, [], False

    def device(self):
        return self.name

    def start(self):
        self.current = []

    def add(self, cfg: Config):
        if self.current is None:
            self.start()
        self.current.append(cfg.label)

    def finish(self):
        if not self.current:
            return []
        names, self.current = self.current, None
        self.batches.append(names)
        rows, samples = [], {}
        for i, name in enumerate(names):
            samples[name] = [true_ms(name) * (1 + 0.002 * ((r + i) % 3)) for r in range(12)]
            rows.append(VariantReport(name, {}, "ok", "", statistics.summarize(samples[name]), None))
        return [Batch(BenchReport(self.name, "x", 12, 0.1, 0.005, rows, "stand-in", samples), "the stand-in", names[0])]

    def retime(self, configs):
        self.start()
        for c in configs:
            self.add(c)
        return self.finish()[0]

    def close(self):
        pass


def configs_of(*axes: str) -> list[Config]:
    base = jobs.resolve_one(jobs.Request(VECTOR_ADD, ("add_kernel",), SIG, target="h100"), "a sweep explores")
    return expand(base, parse_axes(list(axes), base))


def timed_sweep(tmp_path, db: History, timers: StandInTimers, *axes: str):
    engine = sweep.Engine(jobs=2, timers=timers, history=db, method={"launch": "stand-in", "max_seconds": 1})
    return sweep.compile_and_time(configs_of(*axes), tmp_path / "o", engine, lambda c: None)


def test_a_repeated_sweep_reuses_and_a_widened_one_times_only_the_new_configs(tmp_path):
    db = History(tmp_path / "s.sqlite")
    first = StandInTimers()
    run = timed_sweep(tmp_path, db, first, "num_warps=2,4,8")
    assert [sorted(b) for b in first.batches] == [sorted(c.label for c in run.configs)] and run.sweep_id == 1
    assert run.timed.winner.name == "num_warps=4"

    again = StandInTimers()
    rerun = timed_sweep(tmp_path, db, again, "num_warps=2,4,8")
    assert again.batches == [], "every config was measured before under the same conditions"
    assert {r.source for r in rerun.timed.rows.values()} == {"reused (sweep #1)"}
    assert rerun.timed.winner.name == "num_warps=4"

    wider = StandInTimers()
    run3 = timed_sweep(tmp_path, db, wider, "num_warps=1,2,4,8")
    assert wider.batches[0] == ["num_warps=1"], "only the new config is timed"
    assert set(wider.batches[1]) >= {"num_warps=4"}, "the finalists, from two runs, re-timed together"
    assert any("reused from the database" in n for n in run3.timed.notes)
    assert any("re-timed together" in n for n in run3.timed.notes)

    other = StandInTimers("Another GPU")
    timed_sweep(tmp_path, db, other, "num_warps=2,4,8")
    assert len(other.batches[0]) == 3, "another device: nothing reused"

    past = db.sweeps(["add_kernel"])
    assert [s["id"] for s in past] == [4, 3, 2, 1], "newest first"
    assert (past[2]["timed"], past[2]["reused"]) == (0, 3) and past[1]["reused"] == 3 and past[1]["timed"] >= 1
    rows = list(db.measurements(1))
    assert len(rows) == 3 and all(r["device"] == "Stand-in GPU" and r["cache_key"] for r in rows)


def test_a_changed_method_is_not_reused(tmp_path):
    db = History(tmp_path / "s.sqlite")
    timed_sweep(tmp_path, db, StandInTimers(), "num_warps=2,4")
    engine = sweep.Engine(
        jobs=2,
        timers=(t := StandInTimers()),
        history=db,
        method={"launch": "stand-in", "max_seconds": 1, "graph": "on"},
    )
    sweep.compile_and_time(configs_of("num_warps=2,4"), tmp_path / "o", engine, lambda c: None)
    assert len(t.batches[0]) == 2


def _writer(path: str, n: int) -> None:
    db = History(path)
    for i in range(n):
        db.record(
            {"started": float(i), "kernel": "k", "configs": 1},
            [
                {
                    "cache_key": f"key{i}",
                    "label": "x",
                    "device": "d",
                    "triton": "t",
                    "method": "m",
                    "median_ms": 1.0,
                    "samples": [1.0],
                    "status": "ok",
                }
            ],
        )


def test_concurrent_sweeps_on_one_database(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    History(path)
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, 25)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT COUNT(*) FROM sweeps").fetchone()[0] == 100
        assert con.execute("SELECT COUNT(*) FROM measurements").fetchone()[0] == 100
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_history_on_the_command_line(tmp_path):
    db = History(tmp_path / "h.sqlite")
    timed_sweep(tmp_path, db, StandInTimers(), "num_warps=2,4")
    r = run_in(None, "sweep", str(VECTOR_ADD), "--history", "--db", str(db.path), "--json")
    assert r.code == 0, r.err
    (s,) = json.loads(r.out)["sweeps"]
    assert s["kernel"] == "add_kernel" and s["winner"] == "num_warps=4" and s["timed"] == 2
    r = run_in(None, "sweep", str(VECTOR_ADD), "--history", "--db", str(db.path))
    assert r.code == 0 and "num_warps=4" in r.out and "1 sweeps" in r.out
    r = run_in(None, "sweep", str(VECTOR_ADD), "--kernel", "other_kernel", "--history", "--db", str(db.path))
    assert r.code == 0 and "no timed sweep" in r.out


def test_bad_db_paths(tmp_path):
    with pytest.raises(BadInput, match="a folder"):
        check_db_path(tmp_path)
    with pytest.raises(BadInput, match="not an existing folder"):
        check_db_path(tmp_path / "no" / "x.sqlite")
    (tmp_path / "junk.sqlite").write_text("this is not a database " * 100)
    with pytest.raises(BadInput, match="not a usable SQLite database"):
        History(tmp_path / "junk.sqlite")
    r = run_in(None, "sweep", str(VECTOR_ADD), "--history", "--db", str(tmp_path))
    assert r.code == 2 and "--db" in r.err and len(r.err.strip().splitlines()) == 1


def test_a_timed_search_carries_the_incumbent_into_each_generation(tmp_path):
    """Each generation is one timing batch, its first config the best so far (the reference that puts
    the generations on one scale); the winner is the best config tried."""
    base = jobs.resolve_one(jobs.Request(VECTOR_ADD, ("add_kernel",), SIG, target="h100"), "a sweep explores")
    axes = parse_axes(["num_warps=1..16:pow2", "BLOCK_SIZE=128..4096:pow2"], base)
    timers = StandInTimers()
    run = sweep.search_and_time(
        search.make_strategy("random", axes, 1),
        lambda i, v: make_config(base, i, v),
        tmp_path,
        sweep.Engine(jobs=1, timers=timers),
        lambda c: None,
        trials=24,
        time_budget=None,
        max_registers=None,
        name="random",
    )
    tried = [c for c in run.configs if not search.pruned(c)]
    gens = timers.batches[: run.search.generations]
    assert len(gens) == 3 and len(gens[0]) == 8, "8 a generation (at least 8 when timed), 24 trials"
    for g in range(1, len(gens)):
        so_far = [n for batch in gens[:g] for n in batch]
        assert gens[g][0] == min(so_far, key=true_ms), "the best so far leads the next batch, its reference"
        assert gens[g][0] not in gens[g][1:]
    assert run.timed.winner.name == min((c.label for c in tried), key=true_ms)
    assert run.search.objective.startswith("timed")
