"""irscope explain's later kinds (issue #40 item 2): a dot loop the pipeliner cannot stage (a `while` loop) and
shared memory that leaves an SM's schedulers (a CU's SIMDs) without a warp. Each on a pitfall kernel that has
the problem (the finding names the right line, cause and fix) and on ones that do not (no finding).
Kernels are examples/pitfalls/ compiled on the CPU for NVIDIA and AMD targets.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import irscope as api
from irscope import explain
from irscope.explain import ir
from irscope.kernel import hardware
from tests.helpers import EXAMPLES
from tests.test_explain import PITFALLS, found, line_of  # one way to compile a pitfall and name its line

WHILE = "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, 64, 64, 32"
BOUND = "*i32:16, *fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, 64, 64, 32"
DOT = "*fp16, *fp16, *fp16, i32:16, i32:16, i32:16, i32:16, {m}, {n}, {k}, 'ieee'"


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("explain-rules")


def keys(fs: list[explain.Finding]) -> set[tuple[str, int, str]]:
    return {(f.kind, f.where.line, f.cause) for f in fs}


@pytest.mark.parametrize("target", ["cuda:90", "cuda:80", "hip:gfx942"])
def test_dot_operands_loaded_in_a_while_loop_are_not_pipelined(out, target):
    fs = found(out, "while_dot.py", WHILE, target)
    a, b = line_of("while_dot.py", "a = tl.load("), line_of("while_dot.py", "b = tl.load(")
    assert keys(fs) == {("loop-not-pipelined", a, "while-loop"), ("loop-not-pipelined", b, "while-loop")}
    f = next(f for f in fs if f.where.line == a)
    assert f"`while` loop of line {line_of('while_dot.py', 'while k < K')}" in f.what
    stages = 2 if target.startswith("hip") else 3
    assert f"num_stages={stages}" in f.what
    assert "scf.while" in f.why and any("scf.while" in e for e in f.evidence)
    assert "for k in range(" in f.fix.text and not f.fix.tryable
    assert any("load" in t for t in f.where.ttgir)


@pytest.mark.parametrize("target", ["cuda:90", "hip:gfx942"])
def test_a_counted_loop_with_a_loaded_bound_is_pipelined(out, target):
    fs = found(out, "bound_dot.py", BOUND, target)
    assert not [f for f in fs if f.kind == "loop-not-pipelined"]
    # the same loop as a for is staged: cp.async on NVIDIA (TMA then is the one finding left)
    assert keys(fs) == (
        {("tma-unused", line_of("bound_dot.py", "a = tl.load("), "pointer-loads")} if target == "cuda:90" else set()
    )


def test_while_regions_are_read_as_loops():
    mod = ir.parse(
        "tt.func public @k(%n: i32) {\n"
        "  %r:1 = scf.while (%i = %c0) : (i32) -> (i32) {\n"
        "    %c = arith.cmpi slt, %i, %n : i32\n"
        "    scf.condition(%c) %i : i32\n"
        "  } do {\n"
        "  ^bb0(%i: i32):\n"
        "    %x = arith.addi %i, %n : i32\n"
        "    scf.yield %x : i32\n"
        "  }\n"
        "  %y = arith.addi %n, %n : i32\n"
        "}\n"
    )
    by = {op.results[0] if op.results else op.name: op for op in mod.ops}
    assert by["%c"].whiles == [2] and by["%x"].whiles == [2]  # both regions of the while
    assert by["%x"].loops == [] and by["%y"].whiles == []


def test_shared_memory_that_leaves_sub_partitions_idle_on_sm80(out):
    sig = DOT.format(m=64, n=64, k=128)
    fs = found(out, "dot_loop.py", sig, "cuda:80", {"num_warps": 2, "num_stages": 4})
    (f,) = fs
    assert (f.kind, f.where.line, f.cause) == ("low-occupancy", line_of("dot_loop.py", "a = tl.load("), "shared-memory")
    assert "1 block of 2 warps" in f.what and "2 of them have none" in f.what
    assert "96.0 KiB" in f.why and "164.0 KiB" in f.why
    assert f.fix.sets == {"num_stages": 3} and "num_warps=4" in f.fix.text
    assert any("3x64x128xf16" in e for e in f.evidence)
    # the fix: 3 stages (2 blocks of 2 warps); 4 warps with the same 96 KiB: low occupancy by design, no finding
    assert found(out, "dot_loop.py", sig, "cuda:80", {"num_warps": 2, "num_stages": 3}) == []
    assert found(out, "dot_loop.py", sig, "cuda:80", {"num_warps": 4, "num_stages": 4}) == []


@pytest.mark.parametrize("target", ["hip:gfx942", "hip:gfx950"])
def test_lds_that_leaves_simds_idle_on_amd(out, target):
    d = api.dump(
        str(PITFALLS / "dot_loop.py"),
        signature=DOT.format(m=64, n=128, k=128),
        target=target,
        set={"num_warps": 2},
        out=out,
    )
    groups = hardware.for_target(target).shared_per_sm // d.manifest["stats"]["shared_bytes"]
    assert d.manifest["stats"]["occupancy"]["waves_per_simd"] == -(-groups * 2 // 4)  # busy SIMDs: never 0
    if groups * 2 >= 4:  # Triton 3.6's gfx950 compile takes half the LDS: two workgroups fit
        assert "low-occupancy" not in {f.kind for f in d.findings}  # a wave for every SIMD: nothing to say
        return
    (f,) = d.findings
    assert (f.kind, f.where.line, f.cause) == ("low-occupancy", line_of("dot_loop.py", "b = tl.load("), "shared-memory")
    assert "2 waves for its 4 SIMDs" in f.what and "LDS" in f.why
    assert f.fix.sets == {"num_warps": 4}
    assert found(out, "dot_loop.py", DOT.format(m=64, n=128, k=64), "hip:gfx942", {"num_warps": 2}) == []


def test_shipped_matmul_low_occupancy_by_design_is_no_finding(out):
    sig = "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, 128, 128, 64, 8"
    d = api.dump(str(EXAMPLES / "matmul.py"), name="matmul_kernel", signature=sig, target="cuda:90", out=out)
    assert d.manifest["stats"]["occupancy"]["occupancy"] <= 0.125  # 2 blocks of 4 warps
    assert "low-occupancy" not in {f.kind for f in d.findings}


@pytest.mark.parametrize("target", ["cuda:90", "hip:gfx942"])
def test_num_stages_asked_does_not_reach_a_loop_without_a_dot(out, target):
    sig = "*fp32:16, *fp32:16, i32:16, 1024, 32, {s}"
    (f,) = found(out, "stream_loop.py", sig.format(s="None"), target, {"num_stages": 3})
    assert (f.kind, f.where.line, f.cause) == (
        "loop-not-pipelined",
        line_of("stream_loop.py", "x = tl.load("),
        "no-dot",
    )
    assert f"loop of line {line_of('stream_loop.py', 'for r in')}" in f.what and "num_stages=3 was asked" in f.what
    assert "tl.range(" in f.fix.text and "num_stages=3" in f.fix.text
    assert any("no tt.num_stages" in e for e in f.evidence)
    # the loop asks itself: pipelined, no finding; Triton's default num_stages (not asked): no finding
    assert found(out, "stream_loop.py", sig.format(s="3"), target, {"num_stages": 3}) == []
    assert found(out, "stream_loop.py", sig.format(s="None"), target) == []


@pytest.mark.parametrize("target", ["cuda:90", "hip:gfx942", "hip:gfx950"])
def test_an_index_load_gets_no_stage_of_its_own_at_two_stages(out, target):
    sig = "*i32:16, *fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, 64, 64, 32"
    fs = [f for f in found(out, "gather_dot.py", sig, target, {"num_stages": 2}) if f.kind == "loop-not-pipelined"]
    (f,) = fs
    rows, a = line_of("gather_dot.py", "rows = tl.load("), line_of("gather_dot.py", "a = tl.load(")
    assert (f.where.line, f.cause) == (rows, "indirect-2-stages")
    assert f"addresses of the load on line {a}" in f.what and "num_stages=2" in f.what
    assert f.fix.sets == {"num_stages": 3}
    after = found(out, "gather_dot.py", sig, target, {"num_stages": 3})
    assert not [f for f in after if f.kind == "loop-not-pipelined"]


def test_a_gathered_operand_is_no_tma_finding(out):
    sig = "*i32:16, *fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, 64, 64, 32"
    assert found(out, "gather_dot.py", sig, "cuda:90") == []  # A's rows come from an index load: no TMA box
    (f,) = found(out, "bound_dot.py", BOUND, "cuda:90")  # the same loop without the gather
    assert f.kind == "tma-unused"


@pytest.mark.parametrize("target", ["cuda:90", "cuda:80"])
def test_column_reads_of_an_unswizzled_buffer_conflict_on_banks(out, target):
    pytest.importorskip("triton.experimental.gluon")
    from irscope import adapter

    if adapter.version_tuple() < (3, 9):
        pytest.skip("bank conflicts are counted by Triton 3.9's model (gl.bank_conflicts); older builders count none")
    fs = found(out, "transpose_smem.py", "*fp32:16, *fp32:16, 64, 1", target)
    (f,) = fs
    assert (f.kind, f.where.line, f.cause) == (
        "bank-conflicts",
        line_of("transpose_smem.py", "buf.load(cols)"),
        "shared-layout",
    )
    assert "31 bank conflict(s)" in f.what and "32 wavefronts" in f.what  # 32 lanes, one bank
    assert "max_phase=32" in f.fix.text and "gives 0 conflict(s)" in f.fix.text
    assert any("no ldmatrix/stmatrix" in e for e in f.evidence)
    # the row store (stmatrix) is not counted; the swizzle the fix names has no finding
    assert found(out, "transpose_smem.py", "*fp32:16, *fp32:16, 64, 32", target) == []


def test_no_bank_finding_without_tritons_model(out, monkeypatch):
    from irscope.explain import banks

    d = api.dump(str(PITFALLS / "transpose_smem.py"), signature="*fp32:16, *fp32:16, 64, 1", target="cuda:90", out=out)
    monkeypatch.setattr(banks, "_model", lambda target, warps: None)
    assert banks.rule(explain.context.Context(d.folder, d.manifest)) == []
