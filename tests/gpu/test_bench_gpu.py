"""Timing on a real GPU (moved from tests/test_bench.py): faults and wrong results per variant, A/A and options on
the CLI, diff --time, batched short kernels in events and graphs, sweep --time, --ref against torch in the same rounds.
The CPU side of timing (statistics, verdicts, launch parsing, the no-GPU messages) stays in tests/test_bench.py."""

from __future__ import annotations

import json

import pytest

from irscope import jobs
from irscope.timing import bench, launch
from irscope.timing.variant import Variant
from tests.helpers import DATA, FLOATS_N, MATMUL, VECTOR_ADD

pytestmark = pytest.mark.gpu


def _variants(path, kernel, consts_list, sets_list=None):
    """One variant per constexpr list (and options), for the local GPU's target (no --target: the local GPU)."""
    out = []
    for i, consts in enumerate(consts_list):
        job = jobs.resolve_one(jobs.Request(path, (kernel,), named_args=FLOATS_N, consts=tuple(consts)), "a test times")
        job = jobs.vary(job, (sets_list or [{}] * len(consts_list))[i], "a test")
        out.append(Variant(f"v{i}", job.spec, job.settings))
    return out


def test_faulting_variant_is_reported_and_others_measured():
    vs = _variants(
        DATA / "faulty.py",
        "maybe_fault",
        [["BLOCK=1024", "FAULT=False"], ["BLOCK=1024", "FAULT=True"], ["BLOCK=1024", "FAULT=False"]],
    )
    lw = launch.Launch(
        launch.parse_args("x_ptr=randn(1048576, fp32), out_ptr=zeros(1048576, fp32), n=1048576"), (1024, 1, 1)
    )
    r = bench.run(vs, lw, max_seconds=3, min_rounds=20)
    status = {v.name: v.status for v in r.variants}
    assert status == {"v0": "ok", "v1": "faulted", "v2": "ok"}
    assert r.rounds_run >= 20 and r.variants[2].summary.n == r.rounds, "rounds dropped for a low clock: counted"


def test_wrong_result_is_flagged_never_a_win():
    vs = _variants(DATA / "faulty.py", "scaled_copy", [["BLOCK=1024", "SCALE=2"], ["BLOCK=1024", "SCALE=3"]])
    lw = launch.Launch(
        launch.parse_args("x_ptr=randn(1048576, fp32), out_ptr=zeros(1048576, fp32), n=1048576"), (1024, 1, 1)
    )
    r = bench.run(vs, lw, max_seconds=3)
    assert r.variants[1].status == "wrong result" and "out_ptr differs" in r.variants[1].reason
    assert r.variants[1].versus_baseline is None


def test_aa_and_options_on_the_cli(cli, tmp_path):
    r = cli(
        "bench",
        str(VECTOR_ADD),
        "--args",
        "x_ptr=randn(16777216, fp32), y_ptr=randn(16777216, fp32), out_ptr=empty(16777216, fp32), n_elements=16777216",
        "--const",
        "BLOCK_SIZE=1024",
        "--grid",
        "cdiv(n_elements, BLOCK_SIZE)",
        "--aa",
        "--try",
        "num_warps=8",
        "--bytes",
        "3*4*n_elements",
        "--max-seconds",
        "5",
        "--json",
        "-o",
        str(tmp_path),
    )
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    names = [v["name"] for v in doc["variants"]]
    assert names == ["baseline", "baseline (A/A copy)", "num_warps=8"]
    aa = doc["variants"][1]["versus_baseline"]
    assert aa["verdict"] in ("same", "ambiguous"), aa
    assert abs(aa["ratio"] - 1) < 0.02 and aa["ci_low"] < aa["ci_high"]
    assert doc["clocks"].get("source") or doc["clocks"]["why_not"].startswith("clocks not watched")
    assert doc["variants"][0]["gbps"] > 100


def test_diff_time_on_the_gpu(cli, tmp_path):
    r = cli(
        "diff",
        str(VECTOR_ADD),
        "--signature",
        "*fp32, *fp32, *fp32, i32:16, 1024",
        "--a",
        "num_warps=4",
        "--b",
        "num_warps=8",
        "--time",
        "--args",
        "x_ptr=randn(16777216, fp32), y_ptr=randn(16777216, fp32), out_ptr=empty(16777216, fp32), n_elements=16777216",
        "--grid",
        "cdiv(n_elements, BLOCK_SIZE)",
        "--max-seconds",
        "3",
        "--json",
        "-o",
        str(tmp_path),
    )
    assert r.code == 1, r.err  # the code differs
    doc = json.loads(r.out)
    names = [v["name"] for v in doc["timing"]["variants"]]
    assert names == ["a: num_warps=4", "b: num_warps=8"]
    assert doc["timing"]["variants"][1]["versus_baseline"]["verdict"] in ("faster", "slower", "same", "ambiguous")


def test_short_kernels_are_timed_in_batches_with_events_and_in_graphs(cli, tmp_path):
    """4096 floats: a few microseconds. Under 20 us a sample is a batch of launches back to back (hot L2),
    in events and in graphs alike; auto keeps events."""
    args = (
        "bench",
        str(VECTOR_ADD),
        "--args",
        ("x_ptr=randn(4096, fp32), y_ptr=randn(4096, fp32), out_ptr=empty(4096, fp32), n_elements=4096"),
        "--const",
        "BLOCK_SIZE=1024",
        "--grid",
        "cdiv(n_elements, BLOCK_SIZE)",
        "--aa",
        "--max-seconds",
        "3",
        "--json",
        "-o",
        str(tmp_path),
    )
    docs = {}
    for mode in ("on", "auto"):
        r = cli(*args, "--graph", mode)
        assert r.code == 0, r.err
        docs[mode] = json.loads(r.out)
    assert docs["on"]["method"].startswith("CUDA graph") and docs["auto"]["method"].startswith("CUDA events")
    for doc in docs.values():
        k = doc["batch"]
        assert 2 <= k <= 256 and f"{k} launches back to back per sample, L2 warm after the first" in doc["method"]
        assert "biased" not in doc["method"]
    graph = docs["on"]
    assert 0.0005 < graph["variants"][0]["summary"]["median"] < 0.05, (
        "a 4096-element add takes microseconds",
        graph["variants"][0],
    )
    assert len(graph["samples"]["baseline"]) == graph["rounds"], "one sample a round: the mean of its runs"
    assert graph["runs_per_round"] >= 2 and graph["runs_per_round"] % 2 == 0, "a replay is balanced: ABBA"
    aa = docs["auto"]["variants"][1]["versus_baseline"]
    assert aa["verdict"] in ("same", "ambiguous") and aa["ci_low"] < aa["ci_high"], aa
    for doc in docs.values():
        assert 0 < doc["tick_ms"] < 0.001 or doc["tick_ms"] == 0


def test_sweep_time_names_a_winner_and_drops_the_clearly_slower(cli, tmp_path):
    sig = "*fp16, *fp16, *fp16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, 128, 128, 64, 8"
    n = 4096
    r = cli(
        "sweep",
        str(MATMUL),
        "--kernel",
        "matmul_kernel",
        "--signature",
        sig,
        "--axis",
        "BLOCK_M=32,128",
        "--axis",
        "BLOCK_N=32,128",
        "--time",
        "--args",
        f"a_ptr=randn({n}, {n}, fp16), b_ptr=randn({n}, {n}, fp16), c_ptr=empty({n}, {n}, fp16), M={n}, N={n}, "
        f"K={n}, stride_am={n}, stride_ak=1, stride_bk={n}, stride_bn=1, stride_cm={n}, stride_cn=1",
        "--grid",
        "cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)",
        "--max-seconds",
        "5",
        "--json",
        "-o",
        str(tmp_path),
    )
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    rows = {v["name"]: v for v in doc["timing"]["variants"]}
    assert doc["winner"]["config"] == "BLOCK_M=128, BLOCK_N=128"
    assert rows["BLOCK_M=32, BLOCK_N=32"]["dropped"].startswith("dropped after"), "several times slower: dropped"
    assert not rows[doc["winner"]["config"]]["dropped"]
    assert all(v["status"] == "ok" for v in rows.values())


def test_ref_times_torch_in_the_same_rounds(cli, tmp_path):
    """The example matmul against torch.matmul over the same inputs: a ratio with its CI, and a bad shape refused."""
    n = 2048
    args = (
        f"a_ptr=randn({n}, {n}, fp16), b_ptr=randn({n}, {n}, fp16), c_ptr=empty({n}, {n}, fp16), M={n}, N={n}, "
        f"K={n}, stride_am={n}, stride_ak=1, stride_bk={n}, stride_bn=1, stride_cm={n}, stride_cn=1"
    )
    common = (
        "bench",
        str(MATMUL),
        "--kernel",
        "matmul_kernel",
        "--args",
        args,
        "--const",
        "BLOCK_M=128",
        "--const",
        "BLOCK_N=128",
        "--const",
        "BLOCK_K=64",
        "--const",
        "GROUP_M=8",
        "--grid",
        "cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)",
        "--flops",
        "2*M*N*K",
        "-o",
        str(tmp_path),
    )
    r = cli(*common, "--ref", "torch.matmul(a_ptr, b_ptr)", "--max-seconds", "4", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    vr = doc["variants"][0]["versus_reference"]
    assert vr["ci_low"] < vr["ratio"] < vr["ci_high"] and 0.3 < vr["ratio"] < 5, vr
    assert doc["ref"]["name"] == "ref: torch.matmul(a_ptr, b_ptr)" and doc["ref"]["tflops"] > 50
    assert doc["ref"]["reason"] == "", "torch.matmul computes what the kernel computes"
    bad = cli(*common, "--ref", "torch.matmul(a_ptr, torch.zeros(3))", "--max-seconds", "1")
    assert bad.code == 2 and len([x for x in bad.err.splitlines() if x.strip()]) == 1, bad.err
    assert "torch.zeros(…) is not a known reference function" in bad.err
    n2 = cli(
        *[a if a != args else args.replace(f"b_ptr=randn({n}, {n}", f"b_ptr=randn({n // 2}, {n}") for a in common],
        "--ref",
        "torch.matmul(a_ptr, b_ptr)",
        "--max-seconds",
        "1",
    )
    assert n2.code == 2 and "does not fit the --args" in n2.err, n2.err
