"""Compiling for cuda:90 and hip:gfx942 on the CPU: assert on what the output means."""

from __future__ import annotations

import json
import os
import re

import pytest

from irscope.compile import dump
from irscope.kernel import loader
from irscope.kernel.settings import Settings
from irscope.kernel.spec import build_spec
from irscope.kernel.targets import parse_target
from tests.helpers import (
    EXAMPLES,
    FB_GLUON_LOAD,
    FBTRITON,
    MATMUL,
    MATMUL_SIG,
    VECTOR_ADD,
    compile_example,
    run_in,
)

ADD_ALIGNED = "*fp32, *fp32, *fp32, i32:16, 1024"
ADD_UNALIGNED = "*fp32:4, *fp32:4, *fp32:4, i32:16, 1024"


@pytest.fixture(scope="module")
def add_aligned():
    """examples/vector_add.py with 16-byte aligned pointers, for cuda:90 (compiled once for the tests that read it)."""
    return compile_example(VECTOR_ADD, ADD_ALIGNED)


def test_aligned_pointers_give_vector_loads(add_aligned):
    art = add_aligned
    assert re.search(r"ld\.global(\.\w+)*\.v4\.b32", art.stages["ptx"])
    assert art.stats["ptx"]["global_load"].get("128", 0) >= 2
    assert art.stats["sass"]["global_widths"].get("LDG.128", 0) >= 2


def test_unaligned_pointers_give_scalar_loads():
    art = compile_example(VECTOR_ADD, ADD_UNALIGNED, sass=False)  # the PTX is read, not the SASS
    assert not re.search(r"ld\.global(\.\w+)*\.v[24]\.", art.stages["ptx"])
    assert set(art.stats["ptx"]["global_load"]) == {"32"}


def test_num_warps_reaches_ttgir_and_stats():
    art = compile_example(VECTOR_ADD, ADD_ALIGNED, sets=("num_warps=8",), sass=False)
    assert '"ttg.num-warps" = 8' in art.stages["ttgir"]
    assert art.stats["num_warps"] == 8
    assert art.options["num_warps"] == 8 and art.user_options == {"num_warps": 8}


def test_nvidia_stages_and_resources(add_aligned):
    art = add_aligned
    assert list(art.stages) == ["source", "frontend", "ttir", "ttgir", "llir", "ptx", "cubin", "sass"]
    assert isinstance(art.stages["cubin"], bytes) and art.stages["cubin"][:4] == b"\x7fELF"
    assert ".target sm_90a" in art.stages["ptx"]
    assert "add_kernel" in art.stages["sass"] and "LDG" in art.stages["sass"]
    assert art.stats["registers"] > 0
    assert art.stats["spills"] == 0
    assert 0 < art.stats["occupancy"]["occupancy"] <= 1
    assert "@triton.jit" in art.stages["source"] or "def add_kernel" in art.stages["source"]
    assert all(t >= 0 for t in art.times_ms.values())


def test_amd_stages_and_resources():
    art = compile_example(VECTOR_ADD, ADD_ALIGNED, target="hip:gfx942")
    assert list(art.stages)[-2:] == ["amdgcn", "hsaco"]
    assert 'ttg.target = "hip:gfx942"' in art.stages["ttgir"]
    assert ".amdgcn_target" in art.stages["amdgcn"] and "gfx942" in art.stages["amdgcn"]
    assert art.stats["vgpr_count"] > 0 and art.stats["sgpr_count"] > 0
    assert art.stats["occupancy"]["waves_per_simd"] >= 1
    assert sum(art.stats["amdgcn"]["global_load"].values()) >= 2


def test_matmul_on_hopper_uses_wgmma_and_shared_memory():
    art = compile_example(MATMUL, MATMUL_SIG, kernel="matmul_kernel", sets=("num_warps=8",), sass=False)
    assert art.stats["ptx"]["wgmma"] > 0
    assert art.stats["shared_bytes"] > 0
    assert art.stats["ttgir"]["dot"] >= 1
    assert any(lay["kind"] == "nvidia_mma" for lay in art.stats["ttgir"]["layouts"])


def test_matmul_on_mi300x_uses_mfma():
    art = compile_example(MATMUL, MATMUL_SIG, kernel="matmul_kernel", target="mi300x")
    assert art.stats["amdgcn"]["mfma"] > 0
    assert any(lay["kind"] == "amd_mfma" for lay in art.stats["ttgir"]["layouts"])


@pytest.mark.skipif(FBTRITON, reason=FB_GLUON_LOAD)
def test_gluon_kernel_has_no_ttir_and_keeps_its_layout():
    art = compile_example(
        EXAMPLES / "gluon_add.py",
        "*fp32, *fp32, *fp32, i32:16, 1024",
        consts=("layout=gl.BlockedLayout([2], [32], [4], [0])",),
    )
    assert "ttir" not in art.stages
    assert "sizePerThread = [2]" in art.stages["ttgir"]
    assert art.stats["ptx"]["global_load"].get("64", 0) >= 2


def test_dump_cli_json_and_folder_layout(capsys, tmp_path):
    out = tmp_path / "dumps"
    r = run_in(
        capsys, "dump", str(VECTOR_ADD), "--signature", ADD_ALIGNED, "--target", "h100", "-o", str(out), "--json"
    )
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    k = doc["kernels"][0]
    assert {"name", "target", "options", "stages", "stats"} <= set(k)
    assert k["name"] == "add_kernel" and k["target"] == "cuda:90" and k["options"]["num_warps"] == 4
    for stage in ("ttir", "ttgir", "llir", "ptx", "cubin", "sass"):
        assert (tmp_path / k["stages"][stage]).exists() or __import__("os").path.exists(k["stages"][stage])
    folder = next((out / "add_kernel").iterdir())
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["stages"]["ptx"] == "add_kernel.ptx"
    # a second setting lands beside the first, never over it
    r = run_in(
        capsys,
        "dump",
        str(VECTOR_ADD),
        "--signature",
        ADD_ALIGNED,
        "--target",
        "h100",
        "-o",
        str(out),
        "--set",
        "num_warps=8",
    )
    assert r.code == 0, r.err
    assert len(list((out / "add_kernel").iterdir())) == 2


def test_summary_and_stage_views(capsys, tmp_path):
    r = run_in(capsys, "dump", str(VECTOR_ADD), "--signature", ADD_ALIGNED, "-o", str(tmp_path))
    assert r.code == 0, r.err
    assert ("cuda:90" in r.out and "default" in r.out) or "local GPU" in r.out, "says which target it used and why"
    assert re.search(r"\d+ registers", r.out) and "occupancy" in r.out
    r = run_in(capsys, "dump", str(VECTOR_ADD), "--signature", ADD_ALIGNED, "-o", str(tmp_path), "--stage", "ptx")
    assert r.code == 0 and r.out.startswith("//") and ".entry add_kernel" in r.out
    assert "\x1b[" not in r.out, "no colour codes when piped"


def test_repeat_dump_is_served_from_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("IRSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    ref = loader.select_kernels(VECTOR_ADD, None)[0]
    spec = build_spec(ref, ADD_ALIGNED, [], [])
    first = dump.dump(spec, Settings(parse_target("h100")), tmp_path / "a")
    again = dump.dump(spec, Settings(parse_target("h100")), tmp_path / "b")
    assert not first.cached and again.cached
    assert (again.folder / "add_kernel.ptx").read_text() == (first.folder / "add_kernel.ptx").read_text()
    other = dump.dump(spec, Settings(parse_target("h100"), options={"num_warps": 2}), tmp_path / "a")
    assert not other.cached


def test_replay_manifest_with_new_options(capsys, tmp_path):
    r = run_in(capsys, "dump", str(VECTOR_ADD), "--signature", ADD_ALIGNED, "-o", str(tmp_path / "a"), "--json")
    manifest = next((tmp_path / "a" / "add_kernel").iterdir()) / "manifest.json"
    r = run_in(capsys, "dump", str(manifest), "--set", "num_warps=8", "-o", str(tmp_path / "b"), "--stage", "ttgir")
    assert r.code == 0, r.err
    assert '"ttg.num-warps" = 8' in r.out


def test_a_version_default_that_is_about_to_change_is_a_note_not_a_warning(cli, tmp_path):
    """Triton 3.9 fuses FP by default and warns once a process that 3.10 will not; irscope says it in each dump.
    A fresh process each (the cli fixture): the warning would be on its stderr."""
    from triton import knobs

    has_default = hasattr(getattr(knobs, "language", None), "fp_fusion_enabled")  # 3.9 on
    expected = has_default and "TRITON_DEFAULT_FP_FUSION" not in os.environ
    for sets, expect_note in ((), expected), (("--set", "enable_fp_fusion=false"), False):
        r = cli(
            "dump",
            str(VECTOR_ADD),
            "--signature",
            "*fp32, *fp32, *fp32, i32:16, 1024",
            *sets,
            "-o",
            str(tmp_path),
            "--json",
        )
        assert r.code == 0, r.err
        notes = json.loads(r.out)["kernels"][0]["notes"]
        assert any("TRITON_DEFAULT_FP_FUSION unset" in n for n in notes) == expect_note, notes
        assert "UserWarning" not in r.err and "TRITON_DEFAULT_FP_FUSION" not in r.err, r.err
