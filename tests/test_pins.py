"""Pins: loop attributes rewritten in TTIR, layouts in TTGIR, compiled onward, checked in the output."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from irscope import jobs
from irscope.compile import compiler
from irscope.errors import BadInput
from irscope.kernel import loader
from irscope.kernel.settings import Settings
from irscope.kernel.spec import build_spec
from irscope.kernel.targets import parse_target
from irscope.steer import pins
from irscope.steer.loops import rewrite_loops
from irscope.steer.mlir import find_loops
from irscope.steer.pinset import Pins
from tests.helpers import (
    EXAMPLES,
    FB_GLUON_LOAD,
    FBTRITON,
    MATMUL,
    MATMUL_SIG16,
    VECTOR_ADD,
    Run,
)

ADD = "*fp32, *fp32, *fp32, i32:16, 1024"
SOFTMAX = EXAMPLES / "softmax.py"
GLUON_ADD = EXAMPLES / "gluon_add.py"
EXACT = "blocked=#ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>"
V4 = re.compile(r"ld\.global(?:\.\w+)*\.v4\.")


def irscope(*args: str) -> Run:
    """irscope's main() in this process (no interpreter start-up): exit code, stdout, stderr."""
    from irscope.cli import main

    out, err, code = io.StringIO(), io.StringIO(), 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as e:
            code = e.code or 0
    return Run(code, out.getvalue(), err.getvalue())


def compile_pinned(
    path: Path, signature: str, target: str = "cuda:90", loops=(), layouts=(), sets=(), kernel: str | None = None
):
    request = jobs.Request(
        Path(path),
        (kernel,) if kernel else (),
        signature,
        target=target,
        pin_loops=tuple(loops),
        pin_layouts=tuple(layouts),
    ).with_sets(tuple(sets), "--set")
    job = jobs.resolve_one(request, "a test compiles")
    return compiler.compile_spec(job.spec, job.settings)


def dump_manifest(out: Path) -> dict:
    (manifest,) = list(out.glob("*/*/manifest.json"))
    return json.loads(manifest.read_text())


# ------------------------------------------------------------------ layouts


def test_layout_pin_turns_vector_loads_scalar_and_back(tmp_path):
    base = irscope("dump", str(VECTOR_ADD), "-s", ADD, "-t", "h100", "-o", str(tmp_path / "a"), "--stage", "ptx")
    assert base.code == 0, base.err
    assert V4.search(base.out)

    pinned = irscope(
        "dump", str(VECTOR_ADD), "-s", ADD, "-t", "h100", "-o", str(tmp_path / "b"), "--pin-layout", EXACT, "--json"
    )
    assert pinned.code == 0, pinned.err
    k = json.loads(pinned.out)["kernels"][0]
    ptx = Path(k["stages"]["ptx"]).read_text()
    assert not V4.search(ptx) and "ld.global.b32" in ptx
    assert set(k["stats"]["ptx"]["global_load"]) == {"32"}
    ttgir = Path(k["stages"]["ttgir"]).read_text()
    assert EXACT.split("=", 1)[1] in ttgir
    assert list(k["stages"]) == ["source", "frontend", "ttir", "ttgir", "llir", "ptx", "cubin", "sass"]
    (rec,) = [p for p in k["pins"] if p["kind"] == "layout"]
    assert rec["status"] == "ok" and rec["source"] == "--pin-layout" and "sizePerThread [4] -> [1]" in rec["detail"]
    manifest = dump_manifest(tmp_path / "b")
    assert manifest["pins"] == k["pins"]

    # the field form edits the compiler's own layout: the same TTGIR; four per thread gives v4 back
    field = compile_pinned(VECTOR_ADD, ADD, layouts=["blocked:sizePerThread=[1]"])
    assert field.stages["ttgir"] == ttgir
    back = compile_pinned(VECTOR_ADD, ADD, layouts=["blocked:sizePerThread=[4]"])
    assert V4.search(back.stages["ptx"])
    assert [p["status"] for p in back.pins] == ["no effect"]


def test_layout_pin_on_amd_compiles_to_amdgcn():
    base = compile_pinned(VECTOR_ADD, ADD, target="mi300x")
    art = compile_pinned(VECTOR_ADD, ADD, target="mi300x", layouts=["blocked:sizePerThread=[1]"])
    assert "threadsPerWarp = [64]" in art.stages["ttgir"] and "sizePerThread = [1]" in art.stages["ttgir"]
    assert "amdgcn" in art.stages and "hsaco" in art.stages
    assert art.stats["amdgcn"]["global_load"] != base.stats["amdgcn"]["global_load"]
    assert set(art.stats["amdgcn"]["global_load"]) == {"32"}, "one element per thread: scalar loads"
    assert "contiguity" not in art.stages["ttgir"], "hints derived from the old layout are dropped"
    assert art.pins[0]["status"] == "ok"


@pytest.mark.parametrize(
    "pin, words",
    [
        ("blocked:threadsPerWarp=[16]", ["threadsPerWarp [16] multiplies to 16", "warp size, 32"]),
        ("blocked:warpsPerCTA=[2]", ["warpsPerCTA [2] multiplies to 2", "num_warps, 4"]),
        ("blocked:order=[1]", ["order [1] must be a permutation"]),
        ("blocked:sizePerThread=[1, 1]", ["same rank"]),
        (
            "blocked=#ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [32, 1], warpsPerCTA = [4, 1], order = [1, 0]}>",
            ["rank 2 does not match the rank-1 tensors"],
        ),
        ("blocked:sizePerThread=[3]", ["power of two"]),
        (
            "blocked=#ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>",
            ["register (distributed)"],
        ),
        ("blocked7:sizePerThread=[1]", ["the TTGIR has no layout #blocked7", "its layouts: #blocked"]),
        ("blocked:sizePerThred=[1]", ["not a field of a TTGIR layout", "did you mean 'sizePerThread'"]),
        ("blocked:instrShape=[16, 8]", ["#blocked (blocked) has no field 'instrShape'", "its fields: sizePerThread"]),
        # passes irscope's rules, caught by the MLIR parser/verifier
        (
            "blocked=#ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0], bogus = 1}>",
            ["MLIR parser/verifier", "bogus"],
        ),
    ],
)
def test_illegal_layout_pins_are_refused_in_plain_words(pin, words):
    with pytest.raises(BadInput) as e:
        compile_pinned(VECTOR_ADD, ADD, layouts=[pin])
    for w in words:
        assert w in str(e.value)


def test_illegal_layout_pin_exits_2_and_writes_nothing(tmp_path):
    r = irscope(
        "dump",
        str(VECTOR_ADD),
        "-s",
        ADD,
        "-t",
        "h100",
        "-o",
        str(tmp_path / "out"),
        "--pin-layout",
        "blocked:threadsPerWarp=[64]",
    )
    assert r.code == 2
    assert "illegal layout" in r.err and "warp size, 32" in r.err
    assert r.err.count("\n") == 1
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("manifest.json"))


# ------------------------------------------------------------------ loops


@pytest.mark.parametrize("target", ["a100", "h100"])
def test_loop_num_stages_pin_changes_pipelining(target):
    def buffers(art):
        depth = {
            int(m)
            for m in re.findall(
                r"ttg\.local_alloc\s*:\s*\(\)\s*->\s*!ttg\.memdesc<(\d+)x\d+x\d+xf16", art.stages["ttgir"]
            )
        }
        return depth, len(re.findall(r"ttg\.async_copy_global_to_local", art.stages["ttgir"]))

    two = compile_pinned(MATMUL, MATMUL_SIG16, target, loops=["33:num_stages=2"], kernel="matmul_kernel")
    four = compile_pinned(MATMUL, MATMUL_SIG16, target, loops=["33:num_stages=4"], kernel="matmul_kernel")
    (d2,), n2 = buffers(two)
    (d4,), n4 = buffers(four)
    assert d4 == d2 + 2 and n4 > n2
    assert four.metadata["shared"] > two.metadata["shared"]
    # the pinned TTIR is the ttir stage, and every stage is there
    assert re.search(r"\} \{tt\.num_stages = 4 : i32\} loc\(", four.stages["ttir"])
    assert list(four.stages) == ["source", "frontend", "ttir", "ttgir", "llir", "ptx", "cubin", "sass"]
    assert "def matmul_kernel" in four.stages["source"] and "tt.func" in four.stages["frontend"]
    assert four.stats["registers"] > 0 and four.times_ms["ptx"] >= 0
    (rec,) = four.pins
    assert rec["kind"] == "loop" and rec["status"] == "ok" and "matmul.py:33" in rec["detail"]


def test_loop_pin_by_file_and_line_on_softmax():
    art = compile_pinned(
        SOFTMAX,
        "*fp32, *fp32, i32, i32, i32, i32, 1024, 4",
        loops=["examples/softmax.py:15:num_stages=1,loop_unroll_factor=2"],
    )
    closing = re.search(r"\} \{([^}]*)\} loc\(#loc\d+\)", art.stages["ttir"]).group(1)
    assert "tt.num_stages = 1 : i32" in closing and "tt.loop_unroll_factor = 2 : i32" in closing
    # Triton unrolls inside the TTIR stage, before the pinned TTIR: the attribute is there, the unrolling
    # is not, and irscope says so instead of "ok"
    assert [r["status"] for r in art.pins] == ["ok", "no effect"]
    assert "tl.range(..., loop_unroll_factor=2)" in art.pins[1]["detail"]


def test_loop_pin_without_a_loop_is_refused():
    with pytest.raises(BadInput, match=r"no loop of matmul_kernel starts at matmul.py:34; its loops are at line 33"):
        compile_pinned(MATMUL, MATMUL_SIG16, loops=["34:num_stages=4"], kernel="matmul_kernel")
    r = irscope("dump", str(VECTOR_ADD), "-s", ADD, "--pin-loop", "99:num_stages=2", "-o", "/nonexistent/x")
    assert r.code == 2 and "line 99 is in none of the kernels compiled (add_kernel: lines" in r.err


@pytest.mark.skipif(FBTRITON, reason=FB_GLUON_LOAD)
def test_gluon_kernel_pins_report_no_effect():
    art = compile_pinned(GLUON_ADD, ADD, loops=["*:num_stages=3"], sets=("num_stages=4",))
    by_kind = {r["kind"]: r for r in art.pins}
    assert by_kind["option"]["status"] == "no effect" and "Gluon" in by_kind["option"]["detail"]
    assert by_kind["loop"]["status"] == "no effect"


def test_option_pins_are_checked_in_the_output():
    art = compile_pinned(MATMUL, MATMUL_SIG16, kernel="matmul_kernel", sets=("num_warps=8", "maxnreg=128"))
    recs = {r["name"]: r for r in art.pins}
    assert recs["num_warps"]["status"] == "ok" and "ttg.num-warps = 8" in recs["num_warps"]["detail"]
    assert recs["maxnreg"]["status"] == "ok" and ".maxnreg 128" in recs["maxnreg"]["detail"]
    art = compile_pinned(VECTOR_ADD, ADD, sets=("num_stages=4",))
    assert art.pins[0]["status"] == "no effect" and "no scf.for loop" in art.pins[0]["detail"]


def test_pins_are_part_of_the_cache_key():
    tgt = parse_target("cuda:90")
    ref = loader.select_kernels(VECTOR_ADD, None)[0]
    spec = build_spec(ref, ADD, [], [])
    plain = Settings(tgt)
    pinned = Settings(tgt, pins=Pins(layouts=[pins.parse_pin_layout("blocked:sizePerThread=[1]")]))
    options = compiler.bind(spec, plain)[0]
    assert compiler.cache_key(spec, plain, options, False) != compiler.cache_key(spec, pinned, options, False)
    assert plain.canonical()["pins"] is None and pinned.canonical()["pins"]["layouts"]


# ------------------------------------------------------------------ parsing and IR text


def test_pin_parsing():
    p = pins.parse_pin_loop("examples/softmax.py:15:num_stages=1,warp_specialize")
    assert (p.file, p.line, p.attrs) == ("examples/softmax.py", 15, (("num_stages", 1), ("warp_specialize", True)))
    assert pins.parse_pin_loop("*:flatten=false").line is None
    for bad, word in [
        ("33", "expected LINE:KEY=VALUE"),
        ("33:num_stage=4", "did you mean 'num_stages'"),
        ("33:num_stages=0", "must be from 1 to 2147483647"),
        ("33:flatten=2", "true or false"),
    ]:
        with pytest.raises(BadInput, match=word):
            pins.parse_pin_loop(bad)
    lay = pins.parse_pin_layout(EXACT)
    assert lay.alias == "blocked" and lay.value.startswith("#ttg.blocked<{")
    lay = pins.parse_pin_layout("#blocked1:sizePerThread=[1, 8];order=[0,1]")
    assert lay.fields == (("sizePerThread", "[1, 8]"), ("order", "[0, 1]"))
    for bad, word in [
        ("blocked", "expected ALIAS="),
        ("blocked=ttg.blocked", "not a layout attribute"),
        ("blocked:size=[1]", "not a field of a TTGIR layout"),
        ("loc3:order=[0]", "not a layout alias"),
    ]:
        with pytest.raises(BadInput, match=word):
            pins.parse_pin_layout(bad)


def test_loop_locations_resolve_through_names_and_callsites():
    ttir = "\n".join(
        [
            '#loc = loc("/k.py":10:0)',
            "module {",
            "  tt.func @k() {",
            "    %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> (i32) : i32 {",
            "      scf.for %j = %c0 to %n step %c1 : i32 {",
            "      } loc(#loc9)",
            "      scf.yield %a : i32 loc(#loc2)",
            "    } {tt.flatten} loc(#loc7)",
            "  } loc(#loc)",
            "} loc(#loc)",
            '#loc2 = loc("/k.py":14:8)',
            '#loc3 = loc("/k.py":12:4)',
            '#loc4 = loc("/helper.py":5:4)',
            '#loc6 = loc("acc"(#loc3))',
            '#loc7 = loc("b"(#loc6))',
            "#loc9 = loc(callsite(#loc4 at #loc2))",
        ]
    )
    loops = find_loops(ttir)
    assert [lp.lines for lp in loops] == [[("/k.py", 12)], [("/helper.py", 5), ("/k.py", 14)]]
    assert loops[0].attrs == {"tt.flatten": None}
    out, done = rewrite_loops(
        ttir,
        [
            pins.parse_pin_loop("12:num_stages=3,flatten=false"),
            pins.parse_pin_loop("/helper.py:5:loop_unroll_factor=2"),
        ],
        "k",
        "/k.py",
    )
    assert "    } {tt.num_stages = 3 : i32} loc(#loc7)" in out
    assert "      } {tt.loop_unroll_factor = 2 : i32} loc(#loc9)" in out
    assert [d["loops"] for d in done] == [[("/k.py", 12)], [("/helper.py", 5)]]


def test_pins_without_effect_warn_on_stderr_outside_the_summary(tmp_path):
    r = irscope("dump", str(VECTOR_ADD), "-s", ADD, "--set", "num_stages=2", "--stage", "ttir", "-o", str(tmp_path))
    assert r.code == 0 and "tt.func" in r.out
    assert r.err == (
        "irscope: warning: add_kernel: option num_stages=2 (--set): no effect: "
        "the kernel has no scf.for loop to pipeline\n"
    )
    summary = irscope("dump", str(VECTOR_ADD), "-s", ADD, "--set", "num_stages=2", "-o", str(tmp_path))
    assert "no effect  option num_stages=2  (--set)" in summary.out and summary.err == ""


# ------------------------------------------------------------------ native aborts


def test_wgmma_instr_shapes_triton_cannot_build_are_refused_before_the_verifier():
    """instrShape [16, 7, 16] used to abort the process in nvidiaMmaTile (SIGABRT, nothing printed)."""
    for shape, words in [
        ("[16, 7, 16]", "power of two"),
        ("[16, 136, 16]", "power of two"),
        ("[16, 128, 32]", "K is fixed"),
    ]:
        with pytest.raises(BadInput, match=words):
            compile_pinned(MATMUL, MATMUL_SIG16, layouts=[f"mma:instrShape={shape}"])


def test_the_verifier_runs_in_a_child_so_a_native_abort_is_one_line():
    """The net under the rules: an edited TTGIR that makes Triton's native code assert is reported, not fatal."""
    from irscope.steer.verify_child import verify_isolated

    ttgir = compiler.compile_spec(*_matmul_job(), with_passes=False).stages["ttgir"]
    target = parse_target("cuda:90")
    assert verify_isolated(ttgir, "ttgir", target) is None
    broken = re.sub(r"instrShape = \[16, \d+, 16\]", "instrShape = [16, 7, 16]", ttgir)
    assert broken != ttgir
    why = verify_isolated(broken, "ttgir", target)
    assert why and "aborted (SIGABRT)" in why and "\n" not in why


def _matmul_job():
    job = jobs.resolve_one(jobs.Request(MATMUL, (), MATMUL_SIG16, target="cuda:90"), "a test compiles")
    return job.spec, job.settings
