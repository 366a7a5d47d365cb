"""irscope explain (issue #40): each finding kind on a pitfall kernel that has the problem (the finding names
the right line, cause and fix) and on one that does not (no finding); the command, --try, --json, dump's
summary and the API. Kernels are examples/pitfalls/ compiled on the CPU for NVIDIA and AMD targets.

Lines are found in the kernels' source (the line holding a fragment), never written down here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_diff import irscope  # the CLI in this process (Triton stays warm)

import irscope as api
from irscope import adapter, explain
from tests.helpers import EXAMPLES, ROOT

PITFALLS = EXAMPLES / "pitfalls"
DOT16 = "*fp16, *fp16, *fp16, i32:16, i32:16, i32:16, i32:16, {m}, 64, 32, 'ieee'"
DOT32 = "*fp32, *fp32, *fp32, i32:16, i32:16, i32:16, i32:16, 64, 64, 32, '{p}'"


def line_of(file: str, fragment: str) -> int:
    lines = (PITFALLS / file).read_text().splitlines()
    (n,) = [i for i, text in enumerate(lines, 1) if fragment in text]
    return n


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("explain")


def found(out: Path, file: str, signature: str, target: str, sets: dict | None = None) -> list[explain.Finding]:
    d = api.dump(str(PITFALLS / file), signature=signature, target=target, set=sets, out=out)
    return d.findings


@pytest.mark.parametrize("target", ["cuda:90", "hip:gfx942"])
def test_mask_bound_narrows_load_and_store_and_names_n(out, target):
    fs = found(out, "copy_kernel.py", "*fp32:16, *fp32:16, i32, 1024", target)
    load, store = line_of("copy_kernel.py", "tl.load("), line_of("copy_kernel.py", "tl.store(")
    assert {(f.kind, f.where.line, f.cause) for f in fs} == {
        ("narrow-access", load, "mask-bound"),
        ("narrow-access", store, "mask-bound"),
    }
    f = fs[0]
    assert "32 bits" in f.what and "allows 128" in f.what
    assert f.fix.args == {"n": "i32:16"}
    narrow = "ld.global.b32" if target.startswith("cuda") else "buffer_load_dword "
    assert any(narrow in m for m in f.where.machine), f.where.machine
    assert any("tt.load" in t or "buffer_load" in t for t in f.where.ttgir)


def test_unaligned_pointer_blames_the_pointer_not_the_store(out):
    fs = found(out, "copy_kernel.py", "*fp32:4, *fp32:16, i32:16, 1024", "cuda:90")
    assert [(f.kind, f.where.line, f.cause) for f in fs] == [
        ("narrow-access", line_of("copy_kernel.py", "tl.load("), "ptr-align")
    ]
    assert fs[0].fix.args == {"x_ptr": "*fp32:16"}
    assert any("LDG.E " in m for m in fs[0].where.machine)  # SASS's 32-bit load, named beside the LLVM IR


@pytest.mark.parametrize("target", ["cuda:90", "hip:gfx942"])
def test_aligned_copy_has_no_findings(out, target):
    assert found(out, "copy_kernel.py", "*fp32:16, *fp32:16, i32:16, 1024", target) == []


def test_contiguity_lost_through_a_non_power_of_two_modulo(out):
    (f,) = found(out, "rowmod.py", "*fp16, *fp16, 100, 1024", "cuda:90")
    assert (f.kind, f.where.line, f.cause) == ("narrow-access", line_of("rowmod.py", "tl.load("), "contiguity")
    assert "arith.remsi" in f.why and f"line {line_of('rowmod.py', '% W')}" in f.why
    assert found(out, "rowmod.py", "*fp16, *fp16, 128, 1024", "cuda:90") == []


@pytest.mark.parametrize("target", ["cuda:80", "cuda:90", "cuda:100"])
def test_fp32_ieee_dot_on_fma(out, target):
    fs = [f for f in found(out, "dot_loop.py", DOT32.format(p="ieee"), target) if f.kind == "dot-not-tensor-core"]
    (f,) = fs
    assert (f.where.line, f.cause) == (line_of("dot_loop.py", "tl.dot("), "fp32-ieee")
    assert "FMA" in f.what and f.fix.consts == {"PRECISION": "'tf32'"}
    if f.where.machine or not (target == "cuda:100" and adapter.version_tuple() < (3, 7)):
        # Triton 3.6's sm_100 listing maps no instruction to the dot's line (its machine evidence is empty)
        assert any("FFMA" in m for m in f.where.machine)


def kinds(fs: list[explain.Finding]) -> set[str]:
    return {f.kind for f in fs}


def test_tf32_dot_and_amd_fp32_dot_have_no_dot_finding(out):
    assert "dot-not-tensor-core" not in kinds(found(out, "dot_loop.py", DOT32.format(p="tf32"), "cuda:90"))
    assert found(out, "dot_loop.py", DOT32.format(p="ieee"), "hip:gfx942") == []  # fp32 MFMA exists


def test_block_m_under_64_gets_mma_sync_on_sm90(out):
    (f,) = found(out, "dot_loop.py", DOT16.format(m=16), "cuda:90")
    assert (f.kind, f.cause) == ("dot-not-tensor-core", "block-m")
    assert "mma.sync" in f.what and f.fix.consts == {"BLOCK_M": 64}
    assert any("HMMA" in m for m in f.where.machine)


def test_two_warps_get_mma_sync_on_sm100_not_on_gfx950(out):
    fs = found(out, "dot_loop.py", DOT16.format(m=64), "cuda:100", {"num_warps": 2})
    (f,) = [f for f in fs if f.kind == "dot-not-tensor-core"]
    assert (f.kind, f.cause, f.fix.sets) == ("dot-not-tensor-core", "num-warps", {"num_warps": 4})
    assert "tcgen05" in f.why
    assert kinds(found(out, "dot_loop.py", DOT16.format(m=64), "cuda:100")) == {"tma-unused"}  # tcgen05
    assert found(out, "dot_loop.py", DOT16.format(m=64), "hip:gfx950", {"num_warps": 2}) == []


def test_unaligned_operand_is_left_out_of_the_pipeline(out):
    sig = DOT16.format(m=64).replace("*fp16, ", "*fp16:2, ", 1)
    fs = found(out, "dot_loop.py", sig, "cuda:90")
    a_line = line_of("dot_loop.py", "a = tl.load(")
    assert {(f.kind, f.where.line, f.cause) for f in fs} == {
        ("loop-not-pipelined", a_line, "ptr-align"),
        ("narrow-access", a_line, "ptr-align"),
    }
    pipe = next(f for f in fs if f.kind == "loop-not-pipelined")
    assert "num_stages=3" in pipe.what and "loop of line " + str(line_of("dot_loop.py", "for _k in")) in pipe.what
    assert kinds(found(out, "dot_loop.py", DOT16.format(m=64), "cuda:90")) == {"tma-unused"}  # both pipelined


@pytest.mark.parametrize("target", ["cuda:90", "cuda:100"])
def test_cp_async_operands_where_tma_was_possible(out, target):
    (f,) = found(out, "dot_loop.py", DOT16.format(m=64), target)
    assert (f.kind, f.where.line, f.cause) == ("tma-unused", line_of("dot_loop.py", "a = tl.load("), "pointer-loads")
    assert f"line {line_of('dot_loop.py', 'for _k in')}" in f.what and "cp.async" in f.what
    assert "make_tensor_descriptor" in f.fix.text and not f.fix.tryable
    assert any("LDGSTS" in m for m in f.where.machine)
    desc = "tensordesc<fp16[64, 32]>, tensordesc<fp16[32, 64]>, tensordesc<fp16[64, 64]>, i32:16, 64, 64, 32"
    assert found(out, "dot_desc.py", desc, target) == []  # descriptors: TMA
    assert found(out, "dot_loop.py", DOT16.format(m=64), "cuda:80") == []  # sm80 has no TMA


def test_convert_through_shared_memory_in_a_loop(out):
    (f,) = found(out, "rowsum_loop.py", "*fp32, *fp32, i32:16, 64, 128", "cuda:90")
    assert (f.kind, f.where.line) == ("convert-in-loop", line_of("rowsum_loop.py", "tl.store("))
    assert "256 B" in f.what  # 64 fp32
    assert f"line {line_of('rowsum_loop.py', 'tl.sum(')}" in f.why
    assert any("addrspace(3)" in m for m in f.where.machine)
    assert found(out, "colsum_loop.py", "*fp32, *fp32, i32:16, i32:16, 64, 64", "cuda:90") == []  # after the loop


@pytest.mark.parametrize("target", ["cuda:80", "hip:gfx942"])
def test_spills_name_the_line_that_spills_most(out, target):
    fs = found(out, "dot_loop.py", DOT16.format(m=256).replace(", 64, 32,", ", 256, 64,"), target)
    (f,) = fs
    # the dot loop's line with the most spill traffic: the dot (Triton 3.9); 3.6's AMDGCN charges it to the loop
    loop = {line_of("dot_loop.py", "tl.dot("), line_of("dot_loop.py", "in range(0, K, BLOCK_K)")}
    assert f.kind == "spills" and f.where.line in loop
    assert f.where.line == line_of("dot_loop.py", "tl.dot(") or adapter.version_tuple() < (3, 7)
    assert f.fix.sets == {"num_warps": 8}
    if target == "hip:gfx942":
        sig = DOT16.format(m=256).replace(", 64, 32,", ", 256, 64,")
        assert found(out, "dot_loop.py", sig, target, {"num_warps": 8}) == []


def test_cli_reads_a_dump_folder_and_tries_the_fix(out, tmp_path):
    d = api.dump(str(PITFALLS / "copy_kernel.py"), signature="*fp32:16, *fp32:16, i32, 1024", target="cuda:90", out=out)
    code, text, err = irscope("explain", d.folder)
    assert code == 0, err
    assert "narrow-access (mask-bound)" in text and "--arg n=i32:16" in text
    code, text, err = irscope("explain", d.folder, "--try", "--json", "-o", tmp_path)
    assert code == 0, err
    doc = json.loads(text)
    (dump,) = doc["dumps"]
    assert [t["gone"] for t in dump["tried"]] == [True, True]
    assert all(t["after"] == [] for t in dump["tried"])


def test_cli_refuses_a_folder_that_is_no_dump(tmp_path):
    code, text, err = irscope("explain", tmp_path)
    assert code == 2 and "not an irscope dump folder" in err and len(err.strip().splitlines()) == 1


def test_dump_summary_and_json_carry_the_findings(out):
    args = (
        "dump",
        PITFALLS / "copy_kernel.py",
        "--signature",
        "*fp32:4, *fp32:16, i32:16, 1024",
        "-t",
        "cuda:90",
        "-o",
        out,
    )
    code, text, _ = irscope(*args)
    assert code == 0 and "findings   1" in text and "narrow-access (ptr-align)" in text
    code, text, _ = irscope(*args, "--json")
    (k,) = json.loads(text)["kernels"]
    assert [(f["kind"], f["cause"]) for f in k["findings"]] == [("narrow-access", "ptr-align")]
    assert k["findings"][0]["fix"]["args"] == {"x_ptr": "*fp32:16"}


def test_a_dump_folder_is_explained_without_triton(out, tmp_path):
    """DUMP_DIR needs no compile: with Triton unimportable the findings still come (from the folder alone)."""
    import shutil
    import subprocess
    import sys

    d = api.dump(str(PITFALLS / "copy_kernel.py"), signature="*fp32:16, *fp32:16, i32, 1024", target="cuda:90", out=out)
    folder = shutil.copytree(d.folder, tmp_path / "copied")
    code = "import sys; sys.modules['triton'] = None; from irscope.cli import main; main(['explain', sys.argv[1], '--json'])"
    p = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    (dump,) = json.loads(p.stdout)["dumps"]
    assert [(f["kind"], f["cause"]) for f in dump["findings"]] == [("narrow-access", "mask-bound")] * 2


def test_every_kind_a_rule_reports_is_described_in_kinds():
    """The report and `explain` show KINDS' line for a finding's kind: a rule's kind missing there shows bare."""
    import ast

    from irscope.explain.model import KINDS

    reported = set()
    for path in (ROOT / "irscope" / "explain").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Finding" and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    reported.add(first.value)
    assert reported and reported <= set(KINDS), reported - set(KINDS)
