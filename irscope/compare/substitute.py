"""A type or constant substituted consistently between two aligned stages: said once, not on every line.

One knob often changes one type or constant everywhere it appears (num_stages 3 -> 4: every
`!ttg.memdesc<3x128x64xf16, ...>` is `<4x128x64xf16, ...>`, `%c3_i32` as the buffer count is `%c4_i32`, a
shared-memory offset in PTX is another). Such a substitution is treated like a renaming: the lines that
differ by it alone are renamed-only, and the substitution is the change, said once in the summary.

    tokens       what may be substituted, by language: MLIR the shape and element type of a `!ttg.memdesc<>`
                 or `tensor<>` (kind: the container) and the constants MLIR names by value where they are used
                 (`%c3_i32`; their definitions keep their text); PTX the decimal immediates of instructions;
                 LLVM the decimal constants of an integer type (`i32 49152`)
    consistent   a substitution T_a -> T_b (of one kind) is taken when, on every aligned pair of lines whose
                 text is the same but for such tokens and names, each T_a of a stands against T_b and each
                 T_b of b against T_a, on two lines at least (a substitution on one line is a changed line;
                 numbers shifted by one amount count their lines together)
    rows         a changed pair whose only differences are taken substitutions (names through the renaming)
                 becomes renamed; a line where the pairing is inconsistent stays a change: nothing is hidden
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from irscope.compare.lines import Line

# a literal piece's substitutable tokens: group "v" is the token, group "k" (when there) its kind
LITERAL: dict[str, re.Pattern] = {
    "mlir": re.compile(r"(?P<k>!ttg\.memdesc|tensor)<(?P<v>(?:\d+x)+(?:!tt\.ptr<\w+>|[a-z]\w*))"),
    "ptx": re.compile(r"(?<![\w.%$])(?P<v>-?\d+)(?![\w.])"),
    "llvm": re.compile(r"\b(?P<k>i(?:8|16|32|64)) (?P<v>-?\d+)(?![\w.])"),
}
MLIR_CONSTANT = re.compile(r"^%c-?\d+_(?:i\d+|index)$")  # the kind align gives a constant MLIR names by value
MLIR_DEFINES = re.compile(r"^\s*%[\w$.-]+\s*=\s*arith\.constant\b")
MIN_LINES = 2


@dataclass(frozen=True)
class Substitution:
    kind: str  # "!ttg.memdesc", "tensor", "constant", "immediate", "i32" (LLVM)
    a: str
    b: str
    lines: int  # aligned pairs of lines on which it stands
    family: str = ""  # a number's shift ("+16384"), "" for any other substitution
    family_lines: int = 0  # lines of the whole family (its values together)

    def what(self) -> str:
        if self.kind == "constant":
            return ""
        if self.kind == "immediate" or (self.kind.startswith("i") and self.kind[1:].isdigit()):
            return f"{self.kind} "
        return self.kind.lstrip("!").split(".")[-1] + " "  # memdesc, tensor

    def words(self) -> str:
        what = self.what()
        note = _depth(self.a, self.b) if self.kind == "!ttg.memdesc" else ""
        where = " where used" if self.kind == "constant" else ""  # its definitions keep their text
        return f"{what}{self.a} -> {self.b}{where} ({note}{self.lines} line{'s' if self.lines != 1 else ''})"


def _depth(a: str, b: str) -> str:
    """memdesc shapes that differ by their leading dimension only: a count of buffers (or of barriers)."""
    da, db = a.split("x"), b.split("x")
    if len(da) == len(db) >= 2 and da[1:] == db[1:] and da[0] != db[0]:
        what = "multi-buffer depth" if len(da) >= 3 else "count"
        return f"{what} {da[0]} -> {db[0]}, "
    return ""


Part = tuple[str, str]  # ("t", literal text) | ("n", a name's key) | (kind, token): a substitutable token


def _family(key: tuple[str, str, str]) -> tuple[str, str]:
    """A substitution's family: a number's by the amount it shifts by, any other its own."""
    kind, x, y = key
    if kind != "constant" and _INT.match(x) and _INT.match(y):
        return kind, f"{int(y) - int(x):+d}"
    return kind, x + "\x00" + y


_INT = re.compile(r"^-?\d+$")


def parts(lang: str, line: Line, mapping: dict[tuple[str, str], str] | None) -> list[Part]:
    """The line as literal text, names (a's through `mapping`: an unpaired name never equals b's) and
    substitutable tokens."""
    out: list[Part] = []
    fn = line.function
    idents = line.idents()
    literal = LITERAL.get(lang)
    directive = lang == "ptx" and line.text.lstrip().startswith(".")  # `.reg .b32 %r<521>;` says counts
    for k, piece in enumerate(line.pieces):
        _literal(out, piece, None if directive else literal)
        if k >= len(line.names):
            break
        kind, name = line.names[k]
        if lang == "mlir" and MLIR_CONSTANT.match(kind) and not (k == 0 and MLIR_DEFINES.match(line.text)):
            out.append(("constant", kind))  # its kind is its value: %c3_i32_0 is %c3_i32
            continue
        ident = idents[k]
        key = ident if mapping is None else mapping.get((f"{fn} {kind}", ident), "\x01" + ident)
        out.append(("n", key))
    return out


def keys(lines: list[Line], parts_of: list[list[Part]], table: dict[tuple[str, str], str]) -> list[str]:
    """Each line's key for matching: its scope and parts (a's names through the renaming), substitutable
    tokens through `table` ((kind, a token) -> b token): equal keys are lines equal up to both."""
    out = []
    for ln, line_parts in zip(lines, parts_of):
        key = [ln.scope, "\x02"]
        for kind, tok in line_parts:
            key.append(tok if kind == "t" else ("\x00" if kind == "n" else "\x03") + table.get((kind, tok), tok))
        out.append("".join(key))
    return out


def _kind(m: re.Match) -> str:
    """A substitutable token's kind: its container (`!ttg.memdesc`, `tensor`, `i32`) or a PTX immediate."""
    return (m.group("k") if "k" in m.re.groupindex else None) or "immediate"


def in_skeleton(lang: str, skeleton: str, subs: list[Substitution]) -> str:
    """A line's skeleton (lines.Line.skeleton: each name as "\x00kind\x00") with the substitutions applied:
    the substitutable tokens of its literal text, and a constant MLIR names by value (its kind is its value)."""
    table = {(s.kind, s.a): s.b for s in subs}
    rx = LITERAL.get(lang)
    if rx is not None:

        def token(m: re.Match) -> str:
            v = table.get((_kind(m), m.group("v")), m.group("v"))
            return m.group(0)[: m.start("v") - m.start(0)] + v + m.group(0)[m.end("v") - m.start(0) :]

        skeleton = rx.sub(token, skeleton)
    for (kind, x), y in table.items():
        if kind == "constant":  # x is the constant's kind in the skeleton: "%c3_i32"
            skeleton = skeleton.replace("\x00" + x + "\x00", "\x00" + y + "\x00")
    return skeleton


def _literal(out: list[Part], piece: str, rx: re.Pattern | None) -> None:
    pos = 0
    for m in rx.finditer(piece) if rx is not None else ():
        kind = _kind(m)
        _text(out, piece[pos : m.start("v")])
        out.append((kind, m.group("v")))
        pos = m.end("v")
    _text(out, piece[pos:])


def _text(out: list[Part], text: str) -> None:
    if not text:
        return
    if out and out[-1][0] == "t":
        out[-1] = ("t", out[-1][1] + text)
    else:
        out.append(("t", text))


def find(
    parts_a: list[list[Part]], parts_b: list[list[Part]], pairs: list[tuple[int, int]]
) -> tuple[list[Substitution], set[int]]:
    """The consistent substitutions over the aligned pairs (a line, b line) of lines in parts (a's names
    through the renaming), and the indexes into `pairs` of those that differ by taken substitutions only
    (names paired)."""
    seen: list[tuple[int, list[tuple[str, str, str]], bool]] = []  # (pair, [(kind, a, b)], names equal)
    fwd: dict[tuple[str, str], set[str]] = {}
    bwd: dict[tuple[str, str], set[str]] = {}
    count: Counter[tuple[str, str, str]] = Counter()
    for n, (i, j) in enumerate(pairs):
        pa, pb = parts_a[i], parts_b[j]
        if len(pa) != len(pb) or any(x[0] != y[0] or (x[0] == "t" and x[1] != y[1]) for x, y in zip(pa, pb)):
            continue  # not the same line but for its tokens: no correspondence to read
        subs = [(x[0], x[1], y[1]) for x, y in zip(pa, pb) if x[0] not in ("t", "n")]
        for kind, x, y in subs:
            fwd.setdefault((kind, x), set()).add(y)
            bwd.setdefault((kind, y), set()).add(x)
        for key in set(subs):
            count[key] += 1
        seen.append((n, [s for s in subs if s[1] != s[2]], all(x == y for x, y in zip(pa, pb) if x[0] == "n")))
    consistent = {
        key for key in count if key[1] != key[2] and fwd[key[:2]] == {key[2]} and bwd[(key[0], key[2])] == {key[1]}
    }
    # a number shifted by one amount in many places (offsets past a buffer that grew) is one change: the lines
    # of its consistent values count together
    family: dict[tuple[str, str], set[int]] = {}
    for n, subs, _ in seen:
        for key in subs:
            if key in consistent:
                family.setdefault(_family(key), set()).add(n)
    taken = {key: c for key, c in count.items() if key in consistent and len(family[_family(key)]) >= MIN_LINES}
    explained = {n for n, subs, names in seen if names and subs and all(s in taken for s in subs)}
    subs_out = []
    for (k, x, y), c in taken.items():
        fam = _family((k, x, y))[1]
        shift = fam if "\x00" not in fam else ""  # a number's shift, else the pair itself
        subs_out.append(Substitution(k, x, y, c, shift, len(family[(k, fam)])))
    return subs_out, explained


def said(subs: list[Substitution]) -> list[str]:
    """Each substitution in words, once: a number's values shifted by one amount together
    (`immediate +16384: 49152 -> 65536, 50176 -> 66560, ... (16 values, 24 lines)`)."""
    out: list[str] = []
    groups: dict[tuple[str, str], list[Substitution]] = {}
    for sub in subs:
        groups.setdefault((sub.kind, sub.family or sub.a + "\x00" + sub.b), []).append(sub)
    for (_, fam), group in sorted(groups.items(), key=lambda kv: -kv[1][0].family_lines):
        if len(group) == 1:
            out.append(group[0].words())
            continue
        group.sort(key=lambda s: (len(s.a), s.a))
        values = ", ".join(f"{s.a} -> {s.b}" for s in group[:3]) + (", ..." if len(group) > 3 else "")
        lines = group[0].family_lines
        out.append(f"{group[0].what()}{fam}: {values} ({len(group)} values, {lines} line{'s' if lines != 1 else ''})")
    return out
