"""Per-pass IR: one record per MLIR pass, change counts, first producer of a pattern."""

from __future__ import annotations

from irscope.artifacts import passes
from tests.helpers import MATMUL, MATMUL_SIG16, VECTOR_ADD, compile_example, run_in


def test_pass_records_and_first_producer():
    art = compile_example(VECTOR_ADD, "*fp32, *fp32, *fp32, i32:16, 1024", passes=True)
    names = [p.name for p in art.passes]
    assert len(art.passes) > 30
    assert "ConvertTritonToTritonGPU" in names and "TritonGPUCoalesce" in names
    convert = art.passes[names.index("ConvertTritonToTritonGPU")]
    assert convert.stage == "ttgir" and convert.changed
    hit = passes.first_producer(r"#ttg\.blocked", art.passes, art.pass_texts, art.stages["frontend"], art.stages)
    assert hit.where == "pass" and hit.record.name == "ConvertTritonToTritonGPU"
    hit = passes.first_producer(r"ld\.global\.v4", art.passes, art.pass_texts, art.stages["frontend"], art.stages)
    assert hit.where == "pass" and hit.record.name == "ConvertTritonGPUToLLVM"


def test_pipeliner_is_found_on_ampere():
    art = compile_example(MATMUL, MATMUL_SIG16, kernel="matmul_kernel", target="a100", passes=True)
    hit = passes.first_producer(
        r"ttg\.async_copy_global_to_local", art.passes, art.pass_texts, art.stages["frontend"], art.stages
    )
    assert hit.where == "pass", hit
    hit_ptx = passes.first_producer(r"cp\.async", art.passes, art.pass_texts, art.stages["frontend"], art.stages)
    assert hit_ptx.where in ("pass", "stage")
    # the pipeliner's internal dumps, printed while it runs, are not the IR after the pass before it
    assert "Pipeline" in hit.record.name, hit.record.name
    assert hit.sources, "the matching ops' Python lines"


def test_loc_only_changes_do_not_count():
    a = 'tt.func @k() {\n  %0 = arith.constant 1 : i32 loc(#loc1)\n}\n#loc1 = loc("a.py":3:0)\n'
    b = 'tt.func @k() {\n  %0 = arith.constant 1 : i32 loc(#loc7)\n}\n#loc7 = loc("a.py":9:0)\n'
    assert passes.count_changes(a, b) == (0, 0)


def test_passes_cli_on_a_dump_folder(capsys, tmp_path):
    r = run_in(
        capsys,
        "dump",
        str(VECTOR_ADD),
        "--signature",
        "*fp32, *fp32, *fp32, i32:16, 1024",
        "-o",
        str(tmp_path),
        "--passes",
    )
    assert r.code == 0, r.err
    folder = next((tmp_path / "add_kernel").iterdir())
    assert (folder / "passes" / "index.json").exists()
    r = run_in(capsys, "passes", str(folder), "--first", "ttg.convert_layout|#ttg.blocked")
    assert r.code == 0, r.err
    assert "ConvertTritonToTritonGPU" in r.out
    r = run_in(capsys, "passes", str(folder))
    assert "TritonGPUCoalesce" in r.out
