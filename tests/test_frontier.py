"""The frontier matmuls of issue 20: what their recipes compile to (that they are right on a GPU: tests/gpu).

examples/persistent_matmul.py (upstream Triton) and examples/gluon_persistent_matmul.py (Gluon) take plain
pointers and build their TMA descriptors on the device; the recipes pin their tiles, warps and stages.
On the CPU: the Hopper code has wgmma 64x256 and TMA and no spills at the recipe's 128x256x64 / 8 warps;
the Gluon kernel is split into an 8-warp MMA partition and a 1-warp TMA producer; Blackwell gets tcgen05
and Triton's own three partitions; CDNA3 gets MFMA and no TMA. A Gluon `num_warps` parameter given in
the signature sets the option too (a launch passes it once, by keyword).
"""

from __future__ import annotations

import functools
import re

import pytest

from tests.helpers import EXAMPLES, FBTRITON, compile_example

PERSISTENT = EXAMPLES / "persistent_matmul.py"
GLUON = EXAMPLES / "gluon_persistent_matmul.py"
POINTERS = "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16"


@functools.cache
def _recipe_compile(path, recipe: str, kernel: str | None = None, dtype: str = "fp16"):
    """(job, artifacts) of a kernel under a shipped recipe, compiled once for the module (the tests only read
    them). The tests read the PTX, the TTGIR and ptxas' report, never the SASS: no nvdisasm run."""
    from irscope import jobs
    from irscope.compile import compiler

    request = jobs.Request(path, (kernel,) if kernel else (), POINTERS.replace("fp16", dtype), recipe=recipe)
    job = jobs.resolve_one(request, "a test compiles")
    return job, compiler.compile_spec(job.spec, job.settings, with_sass=False)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_persistent_matmul_on_hopper_is_wgmma_over_tma_without_spills(dtype):
    job, art = _recipe_compile(PERSISTENT, "h200", dtype=dtype)
    assert job.settings.options["num_warps"] == 8 and job.settings.options["num_stages"] == 3
    ptx = art.stages["ptx"]
    ptx_type = {"fp16": "f16", "bf16": "bf16"}[dtype]
    assert f"wgmma.mma_async.sync.aligned.m64n256k16.f32.{ptx_type}.{ptx_type}" in ptx
    assert "cp.async.bulk.tensor.2d" in ptx  # TMA loads and the TMA store of C
    assert "tensormap" in ptx  # descriptors made on the device
    assert '"ttg.num-warps" = 8' in art.stages["ttgir"]
    assert art.stats["spills"] == 0 and art.stats["ptx"]["global_load"] == {}
    assert art.stats["shared_bytes"] <= 227 * 1024


def test_gluon_frontier_kernel_splits_producer_and_mma_warps():
    job, art = _recipe_compile(GLUON, "h200", kernel="matmul_persistent_ws_kernel")
    assert job.settings.options["num_warps"] == 8
    parts = art.stats["machinery"]["partitions"]
    assert parts["default"]["warps"] == 8 and parts["default"]["registers"] == 240
    assert parts["default"]["ops"].get("mma") and not parts["default"]["ops"].get("tma_load")
    assert parts["worker0"] == {**parts["worker0"], "warps": 1, "registers": 24}
    assert parts["worker0"]["ops"]["tma_load"] == 2 and not parts["worker0"]["ops"].get("mma")
    assert re.search(r"setmaxnreg\.inc\.sync\.aligned\.u32\s+240;", art.stages["ptx"])
    assert art.stats["spills"] == 0


def test_gluon_one_partition_kernel_meets_at_barriers_every_step():
    """The walkthrough's point: in one partition the loop's TMA issue is fenced by CTA-wide barriers."""
    _, one = _recipe_compile(GLUON, "h200", kernel="matmul_pipelined_kernel")
    _, split = _recipe_compile(GLUON, "h200", kernel="matmul_persistent_ws_kernel")
    assert "partitions" not in one.stats["machinery"]
    loop = one.stages["ptx"].split("mbarrier.try_wait")[1]  # from the loop's wait to the end
    assert loop.count("bar.sync") >= 3 and "div.s32" in loop
    assert one.stats["ptx"]["wgmma"] == split.stats["ptx"]["wgmma"] == 4


def test_num_warps_parameter_sets_the_option_unless_set_otherwise():
    art = compile_example(GLUON, POINTERS + ", 128, 256, 64, 3, 8, 132, 24, 8", kernel="matmul_persistent_ws_kernel")
    assert '"ttg.num-warps" = 8' in art.stages["ttgir"]
    with pytest.raises(Exception, match="invalid layout"):  # the option set to 4 by hand: Gluon refuses it
        compile_example(
            GLUON,
            POINTERS + ", 128, 256, 64, 3, 8, 132, 24, 8",
            kernel="matmul_persistent_ws_kernel",
            sets=("num_warps=4",),
        )


@pytest.mark.skipif(
    FBTRITON,
    reason="fbtriton 3.7.4 fails this compile in TTGIR ('arith.andi' op does not have "
    "expected attribute ttg.partition): the fork's automatic warp specialization, not irscope",
)
def test_persistent_matmul_on_blackwell_is_tcgen05_in_three_partitions():
    job, art = _recipe_compile(PERSISTENT, "b200")
    assert job.spec.args["WARP_SPECIALIZE"].value is True
    assert art.stats["ptx"]["tcgen05.mma"] > 0 and art.stats["ptx"]["wgmma"] == 0
    assert set(art.stats["machinery"]["partitions"]) == {"default", "worker0", "worker1"}


def test_persistent_matmul_on_cdna3_is_mfma_without_spills():
    _, art = _recipe_compile(PERSISTENT, "mi300x")
    assert "v_mfma" in art.stages["amdgcn"]
    assert "cp.async.bulk" not in art.stages["amdgcn"]
    assert art.stats["spills"] == 0


WIDE = "tensordesc<fp16[128, 64]>, tensordesc<fp16[256, 64]>, tensordesc<fp16[128, 256]>, i32:16, i32:16, i32:16"
SQUARE = "tensordesc<fp16[128, 64]>, tensordesc<fp16[128, 64]>, tensordesc<fp16[128, 128]>, i32:16, i32:16, i32:16"


@pytest.mark.parametrize(
    "recipe, variant, sig",
    [
        ("b200", "baseline", WIDE),
        ("b200", "tma-warp-specialized", WIDE),
        ("h200", "baseline", WIDE),
        ("h200", "tma-warp-specialized", WIDE),
        ("h200", "tma-square-tile", SQUARE),
    ],
)
def test_every_tma_matmul_variant_of_the_recipes_compiles(recipe, variant, sig):
    """Shipped variants must compile with the installed Triton (b200's warp-specialized one did not on 3.6
    while it kept the loops nested). The descriptors' blocks are part of the signature: the square-tile
    variant (BLOCK_N=128) takes 128-wide B and C blocks."""
    from irscope import jobs
    from irscope.compile import compiler

    if FBTRITON and recipe == "b200" and variant != "baseline":
        pytest.skip(
            "fbtriton 3.7.4 fails Blackwell warp specialization of this loop in TTGIR ('arith.andi' op "
            "does not have expected attribute ttg.partition)"
        )
    request = jobs.Request(EXAMPLES / "tma_matmul.py", (), sig, recipe=recipe, variant=variant)
    job = jobs.resolve_one(request, "a test compiles")
    art = compiler.compile_spec(job.spec, job.settings, with_sass=False)  # spills: ptxas' report, not the SASS
    assert art.stats["spills"] == 0


def test_a_descriptor_block_that_disagrees_with_the_tile_is_named():
    """tma-square-tile sets BLOCK_N=128; with the 256-wide B and C blocks of the baseline's signature Triton
    fails on a shape, and the message shows the descriptors beside the constexprs (exit 1, a compile)."""
    from irscope import jobs
    from irscope.compile import compiler
    from irscope.errors import CompileFailure

    job = jobs.resolve_one(
        jobs.Request(EXAMPLES / "tma_matmul.py", (), WIDE, recipe="h200", variant="tma-square-tile"), "a test"
    )
    with pytest.raises(CompileFailure) as e:
        compiler.compile_spec(job.spec, job.settings)
    assert e.value.stage == "source"
    assert "b_desc: tensordesc<fp16[256, 64]>" in e.value.reason and "BLOCK_N=128" in e.value.reason
