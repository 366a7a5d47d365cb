"""Timing: statistics on known samples, verdicts, launch parsing, the no-GPU message; GPU runs skip without one."""

from __future__ import annotations

import importlib.util
import json
import random

import pytest
from conftest import DATA, MATMUL, VECTOR_ADD

from irscope import jobs
from irscope.errors import BadInput, IrscopeError
from irscope.timing import bench, launch
from irscope.timing import session as session_mod
from irscope.timing import statistics as timing
from irscope.timing.inputs import check_outputs
from irscope.timing.measure import PRUNE_AFTER, PRUNE_EARLY, _prune
from irscope.timing.session import TimingSession
from irscope.timing.variant import Variant

FLOATS_N = ("x_ptr=*fp32", "out_ptr=*fp32", "n=i32:16")   # the faulty.py kernels' runtime parameters


def test_median_quantiles_and_ci_on_known_samples():
    xs = [float(i) for i in range(1, 102)]  # 1..101
    s = timing.summarize(xs)
    assert s.median == 51 and s.q1 == 26 and s.q3 == 76 and s.iqr == 50
    # binomial CI of the median of 101 samples: order statistics around 51 +- 1.96*sqrt(101)/2 ~ 9.85
    assert 40 <= s.ci_low < 51 < s.ci_high <= 62
    assert timing.median_ci([3.0, 1.0, 2.0]) == (1.0, 3.0), "too few samples: the whole range"


def test_paired_ratio_sees_a_two_percent_win_through_drift():
    rng = random.Random(1)
    a, b = [], []
    for i in range(200):
        drift = 1 + 0.05 * (i / 200)          # clocks drift 5 % over the run, for both alike
        noise = lambda: rng.gauss(0, 0.003)
        a.append(1.00 * drift * (1 + noise()))
        b.append(0.98 * drift * (1 + noise()))
    c = timing.compare(a, b)
    assert c.verdict == "faster" and 0.975 < c.ratio < 0.985 and c.ci_high < 1
    assert abs(c.delta_percent + 2) < 0.5


def test_identical_variants_are_no_significant_difference():
    rng = random.Random(2)
    a = [1 + rng.gauss(0, 0.01) for _ in range(300)]
    b = [1 + rng.gauss(0, 0.01) for _ in range(300)]
    c = timing.compare(a, b)
    assert c.verdict == "no significant difference" and c.ci_low < 1 < c.ci_high


def test_a_variant_dropped_early_is_compared_over_the_rounds_both_ran():
    a = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 9.0, 9.0]   # the later rounds are the leader's alone
    b = [1.1] * 6
    c = timing.compare_shared_rounds(a, b)
    assert abs(c.ratio - 1.1) < 1e-9 and c.verdict == "slower"
    assert timing.compare_shared_rounds(b, a).verdict == "faster"


def test_verdicts():
    assert timing.verdict(0.95, 0.99) == "faster"
    assert timing.verdict(1.01, 1.03) == "slower"
    assert timing.verdict(0.99, 1.01) == "no significant difference"
    assert not timing.precise_enough([1.0] * 5, [1.0] * 5, 0.01), "too few rounds is never precise"


def test_a_sweep_drops_only_the_variants_clearly_behind_the_leader():
    rng = random.Random(3)
    rounds = PRUNE_AFTER + 2
    drift = [1 + 0.02 * i for i in range(rounds)]  # drift hits every variant alike in a round
    speeds = {"leader": 1.0, "close": 1.004, "slow": 1.2, "bit-slower": 1.05}
    live = [Variant(name, None, None, samples_ms=[speed * d * (1 + rng.gauss(0, 0.002)) for d in drift])
            for name, speed in speeds.items()]
    kept = _prune(live, 0.01, rounds)
    assert [v.name for v in kept] == ["leader", "close"]
    slow = next(v for v in live if v.name == "slow")
    assert slow.dropped.startswith(f"dropped after {rounds} rounds: +") and "against leader" in slow.dropped
    assert not kept[1].dropped, "within the margin of the leader: timed on"

    early = PRUNE_EARLY[0]
    live = [Variant(name, None, None, samples_ms=[speed * d for d in drift[:early]])
            for name, speed in {"leader": 1.0, "3x": 3.0, "bit-slower": 1.05}.items()]
    kept = _prune(live, PRUNE_EARLY[1], early)  # what measure asks for before PRUNE_AFTER rounds
    assert [v.name for v in kept] == ["leader", "bit-slower"], "two rounds only drop the far slower"


@pytest.mark.skipif("_has_gpu()", reason="the timing process starts fine where there is a GPU")
def test_timing_process_that_cannot_start_says_why():
    """The protocol without a GPU: the child cannot start (torch without CUDA, or no torch at all: the
    README's install does not bring it), says why, and the parent reports it in one line."""
    job = jobs.resolve_one(jobs.Request(DATA / "faulty.py", ("scaled_copy",), named_args=FLOATS_N,
                                        consts=("BLOCK=1024", "SCALE=2"), target="h100"), "a test times")
    with TimingSession() as session:
        session.start(launch.Launch(launch.parse_args("x_ptr=randn(4096, fp32), out_ptr=zeros(4096, fp32), n=4096"),
                                    (4, 1, 1)))
        session.add(Variant("v", job.spec, job.settings))
        why = "(CUDA|cuda|NVIDIA|driver)" if importlib.util.find_spec("torch") else "torch"
        with pytest.raises(IrscopeError, match=f"timing process could not start: .*{why}") as e:
            session.finish(session.sent, budget=60)
    assert "\n" not in str(e.value).strip() and "Traceback" not in str(e.value)


# a stand-in timing process over the same protocol: variant "bad" kills it in its preflight
FAKE_CHILD = """
import sys
from irscope import workers
print("the kernel file prints", end="")   # not protocol: ignored
workers.say("UP")
for msg in workers.messages():
    if msg["op"] == "variant":
        if msg["name"] == "bad":
            sys.stderr.write("RuntimeError: an illegal memory access was encountered\\n")
            sys.exit(1)
        workers.say("OK", msg["i"])
    elif msg["op"] == "measure":
        workers.say("RESULT", {"device": "stand-in", "rounds": 3,
                               "variants": {n: ("ok", "", [1.0, 1.0, 1.0], "") for n in msg["order"]}})
        sys.exit(0)
"""


def test_a_variant_that_kills_the_timing_process_is_blamed_and_a_new_one_measures_the_rest(monkeypatch):
    """The parent's side on the CPU: UP, a death in a preflight faults that variant, a new child gets the others."""
    monkeypatch.setattr(session_mod, "CHILD", ("-c", FAKE_CHILD))
    job = jobs.resolve_one(jobs.Request(DATA / "faulty.py", ("scaled_copy",), named_args=FLOATS_N,
                                        consts=("BLOCK=1024", "SCALE=2"), target="h100"), "a test times")
    variants = [Variant(name, job.spec, job.settings) for name in ("a", "bad", "c")]
    with TimingSession() as session:
        session.start(launch.Launch(launch.parse_args("n=4096"), (4, 1, 1)), seed=0)
        for v in variants:
            session.add(v)
        device, result = session.finish(variants, budget=60)
    assert device == "stand-in" and sorted(result["variants"]) == ["a", "c"]
    assert [v.status for v in variants] == ["ok", "faulted", "ok"]
    assert "illegal memory access" in variants[1].reason

def test_launch_arguments_and_grid():
    args = launch.parse_args("a=randn(4096, 2048, fp16), b=randn(2048, 1024, bf16).T, M=4096, K=size(a, 1), "
                             "sa=stride(a, 0), n=numel(a) // 2, off=randn(100, fp32)[3:]")
    assert args["a"].shape == (4096, 2048) and args["a"].dtype == "fp16"
    assert args["b"].transpose and args["b"].dims() == (1024, 2048) and args["b"].stride_of(0) == 1
    assert args["K"] == 2048 and args["sa"] == 2048 and args["n"] == 4096 * 1024
    assert launch.spec_element(args["a"]) == "*fp16:16"
    assert launch.spec_element(args["off"]) == "*fp32:4", "a view 3 floats in is 4-byte aligned"
    assert launch.spec_element(4096) == "i32:16" and launch.spec_element(1) == "i32:1"
    assert launch.spec_element(4099) == "i32" and launch.spec_element(2**33) == "i64:16"
    assert launch.parse_grid("cdiv(M, 128), 2", dict(args)) == (32, 2, 1)
    assert launch.parse_grid("cdiv(M, 128) * 4", dict(args)) == (128, 1, 1)


@pytest.mark.parametrize("text, message", [
    ("x=randn(10)", "needs a dtype last"),
    ("x=__import__('os')", "is not allowed"),
    ("n=m*2", "unknown name 'm'"),
    ("x", "expected NAME=VALUE"),
])
def test_launch_parsing_refuses_what_is_not_data(text, message):
    with pytest.raises(BadInput, match=message):
        launch.parse_args(text)


def test_outputs_are_compared_by_dtype_tolerance():
    torch = pytest.importorskip("torch")

    spec = launch.Launch({"out": launch.TensorSpec("zeros", (64,), "fp16"), "n": 64})
    base = {"out": torch.ones(64, dtype=torch.float16), "n": 64}
    close = {"out": torch.ones(64, dtype=torch.float16) * 1.001, "n": 64}
    wrong = {"out": torch.ones(64, dtype=torch.float16) * 2, "n": 64}
    assert check_outputs(base, close, spec) == ""
    assert "out differs from the baseline" in check_outputs(base, wrong, spec)


def _has_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.skipif(_has_gpu(), reason="checks the message given without a GPU")
def test_bench_without_gpu_says_so_in_one_line(cli, tmp_path):
    r = cli("bench", str(VECTOR_ADD), "--args", "x_ptr=randn(4096, fp32), y_ptr=randn(4096, fp32), "
            "out_ptr=empty(4096, fp32), n_elements=4096", "--const", "BLOCK_SIZE=1024", "--grid", "4",
            "-o", str(tmp_path / "o"))
    assert r.code == 2
    lines = [line for line in r.err.splitlines() if line.strip()]
    assert len(lines) == 1 and "needs a GPU" in lines[0]


# ---------------------------------------------------------------- on a GPU

gpu = pytest.mark.skipif(not _has_gpu(), reason="needs a GPU")


def _variants(path, kernel, consts_list, sets_list=None):
    """One variant per constexpr list (and options), for the local GPU's target (no --target: the local GPU)."""
    out = []
    for i, consts in enumerate(consts_list):
        job = jobs.resolve_one(jobs.Request(path, (kernel,), named_args=FLOATS_N, consts=tuple(consts)), "a test times")
        job = jobs.vary(job, (sets_list or [{}] * len(consts_list))[i], "a test")
        out.append(Variant(f"v{i}", job.spec, job.settings))
    return out


@gpu
@pytest.mark.gpu
def test_faulting_variant_is_reported_and_others_measured():
    vs = _variants(DATA / "faulty.py", "maybe_fault", [["BLOCK=1024", "FAULT=False"], ["BLOCK=1024", "FAULT=True"],
                                                       ["BLOCK=1024", "FAULT=False"]])
    lw = launch.Launch(launch.parse_args("x_ptr=randn(1048576, fp32), out_ptr=zeros(1048576, fp32), n=1048576"),
                       (1024, 1, 1))
    r = bench.run(vs, lw, max_seconds=3, min_rounds=20)
    status = {v.name: v.status for v in r.variants}
    assert status == {"v0": "ok", "v1": "faulted", "v2": "ok"}
    assert r.variants[2].summary.n >= 20


@gpu
@pytest.mark.gpu
def test_wrong_result_is_flagged_never_a_win():
    vs = _variants(DATA / "faulty.py", "scaled_copy", [["BLOCK=1024", "SCALE=2"], ["BLOCK=1024", "SCALE=3"]])
    lw = launch.Launch(launch.parse_args("x_ptr=randn(1048576, fp32), out_ptr=zeros(1048576, fp32), n=1048576"),
                       (1024, 1, 1))
    r = bench.run(vs, lw, max_seconds=3)
    assert r.variants[1].status == "wrong result" and "out_ptr differs" in r.variants[1].reason
    assert r.variants[1].versus_baseline is None


@gpu
@pytest.mark.gpu
def test_aa_and_options_on_the_cli(cli, tmp_path):
    r = cli("bench", str(VECTOR_ADD), "--args", "x_ptr=randn(16777216, fp32), y_ptr=randn(16777216, fp32), "
            "out_ptr=empty(16777216, fp32), n_elements=16777216", "--const", "BLOCK_SIZE=1024",
            "--grid", "cdiv(n_elements, BLOCK_SIZE)", "--aa", "--try", "num_warps=8", "--bytes", "3*4*n_elements",
            "--max-seconds", "5", "--json", "-o", str(tmp_path))
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    names = [v["name"] for v in doc["variants"]]
    assert names == ["baseline", "baseline (A/A copy)", "num_warps=8"]
    aa = doc["variants"][1]["versus_baseline"]
    assert aa["verdict"] in ("no significant difference", "faster", "slower")
    assert abs(aa["ratio"] - 1) < 0.02
    assert doc["variants"][0]["gbps"] > 100


@pytest.mark.skipif(_has_gpu(), reason="checks the message given without a GPU")
def test_diff_time_without_gpu_says_so_in_one_line(cli, tmp_path):
    r = cli("diff", str(VECTOR_ADD), "--signature", "*fp32, *fp32, *fp32, i32:16, 1024", "--a", "num_warps=4",
            "--b", "num_warps=8", "--time", "-o", str(tmp_path / "o"))
    assert r.code == 2
    lines = [line for line in r.err.splitlines() if line.strip()]
    assert len(lines) == 1 and "needs a GPU" in lines[0]
    assert not (tmp_path / "o").exists()


@gpu
@pytest.mark.gpu
def test_diff_time_on_the_gpu(cli, tmp_path):
    r = cli("diff", str(VECTOR_ADD), "--signature", "*fp32, *fp32, *fp32, i32:16, 1024", "--a", "num_warps=4",
            "--b", "num_warps=8", "--time", "--args", "x_ptr=randn(16777216, fp32), y_ptr=randn(16777216, fp32), "
            "out_ptr=empty(16777216, fp32), n_elements=16777216", "--grid", "cdiv(n_elements, BLOCK_SIZE)",
            "--max-seconds", "3", "--json", "-o", str(tmp_path))
    assert r.code == 1, r.err  # the code differs
    doc = json.loads(r.out)
    names = [v["name"] for v in doc["timing"]["variants"]]
    assert names == ["a: num_warps=4", "b: num_warps=8"]
    assert doc["timing"]["variants"][1]["versus_baseline"]["verdict"] in ("faster", "slower",
                                                                          "no significant difference")


@gpu
@pytest.mark.gpu
def test_short_kernels_are_timed_in_cuda_graphs(cli, tmp_path):
    """4096 floats: a few microseconds, where the launch path would dominate; auto picks graphs, off does not."""
    args = ("bench", str(VECTOR_ADD), "--args", "x_ptr=randn(4096, fp32), y_ptr=randn(4096, fp32), "
            "out_ptr=empty(4096, fp32), n_elements=4096", "--const", "BLOCK_SIZE=1024", "--grid",
            "cdiv(n_elements, BLOCK_SIZE)", "--aa", "--max-seconds", "3", "--json", "-o", str(tmp_path))
    docs = {}
    for mode in ("auto", "off"):
        r = cli(*args, "--graph", mode)
        assert r.code == 0, r.err
        docs[mode] = json.loads(r.out)
    assert docs["auto"]["method"].startswith("CUDA graph") and docs["off"]["method"].startswith("CUDA events")
    graph = docs["auto"]
    assert 0.0005 < graph["variants"][0]["summary"]["median"] < 0.05, ("a 4096-element add takes microseconds",
                                                                       graph["variants"][0])
    assert len(graph["samples"]["baseline"]) == graph["rounds"], "one sample a round: the median of its replay"
    assert abs(graph["variants"][1]["versus_baseline"]["ratio"] - 1) < 0.05, graph["variants"][1]


@gpu
@pytest.mark.gpu
def test_sweep_time_names_a_winner_and_drops_the_clearly_slower(cli, tmp_path):
    sig = "*fp16, *fp16, *fp16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, 128, 128, 64, 8"
    n = 4096
    r = cli("sweep", str(MATMUL), "--kernel", "matmul_kernel", "--signature", sig, "--grid", "BLOCK_M=32,128",
            "--grid", "BLOCK_N=32,128", "--time", "--args",
            f"a_ptr=randn({n}, {n}, fp16), b_ptr=randn({n}, {n}, fp16), c_ptr=empty({n}, {n}, fp16), M={n}, N={n}, "
            f"K={n}, stride_am={n}, stride_ak=1, stride_bk={n}, stride_bn=1, stride_cm={n}, stride_cn=1",
            "--launch-grid", "cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)", "--max-seconds", "5", "--json", "-o", str(tmp_path))
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    rows = {v["name"]: v for v in doc["timing"]["variants"]}
    assert doc["winner"]["config"] == "BLOCK_M=128, BLOCK_N=128"
    assert rows["BLOCK_M=32, BLOCK_N=32"]["dropped"].startswith("dropped after"), "several times slower: dropped"
    assert not rows[doc["winner"]["config"]]["dropped"]
    assert all(v["status"] == "ok" for v in rows.values())
