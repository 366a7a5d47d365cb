"""irscope profile live (#32): ncu (or Proton where ncu is missing) on this machine's GPU, the join on the
very binary that ran. The CPU side (the recorded H200 pages, the join, the views, a fake ncu) is
tests/test_profile.py."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil

import pytest

from tests.helpers import MATMUL, VECTOR_ADD, run_cli

pytestmark = pytest.mark.gpu

ADD = (
    "x_ptr=randn(16777216, fp32), y_ptr=randn(16777216, fp32), out_ptr=empty(16777216, fp32), "
    "n_elements=16777216, BLOCK_SIZE=1024"
)
MM = (
    "a_ptr=randn(4096, 4096, fp16), b_ptr=randn(4096, 4096, fp16), c_ptr=empty(4096, 4096, fp16), M=4096, N=4096, "
    "K=4096, stride_am=4096, stride_ak=1, stride_bk=4096, stride_bn=1, stride_cm=4096, stride_cn=1, BLOCK_M=128, "
    "BLOCK_N=128, BLOCK_K=64, GROUP_M=8"
)
NO_NCU = shutil.which("ncu") is None


def _profile(tmp_path, *args, env=None):
    r = run_cli("profile", *args, "-o", str(tmp_path / "out"), "--json", env=env)
    if "ERR_NVGPUCTRPERM" in r.err:
        pytest.skip("ncu may not read the counters here (ERR_NVGPUCTRPERM)")
    assert r.code == 0, r.err
    return json.loads(r.out)


@pytest.mark.skipif(NO_NCU, reason="needs Nsight Compute (ncu on PATH)")
def test_vector_adds_store_line_is_hot_and_memory_bound(tmp_path):
    doc = _profile(tmp_path, str(VECTOR_ADD), "--args", ADD, "--grid", "cdiv(n_elements, BLOCK_SIZE)")
    assert doc["tool"].startswith("ncu ")
    assert doc["unmapped"]["samples"] < 0.01 * doc["totals"]["samples"]
    hot = doc["lines"][0]
    assert "tl.store" in hot["text"] and hot["share"] > 0.5
    assert doc["totals"]["dram_gbps"] > 0.3 * doc["totals"]["peak_dram_gbps"]
    assert list((tmp_path / "out").rglob("profile.json"))


@pytest.mark.skipif(NO_NCU, reason="needs Nsight Compute (ncu on PATH)")
def test_num_stages_3_takes_the_long_scoreboard_stalls_off_the_a_load(tmp_path):
    import torch

    if torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("recorded on Hopper: the pipelined load is cp.async there")
    grid = "cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)"
    docs = [
        _profile(
            tmp_path / f"s{s}",
            str(MATMUL),
            "--args",
            MM,
            "--grid",
            grid,
            "--set",
            f"num_stages={s}",
            "--set",
            "num_warps=4",
        )
        for s in (1, 3)
    ]
    a_load = [next(x for x in d["lines"] if x["text"].startswith("a = tl.load")) for d in docs]
    long_sb = [x["stalls"].get("long_sb", 0) / x["samples"] for x in a_load]
    assert long_sb[0] > 0.5 and long_sb[1] < 0.2
    assert docs[1]["totals"]["duration_ns"] < docs[0]["totals"]["duration_ns"]


@pytest.mark.skipif(importlib.util.find_spec("triton.profiler") is None, reason="needs Triton's Proton")
def test_without_ncu_proton_samples_the_lines_and_says_so(tmp_path):
    path = os.pathsep.join(
        p for p in os.environ["PATH"].split(os.pathsep) if not (p and os.path.exists(os.path.join(p, "ncu")))
    )
    r = run_cli(
        "profile",
        str(VECTOR_ADD),
        "--args",
        ADD,
        "--grid",
        "cdiv(n_elements, BLOCK_SIZE)",
        "-o",
        str(tmp_path / "out"),
        "--json",
        env={"PATH": path},
    )
    assert r.code == 0, r.err
    assert "Proton" in r.err
    doc = json.loads(r.out)
    assert doc["tool"] == "proton pcsampling" and "tl.store" in doc["lines"][0]["text"]
