"""A type or constant substituted consistently is said once, not on every line (compare/substitute.py, #39).

On real compiles of examples/matmul.py with num_stages 3 and 4 (cuda:90): every `!ttg.memdesc<3x...>` is
`<4x...>` (the buffers' depth), and the lines that differ by that alone are renamed, not changed; a type
changed on one line only, or paired inconsistently, is a change."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from irscope.compare import diff as diff_mod
from irscope.compare.align import ADDED, CHANGED, EQUAL, REMOVED, RENAMED, align
from irscope.compare.substitute import Substitution, said
from tests.helpers import MATMUL, MATMUL_SIG16, compile_example


@pytest.fixture(scope="module")
def stages3_4():
    """The stage texts of matmul compiled with num_stages 3 (a) and 4 (b)."""
    a = compile_example(MATMUL, MATMUL_SIG16, sets=("num_stages=3",))
    b = compile_example(MATMUL, MATMUL_SIG16, sets=("num_stages=4",))
    return a.stages, b.stages


def rows_of(al, kinds):
    return [
        (r.kind, al.a[r.a].text.strip() if r.a is not None else "", al.b[r.b].text.strip() if r.b is not None else "")
        for r in al.rows
        if r.kind in kinds
    ]


def test_the_buffers_depth_is_said_once_and_its_lines_are_not_counted(stages3_4):
    a, b = stages3_4
    sd = diff_mod.diff_texts("ttgir", a["ttgir"], b["ttgir"])
    al, sm = sd.alignment, sd.summary
    assert al is not None and sm is not None
    words = sm.words()
    assert words[0].startswith("+") and "+2 ttg.async_copy_global_to_local" in words[0]
    for shape in ("128x64xf16", "64x128xf16"):
        assert f"substituted: memdesc 3x{shape} -> 4x{shape} (multi-buffer depth 3 -> 4, 6 lines)" in words
    assert "ttg.local_alloc 3x128x64xf16 (48 KiB) -> 4x128x64xf16 (64 KiB)" in sm.allocs  # the size, still said
    # the allocs, deallocs and buffer indexes differ by the depth (and their values' names) alone: renamed
    renamed = rows_of(al, (RENAMED,))
    deep = [x for x in renamed if "!ttg.memdesc<3x" in x[1]]
    names = lambda t: re.sub(r"%[\w]+", "%", t)
    assert len(deep) == 12 and all(names(x[1].replace("memdesc<3x", "memdesc<4x")) == names(x[2]) for x in deep)
    assert {x[1].split()[0] for x in deep if "local_alloc" in x[1]} == {"%a", "%b"}
    assert not any("memdesc<3x" in x[1] for x in rows_of(al, (CHANGED,)))
    # the counts: b's added lines are the prologue's third stage, the new constant, the loop's carried values
    # and the async_wait's count, nothing that differs by the depth alone
    changed = rows_of(al, (CHANGED,))
    assert sorted(re.sub(r"^%[\w#:]+ = ", "", x[1]).split()[0] for x in changed) == [
        "scf.for",
        "scf.yield",
        "ttg.async_wait",
    ]
    assert sd.added == sum(1 for r in al.rows if r.kind in (CHANGED, ADDED))
    assert sd.added - sd.removed == len(al.b) - len(al.a)


def test_a_constant_substituted_where_used_keeps_its_definition(stages3_4):
    """%c3_i32 as the buffer count is %c4_i32 on every line that uses it; the definitions keep their text
    (`%c3_i32 = arith.constant 3` is still equal to itself), so the new constant is an added line."""
    a, b = stages3_4
    al = align("ttgir", a["ttgir"], b["ttgir"])
    subs = {(s.kind, s.a, s.b) for s in al.substituted}
    assert ("constant", "%c3_i32", "%c4_i32") in subs and ("constant", "%c2_i32", "%c3_i32") in subs
    added = [x[2] for x in rows_of(al, (ADDED,))]
    assert "%c4_i32 = arith.constant 4 : i32" in added
    equal = [al.a[r.a].text.strip() for r in al.rows if r.kind == "equal"]
    assert "%c3_i32 = arith.constant 3 : i32" in equal


def _replace_once(text: str, line_has: str, old: str, new: str, nth: int = 0) -> tuple[str, str]:
    lines = text.splitlines()
    k = [i for i, x in enumerate(lines) if line_has in x and old in x][nth]
    lines[k] = lines[k].replace(old, new, 1)
    return "\n".join(lines) + "\n", lines[k].strip()


def test_a_type_changed_on_one_line_only_is_a_change(stages3_4):
    """The depth on one line of b put back to 3 (or to 5): the substitution is no longer consistent, so every
    line that differs by it is a change; nothing is faded."""
    a, b = stages3_4
    for other, n in (("3x", 5), ("5x", 6)):  # 3x: that line is a's again (equal), the other five are changes
        b2, line = _replace_once(b["ttgir"], "ttg.memdesc_index %a[", "memdesc<4x", f"memdesc<{other}")
        al = align("ttgir", a["ttgir"], b2)
        assert not any(s.kind == "!ttg.memdesc" and s.a.startswith("3x128x64") for s in al.substituted), other
        changed = rows_of(al, (CHANGED,))
        assert len([x for x in changed if "memdesc<3x128x64" in x[1]]) == n, other
        assert sum(f"memdesc<{other}128x64" in x[2] for x in changed) == (other == "5x")
        assert not any("memdesc<3x128x64" in x[1] and "memdesc<4x" in x[2] for x in rows_of(al, (RENAMED,)))


def test_a_type_injected_into_one_line_is_exactly_that_line(stages3_4):
    """A against itself but for one line's type: one changed pair, whether the type is used elsewhere or not."""
    a, _ = stages3_4
    ttgir = a["ttgir"]
    for has, old, new in (
        ("ttg.memdesc_index %a[", "memdesc<3x128x64xf16", "memdesc<3x128x64xf32"),  # a type used elsewhere
        ("ttg.local_alloc", "memdesc<3x64x128xf16", "memdesc<3x64x128xbf16"),  # the alloc of b's buffers
    ):
        b2, line = _replace_once(ttgir, has, old, new)
        al = align("ttgir", ttgir, b2)
        got = rows_of(al, (CHANGED, ADDED, "removed"))
        assert [x[0] for x in got] == [CHANGED] and new in got[0][2], (new, got)
        assert (al.added, al.removed) == (1, 1) and not al.substituted


def test_two_lines_of_one_new_type_alone_are_a_substitution(stages3_4):
    """The counterpart: a type changed on every line it is on (two or more) is one substitution."""
    a, _ = stages3_4
    ttgir = a["ttgir"]
    b2 = ttgir.replace("memdesc<3x64x128xf16", "memdesc<3x64x128xbf16")
    al = align("ttgir", ttgir, b2)
    assert (al.added, al.removed) == (0, 0)
    (sub,) = al.substituted
    assert (sub.kind, sub.a, sub.b, sub.lines) == ("!ttg.memdesc", "3x64x128xf16", "3x64x128xbf16", 6)
    assert al.renamed == 6


def test_ptx_offsets_shifted_by_the_new_buffer_are_one_change(stages3_4):
    """PTX: the shared-memory offsets past a's buffers moved by 16 KiB; the wait count is a change (its 2 is
    a 2 elsewhere), the register declarations too."""
    a, b = stages3_4
    sd = diff_mod.diff_texts("ptx", a["ptx"], b["ptx"])
    assert sd.summary is not None and sd.alignment is not None
    words = sd.summary.words()
    shift = [w for w in words if w.startswith("substituted: immediate +16384: 49152 -> 65536")]
    assert len(shift) == 1 and "(16 values, " in shift[0]
    changed = rows_of(sd.alignment, (CHANGED,))
    assert ("changed", "cp.async.wait_group 2;", "cp.async.wait_group 4;") in changed
    assert any(x[1].startswith(".reg .b32 %r<") for x in changed)
    assert not any("49152" in x[1] for x in changed)


def test_one_ptx_immediate_changed_is_one_changed_line(stages3_4):
    a, _ = stages3_4
    ptx = a["ptx"]
    b2, line = _replace_once(ptx, "add.s32", ", 49152;", ", 49280;")
    line = " ".join(line.split())  # as the aligned diff shows it: one space for the tab
    al = align("ptx", ptx, b2)
    assert rows_of(al, (CHANGED, ADDED, "removed")) == [(CHANGED, line.replace("49280", "49152"), line)]
    assert not al.substituted


def test_substitutions_in_words():
    subs = [
        Substitution("immediate", "49152", "65536", 3, "+16384", 5),
        Substitution("immediate", "50176", "66560", 2, "+16384", 5),
        Substitution("!ttg.memdesc", "2x64x64xf16", "3x64x64xf16", 4),
        Substitution("tensor", "128x64xf16", "128x64xbf16", 2),
        Substitution("constant", "%c1_i32", "%c2_i32", 2),
    ]
    assert said(subs) == [
        "immediate +16384: 49152 -> 65536, 50176 -> 66560 (2 values, 5 lines)",
        "memdesc 2x64x64xf16 -> 3x64x64xf16 (multi-buffer depth 2 -> 3, 4 lines)",
        "tensor 128x64xf16 -> 128x64xbf16 (2 lines)",
        "%c1_i32 -> %c2_i32 where used (2 lines)",
    ]


def test_json_carries_the_substitutions(stages3_4):
    from irscope.views import diff as diff_view

    a, b = stages3_4
    sd = diff_mod.diff_texts("ttgir", a["ttgir"], b["ttgir"])
    doc = diff_view.alignment_json(sd)
    assert doc is not None
    assert {"kind": "!ttg.memdesc", "a": "3x128x64xf16", "b": "4x128x64xf16", "lines": 6} in doc["substituted"]
    # the pairs that differ by it alone are "renamed" pairs, with the file's own lines
    b_lines = b["ttgir"].splitlines()
    deep = [
        p for p in doc["pairs"] if "memdesc<4x128x64xf16" in b_lines[p[1] - 1] and "local_alloc" in b_lines[p[1] - 1]
    ]
    assert [p[2] for p in deep] == ["renamed"]
    summary = diff_view.summary_json(sd)
    assert summary is not None
    assert any(w.startswith("substituted: memdesc 3x128x64xf16 -> 4x128x64xf16") for w in summary["words"])


def test_a_value_renamed_in_b_changes_no_count(stages3_4):
    """One SSA value of b renamed wherever it appears: the lines it is on are renamed, the counts stay."""
    a, b = stages3_4
    base = diff_mod.diff_texts("ttgir", a["ttgir"], b["ttgir"])
    assert "%a_ptrs_58" in b["ttgir"] and "%q_ptrs" not in b["ttgir"]
    b2 = re.sub(r"%a_ptrs_58\b", "%q_ptrs", b["ttgir"])
    sd = diff_mod.diff_texts("ttgir", a["ttgir"], b2)
    assert (sd.added, sd.removed) == (base.added, base.removed) and sd.renamed > base.renamed
    assert sd.summary is not None and base.summary is not None
    assert sd.summary.words()[:-1] == base.summary.words()[:-1]  # all but the renamed count


def test_a_substitution_alone_is_still_a_difference(stages3_4):
    """A stage that differs by a substitution only is changed (exit status 1, never "equal"); the first
    differing pass sees it; `irscope passes` counts the lines a pass substituted as changed."""
    from irscope.artifacts import PassRecord
    from irscope.compare.passcounts import aligned

    a, _ = stages3_4
    ttgir = a["ttgir"]
    b2 = ttgir.replace("memdesc<3x64x128xf16", "memdesc<3x64x128xbf16")
    sd = diff_mod.diff_texts("ttgir", ttgir, b2)
    assert (sd.added, sd.removed, sd.status) == (0, 0, "changed") and not sd.equal
    assert sd.summary is not None and any(w.startswith("substituted: memdesc 3x64x128xf16") for w in sd.summary.words())
    assert diff_mod._ir_differs("ttgir", ttgir, b2) and not diff_mod._ir_differs("ttgir", ttgir, ttgir)
    rec = PassRecord(1, "ttgir", "Retype", "retype", 6, 6, "passes/001-Retype.mlir")
    (got,) = aligned([rec], [b2], ttgir)
    assert (got.added, got.removed) == (6, 6)


def test_a_barrier_array_one_deeper_is_the_new_barrier_and_its_init_only():
    """TLX's warp-specialized matmul, num_stages 3 -> 4 (benchmarks/diff_pairs/tlx-ws-stages): the barrier
    arrays' definitions differ by their substituted type (memdesc<3xi64> -> <4xi64>), so only a pairing made
    with the substitution applied pairs %empty_3 with %empty_4; what is left is the fourth barrier of each
    array, its init, and the constants."""
    pair = Path(__file__).resolve().parent.parent / "benchmarks" / "diff_pairs" / "tlx-ws-stages"
    a, b = (gzip.open(pair / f"{side}.ttgir.gz", "rt").read() for side in "ab")
    al = align("ttgir", a, b)
    left = [
        (r.kind, al.b[r.b].text.strip() if r.b is not None else al.a[r.a].text.strip())
        for r in al.rows
        if r.kind not in (EQUAL, RENAMED)
    ]
    added = [text for kind, text in left if kind == ADDED]
    assert {t.split(" = ")[0] for t in added if "memdesc_index" in t} == {"%full_3", "%empty_7"}, left
    assert sum("init_barrier" in t for t in added) == 2 and not any(k == REMOVED for k, _ in left), left
    assert all("arith.constant" in t for kind, t in left if kind == CHANGED), left
