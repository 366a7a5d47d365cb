"""Sweep: a grid of configs compiled in worker processes, each isolated, cached, ranked (timed on a GPU: tests/gpu)."""

from __future__ import annotations

import json
from pathlib import Path

from irscope import jobs
from irscope.sweep import pool
from irscope.sweep import run as sweep
from irscope.sweep.configs import expand, parse_axes
from irscope.sweep.timers import LocalTimers
from irscope.timing import bench, statistics
from tests.helpers import DATA, MATMUL, VECTOR_ADD, run_in

SIG16 = "*fp16, *fp16, *fp16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, 128, 128, 64, 8"


def test_six_configs_with_stats_then_cache(capsys, tmp_path):
    args = (
        "sweep",
        str(MATMUL),
        "--kernel",
        "matmul_kernel",
        "--target",
        "h100",
        "--signature",
        SIG16,
        "--axis",
        "num_warps=4,8",
        "--axis",
        "num_stages=2,3,4",
        "-o",
        str(tmp_path / "o"),
        "--json",
        "-j",
        "2",
    )
    r = run_in(capsys, *args, env={"IRSCOPE_CACHE_DIR": str(tmp_path / "cache")})
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert len(doc["configs"]) == 6
    assert {c["status"] for c in doc["configs"]} == {"ok"}
    by = {(c["config"]["num_warps"], c["config"]["num_stages"]): c for c in doc["configs"]}
    assert by[(8, 2)]["stats"]["registers"] < by[(4, 2)]["stats"]["registers"], "more warps, fewer regs/thread"
    assert by[(8, 4)]["stats"]["shared"] > by[(8, 2)]["stats"]["shared"], "more stages, more buffers"
    for c in doc["configs"]:
        folder = tmp_path / "o" / c["folder"]  # absolute already: the join keeps it
        manifest = json.loads((folder / "manifest.json").read_text())
        ttgir = (folder / manifest["stages"]["ttgir"]).read_text()
        assert f'"ttg.num-warps" = {c["config"]["num_warps"]}' in ttgir
    again = run_in(capsys, *args, env={"IRSCOPE_CACHE_DIR": str(tmp_path / "cache")})
    assert again.code == 0
    assert {c["status"] for c in json.loads(again.out)["configs"]} == {"cached"}


def test_a_config_that_cannot_fit_is_reported_and_the_rest_complete(capsys, tmp_path):
    r = run_in(
        capsys,
        "sweep",
        str(MATMUL),
        "--kernel",
        "matmul_kernel",
        "--target",
        "h100",
        "--signature",
        SIG16,
        "--axis",
        "BLOCK_N=128,256",
        "--axis",
        "BLOCK_M=256",
        "--axis",
        "num_stages=4",
        "--axis",
        "num_warps=8",
        "-o",
        str(tmp_path),
        "--json",
    )
    assert r.code == 0, r.err
    status = {c["config"]["BLOCK_N"]: c for c in json.loads(r.out)["configs"]}
    assert status[128]["status"] == "ok"
    assert status[256]["status"] == "does not fit" and "shared memory" in status[256]["reason"]


def test_constexpr_axis_and_summary_table(capsys, tmp_path):
    r = run_in(
        capsys,
        "sweep",
        str(VECTOR_ADD),
        "--signature",
        "*fp32, *fp32, *fp32, i32:16, 1024",
        "--target",
        "mi300x",
        "--axis",
        "BLOCK_SIZE=256,1024",
        "--sort",
        "ld128",
        "-o",
        str(tmp_path),
    )
    assert r.code == 0, r.err
    assert "BLOCK_SIZE=256" in r.out and "BLOCK_SIZE=1024" in r.out and "2 of 2 configs compiled" in r.out


def test_timeouts_and_bad_axes(capsys, tmp_path):
    r = run_in(
        capsys,
        "sweep",
        str(VECTOR_ADD),
        "--signature",
        "*fp32, *fp32, *fp32, i32:16, 1024",
        "--axis",
        "num_warps=4,8",
        "--timeout",
        "0.001",
        "--no-cache",
        "-o",
        str(tmp_path),
        "--json",
        env={"IRSCOPE_CACHE_DIR": str(tmp_path / "empty-cache")},
    )
    assert r.code == 1
    assert {c["status"] for c in json.loads(r.out)["configs"]} == {"timed out"}
    r = run_in(
        capsys,
        "sweep",
        str(VECTOR_ADD),
        "--signature",
        "*fp32, *fp32, *fp32, i32:16, 1024",
        "--axis",
        "num_wraps=4",
        "-o",
        str(tmp_path),
    )
    assert r.code == 2 and "did you mean 'num_warps'" in r.err
    r = run_in(
        capsys,
        "sweep",
        str(VECTOR_ADD),
        "--signature",
        "*fp32, *fp32, *fp32, i32:16, 1024",
        "--axis",
        "num_warps=4,8,4",
        "-o",
        str(tmp_path),
    )
    assert r.code == 2 and "4 is listed twice" in r.err, r.err


def test_write_recipe_passes_check_and_replays(capsys, tmp_path):
    recipe = tmp_path / "mine.toml"
    r = run_in(
        capsys,
        "sweep",
        str(VECTOR_ADD),
        "--signature",
        "*fp32, *fp32, *fp32, i32:16, 1024",
        "--target",
        "h100",
        "--axis",
        "num_warps=2,8",
        "--axis",
        "BLOCK_SIZE=256,2048",
        "--sort",
        "registers",
        "--write-recipe",
        str(recipe),
        "--top",
        "2",
        "-o",
        str(tmp_path / "o"),
    )
    assert r.code == 0, r.err
    assert "[variant.sweep-best]" in recipe.read_text() and "[variant.sweep-2]" in recipe.read_text()
    assert run_in(capsys, "recipes", "check", str(recipe)).code == 0
    r = run_in(
        capsys,
        "dump",
        str(VECTOR_ADD),
        "--recipe",
        str(recipe),
        "--variant",
        "sweep-best",
        "--signature",
        "*fp32, *fp32, *fp32, i32:16",
        "-o",
        str(tmp_path / "replay"),
        "--json",
    )
    assert r.code == 0, r.err
    k = json.loads(r.out)["kernels"][0]
    assert k["target"] == "cuda:90"


def test_recipe_variants_on_diff(capsys, tmp_path):
    sig = "*fp16, *fp16, *fp16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1"
    r = run_in(
        capsys,
        "diff",
        str(MATMUL),
        "--kernel",
        "matmul_kernel",
        "--recipe",
        "h100",
        "--a-variant",
        "baseline",
        "--b-variant",
        "deep-pipeline",
        "--signature",
        sig,
        "-o",
        str(tmp_path),
        "--json",
    )
    assert r.code == 1, r.err
    doc = json.loads(r.out)
    assert doc["a"]["label"] == "variant baseline" and doc["b"]["label"] == "variant deep-pipeline"
    assert doc["stats"]["shared_bytes"]["b"] > doc["stats"]["shared_bytes"]["a"], "a deeper pipeline buffers more"


def test_a_crashing_compile_is_reported_and_its_worker_replaced(capsys, tmp_path):
    """One worker process compiles config after config; the one killed mid-compile is 'crashed', the rest finish."""
    r = run_in(
        capsys,
        "sweep",
        str(DATA / "crashes_compiler.py"),
        "--signature",
        "*fp32, *fp32, i32:16, 256",
        "--target",
        "h100",
        "--axis",
        "BLOCK=256,512,1024,2048",
        "-j",
        "1",
        "--no-cache",
        "-o",
        str(tmp_path),
        "--json",
    )
    assert r.code == 0, r.err
    status = {c["config"]["BLOCK"]: c for c in json.loads(r.out)["configs"]}
    assert status[512]["status"] == "crashed" and "signal 9" in status[512]["reason"]
    assert {status[b]["status"] for b in (256, 1024, 2048)} == {"ok"}
    assert json.loads((Path(status[2048]["folder"]) / "manifest.json").read_text())["args"]["BLOCK"] == "2048"


def test_workers_that_cannot_start_are_reported_not_retried_forever(tmp_path, monkeypatch):
    """A worker that dies before it is ready fails every config once, with its reason, instead of respawning."""
    base = jobs.resolve_one(
        jobs.Request(VECTOR_ADD, ("add_kernel",), "*fp32, *fp32, *fp32, i32:16, 1024", target="h100"),
        "a sweep explores",
    )
    configs = expand(base, parse_axes(["num_warps=2,4,8"], base))
    dies = "import sys; sys.stderr.write('no worker today\\n'); sys.exit(3)"
    monkeypatch.setattr(pool, "WORKER", ("-c", dies))
    seen = []
    pool.compile_all(configs, tmp_path / "o", jobs=2, timeout=30, done=seen.append, use_cache=False)
    assert sorted(c.index for c in seen) == [0, 1, 2]
    assert {c.status for c in configs} == {"crashed"}
    assert all("could not start: no worker today" in c.reason for c in configs), configs[0].reason


def test_configs_are_handed_to_the_timing_process_as_they_compile(tmp_path, monkeypatch):
    """--time's orchestration on the CPU: a stand-in session sees each survivor once, the timing gets them in order."""

    class Session:
        def __init__(self):
            self.started, self.added, self.closed = None, [], False

        def start(self, launch, **kwargs):
            self.started = kwargs

        def add(self, v):
            assert self.started is not None, "the launch goes first"
            self.added.append(v.name)

        def close(self):
            self.closed = True

    def run(variants, launch, **kw):
        timed["names"] = [v.name for v in variants]
        samples = {v.name: [0.01] * 5 for v in variants}
        rows = [
            bench.VariantReport(v.name, {}, "ok", "", statistics.summarize(samples[v.name]), None) for v in variants
        ]
        return bench.BenchReport("Stand-in GPU", "x", 5, 0.1, 0.005, rows, "stand-in", samples)

    timed = {}
    monkeypatch.setattr(bench, "run", run)
    base = jobs.resolve_one(jobs.Request(MATMUL, ("matmul_kernel",), SIG16, target="h100"), "a sweep explores")
    # BLOCK_N=256 with BLOCK_M=256 and 4 stages does not fit in shared memory: compiled, never handed over
    configs = expand(base, parse_axes(["BLOCK_N=128,256", "BLOCK_M=256", "num_stages=4", "num_warps=8"], base))
    session = Session()
    timers = LocalTimers(
        session, object(), {"max_seconds": 3, "prune": sweep.PRUNE_MARGIN, "graph": "off", "duty": 0.5}
    )
    run = sweep.compile_and_time(
        configs, tmp_path, sweep.Engine(jobs=2, use_cache=False, timers=timers), lambda cfg: None
    )
    assert session.started["prune"] == sweep.PRUNE_MARGIN and session.started["warmup"] == 1
    assert session.added == ["BLOCK_N=128, BLOCK_M=256, num_stages=4, num_warps=8"] and session.closed
    assert timed["names"] == session.added and run.timed.winner.name == session.added[0]
    assert run.timed.batches == 1 and not run.timed.notes, "one GPU, one batch: nothing re-timed"
    assert run.compile_seconds > 0


def test_ref_needs_time(capsys, tmp_path):
    r = run_in(
        capsys,
        "sweep",
        str(VECTOR_ADD),
        "--target",
        "h100",
        "--signature",
        "*fp32, *fp32, *fp32, i32, 1024",
        "--axis",
        "num_warps=4,8",
        "--ref",
        "torch.add(x_ptr, y_ptr)",
        "-o",
        str(tmp_path / "o"),
    )
    assert r.code == 2 and "--ref" in r.err and "--time" in r.err
    assert not (tmp_path / "o").exists()


def test_a_recipe_written_from_a_recipe_sweep_compiles_alone(capsys, tmp_path):
    """Swept from --recipe h200 with only the runtime arguments: the written recipe carries the constexprs
    the h200 recipe gave (BLOCK_*, NUM_SMS, ...), so it compiles its winner without h200 or --const."""
    recipe = tmp_path / "mine.toml"
    sig = "*bf16:16, *bf16:16, *bf16:16, i32:16, i32:16, i32:16"
    persistent = VECTOR_ADD.parent / "persistent_matmul.py"
    r = run_in(
        capsys,
        "sweep",
        str(persistent),
        "--recipe",
        "h200",
        "--signature",
        sig,
        "--axis",
        "GROUP_M=4,8",
        "--write-recipe",
        str(recipe),
        "-o",
        str(tmp_path / "o"),
    )
    assert r.code == 0, r.err
    text = recipe.read_text()
    assert "BLOCK_N = 256" in text and "NUM_SMS = 132" in text and "GROUP_M = 8" not in text.split("[variant")[0]
    r = run_in(
        capsys,
        "dump",
        str(persistent),
        "--recipe",
        str(recipe),
        "--variant",
        "sweep-best",
        "--signature",
        sig,
        "-o",
        str(tmp_path / "replay"),
        "--json",
    )
    assert r.code == 0, r.err
    assert json.loads(r.out)["kernels"][0]["signature"].endswith("128, 256, 64, 4, 132, False, True") or json.loads(
        r.out
    )["kernels"][0]["signature"].endswith("128, 256, 64, 8, 132, False, True")
