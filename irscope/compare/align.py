"""Two texts of one stage aligned by structure, with value names paired: what is left is the real change.

    tokenise     lines.py: each line's scope (function, MLIR region path) and its names by kind
    align        1. lines matched on scope + skeleton (difflib's longest blocks, on interned ints)
                 2. the names on matched lines paired by votes into a bijection per function and kind
                    (machine code: also through the dataflow of the lines left; pairing.py)
                 3. lines matched again on scope + text with a's names put through that renaming: a line
                    matched here is equal up to the renaming; the pairs these matches make are voted again and
                    the match repeated until the renaming settles (a pairing the first pass got wrong is fixed)
                 4. what is left between those matches is the change: lines of one skeleton (a name paired
                    inconsistently: never hidden) or of one op are shown as a changed pair, the rest as
                    removed / added, each with its side's own names
                 5. a type or constant substituted consistently (substitute.py): the lines matched once more
                    with it applied, like the renaming; pairs that differ by it alone are renamed, and it is
                    said once. The names are then paired again from step 1 with it applied to a's skeletons
                    (lines a substituted type kept apart now vote), kept when fewer lines are left
                    unexplained. MLIR: a constant defined elsewhere in its block is moved

An `Alignment` is the rows in order (equal, renamed, changed, removed, added, moved, each with its line on
each side), the renaming (kind -> a name -> b name, where the names differ), the substitutions and the
counts; `opcodes` turns
the rows into difflib opcodes for the unified and side-by-side views.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass, field

from irscope import stages
from irscope.compare import substitute
from irscope.compare.lines import MLIR_VALUE_NAMED, MOVES, Line, tokenise
from irscope.compare.pairing import exact_key, propagate, renamed_key, token_votes, tokens, vote
from irscope.compare.substitute import Substitution

__all__ = [
    "ADDED",
    "CHANGED",
    "EQUAL",
    "MOVED",
    "REMOVED",
    "RENAMED",
    "Alignment",
    "Line",
    "Row",
    "align",
    "align_lines",
    "token_marks",
    "tokenise",
]

# ---------------------------------------------------------------- the alignment

EQUAL, RENAMED, CHANGED, REMOVED, ADDED, MOVED = "equal", "renamed", "changed", "removed", "added", "moved"


@dataclass
class Row:
    kind: str  # equal | renamed | changed | removed | added | moved
    a: int | None  # index into Alignment.a (None: added, or moved here)
    b: int | None  # index into Alignment.b (None: removed, or moved from here)
    to: int | None = None  # moved: the other side's line (b's for a row of a, a's for a row of b)


@dataclass
class Alignment:
    stage: str
    a: list[Line]
    b: list[Line]
    rows: list[Row] = field(default_factory=list)
    renaming: dict[str, dict[str, str]] = field(default_factory=dict)  # "function kind" -> {a name: b name}
    # types and constants substituted consistently (substitute.py): the lines differing by them alone are renamed
    substituted: list[Substitution] = field(default_factory=list)

    @property
    def added(self) -> int:
        """Lines of b that are not equal to a line of a up to the renaming."""
        return sum(1 for r in self.rows if r.kind in (CHANGED, ADDED))

    @property
    def removed(self) -> int:
        return sum(1 for r in self.rows if r.kind in (CHANGED, REMOVED))

    @property
    def renamed(self) -> int:
        return sum(1 for r in self.rows if r.kind == RENAMED)

    @property
    def moved(self) -> int:
        """Instructions equal up to the renaming that the scheduler put elsewhere (machine code only)."""
        return sum(1 for r in self.rows if r.kind == MOVED and r.a is not None)

    def opcodes(self) -> list[tuple[str, int, int, int, int]]:
        """difflib-style opcodes over a/b: equal and renamed rows are "equal", the rest replace/delete/insert."""
        ops: list[tuple[str, int, int, int, int]] = []
        i = j = 0
        for same, group in _runs(self.rows):
            na = sum(1 for r in group if r.a is not None)
            nb = sum(1 for r in group if r.b is not None)
            if same:  # equal, renamed and moved rows: equal runs where both sides have lines, else one-sided
                ops.extend(_same_ops(group, i, j))
            else:
                ops.append(("replace" if na and nb else ("delete" if na else "insert"), i, i + na, j, j + nb))
            i, j = i + na, j + nb
        return ops

    def changed_tokens(self, row: Row) -> tuple[set[int], set[int]]:
        """For a changed or renamed row: the indexes of the names (per side) that do not pair up."""
        if row.a is None or row.b is None:
            return set(), set()
        la, lb = self.a[row.a], self.b[row.b]
        bad_a, bad_b = set(), set()
        for k, ((kind, _), (kind_b, _), x, y) in enumerate(zip(la.names, lb.names, la.idents(), lb.idents())):
            if kind != kind_b or self.renaming.get(f"{la.function} {kind}", {}).get(x, x) != y:
                bad_a.add(k)
                bad_b.add(k)
        bad_a |= set(range(len(lb.names), len(la.names)))
        bad_b |= set(range(len(la.names), len(lb.names)))
        return bad_a, bad_b


def _same_ops(group: list[Row], i: int, j: int):
    """Opcodes for a run of unchanged rows: pairs are "equal"; a moved line alone on its side is "moved"
    (views show it faded, never as a change)."""
    out: list[tuple[str, int, int, int, int]] = []
    for r in group:
        na, nb = int(r.a is not None), int(r.b is not None)
        tag = "equal" if na == nb else "moved"
        if out and out[-1][0] == tag:
            t, i1, _, j1, _ = out[-1]
            out[-1] = (t, i1, i + na, j1, j + nb)
        else:
            out.append((tag, i, i + na, j, j + nb))
        i, j = i + na, j + nb
    return out


def _runs(rows: list[Row]):
    group: list[Row] = []
    same = None
    for r in rows:
        s = r.kind in (EQUAL, RENAMED, MOVED)
        if group and s != same:
            yield same, group
            group = []
        same = s
        group.append(r)
    if group:
        yield same, group


def _matches(ka: list[str], kb: list[str]) -> list[tuple[int, int]]:
    """(i, j) of equal keys, in order: difflib's longest matching blocks, on interned ints."""
    if not ka or not kb:
        return []
    ids: dict[str, int] = {}
    ia = [ids.setdefault(x, len(ids)) for x in ka]
    ib = [ids.setdefault(x, len(ids)) for x in kb]
    lo = 0
    while lo < len(ia) and lo < len(ib) and ia[lo] == ib[lo]:
        lo += 1
    out = [(k, k) for k in range(lo)]
    sm = difflib.SequenceMatcher(None, ia[lo:], ib[lo:], autojunk=False)
    for i, j, n in sm.get_matching_blocks():
        out.extend((lo + i + k, lo + j + k) for k in range(n))
    return out


def _op(line: Line) -> str:
    """A line's op or opcode, for pairing what is left: the skeleton's first word after any result names."""
    s = line.skeleton
    if "=" in s and not s.lstrip().startswith(("#", "!")):
        s = s.split("=", 1)[1]
    s = re.sub(r"\x00[^\x00]*\x00", " ", s).replace("@", " ")
    words = [w for w in re.split(r"[\s,(){}\[\]:;`]+", s) if w]
    return line.scope + " " + (words[0] if words else "")


def align_lines(stage: str, a: list[Line], b: list[Line], rounds: int = 8, substitutions: bool = True) -> Alignment:
    """The alignment (see the module's doc); `substitutions=False`: a type or constant substituted is a
    change on each line it is on (`irscope passes` counts the lines a pass changed)."""
    sk_a = [ln.scope + "\x02" + ln.skeleton for ln in a]
    sk_b = [ln.scope + "\x02" + ln.skeleton for ln in b]
    mapping, rows = _paired(stage, a, b, sk_a, sk_b, rounds)
    rows, subs = _substituted(stage, a, b, rows, mapping, sk_a, sk_b) if substitutions else (rows, [])
    if subs:
        # the names paired again with the substitutions applied to a's skeletons: lines that differ by a
        # substituted type alone (memdesc<3xi64> -> <4xi64>) then match in step 1 and vote on their names
        # (a barrier array's definitions, which a substituted type hid); kept when it leaves fewer lines
        # unexplained, the substitutions then found again on its rows
        sk_sub = [substitute.in_skeleton(stages.language(stage) or "", sk, subs) for sk in sk_a]
        mapping2, rows2 = _paired(stage, a, b, sk_sub, sk_b, rounds)
        rows2, subs2 = _substituted(stage, a, b, rows2, mapping2, sk_a, sk_b)
        if _unexplained(rows2) < _unexplained(rows):
            mapping, rows, subs = mapping2, rows2, subs2
    if stages.language(stage) == "mlir":
        _constants_moved(a, b, rows, mapping)
    renaming: dict[str, dict[str, str]] = {}
    for (scope, x), y in mapping.items():
        if x != y:
            renaming.setdefault(scope, {})[x] = y
    return Alignment(stage, a, b, rows, renaming, subs)


def _unexplained(rows: list[Row]) -> int:
    return sum((r.kind == CHANGED) * 2 + (r.kind in (ADDED, REMOVED)) for r in rows)


def _paired(stage: str, a: list[Line], b: list[Line], sk_a: list[str], sk_b: list[str], rounds: int):
    """Steps 1 to 4: (the renaming, the rows)."""
    machine = (stages.language(stage) or "") in MOVES
    loose = _matches(sk_a, sk_b)
    if machine:
        loose += _moves(sk_a, sk_b, loose)
    if machine:  # patience: lines of a skeleton found once on each side anchor the pairing, the dataflow the rest
        ca, cb = Counter(sk_a), Counter(sk_b)
        unique = [(i, j) for i, j in loose if ca[sk_a[i]] == 1 and cb[sk_b[j]] == 1]
        mapping = vote(a, b, loose, propagate(a, b, vote(a, b, unique), unique))
    else:
        mapping = vote(a, b, loose)
    exact_b = [exact_key(ln) for ln in b]
    matched: list[tuple[int, int]] = []
    moved: list[tuple[int, int]] = []
    for _ in range(rounds):
        keys_a = [renamed_key(ln, mapping) for ln in a]
        matched = _matches(keys_a, exact_b)
        moved = _moves(keys_a, exact_b, matched) if machine else []
        # the pairs these exact matches make are sure; the rest is voted on skeleton matches inside the gaps
        sure = vote(a, b, matched + moved)
        if machine:
            sure = propagate(a, b, sure, matched + moved)
        loose = [p for ga, gb in _gaps(matched, len(a), len(b)) for p in _gap_matches(a, b, ga, gb, sk_a, sk_b)]
        if machine:
            done = {i for i, _ in moved}
            loose = [p for p in loose if p[0] not in done]
            loose += _moves(sk_a, sk_b, matched + moved + loose)
        new = vote(a, b, loose, sure)
        if new == mapping:
            break
        mapping = new
    rows = _rows(a, b, matched, moved, sk_a, sk_b)
    # names left unpaired that a changed pair lines up (a loop's new iter_args around the old ones, an op
    # whose attribute changed): paired by the pair's token alignment, then matched once more
    extra = token_votes(a, b, [(r.a, r.b) for r in rows if r.kind == CHANGED], mapping)
    if extra != mapping:
        mapping = extra
        keys_a = [renamed_key(ln, mapping) for ln in a]
        matched = _matches(keys_a, exact_b)
        moved = _moves(keys_a, exact_b, matched) if machine else []
        rows = _rows(a, b, matched, moved, sk_a, sk_b)
    return mapping, rows


MLIR_CONSTANT_DEF = re.compile(r"^\s*%[\w$.-]+\s*=\s*arith\.constant\b")


def _constants_moved(a: list[Line], b: list[Line], rows: list[Row], mapping) -> None:
    """MLIR: a constant defined elsewhere in its block, equal up to the renaming, is moved, not removed and
    added (a constant has no operands: where it stands among the block's ops says nothing)."""
    free_b: dict[str, list[Row]] = {}
    for r in rows:
        if r.kind == ADDED and r.b is not None and MLIR_CONSTANT_DEF.match(b[r.b].text):
            free_b.setdefault(exact_key(b[r.b]), []).append(r)
    for r in rows:
        if r.kind == REMOVED and r.a is not None and MLIR_CONSTANT_DEF.match(a[r.a].text):
            ln = a[r.a]
            # a constant MLIR names by its value (%c2_i32) is that value on both sides: its text is its key
            by_value = ln.names and MLIR_VALUE_NAMED.match(ln.names[0][1])
            there = free_b.get(renamed_key(ln, mapping)) or (free_b.get(exact_key(ln)) if by_value else None)
            if there:
                other = there.pop(0)
                r.kind, r.to, other.kind, other.to = MOVED, other.b, MOVED, r.a


def _substituted(stage: str, a: list[Line], b: list[Line], rows: list[Row], mapping, sk_a, sk_b):
    """A type or constant substituted consistently (substitute.py), treated like the renaming: the lines are
    matched again with it applied to a's, until the substitutions found on the new rows are the ones
    applied (else the rows as they were); the pairs that differ by them alone are renamed."""
    lang = stages.language(stage) or ""
    if lang not in substitute.LITERAL:
        return rows, []

    parts_a = [substitute.parts(lang, ln, mapping) for ln in a]
    parts_b = [substitute.parts(lang, ln, None) for ln in b]

    def found(rows: list[Row]):
        paired = [(k, r.a, r.b) for k, r in enumerate(rows) if r.a is not None and r.b is not None]
        subs, explained = substitute.find(parts_a, parts_b, [(i, j) for _, i, j in paired])
        return rows, subs, [paired[n][0] for n in explained]

    best = found(rows)
    table = {(s.kind, s.a): s.b for s in best[1]}
    keys_b = substitute.keys(b, parts_b, {}) if table else []
    for _ in range(3):
        if not table:
            break
        keys_a = substitute.keys(a, parts_a, table)
        got = found(_rows(a, b, _matches(keys_a, keys_b), [], sk_a, sk_b))
        again = {(s.kind, s.a): s.b for s in got[1]}
        if again == table:
            best = got
            break
        table = again
    rows, subs, explained = best
    for k in explained:
        if rows[k].kind == CHANGED:
            rows[k].kind = RENAMED
    return rows, subs


def _rows(a, b, matched, moved, sk_a, sk_b) -> list[Row]:
    rows: list[Row] = []
    moved_a, moved_b = dict(moved), {j: i for i, j in moved}
    for (ga, gb), nxt in zip(_gaps(matched, len(a), len(b)), [*matched, None]):
        rows.extend(_gap_rows(a, b, ga, gb, sk_a, sk_b, moved_a, moved_b))
        if nxt is not None:
            i, j = nxt
            rows.append(Row(EQUAL if a[i].text == b[j].text else RENAMED, i, j))
    return rows


def _gaps(matched: list[tuple[int, int]], na: int, nb: int):
    """The ranges between consecutive matches: ((a from, a to), (b from, b to)), one before each match
    and one after the last."""
    pi = pj = 0
    for i, j in matched:
        yield (pi, i), (pj, j)
        pi, pj = i + 1, j + 1
    yield (pi, na), (pj, nb)


def _gap_matches(a, b, ga, gb, sk_a, sk_b) -> list[tuple[int, int]]:
    (a0, a1), (b0, b1) = ga, gb
    if a0 == a1 or b0 == b1:
        return []
    return [(a0 + i, b0 + j) for i, j in _matches(sk_a[a0:a1], sk_b[b0:b1])]


def _moves(keys_a: list[str], keys_b: list[str], matched: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Lines left out of the in-order match whose keys are equal: each a line to the b line of its key
    nearest its place (machine code, where the order is the scheduler's)."""
    in_a, in_b = {i for i, _ in matched}, {j for _, j in matched}
    free_b: dict[str, list[int]] = {}
    for j, k in enumerate(keys_b):
        if j not in in_b:
            free_b.setdefault(k, []).append(j)
    out = []
    scale = len(keys_b) / max(len(keys_a), 1)
    for i, k in enumerate(keys_a):
        if i in in_a or not free_b.get(k):
            continue
        js = free_b[k]
        j = min(js, key=lambda j: abs(j - i * scale))
        js.remove(j)
        out.append((i, j))
    return sorted(out)


def _gap_rows(a, b, ga, gb, sk_a, sk_b, moved_a=None, moved_b=None) -> list[Row]:
    """A gap between exact matches: moved lines marked so; of the rest, lines of one skeleton, then of one op,
    paired as changed; the rest removed (a) and added (b), in order."""
    (a0, a1), (b0, b1) = ga, gb
    moved_a, moved_b = moved_a or {}, moved_b or {}
    if moved_a or moved_b:
        rest_a = [i for i in range(a0, a1) if i not in moved_a]
        rest_b = [j for j in range(b0, b1) if j not in moved_b]
        if len(rest_a) != a1 - a0 or len(rest_b) != b1 - b0:
            return _with_moves(a, b, ga, gb, sk_a, sk_b, moved_a, moved_b)
    if a0 == a1:
        return [Row(ADDED, None, j) for j in range(b0, b1)]
    if b0 == b1:
        return [Row(REMOVED, i, None) for i in range(a0, a1)]
    pairs = _gap_matches(a, b, ga, gb, sk_a, sk_b)
    rows: list[Row] = []
    for (sa, sb), nxt in zip(_gaps_in(pairs, ga, gb), [*pairs, None]):
        ops_a = [_op(a[i]) for i in range(*sa)]
        ops_b = [_op(b[j]) for j in range(*sb)]
        by_op = [(sa[0] + i, sb[0] + j) for i, j in _matches(ops_a, ops_b)]
        for (xa, xb), pair in zip(_gaps_in(by_op, sa, sb), [*by_op, None]):
            rows.extend(Row(REMOVED, i, None) for i in range(*xa))
            rows.extend(Row(ADDED, None, j) for j in range(*xb))
            if pair is not None:
                rows.append(Row(CHANGED, *pair))
        if nxt is not None:
            rows.append(Row(CHANGED, *nxt))
    return rows


def _with_moves(a, b, ga, gb, sk_a, sk_b, moved_a, moved_b) -> list[Row]:
    """A gap holding moved lines: they are rows of their own, the runs between them gaps as usual."""
    (a0, a1), (b0, b1) = ga, gb
    marks_a = [i for i in range(a0, a1) if i in moved_a] + [a1]
    marks_b = [j for j in range(b0, b1) if j in moved_b] + [b1]
    rows: list[Row] = []
    pa, pb = a0, b0
    ia = ib = 0
    while ia < len(marks_a) or ib < len(marks_b):
        ma = marks_a[ia] if ia < len(marks_a) else a1
        mb = marks_b[ib] if ib < len(marks_b) else b1
        # the stretch up to the next moved line of either side, proportionally
        if ia < len(marks_a) - 1 and (
            ib >= len(marks_b) - 1 or (ma - a0) * max(b1 - b0, 1) <= (mb - b0) * max(a1 - a0, 1)
        ):
            rows.extend(_gap_rows(a, b, (pa, ma), (pb, pb), sk_a, sk_b))
            rows.append(Row(MOVED, ma, None, moved_a[ma]))
            pa, ia = ma + 1, ia + 1
        elif ib < len(marks_b) - 1:
            rows.extend(_gap_rows(a, b, (pa, pa), (pb, mb), sk_a, sk_b))
            rows.append(Row(MOVED, None, mb, moved_b[mb]))
            pb, ib = mb + 1, ib + 1
        else:
            rows.extend(_gap_rows(a, b, (pa, a1), (pb, b1), sk_a, sk_b))
            break
    return rows


def _gaps_in(pairs, ga, gb):
    pi, pj = ga[0], gb[0]
    for i, j in pairs:
        yield (pi, i), (pj, j)
        pi, pj = i + 1, j + 1
    yield (pi, ga[1]), (pj, gb[1])


def align(stage: str, text_a: str, text_b: str, substitutions: bool = True) -> Alignment:
    """Two texts of one stage, aligned (see the module's doc)."""
    return align_lines(stage, tokenise(stage, text_a), tokenise(stage, text_b), substitutions=substitutions)


def token_marks(al: Alignment, row: Row) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """A changed row's changed tokens, as character ranges of each side's text: literal words that differ
    and names whose pairing is inconsistent (equal tokens, names paired by the renaming, are left)."""
    if row.a is None or row.b is None:
        return [], []
    rename = {(scope, x): y for scope, names in al.renaming.items() for x, y in names.items()}
    la, lb = al.a[row.a], al.b[row.b]
    # names paired to themselves are not in al.renaming: a name not renamed stands for itself
    ta = [(k if not k.startswith("\x00\x01") else "\x00" + k[2:], s, e) for k, s, e in tokens(la, rename)]
    tb = tokens(lb, None)
    sm = difflib.SequenceMatcher(None, [k for k, _, _ in ta], [k for k, _, _ in tb], autojunk=False)
    marks_a: list[tuple[int, int]] = []
    marks_b: list[tuple[int, int]] = []
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            continue
        for toks, lo, hi, marks in ((ta, i1, i2, marks_a), (tb, j1, j2, marks_b)):
            span = [t for t in toks[lo:hi] if t[0].strip()]
            if span:
                marks.append((span[0][1], span[-1][2]))
    return marks_a, marks_b
