"""The aligned diff (compare/align.py, issue #39): a renaming is nothing, an inserted op is that op, a name
paired inconsistently is a change, a moved instruction is a move, and the summary's counts are the stats'
differences. On the committed one-knob pairs of benchmarks/diff_pairs (made by its make.sh)."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from irscope.artifacts import stats as stats_mod
from irscope.compare import diff as diff_mod
from irscope.compare.align import ADDED, CHANGED, MOVED, REMOVED, align
from irscope.compare.summary import summarize

PAIRS = Path(__file__).resolve().parents[1] / "benchmarks" / "diff_pairs"


def text(pair: str, side: str, stage: str) -> str:
    return gzip.decompress((PAIRS / pair / f"{side}.{stage}.gz").read_bytes()).decode()


def changes(al):
    """The rows that are changes: (kind, a's text, b's text)."""
    out = []
    for r in al.rows:
        if r.kind in (ADDED, REMOVED, CHANGED):
            out.append(
                (
                    r.kind,
                    al.a[r.a].text.strip() if r.a is not None else "",
                    al.b[r.b].text.strip() if r.b is not None else "",
                )
            )
    return out


def renumber_mlir(src: str) -> str:
    """Every SSA value and block argument renamed (a bijection): %N -> %vN+1000, %name -> %name_r."""
    names: dict[str, str] = {}

    def sub(m: re.Match) -> str:
        tok = m.group(0)
        if re.fullmatch(r"%(c-?\d+_\w+|true|false)(_\d+)?", tok):
            return tok  # constants MLIR names by value keep their name
        return names.setdefault(tok, f"%v{len(names) + 1000}")

    return re.sub(r"%[\w$.-]+", sub, src)


def renumber_ptx(src: str) -> str:
    """Every virtual register renumbered within its class (%r12 -> %r1012) and labels renamed."""
    src = re.sub(r"%(rd|r|p|f|fd|rs|h|hh|b)(\d+)\b", lambda m: f"%{m.group(1)}{int(m.group(2)) + 1000}", src)
    src = re.sub(r"\.reg (\.\w+)\s+%(\w+)<(\d+)>", lambda m: f".reg {m.group(1)} %{m.group(2)}<{m.group(3)}>", src)
    return re.sub(r"\$L__BB(\d+)_(\d+)", lambda m: f"$L__BB{m.group(1)}_{int(m.group(2)) + 50}", src)


def renumber_sass(src: str) -> str:
    """Registers permuted: R2k <-> R2k+2 for every pair (as another allocation would), .L_x_N shifted."""

    def reg(m: re.Match) -> str:
        n = int(m.group(2))
        if m.group(1) == "R" and n < 200:
            n = n + 2 if (n // 2) % 2 == 0 else n - 2
        return f"{m.group(1)}{n}"

    src = re.sub(r"(?<![\w.])(R)(\d+)(?!\w)", reg, src)
    return re.sub(r"\.L_x_(\d+)", lambda m: f".L_x_{int(m.group(1)) + 100}", src)


@pytest.mark.parametrize("stage, renumber", [("ttgir", renumber_mlir), ("ptx", renumber_ptx), ("sass", renumber_sass)])
def test_a_pure_renaming_is_no_change(stage, renumber):
    a = text("matmul-stages-cuda90", "a", stage)
    b = renumber(a)
    assert b != a
    al = align(stage, a, b)
    assert (al.added, al.removed, al.moved) == (0, 0, 0), changes(al)[:5]
    assert al.renamed > len(al.a) // 3  # the names did change, and each line was paired as renamed
    sd = diff_mod.diff_texts(stage, a, b)
    assert sd.equal and sd.renamed == al.renamed


def test_the_old_normaliser_saw_the_renaming_of_the_sass_as_a_change():
    a = text("matmul-stages-cuda90", "a", "sass")
    raw = diff_mod.diff_texts("sass", a, renumber_sass(a), normalized=False)
    assert raw.added > 100  # --raw: the compiler's text as is


def test_one_op_inserted_by_hand_into_a_ttgir_is_exactly_that_op():
    a = text("matmul-stages-cuda90", "a", "ttgir")
    lines = a.splitlines()
    k = next(i for i, x in enumerate(lines) if "ttng.warp_group_dot " in x)  # inside the loop body
    new = "      %inserted = arith.addi %1, %1 : i32 loc(#loc1)"
    b = "\n".join(lines[: k + 1] + [new] + lines[k + 1 :]) + "\n"
    al = align("ttgir", a, b)
    assert changes(al) == [(ADDED, "", "%inserted = arith.addi %1, %1 : i32")]
    row = next(r for r in al.rows if r.kind == ADDED)
    assert al.b[row.b].origin == k + 2 and al.b[row.b].scope.endswith("tt.func/scf.for")
    words = summarize(al).words()
    assert words[0] == "+1 arith.addi"


def test_one_op_inserted_before_everything_renumbers_nothing():
    """The old normaliser's failure: a constant inserted first shifted every later %N."""
    a = text("matmul-stages-cuda90", "a", "ttgir")
    b = renumber_mlir(a)  # b's own names, then one constant more at the top of the function
    lines = b.splitlines()
    k = next(i for i, x in enumerate(lines) if "tt.func" in x)
    b = "\n".join(lines[: k + 1] + ["    %v1 = arith.constant 7 : i32"] + lines[k + 1 :]) + "\n"
    al = align("ttgir", a, b)
    assert [c[0] for c in changes(al)] == [ADDED]
    old = diff_mod.diff_texts("ttgir", a, b, normalized=False)
    assert old.added > 100


def test_a_name_paired_inconsistently_is_a_change():
    """Two operands swapped: every name pairs with itself elsewhere, so this line's pairing is inconsistent."""
    a = text("matmul-stages-cuda90", "a", "ttgir")
    line = next(x for x in a.splitlines() if "arith.subi %1, %c2_i32" in x)
    b = a.replace(line, line.replace("arith.subi %1, %c2_i32", "arith.subi %c2_i32, %1"), 1)
    b = renumber_mlir(b)
    al = align("ttgir", a, b)
    got = changes(al)
    assert [c[0] for c in got] == [CHANGED], got
    assert "arith.subi %1, %c2_i32" in got[0][1] and "arith.subi %c2_i32, %v" in got[0][2]
    row = next(r for r in al.rows if r.kind == CHANGED)
    bad_a, bad_b = al.changed_tokens(row)
    assert bad_a and bad_b  # the operands that do not pair are the ones a view marks


def test_sass_instructions_swapped_are_moved_not_changed():
    a = text("matmul-stages-cuda90", "a", "sass")
    lines = a.splitlines()
    k = next(i for i, x in enumerate(lines) if "S2R" in x)  # swap two independent instructions
    j = k + 3
    assert "/*" in lines[j]
    lines[k], lines[j] = lines[j], lines[k]
    b = "\n".join(lines) + "\n"
    al = align("sass", a, b)
    assert (al.added, al.removed) == (0, 0)
    assert al.moved >= 1
    assert not diff_mod.diff_texts("sass", a, b).equal  # a move is still a difference
    assert any(r.kind == MOVED for r in al.rows)


def _flat(d, prefix=""):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        elif isinstance(v, int):
            out[prefix + k] = v
    return out


@pytest.mark.parametrize("pair", ["matmul-stages-cuda90", "matmul-warps-cuda90", "gluon-pipelined-stages"])
def test_the_summary_counts_are_the_stats_differences(pair):
    """Each class the summary counts is the stats' difference for it (stats.compute's own patterns)."""
    checked = 0
    for stage, facts, keys in (
        ("ttgir", stats_mod.ttgir_facts, [k for k in stats_mod.TTGIR_OPS]),
        ("ptx", stats_mod.ptx_mix, list(stats_mod.PTX_OPS)),
        ("sass", stats_mod.sass_mix, [*(f"classes.{k}" for k in stats_mod.SASS_CLASSES), "instructions"]),
    ):
        ta, tb = text(pair, "a", stage), text(pair, "b", stage)
        fa, fb = _flat(facts(ta)), _flat(facts(tb))
        summary = diff_mod.diff_texts(stage, ta, tb).summary
        assert summary is not None
        for key in keys:
            want = fb.get(key, 0) - fa.get(key, 0)
            got = summary.classes.get(key.removeprefix("classes."), 0)
            assert got == want, (stage, key)
            checked += bool(want)
        # and every op kind's net count is b's total minus a's
        for d in summary.ops:
            assert d.net == d.added - d.removed
    assert checked  # the pair does change something the stats count


def test_the_summary_of_one_more_stage_says_what_a_kernel_engineer_expects():
    sd = diff_mod.diff_texts(
        "ttgir", text("matmul-stages-cuda90", "a", "ttgir"), text("matmul-stages-cuda90", "b", "ttgir")
    )
    sm = sd.summary
    assert sm is not None
    ops = {d.kind: d for d in sm.ops}
    assert ops["ttg.async_copy_global_to_local"].net == 2
    assert ops["ttg.async_commit_group"].net == 2
    assert "ttg.local_alloc 3x128x64xf16 (48 KiB) -> 4x128x64xf16 (64 KiB)" in sm.allocs
    assert sm.classes == {"async_copy": 2}
    (loop,) = sm.loops
    assert loop.header == "scf.for" and loop.prologue[1] > loop.prologue[0] and loop.body[0] == loop.body[1]
    # the real change and nothing else: the prologue's extra stage, the loop's carried values and the wait's
    # count; the depth 3 -> 4 is a substitution (said once), and b's constant in another place is moved
    said = ("iter_args", "scf.yield", "num = 4")
    for kind, la, lb in changes(sd.alignment):
        assert kind == ADDED or any(s in la + lb for s in said), (kind, la, lb)
    assert sum(1 for c in changes(sd.alignment) if c[0] == REMOVED) == 0
    al = sd.alignment
    moved = [al.a[r.a].text.strip() for r in al.rows if r.kind == MOVED and r.a is not None]
    assert moved == ["%c2_i32 = arith.constant 2 : i32"] and sm.moved == 1
    assert "1 constant defined elsewhere in its block, otherwise equal" in sm.words()


def test_ptx_registers_and_sass_classes_in_words():
    a, b = text("matmul-stages-cuda90", "a", "ptx"), text("matmul-stages-cuda90", "b", "ptx")
    words = diff_mod.diff_texts("ptx", a, b).summary.words()
    assert any(w.startswith("by class: +16 cp.async") for w in words)
    assert any(w.startswith("registers: ") and "%r " in w for w in words)
    a, b = text("matmul-stages-cuda90", "a", "sass"), text("matmul-stages-cuda90", "b", "sass")
    words = diff_mod.diff_texts("sass", a, b).summary.words()
    assert any("+16 LDGSTS.E.BYPASS.128" in w for w in words)


def test_json_and_api_carry_the_alignment():
    """--json's alignment (pairs, added, removed, renamed) and the API's stage text carry the comparison."""
    from irscope.api.results import StageText
    from irscope.views import diff as diff_view

    a, b = text("matmul-stages-cuda90", "a", "ttgir"), text("matmul-stages-cuda90", "b", "ttgir")
    sd = diff_mod.diff_texts("ttgir", a, b)
    doc = diff_view.alignment_json(sd)
    assert doc is not None and sd.alignment is not None
    kinds = [p[2] for p in doc["pairs"]]
    assert len(doc["added"]) + kinds.count("changed") == sd.added
    assert len(doc["removed"]) + kinds.count("changed") == sd.removed
    assert kinds.count("renamed") == sd.renamed > 0
    b_lines = b.splitlines()
    added_text = [b_lines[n - 1] for n in doc["added"]]
    assert sum("ttg.async_copy_global_to_local" in x for x in added_text) == 2  # file lines, 1-based
    renamed = next(iter(doc["renamed"].values()))
    assert all(k.startswith("%") and v.startswith("%") for k, v in renamed.items())
    summary = diff_view.summary_json(sd)
    assert summary is not None and summary["classes"] == {"async_copy": 2}
    st = StageText("--- a/ttgir\n", sd)
    assert st == "--- a/ttgir\n" and (st.added, st.removed, st.renamed) == (sd.added, sd.removed, sd.renamed)
    assert st.summary is sd.summary and st.alignment is sd.alignment


def test_raw_keeps_the_compilers_text():
    a, b = text("matmul-stages-cuda90", "a", "ttgir"), text("matmul-stages-cuda90", "b", "ttgir")
    raw = diff_mod.diff_texts("ttgir", a, b, normalized=False)
    assert raw.alignment is None and raw.summary is None
    assert raw.a is not None and raw.a.lines == a.splitlines()  # loc(...) and all, line for line


def test_passes_are_counted_by_the_alignment():
    """`irscope passes`' +/- lines: a pass that renumbers the IR and adds one op added one line."""
    from irscope.artifacts import PassRecord
    from irscope.artifacts import passes as passes_mod
    from irscope.compare.passcounts import aligned

    before = text("matmul-stages-cuda90", "a", "ttgir")
    lines = renumber_mlir(before).splitlines()
    k = next(i for i, x in enumerate(lines) if "tt.func" in x)
    after = "\n".join(lines[: k + 1] + ["    %v1 = arith.constant 7 : i32"] + lines[k + 1 :]) + "\n"
    dumped = passes_mod.count_changes(before, after)
    assert dumped[0] > 100  # what the dump recorded: every renumbered line
    recs = [
        PassRecord(1, "ttgir", "Renumber", "renumber", *dumped, "passes/001-Renumber.mlir"),
        PassRecord(2, "ttgir", "Nothing", "nothing", 0, 0, "passes/002-Nothing.mlir"),
    ]
    got = aligned(recs, [after, after], before)
    assert [(r.added, r.removed) for r in got] == [(1, 0), (0, 0)]
    assert got[0].name == "Renumber" and recs[0].added == dumped[0]  # a copy: the records read are left as they are


def test_the_unified_view_shows_moves_apart_and_each_sides_own_names(tmp_path):
    from types import SimpleNamespace

    from irscope.views import diff as diff_view

    a = text("matmul-stages-cuda90", "a", "sass")
    lines = a.splitlines()
    k = next(i for i, x in enumerate(lines) if "S2R" in x)
    lines[k], lines[k + 3] = lines[k + 3], lines[k]
    b = renumber_sass("\n".join(lines) + "\n")
    sd = diff_mod.diff_texts("sass", a, b)
    side = lambda n: SimpleNamespace(manifest={"stages": {"sass": "k.sass"}}, folder=tmp_path / n, label=n)
    out = diff_view.unified_lines(SimpleNamespace(a=side("a"), b=side("b")), sd)
    body = [x for x in out[2:] if not x.startswith("@@")]
    assert not [x for x in body if x[:1] in "+-"]  # nothing changed: a move and a renaming
    moved = [x for x in body if x.startswith("~")]
    assert len(moved) == 2 * sd.moved and any("S2R" in x for x in moved)
    assert sd.a is not None and sd.b is not None
    only_a = [x for x in moved if x[1:] in sd.a.lines and x[1:] not in sd.b.lines]
    only_b = [x for x in moved if x[1:] in sd.b.lines and x[1:] not in sd.a.lines]
    assert only_a and only_b  # each side's line with its own register names


def test_the_api_says_each_changed_stage_in_words(tmp_path):
    from types import SimpleNamespace

    from irscope.api.results import Diff
    from irscope.compare.diff import DiffResult, StatsDiff

    side = lambda n: SimpleNamespace(manifest={"kernel": "k", "stages": {}}, folder=tmp_path / n, label=n)
    stages = [
        diff_mod.diff_texts(s, text("matmul-stages-cuda90", "a", s), text("matmul-stages-cuda90", "b", s))
        for s in ("ttgir", "ptx")
    ]
    same = text("matmul-stages-cuda90", "a", "llir")
    stages.append(diff_mod.diff_texts("llir", same, same))
    df = Diff(DiffResult(side("a"), side("b"), [], StatsDiff([]), stages, None))
    assert list(df.summary) == ["ttgir", "ptx"]  # the stages that differ, each in words
    assert "+2 ttg.async_copy_global_to_local" in df.summary["ttgir"][0]
    assert any(w == "by class: +16 cp.async" for w in df.summary["ptx"])


@pytest.mark.parametrize(
    "pair, stage",
    [
        ("matmul-stages-cuda90", "ttgir"),
        ("matmul-stages-cuda90", "llir"),
        ("matmul-stages-cuda90", "ptx"),
        ("matmul-stages-cuda90", "sass"),
        ("matmul-stages-gfx942", "amdgcn"),
    ],
)
def test_a_text_against_itself_is_equal_line_for_line(pair, stage):
    """LLVM block labels (`246:`) included: a label is the value %246 that branches name."""
    t = text(pair, "a", stage)
    al = align(stage, t, t)
    assert (al.added, al.removed, al.renamed, al.moved) == (0, 0, 0, 0)
    assert all(r.kind == "equal" and r.a == r.b for r in al.rows)
