"""--cluster ray on the CPU: a local Ray cluster of two simulated nodes (one CPU and one logical GPU each).

The compiles run as Ray tasks on both nodes and must equal the local pool's; a node removed while
it compiles loses only its configs, which are compiled again on the other node, and the sweep
says so; the timing actors' orchestration (a reference config on every GPU, estimates across GPUs,
the finalists re-timed on one GPU, an actor that dies) runs with a stand-in actor that reports
synthetic timings (a CPU cannot time a kernel). One cluster for the module: it takes ~15 s to start.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.helpers import DATA, VECTOR_ADD, run_cli

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster

from irscope import jobs
from irscope.errors import BadInput
from irscope.sweep import ray_engine, timed
from irscope.sweep import run as sweep
from irscope.sweep.configs import expand, parse_axes
from irscope.timing import statistics
from irscope.timing.bench import BenchReport, VariantReport

SIG = "*fp32, *fp32, *fp32, i32:16, 1024"


@pytest.fixture(scope="module")
def cluster():
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "num_gpus": 1})
    second = c.add_node(num_cpus=1, num_gpus=1)
    ray.init(address=c.address, logging_level="ERROR", log_to_driver=False)
    c.wait_for_nodes()
    yield c, second
    ray.shutdown()
    c.shutdown()


def _configs(file: Path = VECTOR_ADD, axes: tuple[str, ...] = ("num_warps=1..8:pow2", "BLOCK_SIZE=256,1024")):
    base = jobs.resolve_one(jobs.Request(file, ("add_kernel",), SIG, target="h100"), "a sweep explores")
    return expand(base, parse_axes(list(axes), base))


def test_ray_sweep_equals_the_local_pool(cluster, tmp_path):
    local, remote = _configs(), _configs()
    sweep.compile_and_time(local, tmp_path / "local", sweep.Engine(jobs=2, use_cache=False), lambda c: None)
    sweep.compile_and_time(remote, tmp_path / "ray", sweep.Engine(use_cache=False, cluster="ray"), lambda c: None)
    assert [c.label for c in local] == [c.label for c in remote]
    for a, b in zip(local, remote):
        assert (a.status, a.stats) == (b.status, b.stats), a.label
        assert Path(b.folder).parent.parent == tmp_path / "ray", "the folder comes back to the caller's -o"
        assert json.loads((Path(b.folder) / "manifest.json").read_text())["stats"] == a.stats
    assert len({c.node for c in remote}) == 2, "both nodes compiled (one CPU each, one task a CPU)"


def test_bad_cluster_input_is_one_line_exit_2(cluster, tmp_path, monkeypatch):
    base = ["sweep", str(VECTOR_ADD), "-s", SIG, "-t", "h100", "--axis", "num_warps=4,8", "-o", str(tmp_path / "o")]
    for argv, word in (
        (["--cluster", "ray:127.0.0.1:1"], "does not answer"),
        (["--cluster", "slurm"], "slurm"),
        (["--cluster", "ray:"], "ray:ADDRESS"),
    ):
        r = run_cli(*base, *argv)
        assert r.code == 2 and word in r.err and len(r.err.strip().splitlines()) == 1, r.err
        assert not (tmp_path / "o").exists()
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 2.0})
    with pytest.raises(BadInput, match="no GPU"):
        ray_engine.connect(None, need_gpu=True)


def test_cli_on_the_cluster(cluster, tmp_path):
    c, _ = cluster
    r = run_cli(
        "sweep",
        str(VECTOR_ADD),
        "-s",
        SIG,
        "-t",
        "h100",
        "--axis",
        "num_warps=2,4",
        "--no-cache",
        "--cluster",
        f"ray:{c.address}",
        "-o",
        str(tmp_path / "o"),
        "--json",
    )
    assert r.code == 0, r.err
    assert {x["status"] for x in json.loads(r.out)["configs"]} == {"ok"}


# ---------------------------------------------------------------- timing actors, with a stand-in


TRUE_MS = {1: 0.030, 2: 0.020, 4: 0.012, 8: 0.013}  # by num_warps; BLOCK_SIZE adds a little


class StandInActor:
    """A timing actor that reports synthetic timings: the config's true time x its GPU's speed."""

    def __init__(self, launch, measure):
        self.measure, self.names = measure, []

    def _slow(self) -> float:  # the second node's GPU is 40 % slower: only ratios compare across GPUs
        return 1.0 if ray.get_runtime_context().get_node_id() == self.measure["head"] else 1.4

    def where(self):
        return f"node {ray.get_runtime_context().get_node_id()[:8]}"

    def device(self):
        return "Stand-in GPU"

    def start(self):
        self.names = []

    def add(self, job):
        self.names.append(job["name"])
        return "ok"

    def finish(self):
        if self._slow() > 1 and self.measure.get("die") and os.path.exists(self.measure["die"]):
            os.remove(self.measure["die"])
            os._exit(1)  # the actor's process dies mid-batch
        rows, samples = [], {}
        for i, name in enumerate(self.names):
            warps = int(name.split("num_warps=")[1].split(",")[0])
            block = int(name.split("BLOCK_SIZE=")[1])
            t = (TRUE_MS[warps] + block / 1024 * 1e-4) * self._slow()
            samples[name] = [t * (1 + 0.001 * ((r * 7 + i) % 5)) for r in range(20)]
            rows.append(VariantReport(name, {}, "ok", "", statistics.summarize(samples[name]), None))
        return BenchReport("Stand-in GPU", "0", 20, 0.1, 0.005, rows, "synthetic", samples)


@pytest.fixture
def stand_in(cluster):
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    return {
        "head": ray.get_runtime_context().get_node_id(),
        "max_seconds": 1,
        "prune": 0.01,
        "graph": "off",
        "duty": 0.5,
    }


def test_timing_on_two_gpus_meets_through_the_reference_and_retimes_the_finalists(stand_in, tmp_path):
    configs = _configs()
    timers = ray_engine.Timers(None, stand_in, StandInActor)
    try:
        assert len(timers.actors) == 2
        run = sweep.compile_and_time(
            configs, tmp_path, sweep.Engine(use_cache=False, cluster="ray", timers=timers), lambda c: None
        )
    finally:
        timers.close()
    t = run.timed
    assert t.winner.name == "num_warps=4, BLOCK_SIZE=256", "the true best, though half the configs ran 40 % slower"
    best = timed.finalists(t.rows)
    # the four finalists are re-timed together unless the least-loaded dealing happened to give one GPU all four
    assert t.batches in (2, 3) and any("re-timed together" in n for n in t.notes) == (t.batches == 3), t.notes
    assert set(best) <= set(t.final.samples), "the winner's batch timed every finalist"
    order = sorted((r for r in t.rows.values()), key=lambda r: r.estimate_ms)
    truth = sorted(
        t.rows,
        key=lambda n: (
            TRUE_MS[int(n.split("num_warps=")[1].split(",")[0])] + int(n.split("BLOCK_SIZE=")[1]) / 1024 * 1e-4
        ),
    )
    assert [r.name for r in order] == truth, "estimates rank as the true times do"
    assert all(r.paired for r in t.rows.values() if r.name in t.final.samples and r.name != t.winner.name)


def test_a_timing_actor_that_dies_loses_only_its_batch(stand_in, tmp_path):
    flag = tmp_path / "die-once"
    flag.write_text("")
    measure = dict(stand_in, die=str(flag))
    configs = _configs(axes=("num_warps=2,4,8", "BLOCK_SIZE=256"))
    timers = ray_engine.Timers(None, measure, StandInActor)
    try:
        run = sweep.compile_and_time(
            configs, tmp_path / "o", sweep.Engine(cluster="ray", timers=timers), lambda c: None
        )
    finally:
        timers.close()
    assert any("died" in n and "timed again" in n for n in run.timed.notes), run.timed.notes
    assert {r.name for r in run.timed.rows.values() if r.median_ms} == {c.label for c in configs}
    assert run.timed.winner.name == "num_warps=4, BLOCK_SIZE=256"


def test_a_compiler_crash_on_ray_is_that_configs_result_not_a_retry(cluster, tmp_path):
    base = jobs.resolve_one(
        jobs.Request(DATA / "crashes_compiler.py", (), "*fp32, *fp32, i32:16, 256", target="h100"), "a sweep explores"
    )
    configs = expand(base, parse_axes(["BLOCK=256,512,1024"], base))
    sweep.compile_and_time(configs, tmp_path, sweep.Engine(use_cache=False, cluster="ray"), lambda c: None)
    status = {c.values["BLOCK"]: c for c in configs}
    assert status[512].status == "crashed" and "died" in status[512].reason and not status[512].retried
    assert {status[b].status for b in (256, 1024)} == {"ok"}


# ---------------------------------------------------------------- last: it removes a node


def test_a_removed_node_loses_only_its_configs_which_are_compiled_again(cluster, tmp_path):
    c, second = cluster
    slow = tmp_path / "slow_add.py"  # each worker takes 4 s to load it: the node goes while its task runs
    slow.write_text("import time\ntime.sleep(4)\n" + VECTOR_ADD.read_text())
    configs = _configs(slow, ("num_warps=1,2,4,8",))
    seen = []
    worker = threading.Thread(
        target=ray_engine.compile_all,
        args=(configs, tmp_path / "o", 120, seen.append),
        kwargs={"use_cache": False, "with_sass": False},
    )
    worker.start()
    time.sleep(2)
    c.remove_node(second)
    worker.join(timeout=120)
    assert sorted(x.index for x in seen) == [0, 1, 2, 3]
    assert {x.status for x in configs} == {"ok"}
    retried = [x for x in configs if x.retried]
    assert retried and all("lost with node" in x.retried for x in retried), [x.retried for x in configs]
    assert len({x.node for x in configs}) == 1, "what was left ran on the head node"
