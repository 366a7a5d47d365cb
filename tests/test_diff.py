"""irscope diff: stats, stages and passes of two compiles; normalisation; exit status; JSON; bad input.

Compiles for cuda:90 and hip:gfx942 on the CPU. Dump folders shared by several tests
are made once per module (cache off); every test gets its own IRSCOPE_CACHE_DIR.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import json
import random
import textwrap
from pathlib import Path

import pytest

from irscope.cli import main
from irscope.compare.diff import count_changes, line_opcodes
from irscope.compare.normalize import amdgcn, llir, mlir, ptx, sass
from tests.helpers import VECTOR_ADD

ADD16 = "*fp32:16, *fp32:16, *fp32:16, i32:16, 1024"
ADD4 = "*fp32:4, *fp32:4, *fp32:4, i32:16, 1024"
KERN_SIG = "*fp32:16, *fp32:16, *fp32:16, i32:16, fp32, 1024"

KERN = """\
import triton
import triton.language as tl


@triton.jit
def scale_add(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    acc = x * alpha + y
    acc = tl.where(acc > 0, acc, 0.0)
    tl.store(out_ptr + offsets, acc, mask=mask)
"""

# the same kernel: every local renamed, comments and blank lines above it, so every line number moves
KERN_RENAMED = """\
# The kernel of the other file, with its locals renamed
# and everything moved down a few lines.

import triton
import triton.language as tl



@triton.jit
def scale_add(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    # which block am I
    block_id = tl.program_id(0)

    idx = block_id * BLOCK + tl.arange(0, BLOCK)
    in_bounds = idx < n
    xv = tl.load(x_ptr + idx, mask=in_bounds)
    yv = tl.load(y_ptr + idx, mask=in_bounds)
    r = xv * alpha + yv
    r = tl.where(r > 0, r, 0.0)
    tl.store(out_ptr + idx, r, mask=in_bounds)
"""


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """Each test its own irscope cache: nothing shared with the user or other tests."""
    monkeypatch.setenv("IRSCOPE_CACHE_DIR", str(tmp_path / "cache"))


def irscope(*args: str) -> tuple[int, str, str]:
    """The CLI in this process (Triton stays warm): exit status, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in args])
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.strip() and "UserWarning" not in line and "warn_once" not in line]


def only_dump(root: Path) -> Path:
    (manifest,) = root.glob("*/*/manifest.json")
    return manifest.parent


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    """Dump folders made with `irscope dump -o` (cache off): aligned/unaligned vector_add, a renamed kernel."""
    root = tmp_path_factory.mktemp("dumps")
    for side, source in (("a", KERN), ("b", KERN_RENAMED)):
        (root / side).mkdir()
        (root / side / "kern.py").write_text(source)

    def dump(name, *args):
        code, _out, err = irscope("dump", *args, "--no-cache", "-o", root / name)
        assert code == 0, err
        return only_dump(root / name)

    return {
        "add16": dump("add16", VECTOR_ADD, "-s", ADD16, "-t", "cuda:90"),
        "add4": dump("add4", VECTOR_ADD, "-s", ADD4, "-t", "cuda:90"),
        "kern_a": dump("kern_a", root / "a" / "kern.py", "-s", KERN_SIG, "-t", "cuda:90"),
        "kern_b": dump("kern_b", root / "b" / "kern.py", "-s", KERN_SIG, "-t", "cuda:90"),
        "kern_a_hip": dump("kern_a_hip", root / "a" / "kern.py", "-s", KERN_SIG, "-t", "hip:gfx942"),
        "kern_b_hip": dump("kern_b_hip", root / "b" / "kern.py", "-s", KERN_SIG, "-t", "hip:gfx942"),
        "root": root,
    }


# ---------------------------------------------------------------- settings of one kernel file


def test_num_warps_4_vs_8_differs_with_register_figures(tmp_path):
    args = [VECTOR_ADD, "-s", ADD16, "-t", "cuda:90", "--a", "num_warps=4", "--b", "num_warps=8", "-o", tmp_path]
    code, out, err = irscope("diff", *args, "--json")
    assert code == 1, err
    doc = json.loads(out)
    assert doc["equal"] is False
    assert doc["inputs"]["options.num_warps"] == {"a": 4, "b": 8}
    assert doc["a"]["user_options"] == {"num_warps": 4} and doc["b"]["user_options"] == {"num_warps": 8}
    regs = doc["stats"]["registers"]
    assert isinstance(regs["a"], int) and isinstance(regs["b"], int) and regs["a"] != regs["b"]
    assert doc["stats"]["num_warps"] == {"a": 4, "b": 8}
    assert doc["stages"]["ttgir"]["status"] == "changed"
    assert doc["stages"]["ttir"]["status"] == "equal"  # num_warps acts from TTGIR on

    # the human summary carries the same figures
    code, out, err = irscope("diff", *args, "--stage", "ttgir")
    assert code == 1, err
    summary = out.split("--- a/ttgir")[0]
    assert summary.index("stats") < summary.index("stages")
    reg_line = next(line for line in summary.splitlines() if line.strip().startswith("registers"))
    assert str(regs["a"]) in reg_line and str(regs["b"]) in reg_line
    diff_lines = out.split("--- a/ttgir")[1].splitlines()
    assert any(line.startswith("-") and '"ttg.num-warps" = 4' in line for line in diff_lines)
    assert any(line.startswith("+") and '"ttg.num-warps" = 8' in line for line in diff_lines)


def test_identical_settings_exit_0(tmp_path):
    code, out, err = irscope(
        "diff",
        VECTOR_ADD,
        "-s",
        ADD16,
        "-t",
        "cuda:90",
        "--a",
        "num_warps=4",
        "--b",
        "num_warps=4",
        "-o",
        tmp_path,
        "--json",
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["equal"] is True and doc["stats"] == {} and doc["inputs"] == {}
    assert {s["status"] for s in doc["stages"].values()} == {"equal"}
    assert doc["a"]["user_options"] == doc["b"]["user_options"] == {"num_warps": 4}


def test_targets_per_side(tmp_path):
    code, out, err = irscope(
        "diff",
        VECTOR_ADD,
        "-s",
        ADD16,
        "--a-target",
        "h100",
        "--b-target",
        "mi300x",
        "--stage",
        "ttgir",
        "-o",
        tmp_path,
        "--json",
    )
    assert code == 1, err
    doc = json.loads(out)
    assert (doc["a"]["target"], doc["b"]["target"]) == ("cuda:90", "hip:gfx942")
    assert doc["stages"]["ptx"]["status"] == "only_a" and doc["stages"]["amdgcn"]["status"] == "only_b"
    assert doc["stages"]["ttgir"]["status"] == "changed"
    text = doc["stages"]["ttgir"]["diff"]
    assert any(line.startswith("+") and "threadsPerWarp = [64]" in line for line in text.splitlines())
    assert doc["stages"]["ptx"]["diff"] is None  # not asked for


def test_passes_compared_by_name(tmp_path):
    code, out, err = irscope(
        "diff",
        VECTOR_ADD,
        "-s",
        ADD16,
        "-t",
        "cuda:90",
        "--a",
        "num_warps=4",
        "--b",
        "num_warps=8",
        "--passes",
        "-o",
        tmp_path,
        "--json",
    )
    assert code == 1, err
    p = json.loads(out)["passes"]
    assert p["a_count"] > 10 and p["a_count"] == p["b_count"]
    # the frontend's IR is the same; num_warps first shows once TTIR becomes TTGIR
    assert p["first_divergence"]["where"] == "pass" and p["first_divergence"]["stage"] == "ttgir"
    for d in p["differ"]:
        assert (
            d["a"] is None
            or d["b"] is None
            or (d["a"]["added"], d["a"]["removed"]) != (d["b"]["added"], d["b"]["removed"])
        )


def test_compile_failure_names_the_side(tmp_path):
    code, _out, err = irscope("diff", VECTOR_ADD, "-s", ADD16, "-t", "cuda:90", "--b", "ptx_version=99", "-o", tmp_path)
    assert code == 2  # trouble, as diff(1): not "different"
    assert "side b (ptx_version=99)" in err and "compile failed in stage" in err
    assert "Traceback" not in err


# ---------------------------------------------------------------- two dump folders


def test_renamed_and_moved_kernel_is_equal(dumps):
    for a, b, stages in (("kern_a", "kern_b", ("ttgir", "ptx")), ("kern_a_hip", "kern_b_hip", ("ttgir", "amdgcn"))):
        code, out, err = irscope("diff", dumps[a], dumps[b], *[x for s in stages for x in ("--stage", s)])
        assert code == 0, out + err
        assert "no differences" in out
        # and not only the chosen stages: every stage and stat
        code, out, err = irscope("diff", dumps[a], dumps[b], "--json")
        assert code == 0, out
        doc = json.loads(out)
        assert doc["equal"] and doc["stats"] == {}
        assert set(doc["inputs"]) == {"file"}  # .../a/kern.py vs .../b/kern.py: nothing else went in
        assert all(s["status"] == "equal" for s in doc["stages"].values())
        # the compilers' own texts do differ (names, line numbers): normalisation made them equal
        code, out, err = irscope("diff", dumps[a], dumps[b], "--raw", "--stage", "ttgir", "--json")
        assert code == 1 and json.loads(out)["stages"]["ttgir"]["added"] > 0


def test_vector_loads_vs_scalar_loads(dumps):
    code, out, err = irscope("diff", dumps["add16"], dumps["add4"], "--stage", "ptx", "--json")
    assert code == 1, err
    doc = json.loads(out)
    assert doc["inputs"]["signature"] == {"a": ADD16, "b": ADD4}
    loads = doc["stats"]["ptx.global_load"]
    assert set(loads["a"]) == {"128"} and set(loads["b"]) == {"32"}
    assert doc["stages"]["ptx"]["status"] == "changed"
    lines = doc["stages"]["ptx"]["diff"].splitlines()
    assert any(line.startswith("-") and "ld.global.v4.b32" in line for line in lines)
    assert any(line.startswith("+") and "ld.global.b32" in line for line in lines)

    code, out, err = irscope("diff", dumps["add16"], dumps["add4"])
    assert code == 1
    row = next(line for line in out.splitlines() if line.strip().startswith("ptx.global_load"))
    assert "x128b" in row and "x32b" in row


def test_json_schema_is_stable(dumps):
    code, out, _err = irscope("diff", dumps["add16"], dumps["add4"], "--stage", "sass", "--json")
    doc = json.loads(out)
    assert list(doc) == [
        "irscope_diff",
        "equal",
        "normalized",
        "kernel",
        "file",
        "a",
        "b",
        "inputs",
        "stats",
        "stages",
        "passes",
        "files",
        "sources_differ",
        "findings",
    ]
    assert doc["sources_differ"] is False and doc["files"]["a"] == doc["files"]["b"] == doc["file"]
    assert doc["irscope_diff"] == 1 and doc["normalized"] is True and doc["kernel"] == "add_kernel"
    for side in ("a", "b"):
        assert list(doc[side]) == ["label", "folder", "target", "signature", "triton_version", "user_options", "cached"]
        assert doc[side]["cached"] is None  # an existing folder, not a compile of this run
    assert list(doc["stages"]) == ["frontend", "ttir", "ttgir", "llir", "ptx", "sass"]
    for name, s in doc["stages"].items():
        # schema 1's keys, in order, then the aligned diff's (issue #39: new keys may be added)
        assert [k for k in s if k in ("status", "added", "removed", "lines_a", "lines_b", "diff")] == [
            "status",
            "added",
            "removed",
            "lines_a",
            "lines_b",
            "diff",
        ]
        assert {"renamed", "moved", "summary", "alignment"} <= set(s)
        assert s["status"] in ("equal", "changed", "only_a", "only_b")
        assert (s["diff"] is None) == (name != "sass")
    for d in list(doc["stats"].values()) + list(doc["inputs"].values()):
        assert list(d) == ["a", "b"]
    assert doc["passes"] is None
    assert code == (0 if doc["equal"] else 1)


def test_an_out_folder_holding_one_dump_is_accepted(dumps):
    code, out, err = irscope("diff", dumps["root"] / "kern_a", dumps["root"] / "kern_b", "--json")
    assert code == 0, err
    assert json.loads(out)["a"]["folder"] == str(dumps["kern_a"])


def test_side_by_side_and_unified(dumps):
    code, out, _err = irscope("diff", dumps["add16"], dumps["add4"], "--stage", "ptx", "--side-by-side")
    assert code == 1
    assert "a/ptx" in out and "b/ptx" in out and "--- a/ptx" not in out
    assert any(" | " in line or " < " in line or " > " in line for line in out.splitlines())
    code, out, _err = irscope("diff", dumps["add16"], dumps["add4"], "--stage", "ptx", "-U", "0")
    assert "--- a/ptx" in out and "\x1b[" not in out  # unified, no colour when not a terminal
    hunk = [line for line in out.split("--- a/ptx")[1].splitlines()[2:] if not line.startswith("@@")]
    assert hunk and all(line[:1] in "+-" for line in hunk)  # no context lines with -U 0


# ---------------------------------------------------------------- bad input: one line, exit 2


def test_bad_input(dumps, tmp_path, cli):
    not_dump = tmp_path / "empty"
    not_dump.mkdir()
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "manifest.json").write_text('{"name": "something else"}')
    cases = [
        ([not_dump, dumps["add16"]], "not an irscope dump folder"),
        ([foreign, dumps["add16"]], "not an irscope dump folder"),
        ([dumps["add16"], dumps["kern_a"]], "different kernels"),
        ([dumps["add16"]], "give a second one"),
        ([dumps["add16"], dumps["add4"], "--a", "num_warps=8"], "apply when compiling a kernel file"),
        ([VECTOR_ADD, "-s", ADD16], "nothing to compare"),
        ([VECTOR_ADD, "-s", ADD16, "--b", "num_wraps=8"], "did you mean 'num_warps'"),
        ([dumps["add16"], dumps["add4"], "--passes"], "dumped without --passes"),
    ]
    for args, message in cases:
        r = cli("diff", *map(str, args), cwd=tmp_path)
        lines = error_lines(r.err)
        assert r.code == 2 and len(lines) == 1, (args, r.err)
        assert lines[0].startswith("irscope: error:") and message in lines[0], lines[0]
        assert not r.out


# ---------------------------------------------------------------- normalisers and the line diff


def test_ptx_register_renaming_is_not_a_difference_but_dataflow_is():
    a = textwrap.dedent("""\
        .visible .entry k(
        {
        \t.loc\t1 12 0
        \tadd.s32 \t%r5, %r3, %r4;
        \tmul.lo.s32 \t%r6, %r5, %r3;
        $L__BB0_2:
        \t@%p1 bra $L__BB0_2;
        }
        \t.file\t1 "/home/me/a/kern.py"
        \t.section\t.debug_info
        \t{
        .b8 1
        \t}
        """)
    renamed = (
        a.replace("%r5", "%r9")
        .replace("%r3", "%r1")
        .replace("$L__BB0_2", "$L__BB0_7")
        .replace("1 12 0", "1 40 0")
        .replace("/home/me/a", "/tmp/b")
        .replace(".b8 1", ".b8 7")
    )
    dataflow = a.replace("mul.lo.s32 \t%r6, %r5, %r3", "mul.lo.s32 \t%r6, %r3, %r3")
    assert ptx(a).lines == ptx(renamed).lines
    assert ptx(a).lines != ptx(dataflow).lines
    assert not any(".loc" in line or ".file" in line or ".b8" in line for line in ptx(a).lines)


def test_sass_mlir_llir_amdgcn_normalisers():
    s1 = "        /*0040*/                   IMAD.WIDE R2, R0.reuse, 0x4, R2 ;\n.L_x_3:\n  /*0050*/  BRA `(.L_x_3);"
    s2 = "        /*0090*/              IMAD.WIDE R8, R6.reuse, 0x4, R8 ;\n.L_x_9:\n  /*00a0*/  BRA `(.L_x_9);"
    assert sass(s1).lines == sass(s2).lines and "/*" not in "".join(sass(s1).lines)
    assert sass(s1).lines != sass(s1.replace("R0.reuse, 0x4, R2", "R2.reuse, 0x4, R2")).lines

    m1 = (
        '#loc = loc("/x/k.py":3:0)\n  tt.func public @k(%x_ptr: i32 loc("x_ptr"(#loc))) {\n'
        "    %pid = tt.get_program_id x : i32 loc(#loc2)\n    %0 = arith.addi %pid, %x_ptr : i32 loc(callsite(#loc3 at #loc4))\n"
    )
    m2 = m1.replace("%x_ptr", "%p").replace("%pid", "%block").replace("#loc2", "#loc9").replace("3:0", "8:0")
    assert mlir(m1).lines == mlir(m2).lines
    assert not any("loc" in line for line in mlir(m1).lines)
    assert mlir(m1).origin == [2, 3, 4]  # where each kept line came from

    l1 = 'define void @k(ptr %0) !dbg !4 {\n  %2 = load i32, ptr %0, !dbg !7\n}\n!4 = distinct !DISubprogram(name: "k")'
    l2 = l1.replace("!dbg !7", "!dbg !12").replace('name: "k"', 'name: "kk"')
    assert llir(l1).lines == llir(l2).lines and not any("dbg" in line for line in llir(l1).lines)

    g1 = "k:\n\t.loc\t1 11 0\n\tglobal_load_dwordx4 v[0:3], v[4:5], off\n\tv_add_f32 v6, v0, s2\n"
    g2 = g1.replace("v[0:3]", "v[8:11]").replace("v0", "v8").replace("11 0", "30 0").replace("s2", "s7")
    assert amdgcn(g1).lines == amdgcn(g2).lines and not any(".loc" in line for line in amdgcn(g1).lines)


def test_line_diff_matches_difflib():
    rng = random.Random(7)
    words = [f"op{i}" for i in range(12)]
    for _ in range(200):
        a = [rng.choice(words) for _ in range(rng.randrange(0, 40))]
        b = list(a)
        for _ in range(rng.randrange(0, 6)):
            i = rng.randrange(0, len(b) + 1)
            if rng.random() < 0.5 and b:
                del b[min(i, len(b) - 1)]
            else:
                b.insert(i, rng.choice(words + ["new"]))
        ops = line_opcodes(a, b)
        # the opcodes rebuild b from a ...
        rebuilt = []
        for tag, i1, i2, j1, j2 in ops:
            rebuilt.extend(a[i1:i2] if tag == "equal" else b[j1:j2])
            if tag == "equal":
                assert a[i1:i2] == b[j1:j2]
        assert rebuilt == b
        # ... and keep as many lines as difflib itself does
        sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
        assert sum(i2 - i1 for t, i1, i2, j1, j2 in ops if t == "equal") >= sum(
            m.size for m in sm.get_matching_blocks()
        )
        added, removed = count_changes(ops)
        assert len(a) - removed == len(b) - added
