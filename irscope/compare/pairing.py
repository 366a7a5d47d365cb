"""Names paired between two stages' lines (align.py): which value, register or label of a is which of b.

vote         a bijection per function and kind from the names on matched lines, by weighted votes
propagate    machine code: the instructions left unmatched, paired through the dataflow of names
             already paired (the scheduler interleaves alike sequences; the order does not say which)
token_votes  names left unpaired that a changed pair's token alignment lines up
keys         a line's key with a's names put through the renaming (renamed_key) or as they are
             (exact_key): equal keys are lines equal up to the renaming
tokens       a line's words and names, for the changed-token marks and the token votes
"""

from __future__ import annotations

import difflib
import re
from collections import Counter

from irscope.compare.lines import Line


def vote(a: list[Line], b: list[Line], pairs, fixed: dict[tuple[str, str], str] | None = None):
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


def propagate(a: list[Line], b: list[Line], sure: dict[tuple[str, str], str], pairs, rounds: int = 50):
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


def renamed_key(line: Line, mapping: dict[tuple[str, str], str]) -> str:
    out = [line.scope, "\x02", line.pieces[0]]
    fn = line.function
    for (kind, _), name, piece in zip(line.names, line.idents(), line.pieces[1:]):
        out.append(mapping.get((f"{fn} {kind}", name), "\x01" + name))
        out.append(piece)
    return "".join(out)


def exact_key(line: Line) -> str:
    if not line.ident:
        return line.scope + "\x02" + line.text
    out = [line.scope, "\x02", line.pieces[0]]
    for name, piece in zip(line.ident, line.pieces[1:]):
        out += [name, piece]
    return "".join(out)


def token_votes(a: list[Line], b: list[Line], pairs, mapping: dict[tuple[str, str], str]):
    """The mapping with names of changed pairs added where both are still unpaired: the names each
    pair's token alignment lines up (paired names anchor it as themselves, unpaired ones by kind), by votes
    (a line of n names weighs 1/n)."""
    taken = {(k[0], v) for k, v in mapping.items()}
    votes: dict[tuple[str, str, str], float] = {}
    for i, j in pairs:
        la, lb = a[i], b[j]
        weight = 1.0 / max(len(la.names), 1)  # a short line lines its names up with less doubt
        ta, tb = tokens(la, None), tokens(lb, None)
        ka: list[str] = []
        kb: list[str] = []
        for toks, ln, keys, side_a in ((ta, la, ka, True), (tb, lb, kb, False)):
            for k, start, _ in toks:
                if not k.startswith("\x00"):
                    keys.append(k)
                    continue
                scope = f"{ln.function} {kind_at(ln, start)}"
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


def kind_at(line: Line, start: int) -> str:
    """The kind of the name that starts at character `start` of the line."""
    pos = 0
    for piece, (kind, name) in zip(line.pieces, line.names):
        pos += len(piece)
        if pos == start:
            return kind
        pos += len(name)
    return ""


WORD = re.compile(r"[\w$.%#^@]+|\s+|[^\w\s]")


def tokens(line: Line, rename: dict[tuple[str, str], str] | None) -> list[tuple[str, int, int]]:
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
