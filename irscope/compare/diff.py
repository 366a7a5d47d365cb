"""Compare two compiles of one kernel, level by level: what changed, and where.

The two sides are dump folders (dump.DumpResult or an earlier `irscope dump -o`),
each read through its manifest. The levels, one analyzer function each, coarse to fine:

    stats    diff_stats(a, b) -> StatsDiff
             resources and instruction mix that changed: registers, spills, shared
             memory, occupancy, instruction counts by class, global load/store vector
             widths, convert_layouts, barriers, async copies, MMA, layouts
    stages   diff_stage(a, b, stage) -> StageDiff   (diff_stages for all of them)
             each text stage (ttir, ttgir, llir, ptx, sass, amdgcn, ...) after
             normalisation (normalize.py), as difflib opcodes plus +/- line counts
    lines    bylines.by_line(a, b) -> [LineDelta]     (--by-line)
             per Python line, from both source maps: instruction classes and opcodes,
             spills, registers, convert_layouts, layouts that changed
    passes   diff_passes(a, b) -> PassesDiff
             with per-pass IR on both sides (--passes): passes that ran on one side
             only or changed the IR differently, and the first pass after which the
             two sides' IR differ

compare() runs all levels and returns a DiffResult; views/diff.py turns it into the
summary, unified or side-by-side diffs, or JSON. Nothing here prints.

The sides (compiled from jobs, or earlier dump folders) come from sides.py.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from irscope import artifacts, stages
from irscope.artifacts import PassRecord
from irscope.artifacts import passes as passes_mod
from irscope.compare.align import Alignment, align_lines
from irscope.compare.bylines import LineDelta, by_line
from irscope.compare.lines import tokenise
from irscope.compare.normalize import Normalized, normalize
from irscope.compare.normalize import mlir as normalize_mlir
from irscope.compare.sides import Side
from irscope.compare.summary import StageSummary, summarize
from irscope.errors import BadInput
from irscope.stages import BINARY, names

# text stages diffed by default (source is the input, not compiler output: only on request)
SKIPPED_BY_DEFAULT = {"source"}


# ================================================================ level 1: stats


@dataclass
class StatDelta:
    name: str  # dotted path into the manifest's stats (or inputs), e.g. "sass.classes.mma"
    a: Any
    b: Any


@dataclass
class StatsDiff:
    deltas: list[StatDelta]

    @property
    def changed(self) -> bool:
        return bool(self.deltas)


# the headline figures first, in this order; the rest in SECTION order
PRIMARY_STATS = (
    "registers",
    "spills",
    "spill_store_bytes",
    "spill_load_bytes",
    "stack_bytes",
    "vgpr_count",
    "agpr_count",
    "sgpr_count",
    "vgpr_spill_count",
    "sgpr_spill_count",
    "scratch_bytes",
    "shared_bytes",
    "num_warps",
    "occupancy.occupancy",
    "occupancy.blocks_per_sm",
    "occupancy.warps_per_sm",
    "occupancy.waves_per_simd",
    "occupancy.limited_by",
)
SECTION_ORDER = names()[::-1]  # machine code first, then up the pipeline: sass, ptx, ..., ttgir
SKIPPED_STATS = {"local_bytes", "ttgir.num_warps", "sass.top", "amdgcn.top"}


def flatten_stats(stats: Mapping[str, Any]) -> dict[str, Any]:
    """{dotted name: value}; width tables ({"128": 4}) and layouts stay one value each."""
    flat: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if prefix in SKIPPED_STATS:
            return
        if isinstance(value, dict) and value and not _is_table(prefix, value):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else k, v)
        elif prefix == "ttgir.layouts":
            flat[prefix] = [f"{lay['kind']}<{lay['params']}>" for lay in value]
        else:
            flat[prefix] = value

    walk("", stats)
    ordered = {k: flat[k] for k in PRIMARY_STATS if k in flat}
    section = lambda k: SECTION_ORDER.index(k.split(".")[0]) if k.split(".")[0] in SECTION_ORDER else -1
    for k in sorted((k for k in flat if k not in ordered), key=section):  # stable: keeps the manifest's order
        ordered[k] = flat[k]
    return ordered


def _is_table(prefix: str, d: dict) -> bool:
    """A histogram (bits -> count, opcode.width -> count): one stat, not one per key."""
    return prefix.endswith("widths") or all(str(k).isdigit() for k in d)


def diff_stats(a: Side, b: Side) -> StatsDiff:
    fa, fb = flatten_stats(a.manifest.get("stats") or {}), flatten_stats(b.manifest.get("stats") or {})
    names = list(fa) + [k for k in fb if k not in fa]
    return StatsDiff([StatDelta(k, fa.get(k), fb.get(k)) for k in names if fa.get(k) != fb.get(k)])


INPUT_KEYS = ("file", "target", "signature", "triton_version")


def diff_inputs(a: Side, b: Side) -> list[StatDelta]:
    """What went into the two compiles differently: target, signature, Triton, options, env."""
    ma: Mapping[str, Any] = a.manifest  # read by key names from a list
    mb: Mapping[str, Any] = b.manifest
    out = [StatDelta(k, ma.get(k), mb.get(k)) for k in INPUT_KEYS if ma.get(k) != mb.get(k)]
    for group in ("options", "env"):
        ga, gb = ma.get(group) or {}, mb.get(group) or {}
        for k in list(ga) + [k for k in gb if k not in ga]:
            if ga.get(k) != gb.get(k):
                out.append(StatDelta(f"{group}.{k}", ga.get(k), gb.get(k)))
    return out


# ================================================================ level 2: stages


@dataclass
class StageDiff:
    stage: str
    status: str  # "equal" | "changed" | "only_a" | "only_b"
    added: int = 0  # lines only in b
    removed: int = 0  # lines only in a
    a: Normalized | None = None
    b: Normalized | None = None
    opcodes: list[tuple[str, int, int, int, int]] = field(default_factory=list)  # difflib's, over a/b.lines
    alignment: Alignment | None = None  # normalised text stages: the aligned rows (a/b are its lines)
    _summary: StageSummary | None = field(default=None, repr=False, compare=False)

    @property
    def equal(self) -> bool:
        return self.status == "equal"

    @property
    def renamed(self) -> int:
        """Lines equal to their counterpart only up to the renaming (0 for --raw)."""
        return self.alignment.renamed if self.alignment is not None else 0

    @property
    def moved(self) -> int:
        return self.alignment.moved if self.alignment is not None else 0

    @property
    def summary(self) -> StageSummary | None:
        """The change in words and numbers (summary.py), from the alignment; None for --raw or one side only."""
        if self.alignment is None:
            return None
        if self._summary is None:
            self._summary = summarize(self.alignment)
        return self._summary


def line_opcodes(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib opcodes for two line lists, fast on 10k-line files.

    Equal head and tail are cut off first; the middle is matched by difflib on
    interned ints (one dict lookup per line instead of hashing strings again and
    again), which yields the same opcodes as difflib on the lines themselves.
    """
    if a == b:
        return [("equal", 0, len(a), 0, len(b))] if a else []
    n, m = len(a), len(b)
    lo = 0
    while lo < n and lo < m and a[lo] == b[lo]:
        lo += 1
    hi = 0
    while hi < n - lo and hi < m - lo and a[n - 1 - hi] == b[m - 1 - hi]:
        hi += 1
    ids: dict[str, int] = {}
    ai = [ids.setdefault(x, len(ids)) for x in a[lo : n - hi]]
    bi = [ids.setdefault(x, len(ids)) for x in b[lo : m - hi]]
    ops: list[tuple[str, int, int, int, int]] = []
    if lo:
        ops.append(("equal", 0, lo, 0, lo))
    if not ai:
        ops.append(("insert", lo, lo, lo, lo + len(bi)))
    elif not bi:
        ops.append(("delete", lo, lo + len(ai), lo, lo))
    else:
        sm = difflib.SequenceMatcher(None, ai, bi, autojunk=False)
        ops.extend((t, i1 + lo, i2 + lo, j1 + lo, j2 + lo) for t, i1, i2, j1, j2 in sm.get_opcodes())
    if hi:
        ops.append(("equal", n - hi, n, m - hi, m))
    return ops


def count_changes(opcodes) -> tuple[int, int]:
    added = sum(j2 - j1 for t, i1, i2, j1, j2 in opcodes if t in ("replace", "insert"))
    removed = sum(i2 - i1 for t, i1, i2, j1, j2 in opcodes if t in ("replace", "delete"))
    return added, removed


def diff_texts(stage: str, text_a: str | None, text_b: str | None, normalized: bool = True) -> StageDiff:
    """One stage's two texts compared: aligned by structure with names paired (align.py), or with --raw
    (normalized False) the compiler's own text line by line."""
    if normalized and text_a is not None and text_b is not None:
        return aligned(stage, text_a, text_b)
    na = _lines(stage, text_a, normalized)
    nb = _lines(stage, text_b, normalized)
    if na is None:
        if nb is None:
            raise BadInput(f"stage {stage!r} exists on neither side")
        return StageDiff(stage, "only_b", len(nb.lines), 0, None, nb, [("insert", 0, 0, 0, len(nb.lines))])
    if nb is None:
        return StageDiff(stage, "only_a", 0, len(na.lines), na, None, [("delete", 0, len(na.lines), 0, 0)])
    ops = line_opcodes(na.lines, nb.lines)
    added, removed = count_changes(ops)
    return StageDiff(stage, "equal" if not (added or removed) else "changed", added, removed, na, nb, ops)


def _lines(stage: str, text: str | None, normalized: bool) -> Normalized | None:
    """A one-sided stage's lines: as the aligned diff shows them (own names), or raw."""
    if text is None:
        return None
    if not normalized:
        return normalize(stage, text, False)
    lines = tokenise(stage, text)
    return Normalized([x.text for x in lines], [x.origin for x in lines])


def aligned(stage: str, text_a: str, text_b: str) -> StageDiff:
    """Both sides aligned (align.py): counts, opcodes and lines (each side's own names) from the alignment."""
    al = align_lines(stage, tokenise(stage, text_a), tokenise(stage, text_b))
    na = Normalized([x.text for x in al.a], [x.origin for x in al.a])
    nb = Normalized([x.text for x in al.b], [x.origin for x in al.b])
    added, removed = al.added, al.removed
    # a move is a change too, and so is a substitution (said in the summary, its lines renamed)
    status = "equal" if not (added or removed or al.moved or al.substituted) else "changed"
    return StageDiff(stage, status, added, removed, na, nb, al.opcodes(), al)


def stage_text(side: Side, stage: str) -> str | None:
    if stage not in side.manifest["stages"] or stage in BINARY:
        return None
    try:
        return cast(str, artifacts.read_stage(side.folder, side.manifest, stage))  # not BINARY: text
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput(f"{side.folder}: stage {stage} unreadable ({type(e).__name__}: {e}); dump it again") from None


def diff_stage(a: Side, b: Side, stage: str, normalized: bool = True) -> StageDiff:
    return diff_texts(stage, stage_text(a, stage), stage_text(b, stage), normalized)


def text_stages(a: Side, b: Side) -> list[str]:
    """Text stages of either side in pipeline order (a's order, then b's own), source left out."""
    names = list(a.manifest["stages"]) + [s for s in b.manifest["stages"] if s not in a.manifest["stages"]]
    return [s for s in names if s not in BINARY and s not in SKIPPED_BY_DEFAULT]


def diff_stages(a: Side, b: Side, stages: list[str] | None = None, normalized: bool = True) -> list[StageDiff]:
    return [diff_stage(a, b, s, normalized) for s in (stages or text_stages(a, b))]


# ================================================================ level 3: passes


@dataclass
class PassDelta:
    stage: str
    name: str
    a: PassRecord | None  # None: the pass did not run on side a
    b: PassRecord | None

    @property
    def kind(self) -> str:
        if self.a is None:
            return "only_b"
        if self.b is None:
            return "only_a"
        return "counts"  # ran on both, changed the IR by different amounts


@dataclass
class Divergence:
    where: str  # "frontend" | "pass" | "none"
    stage: str = ""
    name: str = ""
    a_index: int | None = None
    b_index: int | None = None


@dataclass
class PassesDiff:
    a_count: int
    b_count: int
    deltas: list[PassDelta]
    divergence: Divergence

    @property
    def changed(self) -> bool:
        return bool(self.deltas) or self.divergence.where != "none"


def _ir_key(text: str | None) -> list[str] | None:
    return None if text is None else normalize_mlir(text).lines


def _ir_differs(stage: str, ta: str | None, tb: str | None) -> bool:
    """Two sides' IR after a pass differ: not equal up to a renaming of their values (the aligned diff;
    the renumbering normaliser first, as the fast way to find them equal); a type or constant substituted,
    or a constant moved, is a difference."""
    if ta is None or tb is None:
        return ta is not tb
    if ta == tb or _ir_key(ta) == _ir_key(tb):
        return False
    al = align_lines(stage, tokenise(stage, ta), tokenise(stage, tb))
    return bool(al.added or al.removed or al.moved or al.substituted)


def pass_key(name: str) -> str:
    """A pass's name as two Triton releases agree on it: 3.9 calls Inliner and Canonicalizer
    InlinerPass and CanonicalizerPass (a pass is matched by name, whatever its release calls it)."""
    return name[:-4] if name.endswith("Pass") and len(name) > 4 else name


def diff_passes(a: Side, b: Side) -> PassesDiff | None:
    """Per-pass behaviour, aligned by (stage, pass name); None unless both sides have per-pass IR."""

    if a.manifest.get("passes") is None or b.manifest.get("passes") is None:
        return None
    ra, after_a, first_a = passes_mod.load(a.folder, a.manifest)
    rb, after_b, first_b = passes_mod.load(b.folder, b.manifest)
    keys_a, keys_b = [(r.stage, pass_key(r.name)) for r in ra], [(r.stage, pass_key(r.name)) for r in rb]
    pairs: list[tuple[int | None, int | None]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, keys_a, keys_b, autojunk=False).get_opcodes():
        if tag == "equal":
            pairs.extend(zip(range(i1, i2), range(j1, j2)))
        else:
            pairs.extend((i, None) for i in range(i1, i2))
            pairs.extend((None, j) for j in range(j1, j2))
    deltas = []
    for i, j in pairs:
        pa, pb = (ra[i] if i is not None else None), (rb[j] if j is not None else None)
        if pa is not None and pb is not None and (pa.added, pa.removed) == (pb.added, pb.removed):
            continue
        ref = pa or pb
        assert ref is not None  # a pair holds a pass of one side at least
        deltas.append(PassDelta(ref.stage, ref.name, pa, pb))
    return PassesDiff(len(ra), len(rb), deltas, _divergence(ra, rb, after_a, after_b, first_a, first_b, pairs))


def _divergence(ra, rb, after_a, after_b, first_a, first_b, pairs) -> Divergence:
    """The first point where the two sides' IR differ (aligned: a renaming of values is no difference)."""
    if _ir_differs("ttir", first_a, first_b):
        return Divergence("frontend", "frontend")
    for i, j in pairs:
        if i is None or j is None:
            rec = ra[i] if i is not None else rb[j]
            if rec.changed:  # a pass only one side ran, and it changed that side's IR
                return Divergence(
                    "pass",
                    rec.stage,
                    rec.name,
                    ra[i].index if i is not None else None,
                    rb[j].index if j is not None else None,
                )
            continue
        if not ra[i].changed and not rb[j].changed:
            continue  # both IRs as before this pass, and those were equal (else we had returned)
        ta, tb = after_a[i], after_b[j]
        if ta is None or tb is None:
            continue
        if _ir_differs(ra[i].stage if ra[i].stage in stages.names(passes=True) else "ttir", ta, tb):
            return Divergence("pass", ra[i].stage, ra[i].name, ra[i].index, rb[j].index)
    return Divergence("none")


# ================================================================ all levels


@dataclass
class DiffResult:
    a: Side
    b: Side
    inputs: list[StatDelta]
    stats: StatsDiff
    stages: list[StageDiff]
    passes: PassesDiff | None
    normalized: bool = True
    selected: list[str] = field(default_factory=list)  # stages asked for with --stage
    sources_differ: bool = False  # the kernel's source text differs between the sides
    by_line: list[LineDelta] | None = None  # --by-line: per Python line, what changed (bylines.py)

    @property
    def files(self) -> tuple[str, str]:
        """The kernel file of each side, as its manifest records it."""
        return str(self.a.manifest.get("file") or ""), str(self.b.manifest.get("file") or "")

    def stage(self, name: str) -> StageDiff | None:
        return next((s for s in self.stages if s.stage == name), None)

    @property
    def equal(self) -> bool:
        """With --stage: the chosen stages are equal. Otherwise: no stat, stage or pass differs."""
        if self.selected:
            return all((st := self.stage(s)) is not None and st.equal for s in self.selected)
        return (
            not self.stats.changed and all(s.equal for s in self.stages) and not (self.passes and self.passes.changed)
        )


def compare(
    a: Side,
    b: Side,
    stages: list[str] | None = None,
    normalized: bool = True,
    require_passes: bool = False,
    lines: bool = False,
) -> DiffResult:
    """All levels. `stages`: the ones to show in full (all text stages are compared for the summary)."""
    selected = list(dict.fromkeys(stages or []))
    for s in selected:
        if s not in a.manifest["stages"] and s not in b.manifest["stages"]:
            have = sorted(set(a.manifest["stages"]) | set(b.manifest["stages"]) - set(BINARY))
            raise BadInput(f"stage {s!r} exists on neither side; stages: {', '.join(have)}")
    if require_passes:
        for side in (a, b):
            if side.manifest.get("passes") is None:
                raise BadInput(f"{side.label}: dumped without --passes; run irscope dump --passes again")
    lines_diff = by_line(a, b) if lines else None  # first: a side without map.json is bad input, said at once
    names = text_stages(a, b)
    names += [s for s in selected if s not in names]
    return DiffResult(
        a,
        b,
        inputs=diff_inputs(a, b),
        stats=diff_stats(a, b),
        stages=diff_stages(a, b, names, normalized),
        passes=diff_passes(a, b),
        normalized=normalized,
        selected=selected,
        sources_differ=_sources_differ(a, b),
        by_line=lines_diff,
    )


def _sources_differ(a: Side, b: Side) -> bool:
    """The kernel's source differs: its text when both sides recorded it, else the file it came from."""
    ta, tb = stage_text(a, "source"), stage_text(b, "source")
    if ta is not None and tb is not None:
        return ta != tb
    return Path(str(a.manifest.get("file") or "")).name != Path(str(b.manifest.get("file") or "")).name


def hunk_ranges(group: list[tuple]) -> str:
    """A hunk's `-a,n +b,m` as unified diff writes it (an empty side: its line before, count 0)."""
    i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
    ra = f"{i1 + 1},{i2 - i1}" if i2 > i1 else f"{i1},0"
    rb = f"{j1 + 1},{j2 - j1}" if j2 > j1 else f"{j1},0"
    return f"-{ra} +{rb}"


def hunks(opcodes, n: int = 3) -> list[list[tuple]]:
    """The changes grouped into hunks with `n` lines of context (difflib.SequenceMatcher.get_grouped_opcodes,
    over precomputed opcodes): what a unified or side-by-side view shows."""
    codes = list(opcodes)
    if not codes or all(c[0] == "equal" for c in codes):
        return []
    if codes[0][0] == "equal":
        t, i1, i2, j1, j2 = codes[0]
        codes[0] = t, max(i1, i2 - n), i2, max(j1, j2 - n), j2
    if codes[-1][0] == "equal":
        t, i1, i2, j1, j2 = codes[-1]
        codes[-1] = t, i1, min(i2, i1 + n), j1, min(j2, j1 + n)
    nn = n + n
    groups, group = [], []
    for t, i1, i2, j1, j2 in codes:
        if t == "equal" and i2 - i1 > nn:
            group.append((t, i1, min(i2, i1 + n), j1, min(j2, j1 + n)))
            groups.append(group)
            group = []
            i1, j1 = max(i1, i2 - n), max(j1, j2 - n)
        group.append((t, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        groups.append(group)
    return groups


__all__ = [
    "DiffResult",
    "Divergence",
    "LineDelta",
    "PassDelta",
    "PassesDiff",
    "StageDiff",
    "StatDelta",
    "StatsDiff",
    "compare",
    "diff_inputs",
    "diff_passes",
    "diff_stage",
    "diff_stages",
    "diff_stats",
    "diff_texts",
    "flatten_stats",
    "hunk_ranges",
    "hunks",
    "line_opcodes",
]
