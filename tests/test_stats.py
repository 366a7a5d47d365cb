"""Parsers of compiler reports, on real report text."""

from irscope.artifacts import stats
from irscope.kernel.targets import parse_target

PTXAS_LOG = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'matmul_kernel' for 'sm_90a'
ptxas info    : Function properties for matmul_kernel
    656 bytes stack frame, 700 bytes spill stores, 680 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 656 bytes cumulative stack size, 592 bytes cmem[0]
"""

AMDGCN_TAIL = """; NumVgprs: 222
; NumAgprs: 64
; TotalNumVgprs: 288
; ScratchSize: 0
; Occupancy: 1
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 16
    .sgpr_count:     80
    .sgpr_spill_count: 0
    .vgpr_count:     288
    .vgpr_spill_count: 3
"""


def test_ptxas_report():
    r = stats.ptxas_resources(PTXAS_LOG)
    assert r == {
        "registers": 255,
        "stack_bytes": 656,
        "spill_store_bytes": 700,
        "spill_load_bytes": 680,
        "named_barriers": 1,
    }


def test_amd_metadata():
    r = stats.amd_resources(AMDGCN_TAIL)
    assert r["vgpr_count"] == 288 and r["acc_vgprs"] == 64 and r["vgpr_spill_count"] == 3
    assert r["scratch_bytes"] == 16 and r["compiler_occupancy"] == 1


def test_ptx_vector_widths():
    ptx = """
	@%p1 ld.global.v4.b32 { %r1, %r2, %r3, %r4 }, [ %rd1 + 0 ];
	ld.global.b32 %r5, [ %rd2 + 0 ];
	@%p2 st.global.v2.b16 [ %rd3 + 0 ], { %rs1, %rs2 };
	cp.async.cg.shared.global [ %r9 + 0 ], [ %rd4 + 0 ], 0x10, %r10;
	wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {...};
	bar.sync 0;
"""
    mix = stats.ptx_mix(ptx)
    assert mix["global_load"] == {"128": 1, "32": 1}
    assert mix["global_store"] == {"32": 1}
    assert mix["cp.async"] == 1 and mix["wgmma"] == 1 and mix["bar.sync"] == 1 and mix["ld.global.v4"] == 1


def test_sass_classes():
    sass = """
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/              @!P0 LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0020*/                   HGMMA.64x128x16.F32 R24, gdesc[UR4], RZ ;
        /*0030*/                   STL [R1+0x4], R3 ;
        /*0040*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
"""
    mix = stats.sass_mix(sass)
    assert mix["instructions"] == 5
    assert mix["classes"]["mma"] == 1 and mix["classes"]["global_load"] == 1
    assert mix["classes"]["local_store"] == 1 and mix["classes"]["barrier"] == 1
    assert mix["global_widths"] == {"LDG.128": 1}


def test_nvidia_occupancy_limits():
    h100 = parse_target("h100")
    occ = stats.nvidia_occupancy(h100, registers=255, shared=0, num_warps=4)
    # 255 regs -> 8192 regs/warp -> 8 warps/SM -> 2 blocks of 4 warps
    assert occ["blocks_per_sm"] == 2 and occ["limited_by"] == "registers"
    occ = stats.nvidia_occupancy(h100, registers=32, shared=100 * 1024, num_warps=4)
    assert occ["blocks_per_sm"] == 2 and occ["limited_by"] == "shared_memory"


def test_ttgir_layouts():
    ttgir = (
        "#blocked = #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [8], order = [0]}>\n"
        'module attributes {"ttg.num-warps" = 8 : i32} {\n  %1 = ttg.convert_layout %0 : x\n}\n'
    )
    facts = stats.ttgir_facts(ttgir)
    assert facts["num_warps"] == 8 and facts["convert_layout"] == 1
    assert facts["layouts"][0]["alias"] == "blocked" and facts["layouts"][0]["kind"] == "blocked"
