"""The source map: what each Python line became in every stage (map.json, `irscope lines`, `dump --lines`,
`passes --line`, `passes --first` naming source lines, `diff --by-line`).

Compiles examples/matmul.py for cuda:90 and hip:gfx942 on the CPU. Line numbers are found in the
example's source (the line holding `tl.dot(`...), never written down here.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_diff import irscope  # the CLI in this process (Triton stays warm)

from irscope.artifacts import lineinfo, passes, sourcemap
from tests.helpers import (
    EXAMPLES,
    FB_GLUON_LOAD,
    FBTRITON,
    MATMUL,
    MATMUL_SIG16,
    compile_example,
)

SOURCE = MATMUL.read_text().splitlines()


def line_of(fragment: str) -> int:
    """The 1-based line of examples/matmul.py holding `fragment` (the first one)."""
    return next(i for i, text in enumerate(SOURCE, 1) if fragment in text)


DOT = line_of("tl.dot(")
LOAD_A = line_of("a = tl.load(")
LOAD_B = line_of("b = tl.load(")
LOOP = line_of("for k in range(")
CDIV = line_of("tl.cdiv(M")
BLANK = next(i for i in range(line_of("def matmul_kernel"), len(SOURCE)) if not SOURCE[i - 1].strip())


def dump(out: Path, *extra: str, target: str = "cuda:90") -> Path:
    code, _, err = irscope(
        "dump", MATMUL, "--target", target, "--signature", MATMUL_SIG16, "-o", out, "--no-cache", *extra
    )
    assert code == 0, err
    (manifest,) = out.glob("*/*/manifest.json")
    return manifest.parent


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("IRSCOPE_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def hopper(tmp_path_factory) -> Path:
    """matmul on cuda:90 with per-pass IR, dumped once for the module."""
    return dump(tmp_path_factory.mktemp("h100"), "--passes")


@pytest.fixture(scope="module")
def hopper_map(hopper) -> dict:
    return sourcemap.load(hopper, json.loads((hopper / "manifest.json").read_text()))


def stage_file_lines(folder: Path, source_map: dict, stage: str) -> list[str]:
    return (folder / source_map["stages"][stage]["file"]).read_text().splitlines()


# ------------------------------------------------------------------ the map itself


def test_dot_line_becomes_wgmma_in_ptx_and_hgmma_in_sass(hopper, hopper_map):
    entry = sourcemap.find_line(hopper_map, str(DOT))
    assert any(op.startswith("ttng.warp_group_dot") for op in entry["stages"]["ttgir"]["ops"])
    assert entry["stages"]["ptx"]["ops"].get("wgmma.mma_async", 0) > 0
    assert entry["stages"]["sass"]["ops"].get("HGMMA", 0) > 0
    assert entry["stages"]["sass"]["classes"]["mma"] >= entry["stages"]["sass"]["ops"]["HGMMA"]
    # the line numbers link into the stage files: the HGMMA instructions are on the lines the map names
    sass = stage_file_lines(hopper, hopper_map, "sass")
    assert any("HGMMA" in sass[n - 1] for n in entry["stages"]["sass"]["at"])
    ptx = stage_file_lines(hopper, hopper_map, "ptx")
    assert any("wgmma.mma_async" in ptx[n - 1] for n in entry["stages"]["ptx"]["at"])


def test_load_lines_become_async_copies(hopper_map):
    for line in (LOAD_A, LOAD_B):
        st = sourcemap.find_line(hopper_map, str(line))["stages"]
        assert st["ptx"]["classes"].get("async_copy", 0) > 0, line
        assert st["sass"]["ops"].get("LDGSTS", 0) > 0, line
        assert "ttg.async_copy_global_to_local" in st["ttgir"]["ops"]
    # and nothing else in the kernel issues them: every LDGSTS belongs to a load line
    ldgsts = {e["line"]: e["stages"].get("sass", {}).get("ops", {}).get("LDGSTS", 0) for e in hopper_map["lines"]}
    assert {n for n, c in ldgsts.items() if c} <= {LOAD_A, LOAD_B, LOOP}


def test_every_unit_is_counted_once_mapped_or_under_no_line(hopper_map):
    for stage, summary in hopper_map["stages"].items():
        per_line = sum(e["stages"].get(stage, {}).get("n", 0) for e in hopper_map["lines"])
        no_line = hopper_map["no_line"].get(stage, {}).get("n", 0)
        assert per_line == summary["mapped"], stage
        assert per_line + no_line == summary["units"], stage


def test_inlined_callee_is_listed_under_its_caller_with_its_file(hopper_map):
    entry = sourcemap.find_line(hopper_map, str(CDIV))
    callees = {(Path(c["file"]).name, c["line"]) for c in entry.get("callees", [])}
    assert any(name == "standard.py" for name, _ in callees), callees
    line = next(n for name, n in callees if name == "standard.py")
    helper = sourcemap.find_line(hopper_map, f"standard.py:{line}")
    assert helper["callers"] >= 2  # tl.cdiv is called from several kernel lines
    assert helper["stages"]["ttir"]["n"] >= entry["callees"][0]["stages"]["ttir"]["n"]


def test_map_is_listed_compact_and_kept_by_the_cache(tmp_path):
    first = dump(tmp_path / "a")
    manifest = json.loads((first / "manifest.json").read_text())
    assert manifest["map"] == "map.json"
    assert "\n" not in (first / "map.json").read_text()
    code, _, err = irscope("dump", MATMUL, "--target", "cuda:90", "--signature", MATMUL_SIG16, "-o", tmp_path / "b")
    assert code == 0, err
    (again,) = (tmp_path / "b").glob("*/*/map.json")
    assert json.loads(again.read_text()) == json.loads((first / "map.json").read_text())


def test_amd_dot_line_becomes_mfma(tmp_path):
    folder = dump(tmp_path / "out", target="hip:gfx942")
    source_map = sourcemap.load(folder, json.loads((folder / "manifest.json").read_text()))
    assert source_map["machine"] == "amdgcn"
    st = sourcemap.find_line(source_map, str(DOT))["stages"]
    assert any(op.startswith("v_mfma") for op in st["amdgcn"]["ops"])
    assert st["amdgcn"]["classes"]["mma"] > 0
    asm = stage_file_lines(folder, source_map, "amdgcn")
    assert all(asm[n - 1].strip() for n in st["amdgcn"]["at"])


@pytest.mark.skipif(FBTRITON, reason=FB_GLUON_LOAD)
def test_python_api_gluon_kernel():
    art = compile_example(EXAMPLES / "gluon_add.py", "*fp32, *fp32, *fp32, i32:16, 1024")
    source = (EXAMPLES / "gluon_add.py").read_text().splitlines()
    store = next(i for i, t in enumerate(source, 1) if "gl.store(" in t)
    st = sourcemap.find_line(art.source_map, str(store))["stages"]
    assert st["sass"]["classes"].get("global_store", 0) > 0
    assert st["ptx"]["classes"].get("global_store", 0) > 0


# ------------------------------------------------------------------ parsers: what the compiler writes


def test_mlir_locations_callsite_fused_and_unknown():
    text = """module {
  %0 = arith.constant 1 : i32 loc(#loc2)
  %1 = arith.addi %0, %0 : i32 loc(#loc3)
  %2 = arith.muli %1, %1 : i32 loc(fused[#loc1, #loc2])
  %3 = arith.subi %1, %1 : i32 loc(unknown)
  scf.for %i = %0 to %1 step %0 {
    scf.yield loc(#loc2)
  } loc(#loc4)
} loc(#loc)
#loc = loc("k.py":1:0)
#loc1 = loc(unknown)
#loc2 = loc("k.py":7:3)
#loc3 = loc(callsite(#loc5 at #loc2))
#loc4 = loc("x"(#loc6))
#loc5 = loc("lib.py":43:17)
#loc6 = loc("k.py":9:1)
"""
    units = {u.op: u.frames for u in lineinfo.mlir_units(text)}
    assert units["arith.constant"] == (("k.py", 7),)
    assert units["arith.addi"] == (("k.py", 7), ("lib.py", 43))
    assert units["arith.muli"] == (("k.py", 7),)
    assert units["arith.subi"] == ()
    assert units["scf.for"] == (("k.py", 9),)  # a region op's location follows its closing brace


def test_sass_line_info_is_split_off_and_the_plain_text_kept():
    annotated = (
        "\t.text.k:\n"
        '\t//## File "/x/lib.py", line 5\n'
        '\t//## File ".nv_debug_ptx_txt", line 12\n'
        "        /*0000*/                   HGMMA.64x128x16.F32 R88, gdesc[UR8].tnspB, R88 ;\n"
        "        /*0010*/                   EXIT ;\n"
    )
    plain, info = lineinfo.split_sass(annotated)
    assert "//##" not in plain and "HGMMA" in plain
    assert [(s.source, s.ptx_line, s.op) for s in info] == [
        ((("/x/lib.py", 5),), 12, "HGMMA"),
        ((("/x/lib.py", 5),), 12, "EXIT"),
    ]
    ptx = [lineinfo.Unit(12, (("/x/k.py", 36), ("/x/lib.py", 5)), "wgmma.mma_async")]
    # nvdisasm names the helper's line; the PTX line's chain adds its caller, when the two agree
    assert lineinfo.sass_units(info, ptx)[0].frames == ptx[0].frames
    other = [lineinfo.Unit(12, (("/x/k.py", 40),), "add.s32")]
    assert lineinfo.sass_units(info, other)[0].frames == (("/x/lib.py", 5),)
    # nvdisasm -gi names the callers itself, innermost first
    _, info = lineinfo.split_sass(
        '\t//## File "/x/lib.py", line 5 inlined at "/x/k.py", line 36\n'
        '\t//## File "/x/k.py", line 36\n'
        "        /*0000*/                   EXIT ;\n"
    )
    assert info[0].source == (("/x/k.py", 36), ("/x/lib.py", 5))


# ------------------------------------------------------------------ the lines command


def test_lines_hot_table_and_json(hopper):
    code, out, err = irscope("lines", hopper)
    assert code == 0, err
    assert SOURCE[DOT - 1].strip()[:30] in out
    code, out, err = irscope("lines", hopper, "--json", "--sort", "mma")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["irscope_lines"] == 1 and doc["machine"] == "sass"
    counts = [r["mma"] for r in doc["lines"]]
    assert counts == sorted(counts, reverse=True)
    assert doc["lines"][0]["line"] == DOT or doc["lines"][0]["mma"] == next(
        r["mma"] for r in doc["lines"] if r["line"] == DOT
    )


def test_lines_one_line_in_one_stage_json(hopper):
    code, out, err = irscope("lines", hopper, "--line", DOT, "--stage", "sass", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["line"]["line"] == DOT
    texts = [x["text"] for x in doc["ir"]["sass"]]
    assert texts and all("/*" in t for t in texts)
    assert any("HGMMA" in t for t in texts)


@pytest.mark.parametrize(
    "args, words",
    [
        (("--line", str(BLANK)), "produced no code"),
        (("--line", "9999"), "lines"),
        (("--line", "abc"), "FILE:LINE"),
        (("--line", "nosuchfile.py:3"), "nosuchfile.py"),
        (("--sort", "speed"), "--sort"),
        (("--stage", "sass"), "--line"),
        (("--line", str(DOT), "--stage", "amdgcn"), "not mapped"),
    ],
)
def test_lines_bad_input_is_one_line_exit_2(hopper, args, words):
    code, out, err = irscope("lines", hopper, *args)
    assert code == 2, (out, err)
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and words in lines[0], err


def test_a_dump_without_a_map_is_one_line(hopper, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(hopper, old)
    (old / "map.json").unlink()
    code, _, err = irscope("lines", old)
    assert code == 2 and "map.json" in err and "dump again" in err


def test_dump_lines_prints_the_hot_lines_under_the_summary(tmp_path):
    code, out, err = irscope(
        "dump", MATMUL, "--target", "cuda:90", "--signature", MATMUL_SIG16, "-o", tmp_path / "o", "--lines"
    )
    assert code == 0, err
    summary, _, table = out.partition("source lines with code")
    assert "registers" in summary and table
    assert SOURCE[DOT - 1].strip()[:30] in table
    code, _, err = irscope("dump", MATMUL, "--signature", MATMUL_SIG16, "-o", tmp_path, "--lines", "--json")
    assert code == 2 and "--lines" in err


# ------------------------------------------------------------------ through the passes


def test_pipeliner_is_named_for_the_multi_buffered_loads(hopper):
    manifest = json.loads((hopper / "manifest.json").read_text())
    records, afters, first_ir = passes.load(hopper, manifest)
    history = passes.line_history(str(LOAD_A), manifest["file"], records, afters, first_ir)
    assert history[0].record is None and history[0].added["tt.load"] >= 1  # the frontend's load
    first = next(ch for ch in history if ch.added.get("ttg.async_copy_global_to_local"))
    assert "Pipeline" in first.record.name, first.record.name
    removed = next(ch for ch in history if ch.removed.get("tt.load"))
    assert removed.record.index >= first.record.index


def test_passes_line_and_first_name_source_lines(hopper):
    code, out, err = irscope("passes", hopper, "--line", LOAD_B)
    assert code == 0, err
    assert "TritonGPUPipeline" in out and "+ " in out and "ttg.async_copy_global_to_local" in out
    code, out, err = irscope("passes", hopper, "--first", r"ttg\.async_copy_global_to_local")
    assert code == 0, err
    assert "TritonGPUPipeline" in out
    assert f"matmul.py:{LOAD_A}" in out and f"matmul.py:{LOAD_B}" in out
    code, out, err = irscope("passes", hopper, "--line", BLANK)
    assert code == 2 and "no op" in err


# ------------------------------------------------------------------ diff by line


def test_diff_by_line_names_the_loop_lines(tmp_path):
    code, out, err = irscope(
        "diff",
        MATMUL,
        "--target",
        "cuda:90",
        "--signature",
        MATMUL_SIG16,
        "-o",
        tmp_path / "o",
        "--a",
        "num_stages=3",
        "--b",
        "num_stages=4",
        "--by-line",
        "--json",
    )
    assert code == 1, err
    rows = {(Path(r["file"]).name, r["line"]): r for r in json.loads(out)["by_line"]}
    for line in (LOAD_A, LOAD_B):
        change = rows[("matmul.py", line)]["changes"]["LDGSTS"]
        assert change["b"] > change["a"], change
        assert (
            rows[("matmul.py", line)]["classes"]["async_copy"]["b"]
            > rows[("matmul.py", line)]["classes"]["async_copy"]["a"]
        )
    # lines before the loop compute the same thing at either depth
    assert ("matmul.py", line_of("pid = tl.program_id")) not in rows
    code, out, err = irscope("diff", *sorted(p.parent for p in (tmp_path / "o").glob("*/*/map.json")), "--by-line")
    assert code == 1, err
    assert "by line" in out and f"matmul.py:{LOAD_A}" in out and "LDGSTS" in out


HELPER_KERNEL = """\
import triton
import triton.language as tl


@triton.jit
def multiply(a, b, acc):
    return tl.dot(a, b, acc)


@triton.jit
def tile(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs[:, None] * BLOCK + offs[None, :])
    b = tl.load(b_ptr + offs[:, None] * BLOCK + offs[None, :])
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    acc = multiply(a, b, acc)
    tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], acc)
"""


def test_dot_inside_a_helper_counts_under_the_calling_line(tmp_path):
    kernel = tmp_path / "helper_kernel.py"
    kernel.write_text(HELPER_KERNEL)
    source = HELPER_KERNEL.splitlines()
    call = next(i for i, t in enumerate(source, 1) if "multiply(a, b, acc)" in t and "def" not in t)
    dot = next(i for i, t in enumerate(source, 1) if "tl.dot(" in t)
    code, _, err = irscope(
        "dump",
        kernel,
        "--kernel",
        "tile",
        "--target",
        "cuda:90",
        "--signature",
        "*fp16, *fp16, *fp32, 64",
        "-o",
        tmp_path / "o",
    )
    assert code == 0, err
    (folder,) = [p.parent for p in (tmp_path / "o").glob("*/*/map.json")]
    code, out, err = irscope("lines", folder, "--line", call, "--json")
    assert code == 0, err
    entry = json.loads(out)["line"]
    assert entry["stages"]["sass"]["ops"].get("HGMMA", 0) > 0
    (callee,) = [c for c in entry["callees"] if c["line"] == dot]
    assert callee["stages"]["sass"]["ops"].get("HGMMA", 0) == entry["stages"]["sass"]["ops"]["HGMMA"]
    # the helper's own line, asked for directly, is the same code
    code, out, err = irscope("lines", folder, "--line", f"helper_kernel.py:{dot}", "--json")
    assert code == 0, err
    assert json.loads(out)["line"]["stages"]["ptx"]["ops"].get("wgmma.mma_async", 0) > 0


def test_spill_bytes_per_line_add_up_to_what_ptxas_reports(tmp_path):
    folder = dump(tmp_path / "o", "--set", "maxnreg=128")
    manifest = json.loads((folder / "manifest.json").read_text())
    stats = manifest["stats"]
    assert stats["spill_store_bytes"] > 0, "maxnreg=128 should make this matmul spill"
    source_map = sourcemap.load(folder, manifest)
    per_line = [e["stages"].get("sass", {}).get("spill_bytes", 0) for e in source_map["lines"]]
    total = sum(per_line) + source_map["no_line"].get("sass", {}).get("spill_bytes", 0)
    assert total == stats["spill_store_bytes"] + stats["spill_load_bytes"]
    code, out, err = irscope("lines", folder, "--sort", "spills", "--json")
    assert code == 0, err
    rows = json.loads(out)["lines"]
    assert rows[0]["spills"] == max(per_line) > 0
    assert rows[0]["local_load"] + rows[0]["local_store"] > 0


def test_console_prints_colon_words_verbatim():
    """Source and IR text reach the terminal as they are: rich's emoji codes (':smile:') are off."""
    import io

    from irscope.views.console import console

    con = console()
    con.file = io.StringIO()
    con.print("x = y[:smile:]  # :thumbs_up:")
    assert con.file.getvalue().strip() == "x = y[:smile:]  # :thumbs_up:"


def test_a_line_of_the_generator_reaches_every_stage_through_the_generated_lines(hopper, tmp_path):
    """A generated kernel (Helion) records which generated lines each line of its generator's source
    made (manifest generated_by.src_lines, from Helion's `# src[FILE:N]` comments): `lines --line
    FILE:N` on the generator's file sums those generated lines in every stage."""
    folder = tmp_path / "gen"
    shutil.copytree(hopper, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["generated_by"] = {
        "layer": "helion",
        "src_lines": {"my_helion.py:7": [DOT, LOAD_A], "my_helion.py:9": [BLANK]},
    }
    (folder / "manifest.json").write_text(json.dumps(manifest))
    code, out, err = irscope("lines", str(folder), "--line", "my_helion.py:7", "--json")
    assert code == 0, err
    entry = json.loads(out)["line"]
    smap = sourcemap.load(hopper, manifest)
    by_line = {e["line"]: e for e in smap["lines"] if e["file"] == smap["kernel_file"]}
    for stage in ("ttgir", "ptx", "sass"):
        want = sorted(set(by_line[DOT]["stages"][stage]["at"]) | set(by_line[LOAD_A]["stages"][stage]["at"]))
        assert entry["stages"][stage]["at"] == want
        assert entry["stages"][stage]["n"] == by_line[DOT]["stages"][stage]["n"] + by_line[LOAD_A]["stages"][stage]["n"]
    assert entry["generated_lines"] == sorted([DOT, LOAD_A]) and entry["line"] == 7
    assert "wgmma" in json.dumps(entry["stages"]["ptx"])  # the dot's line is among them
    # a generator line whose generated lines made no code: one line, naming the lines that did
    code, out, err = irscope("lines", str(folder), "--line", "my_helion.py:9")
    assert code == 2 and "my_helion.py generated no code" in err and "7" in err, err
