"""The Gluon/TLX level: tensor descriptors, tuples, constexpr functions, warp specialization (issue 12).

Every element kind Triton's launch binder accepts has a spelling in the signature grammar, is bound by
Triton's own binder, compiles for cuda:90 / cuda:100 / hip:gfx942, and replays from its manifest; the
summary and --json say which warp-specialized partitions exist, with their warps, registers and ops.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_inputs import run_in

from tests.helpers import DATA, EXAMPLES, compile_example

# the compiles below are read for their TTGIR, PTX, partitions and ptxas' report, never their SASS: sass=False
TMA = EXAMPLES / "tma_matmul.py"
GLUON_WS = EXAMPLES / "gluon_ws_matmul.py"
TLX_WS = EXAMPLES / "tlx_ws_matmul.py"
ARGS = DATA / "argument_kinds.py"

TMA_SIG = (
    "tensordesc<fp16[128, 64]>, tensordesc<fp16[256, 64]>, tensordesc<fp16[128, 256]>, "
    "i32:16, i32:16, i32:16, 128, 256, 64, 8, 132"
)
GLUON_SIG = (
    "tensordesc<fp16[128, 64]>, tensordesc<fp16[64, 128]>, tensordesc<fp16[128, 128]>, "
    "i32:16, i32:16, i32:16, 128, 128, 64, 4, 24, 4"
)
GLUON_SIG6 = (
    "tensordesc<fp16[128, 64]>, tensordesc<fp16[64, 128]>, tensordesc<fp16[128, 128]>, "
    "i32:16, i32:16, i32:16"
)  # the rest from the recipe
TLX_SIG = (
    "tensordesc<fp16[128, 64]>, tensordesc<fp16[64, 128]>, tensordesc<fp16[128, 128]>, "
    "i32:16, i32:16, i32:16, 128, 128, 64, 3, 4, 232"
)


def _has_tlx() -> bool:
    try:
        import triton.language.extra.tlx  # noqa: F401
    except ImportError:
        return False
    return True


def _triton_minor() -> tuple[int, int]:
    import triton

    return tuple(int(x) for x in triton.__version__.split(".")[:2])


# ---------------------------------------------------------------- the grammar


@pytest.mark.parametrize(
    "text, kind",
    [
        ("tensordesc<fp16[128, 64]>", "tensordesc"),
        ("tensordesc<bf16[64, 64], padding=nan>", "tensordesc"),
        ("(*fp16:16, i32:16)", "tuple"),
        ("((*fp32:16, i32), (i64:16,))", "tuple"),
        ("(*fp16:16,)", "tuple"),
        ("fn:leaky_relu", "fn"),
        ("None", "constexpr"),
        ("(1, 2)", "constexpr"),  # all literals: a constexpr tuple value, as before
        ("tl.float16", "constexpr"),
    ],
)
def test_elements_parse_and_print_back(text, kind):
    from irscope.kernel.elements import parse_element

    a = parse_element(text, "element 1")
    assert a.kind == kind
    again = parse_element(a.text(), "element 1")
    assert again == a, (text, a.text())


def test_a_gluon_descriptor_carries_its_layout():
    from irscope.kernel.elements import parse_element

    a = parse_element(
        "tensordesc<fp16[128, 64], gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)>",
        "element 1",
    )
    assert a.block == (128, 64) and type(a.value).__name__ == "NVMMASharedLayout"
    assert a.value.swizzle_byte_width == 128
    assert parse_element(a.text(), "element 1").value == a.value


# ---------------------------------------------------------------- descriptors compile and replay


@pytest.mark.parametrize("target, mma", [("cuda:90", "wgmma.mma_async"), ("cuda:100", "tcgen05.mma")])
def test_tma_matmul_compiles_to_bulk_tensor_copies(target, mma):
    art = compile_example(
        TMA, TMA_SIG + ", False, True", target=target, sets=("num_warps=8", "num_stages=3"), sass=False
    )
    ptx = art.stages["ptx"]
    assert "cp.async.bulk.tensor" in ptx  # the descriptors became TMA loads and stores
    assert mma in ptx
    mach = art.stats["machinery"]
    boxes = [d["block"] for d in mach["tma_descriptors"]]
    assert [128, 64] in boxes and [256, 64] in boxes  # A's and B's boxes, from Triton's own metadata
    assert mach["mbarriers"] >= 1


def test_descriptor_kernel_on_amd_compiles_without_tma():
    art = compile_example(TMA, TMA_SIG + ", False, False", target="hip:gfx942", sass=False)
    assert "v_mfma" in art.stages["amdgcn"]
    assert "cp.async.bulk" not in art.stages["amdgcn"]


def test_descriptor_dump_replays_from_its_manifest(tmp_path, capsys):
    out = tmp_path / "out"
    code, stdout, err = run_in(
        capsys, "dump", str(TMA), "--target", "h100", "--signature", TMA_SIG + ", False, True", "-o", str(out), "--json"
    )
    assert code == 0, err
    first = json.loads(stdout)["kernels"][0]
    manifest = Path(first["stages"]["ptx"]).parent / "manifest.json"
    assert json.loads(manifest.read_text())["args"]["a_desc"] == "tensordesc<fp16[128, 64]>"
    code, stdout, err = run_in(capsys, "dump", str(manifest), "--set", "num_warps=4", "-o", str(out), "--json")
    assert code == 0, err
    again = json.loads(stdout)["kernels"][0]
    assert again["options"]["num_warps"] == 4
    assert "cp.async.bulk.tensor" in Path(again["stages"]["ptx"]).read_text()


def test_tuples_none_and_constexpr_functions_bind_like_a_launch():
    art = compile_example(ARGS, "(*fp16:16, *fp16:16, None), i32:16, fn:relu, 128", kernel="tuple_kernel", sass=False)
    ttir = art.stages["ttir"]
    assert "arith.maxnumf" in ttir or "arith.maximumf" in ttir  # fn:relu was inlined as the ACT constexpr
    # both tuple pointers kept their 16-byte alignment hint, as a launch on torch tensors gives them
    assert ttir.count("tt.divisibility = 16") >= 3


def test_a_one_element_tuple_and_nesting(tmp_path, capsys):
    code, out, err = run_in(
        capsys,
        "dump",
        str(ARGS),
        "-k",
        "nested_kernel",
        "--target",
        "h100",
        "--signature",
        "((*fp32:16, i32:16), (*fp32:16,)), 64",
        "-o",
        str(tmp_path),
        "--json",
    )
    assert code == 0, err
    k = json.loads(out)["kernels"][0]
    assert k["signature"].startswith("((*fp32:16, i32:16), (*fp32:16,))")


# ---------------------------------------------------------------- warp specialization in the summary


def test_gluon_partitions_are_reported_with_warps_registers_and_ops():
    art = compile_example(GLUON_WS, GLUON_SIG, target="cuda:90", sass=False)
    parts = art.stats["machinery"]["partitions"]
    assert set(parts) == {"default", "worker0"}
    assert parts["default"]["warps"] == 4 and parts["default"]["ops"].get("mma", 0) >= 1
    assert parts["worker0"]["warps"] == 1 and parts["worker0"]["registers"] == 24
    assert parts["worker0"]["ops"]["tma_load"] == 2 and "mma" not in parts["worker0"]["ops"]
    assert art.stats["machinery"]["setmaxnreg"]["dec"] == [24]  # the worker's budget, as PTX sets it


def test_worker_register_budget_is_the_kernels_argument():
    art = compile_example(GLUON_WS, GLUON_SIG.replace(", 24, 4", ", 40, 4"), target="cuda:90", sass=False)
    worker = art.stats["machinery"]["partitions"]["worker0"]
    assert worker["registers"] == 40 and 40 in art.stats["machinery"]["setmaxnreg"]["dec"]


def test_summary_names_the_partitions(tmp_path, capsys):
    code, out, err = run_in(
        capsys, "dump", str(GLUON_WS), "--target", "h100", "--signature", GLUON_SIG, "-o", str(tmp_path)
    )
    assert code == 0, err
    assert "partition  default" in out and "partition  worker0  1 warp, 24 regs" in out
    assert "TMA load 2" in out and "3 TMA descriptors" in out


@pytest.mark.skipif(_triton_minor() < (3, 9), reason="Triton 3.6 does not split warp_specialize loops on sm_100")
def test_triton_automatic_warp_specialization_on_blackwell():
    art = compile_example(
        TMA, TMA_SIG + ", True, False", target="cuda:100", sets=("num_warps=8", "num_stages=3"), sass=False
    )
    parts = art.stats["machinery"]["partitions"]
    assert list(parts)[0] == "default" and len(parts) >= 2
    ops = {name: p["ops"] for name, p in parts.items()}
    assert any(o.get("tma_load") for o in ops.values()) and any(o.get("mma") for o in ops.values())
    assert art.stats["machinery"]["tmem_columns"] > 0


def test_a_loop_that_asks_for_warp_specialization_but_is_not_split_is_said():
    art = compile_example(
        TMA, TMA_SIG + ", True, False", target="cuda:90", sets=("num_warps=8", "num_stages=3"), sass=False
    )
    mach = art.stats["machinery"]
    assert ("partitions" in mach) != ("warp_specialize_not_applied" in mach)


# ---------------------------------------------------------------- TLX


@pytest.mark.skipif(not _has_tlx(), reason="TLX needs Meta's Triton fork (pip install fbtriton)")
def test_tlx_kernel_partitions():
    art = compile_example(TLX_WS, TLX_SIG, target="cuda:90", sass=False)
    parts = art.stats["machinery"]["partitions"]
    assert parts["worker0"]["warps"] == 4 and parts["worker0"]["registers"] == 232
    assert parts["default"]["ops"]["tma_load"] == 2 and parts["worker0"]["ops"]["mma"] >= 1
    assert "launch_metadata" not in art.stages  # the fork's extra outputs are files, not compiler stages


@pytest.mark.skipif(_has_tlx(), reason="checks the message under upstream Triton")
def test_tlx_kernel_under_upstream_triton_is_one_line(tmp_path, capsys):
    code, out, err = run_in(
        capsys, "dump", str(TLX_WS), "--target", "h100", "--signature", TLX_SIG, "-o", str(tmp_path / "o")
    )
    assert code == 2 and "fbtriton" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "element, words",
    [
        ("tensordesc<fp16[512, 64]>", "TMA box limit of 256"),
        ("tensordesc<fp16[64, 4]>", "multiple of 16 bytes"),
        ("tensordesc<fp16[64, 48]>", "not a power of two"),
        ("tensordesc<fq16[64, 64]>", "unknown descriptor element type 'fq16'"),
        ("tensordesc<fp16>", "block shape"),
        ("tensordesc<i32[64, 64], padding=nan>", "floating-point"),
        ("tensordesc<fp16[64, 64], padding=inf>", "zero or nan"),
        ("tensordesc<fp16[64, 64], gl.BlockedLayout([1], [32], [4], [0])>", "not a shared layout"),
    ],
)
def test_bad_descriptors_are_one_line_and_write_nothing(element, words, tmp_path, capsys):
    sig = TMA_SIG.replace("tensordesc<fp16[128, 64]>", element, 1) + ", False, True"
    code, out, err = run_in(capsys, "dump", str(TMA), "--target", "h100", "--signature", sig, "-o", str(tmp_path / "o"))
    assert code == 2, err
    assert words in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_unknown_function_and_wrong_tuple_are_refused(tmp_path, capsys):
    code, _, err = run_in(
        capsys,
        "dump",
        str(ARGS),
        "-k",
        "tuple_kernel",
        "--target",
        "h100",
        "--signature",
        "(*fp16:16, *fp16:16, None), i32:16, fn:rleu, 128",
        "-o",
        str(tmp_path / "o"),
    )
    assert code == 2 and "fn:rleu" in err and "no function 'rleu'" in err
    assert not (tmp_path / "o").exists()


def test_a_pointer_where_the_kernel_indexes_a_tuple_is_a_frontend_failure(tmp_path, capsys):
    """What a launch with the wrong argument would do: the compile stops in the frontend, at the line."""
    code, _, err = run_in(
        capsys,
        "dump",
        str(ARGS),
        "-k",
        "tuple_kernel",
        "--target",
        "h100",
        "--signature",
        "*fp16:16, i32:16, fn:relu, 128",
        "-o",
        str(tmp_path / "o"),
    )
    assert code == 1 and "stage 'source'" in err and "argument_kinds.py:15" in err


# ---------------------------------------------------------------- captures of such kernels replay


@pytest.mark.torch
def test_a_capture_of_descriptor_and_tuple_launches_replays(tmp_path, capsys):
    pytest.importorskip("torch")
    out = tmp_path / "cap"
    code, stdout, err = run_in(
        capsys,
        "capture",
        str(DATA / "descriptor_script.py"),
        "--target",
        "h100",
        "--compile-only",
        "-o",
        str(out),
        "--json",
    )
    assert code == 0, err
    doc = json.loads(stdout)
    specs = sorted((out / "captures").glob("*.json"))
    names = {json.loads(p.read_text())["kernel"] for p in specs}
    assert {"matmul_tma_persistent", "tuple_kernel"} <= names, (names, doc.get("capture"))
    tuple_spec = next(p for p in specs if json.loads(p.read_text())["kernel"] == "tuple_kernel")
    args = json.loads(tuple_spec.read_text())["args"]
    assert args["ptrs"] == "(*fp32:16, *fp32:16, None)" and args["ACT"] == "fn:relu"
    for spec in specs:
        code, stdout, err = run_in(
            capsys, "dump", str(spec), "--set", "num_warps=4", "-o", str(tmp_path / "re"), "--json"
        )
        assert code == 0, (spec.name, err)
        k = json.loads(stdout)["kernels"][0]
        if k["name"] == "matmul_tma_persistent":
            assert "cp.async.bulk.tensor" in Path(k["stages"]["ptx"]).read_text()


# ---------------------------------------------------------------- partition register pins


def test_a_partition_register_pin_is_applied_and_checked():
    from irscope import jobs
    from irscope.compile import compiler

    req = jobs.Request(GLUON_WS, (), GLUON_SIG, target="cuda:90", pin_partitions=("worker0:registers=40",))
    job = jobs.resolve_one(req, "a test compiles")
    art = compiler.compile_spec(job.spec, job.settings)
    worker = art.stats["machinery"]["partitions"]["worker0"]
    assert worker["registers"] == 40
    assert "setmaxnreg.dec.sync.aligned.u32 \t40;" in art.stages["ptx"]
    pin = next(p for p in art.pins if p["kind"] == "partition")
    assert pin["status"] == "ok" and "was 24" in pin["detail"]


def test_a_recipe_variant_pins_the_producer_budget(tmp_path, capsys):
    code, out, err = run_in(
        capsys,
        "dump",
        str(GLUON_WS),
        "--recipe",
        "h200",
        "--variant",
        "roomy-producer",
        "--signature",
        GLUON_SIG6,
        "--const",
        "num_warps=4",
        "-o",
        str(tmp_path),
        "--json",
    )
    assert code == 0, err
    k = json.loads(out)["kernels"][0]
    assert k["stats"]["machinery"]["partitions"]["worker0"]["registers"] == 56
    assert any(p["kind"] == "partition" and p["status"] == "ok" for p in k["pins"])


@pytest.mark.parametrize(
    "pin, words",
    [
        ("worker0:registers=20", "multiple of 8 from 24 to 256"),
        ("worker0:registers=44", "multiple of 8"),
        ("worker0:regs=40", "expected workerN:registers=R"),
        ("worker3:registers=40", "1 worker partition(s)"),
    ],
)
def test_bad_partition_pins(pin, words, tmp_path, capsys):
    code, _, err = run_in(
        capsys,
        "dump",
        str(GLUON_WS),
        "--target",
        "h100",
        "--signature",
        GLUON_SIG,
        "--pin-partition",
        pin,
        "-o",
        str(tmp_path / "o"),
    )
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_a_partition_pin_on_a_kernel_without_partitions_is_refused(tmp_path, capsys):
    code, _, err = run_in(
        capsys,
        "dump",
        str(EXAMPLES / "vector_add.py"),
        "--target",
        "h100",
        "--signature",
        "*fp32, *fp32, *fp32, i32, 1024",
        "--pin-partition",
        "worker0:registers=40",
        "-o",
        str(tmp_path / "o"),
    )
    assert code == 2 and "no warp-specialized partitions" in err
    assert not (tmp_path / "o").exists()


def test_recipe_partitions_only_in_kernel_sections(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('[recipe]\ntarget = "h100"\npurpose = "x"\n\n[partitions]\nworker0 = { registers = 48 }\n')
    code, out, err = run_in(capsys, "recipes", "check", str(bad))
    assert code == 2 and "kernel section" in out + err


def test_diff_shows_a_partition_budget_change(tmp_path, capsys):
    """Two recipe variants that differ in the producer's budget: the diff names the partition's registers."""
    code, out, err = run_in(
        capsys,
        "diff",
        str(GLUON_WS),
        "--recipe",
        "h200",
        "--a-variant",
        "lean-producer",
        "--b-variant",
        "roomy-producer",
        "--signature",
        GLUON_SIG6,
        "--const",
        "num_warps=4",
        "-o",
        str(tmp_path / "d"),
        "--json",
    )
    assert code == 1, err
    deltas = json.loads(out)["stats"]
    assert deltas["machinery.partitions.worker0.registers"] == {"a": 24, "b": 56}, sorted(deltas)
    assert deltas["machinery.setmaxnreg.dec"] == {"a": [24], "b": [56]}
