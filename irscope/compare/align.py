"""Two texts of one stage aligned by structure, with value names paired: what is left is the real change.

    clean        normalize.clean: locations, debug info, SASS addresses dropped; every name kept
    tokenise     each line -> literal pieces and names by kind (MLIR %values, ^blocks and #aliases; LLVM
                 %values, labels, !metadata and #attributes; PTX registers by class (%r, %rd, %p, %f, ...)
                 and $L__ labels; SASS R/UR/P/UP/B registers and .L_x_ labels; AMDGCN v/s/a registers
                 and .L labels); the skeleton is the line with each name replaced by its kind
    structure    each line's scope: the function it is in and, for MLIR, the path of region-holding ops
                 around it (tt.func/scf.for/...), so a loop body line only ever matches a loop body line and
                 a prologue line a prologue line; names are paired per function
    align        1. lines matched on scope + skeleton (difflib's longest blocks, on interned ints)
                 2. the names on matched lines paired by votes into a bijection per function and kind
                    (machine code: also through the dataflow of the lines left, _propagate)
                 3. lines matched again on scope + text with a's names put through that renaming: a line
                    matched here is equal up to the renaming; the pairs these matches make are voted again and
                    the match repeated until the renaming settles (a pairing the first pass got wrong is fixed)
                 4. what is left between those matches is the change: lines of one skeleton (a name paired
                    inconsistently: never hidden) or of one op are shown as a changed pair, the rest as
                    removed / added, each with its side's own names

An `Alignment` is the rows in order (equal, renamed, changed, removed, added, each with its line on each
side), the renaming (kind -> a name -> b name, where the names differ) and the counts; `opcodes` turns
the rows into difflib opcodes for the unified and side-by-side views.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from irscope import stages
from irscope.compare.normalize import clean

# ---------------------------------------------------------------- tokens

MLIR_TOKEN = re.compile(r"%[\w$.-]+|\^[\w$.-]+|#[A-Za-z_][\w]*(?![\w.<])")
LLVM_TOKEN = re.compile(r'%[\w$.-]+|%"[^"]*"|!\d+|#\d+')
LLVM_LABEL = re.compile(r"^([\w$.-]+|\"[^\"]*\"):")
PTX_TOKEN = re.compile(r"%(?:rd|rs|rq|r|p|fd|f|hh|h|b)\d+\b|\$L__[A-Za-z_]+\d+(?:_\d+)?")
SASS_TOKEN = re.compile(r"(?<![\w.])(?:UR|UP|R|P|B)\d+(?!\w)(?:\.reuse)?|\.L_x_\d+")
AMD_TOKEN = re.compile(r"(?<![\w.$])[vsa](?:\d+|\[\d+:\d+\])(?![\w\[])|\.L(?:BB|tmp|func_begin|func_end)\w*")


MLIR_VALUE_NAMED = re.compile(r"%(c-?\d+_(?:i\d+|index)|true|false)(?:_\d+)?$")


def _mlir_kind(tok: str) -> str:
    """%values, ^blocks, #aliases (by their stem: #blocked1 pairs with a #blocked, never a #mma); a constant
    MLIR names by its value (%c3_i32, %c3_i32_0, %true) is its own kind, so it never pairs with another value."""
    if tok[0] == "%":
        m = MLIR_VALUE_NAMED.match(tok)
        return "%" + m.group(1) if m else "%"
    return "^" if tok[0] == "^" else "#" + tok[1:].rstrip("0123456789")


def _llvm_kind(tok: str) -> str:
    return tok[0]


def _ptx_kind(tok: str) -> str:
    return "$L" if tok[0] == "$" else tok.rstrip("0123456789")


def _sass_kind(tok: str) -> str:
    return ".L" if tok[0] == "." else tok.removesuffix(".reuse").rstrip("0123456789")


def _amd_kind(tok: str) -> str:
    return ".L" if tok[0] == "." else tok[0]


TOKENS: dict[str, tuple[re.Pattern, Callable[[str], str]]] = {
    "mlir": (MLIR_TOKEN, _mlir_kind),
    "llvm": (LLVM_TOKEN, _llvm_kind),
    "ptx": (PTX_TOKEN, _ptx_kind),
    "sass": (SASS_TOKEN, _sass_kind),
    "amdgcn": (AMD_TOKEN, _amd_kind),
}

# a function's start, by language (its name is the scope of its value names)
FUNC_NAME: dict[str, re.Pattern] = {
    "mlir": re.compile(r"^\s*(?:tt\.func|func\.func|llvm\.func|gpu\.func|ttg\.func)\b[^@]*@([\w$.-]+)"),
    "llvm": re.compile(r"^define\b[^@]*@([\w$.-]+|\"[^\"]*\")"),
    "ptx": re.compile(r"^\s*(?:\.visible\s+|\.extern\s+|\.weak\s+)*\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)"),
    "sass": re.compile(r"^\s*//-+\s*\.text\.([\w$.]+)"),
    "amdgcn": re.compile(r"^([A-Za-z_][\w$]*):(?:\s|;|$)"),
}
MLIR_OP = re.compile(r"^\s*(?:[%\w$.#:, -]+=\s*)?\"?([A-Za-z_][\w$]*\.[\w$.]+|module|func)\b")


@dataclass
class Line:
    """One line as compared: its own text, where it came from, and its tokens."""

    text: str
    origin: int  # 1-based line in the stage's file
    scope: str  # function and, for MLIR, the region path: "matmul_kernel/scf.for"
    pieces: tuple[str, ...]  # the literal text around the names: len(names) + 1 pieces
    names: tuple[tuple[str, str], ...]  # (kind, name) in order
    # what each name stands for, when that is not the name itself: a machine register (SASS, AMDGCN) holds
    # many values, so each write starts a new value ("R12#3"), and a read is of the last one written
    ident: tuple[str, ...] = ()
    raw: str = ""  # the file's own line (what the stats' patterns read)
    dest: int | None = None  # SASS / AMDGCN: the index of the name this line writes

    def idents(self) -> tuple[str, ...]:
        return self.ident or tuple(n for _, n in self.names)

    @functools.cached_property
    def skeleton(self) -> str:
        out = [self.pieces[0]]
        for (kind, _), piece in zip(self.names, self.pieces[1:]):
            out.append("\x00" + kind + "\x00" + piece)
        return "".join(out)

    @property
    def function(self) -> str:
        return self.scope.split("/", 1)[0]


def tokenise(stage: str, text: str) -> list[Line]:
    """The stage's cleaned lines with their scope and tokens."""
    lang = stages.language(stage) or ""
    norm = clean(stage, text)
    token, kind_of = TOKENS.get(lang, (None, None))
    func_rx = FUNC_NAME.get(lang)
    func, regions = "", list[str]()  # MLIR: the region-holding ops around a line
    versions: dict[str, int] = {}  # SASS / AMDGCN: each register's writes so far in this function
    out: list[Line] = []
    raw = text.splitlines()
    for text_line, origin in zip(norm.lines, norm.origin):
        stripped = text_line.strip()
        if func_rx is not None and (m := func_rx.match(text_line)) and not text_line.startswith(".L"):
            func = m.group(1)
            versions = {}
        if lang == "mlir" and stripped.startswith("}"):
            regions = regions[:-1]
        scope = "/".join([func, *regions])
        pieces, names = _split(text_line, token, kind_of, lang)
        ident, dest = _versioned(lang, pieces, names, versions) if lang in MOVES else ((), None)
        if lang == "llvm" and names and not pieces[0] and names[0][0] == "%" and not names[0][1].startswith("%"):
            ident = ("%" + names[0][1], *(n for _, n in names[1:]))  # a label stands for the block's value
        raw_line = raw[origin - 1] if origin <= len(raw) else ""
        out.append(Line(text_line, origin, scope, pieces, names, ident, raw_line, dest))
        if lang == "mlir" and stripped.endswith("{"):
            op = MLIR_OP.match(text_line)
            regions = regions + [op.group(1) if op else "{"]
    return out


SASS_GUARD = re.compile(r"^\s*@!?$")
OPCODE_THEN_SPACE = re.compile(r"^\s*[A-Za-z_][\w.]*\s+$")
AMD_NO_DEST = (
    "global_store",
    "buffer_store",
    "ds_write",
    "ds_store",
    "flat_store",
    "scratch_store",
    "s_store",
    "s_cbranch",
    "s_branch",
    "s_waitcnt",
    "s_barrier",
    "s_endpgm",
    "s_setprio",
    "s_nop",
    "s_sleep",
    "global_atomic",
    "buffer_atomic",
    "ds_add",
    "s_setpc",
    "s_swappc",
)


def _versioned(lang: str, pieces, names, versions: dict[str, int]) -> tuple[tuple[str, ...], int | None]:
    """Each register read as the value last written to it, the line's destination as a new value.
    The destination is the first operand when it is a bare register (SASS: `IADD3 R4, ...`, never the
    address of `STG [R2.64], R5`; AMDGCN: the same, stores and branches aside)."""
    dest = None
    k = 0
    if lang == "sass" and names and SASS_GUARD.match(pieces[0]):
        k = 1  # `@P0` guards the line: a read
    head = pieces[k]
    if k < len(names) and names[k][0] != ".L" and OPCODE_THEN_SPACE.match(head if k == 0 else head.lstrip()):
        if not (lang == "amdgcn" and head.strip().startswith(AMD_NO_DEST)):
            dest = k
    regs = [n.removesuffix(".reuse") for _, n in names]  # .reuse: the operand cache's hint, not a value
    out = [f"{n}#{versions.get(n, 0)}" if kind != ".L" else n for (kind, _), n in zip(names, regs)]
    if dest is not None:
        n = regs[dest]
        versions[n] = versions.get(n, 0) + 1
        out[dest] = f"{n}#{versions[n]}"
    return tuple(out), dest


def _split(line: str, token, kind_of, lang: str) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    if token is None:
        return (line,), ()
    pieces: list[str] = []
    names: list[tuple[str, str]] = []
    pos = 0
    if lang == "llvm" and not line.startswith(("define", "declare")) and (m := LLVM_LABEL.match(line)):
        pieces.append("")
        names.append(("%", m.group(1)))  # a block's label, `246:`: the value %246 that branches name
        pos = m.end(1)
    for m in token.finditer(line, pos):
        pieces.append(line[pos : m.start()])
        tok = m.group(0)
        names.append((kind_of(tok), tok))
        pos = m.end()
    pieces.append(line[pos:])
    return tuple(pieces), tuple(names)


# ---------------------------------------------------------------- the alignment

EQUAL, RENAMED, CHANGED, REMOVED, ADDED, MOVED = "equal", "renamed", "changed", "removed", "added", "moved"
# machine code is scheduled: an instruction equal up to the renaming but elsewhere in its function is moved
MOVES = {stages.language(n) for n in stages.names(isa="native")}


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


def _vote(a: list[Line], b: list[Line], pairs, fixed: dict[tuple[str, str], str] | None = None):
    """A bijection per function and kind: (scope kind, a name) -> b name, by votes over matched lines.
    A vote weighs 1 / how often its line's skeleton occurs (a line like no other is strong evidence, one of
    32 alike weak), twice that when the two lines read the same; ties go to the same name on both sides,
    then to the earlier line. `fixed`: pairs kept as they are; votes only fill names not yet paired."""
    freq = Counter(a[i].skeleton for i, _ in pairs)
    votes: dict[tuple[str, str, str], float] = {}
    first: dict = {}
    for n, (i, j) in enumerate(pairs):
        la, lb = a[i], b[j]
        weight = (2.0 if la.text == lb.text else 1.0) / freq[la.skeleton]
        fa = la.function
        for (kind, _), (kind_b, _), x, y in zip(la.names, lb.names, la.idents(), lb.idents()):
            if kind == kind_b:
                key = (f"{fa} {kind}", x, y)
                votes[key] = votes.get(key, 0.0) + weight
                first.setdefault(key, n)
    mapping: dict[tuple[str, str], str] = dict(fixed or {})
    taken = {(k[0], v) for k, v in mapping.items()}
    same = lambda key: key[1] == key[2]
    for key, _ in sorted(votes.items(), key=lambda kv: (-kv[1], not same(kv[0]), first[kv[0]])):
        scope, x, y = key
        if (scope, x) in mapping or (scope, y) in taken:
            continue
        mapping[(scope, x)] = y
        taken.add((scope, y))
    return mapping


def _propagate(a: list[Line], b: list[Line], sure: dict[tuple[str, str], str], pairs, rounds: int = 50):
    """Machine code: the instructions left unmatched, paired through the names already paired. An
    instruction of a pairs with the nearest unmatched one of b of its scope and skeleton whose names agree
    with the pairing wherever a name is paired already (one at least: an anchor) and are free where not;
    its new names are then paired, and that may anchor more. (The scheduler interleaves alike instruction
    sequences; the dataflow, not the order, says which is which.)"""
    mapping = dict(sure)
    taken = {(k[0], v) for k, v in mapping.items()}
    done_a, done_b = {i for i, _ in pairs}, {j for _, j in pairs}
    free_b: dict[str, list[int]] = {}
    for j, ln in enumerate(b):
        if j not in done_b and ln.names:
            free_b.setdefault(ln.scope + "\x02" + ln.skeleton, []).append(j)
    rest = [i for i, ln in enumerate(a) if i not in done_a and ln.names]
    scale = len(b) / max(len(a), 1)
    for _ in range(rounds):
        left = []
        for i in rest:
            la = a[i]
            cands = free_b.get(la.scope + "\x02" + la.skeleton)
            found: tuple[int, dict[tuple[str, str], str]] | None = None
            for j in sorted(cands or (), key=lambda j: abs(j - i * scale))[:16]:
                new: dict[tuple[str, str], str] = {}
                anchored = False
                for (kind, _), x, y in zip(la.names, la.idents(), b[j].idents()):
                    key = (f"{la.function} {kind}", x)
                    got = mapping.get(key, new.get(key))
                    if got is not None:
                        if got != y:
                            break
                        anchored = anchored or key in mapping
                    elif (key[0], y) in taken or (key[0], y) in {(k[0], v) for k, v in new.items()}:
                        break
                    else:
                        new[key] = y
                else:
                    if anchored:
                        found = (j, new)
                        break
            if found is None:
                left.append(i)
                continue
            j, new = found
            assert cands is not None
            cands.remove(j)
            for key, y in new.items():
                mapping[key] = y
                taken.add((key[0], y))
        if len(left) == len(rest):
            break
        rest = left
    return mapping


def _renamed_key(line: Line, mapping: dict[tuple[str, str], str]) -> str:
    out = [line.scope, "\x02", line.pieces[0]]
    fn = line.function
    for (kind, _), name, piece in zip(line.names, line.idents(), line.pieces[1:]):
        out.append(mapping.get((f"{fn} {kind}", name), "\x01" + name))
        out.append(piece)
    return "".join(out)


def _exact_key(line: Line) -> str:
    if not line.ident:
        return line.scope + "\x02" + line.text
    out = [line.scope, "\x02", line.pieces[0]]
    for name, piece in zip(line.ident, line.pieces[1:]):
        out += [name, piece]
    return "".join(out)


def _op(line: Line) -> str:
    """A line's op or opcode, for pairing what is left: the skeleton's first word after any result names."""
    s = line.skeleton
    if "=" in s and not s.lstrip().startswith(("#", "!")):
        s = s.split("=", 1)[1]
    s = re.sub(r"\x00[^\x00]*\x00", " ", s).replace("@", " ")
    words = [w for w in re.split(r"[\s,(){}\[\]:;`]+", s) if w]
    return line.scope + " " + (words[0] if words else "")


def align_lines(stage: str, a: list[Line], b: list[Line], rounds: int = 8) -> Alignment:
    sk_a = [ln.scope + "\x02" + ln.skeleton for ln in a]
    sk_b = [ln.scope + "\x02" + ln.skeleton for ln in b]
    machine = (stages.language(stage) or "") in MOVES
    loose = _matches(sk_a, sk_b)
    if machine:
        loose += _moves(sk_a, sk_b, loose)
    if machine:  # patience: lines of a skeleton found once on each side anchor the pairing, the dataflow the rest
        ca, cb = Counter(sk_a), Counter(sk_b)
        unique = [(i, j) for i, j in loose if ca[sk_a[i]] == 1 and cb[sk_b[j]] == 1]
        mapping = _vote(a, b, loose, _propagate(a, b, _vote(a, b, unique), unique))
    else:
        mapping = _vote(a, b, loose)
    exact_b = [_exact_key(ln) for ln in b]
    matched: list[tuple[int, int]] = []
    moved: list[tuple[int, int]] = []
    for _ in range(rounds):
        keys_a = [_renamed_key(ln, mapping) for ln in a]
        matched = _matches(keys_a, exact_b)
        moved = _moves(keys_a, exact_b, matched) if machine else []
        # the pairs these exact matches make are sure; the rest is voted on skeleton matches inside the gaps
        sure = _vote(a, b, matched + moved)
        if machine:
            sure = _propagate(a, b, sure, matched + moved)
        loose = [p for ga, gb in _gaps(matched, len(a), len(b)) for p in _gap_matches(a, b, ga, gb, sk_a, sk_b)]
        if machine:
            done = {i for i, _ in moved}
            loose = [p for p in loose if p[0] not in done]
            loose += _moves(sk_a, sk_b, matched + moved + loose)
        new = _vote(a, b, loose, sure)
        if new == mapping:
            break
        mapping = new
    rows = _rows(a, b, matched, moved, sk_a, sk_b)
    # names left unpaired that a changed pair lines up (a loop's new iter_args around the old ones, an op
    # whose attribute changed): paired by the pair's token alignment, then matched once more
    extra = _token_votes(a, b, [(r.a, r.b) for r in rows if r.kind == CHANGED], mapping)
    if extra != mapping:
        mapping = extra
        keys_a = [_renamed_key(ln, mapping) for ln in a]
        matched = _matches(keys_a, exact_b)
        moved = _moves(keys_a, exact_b, matched) if machine else []
        rows = _rows(a, b, matched, moved, sk_a, sk_b)
    renaming: dict[str, dict[str, str]] = {}
    for (scope, x), y in mapping.items():
        if x != y:
            renaming.setdefault(scope, {})[x] = y
    return Alignment(stage, a, b, rows, renaming)


def _rows(a, b, matched, moved, sk_a, sk_b) -> list[Row]:
    rows: list[Row] = []
    moved_a, moved_b = dict(moved), {j: i for i, j in moved}
    for (ga, gb), nxt in zip(_gaps(matched, len(a), len(b)), [*matched, None]):
        rows.extend(_gap_rows(a, b, ga, gb, sk_a, sk_b, moved_a, moved_b))
        if nxt is not None:
            i, j = nxt
            rows.append(Row(EQUAL if a[i].text == b[j].text else RENAMED, i, j))
    return rows


def _token_votes(a: list[Line], b: list[Line], pairs, mapping: dict[tuple[str, str], str]):
    """The mapping with names of changed pairs added where both are still unpaired: the names each
    pair's token alignment lines up (paired names anchor it as themselves, unpaired ones by kind), by votes
    (a line of n names weighs 1/n)."""
    taken = {(k[0], v) for k, v in mapping.items()}
    votes: dict[tuple[str, str, str], float] = {}
    for i, j in pairs:
        la, lb = a[i], b[j]
        weight = 1.0 / max(len(la.names), 1)  # a short line lines its names up with less doubt
        ta, tb = _tokens(la, None), _tokens(lb, None)
        ka: list[str] = []
        kb: list[str] = []
        for toks, ln, keys, side_a in ((ta, la, ka, True), (tb, lb, kb, False)):
            for k, start, _ in toks:
                if not k.startswith("\x00"):
                    keys.append(k)
                    continue
                scope = f"{ln.function} {_kind_at(ln, start)}"
                known = mapping.get((scope, k[1:])) if side_a else (k[1:] if (scope, k[1:]) in taken else None)
                keys.append("\x00" + known if known is not None else "\x01" + scope)
        sm = difflib.SequenceMatcher(None, ka, kb, autojunk=False)
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            if tag != "equal":
                continue
            for n_a, n_b in zip(range(i1, i2), range(j1, j2)):
                if ka[n_a].startswith("\x01"):
                    key = (ka[n_a][1:], ta[n_a][0][1:], tb[n_b][0][1:])
                    votes[key] = votes.get(key, 0.0) + weight
    out = dict(mapping)
    for (scope, x, y), _ in sorted(votes.items(), key=lambda kv: -kv[1]):
        if (scope, x) not in out and (scope, y) not in taken:
            out[(scope, x)] = y
            taken.add((scope, y))
    return out


def _kind_at(line: Line, start: int) -> str:
    """The kind of the name that starts at character `start` of the line."""
    pos = 0
    for piece, (kind, name) in zip(line.pieces, line.names):
        pos += len(piece)
        if pos == start:
            return kind
        pos += len(name)
    return ""


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


def align(stage: str, text_a: str, text_b: str) -> Alignment:
    """Two texts of one stage, aligned (see the module's doc)."""
    return align_lines(stage, tokenise(stage, text_a), tokenise(stage, text_b))


WORD = re.compile(r"[\w$.%#^@]+|\s+|[^\w\s]")


def _tokens(line: Line, rename: dict[tuple[str, str], str] | None) -> list[tuple[str, int, int]]:
    """(key, start, end) per token of the line's text: words and marks of its literal pieces, and each
    name whole, keyed by what it stands for (a's names put through the renaming, so that a name
    paired consistently compares equal)."""
    out: list[tuple[str, int, int]] = []
    pos = 0
    fn = line.function
    idents = line.idents()
    for k, piece in enumerate(line.pieces):
        for m in WORD.finditer(piece):
            out.append((m.group(0), pos + m.start(), pos + m.end()))
        pos += len(piece)
        if k < len(line.names):
            kind, name = line.names[k]
            ident = idents[k]
            key = rename.get((f"{fn} {kind}", ident), "\x01" + ident) if rename is not None else ident
            out.append(("\x00" + key, pos, pos + len(name)))
            pos += len(name)
    return out


def token_marks(al: Alignment, row: Row) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """A changed row's changed tokens, as character ranges of each side's text: literal words that differ
    and names whose pairing is inconsistent (equal tokens, names paired by the renaming, are left)."""
    if row.a is None or row.b is None:
        return [], []
    rename = {(scope, x): y for scope, names in al.renaming.items() for x, y in names.items()}
    la, lb = al.a[row.a], al.b[row.b]
    # names paired to themselves are not in al.renaming: a name not renamed stands for itself
    ta = [(k if not k.startswith("\x00\x01") else "\x00" + k[2:], s, e) for k, s, e in _tokens(la, rename)]
    tb = _tokens(lb, None)
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
