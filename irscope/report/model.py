"""Dump folders gathered into the report's model: a JSON-able dict the page is rendered from.

Everything the page shows is computed here, at report time: stage texts, the links between the
Python source and every stage (from the dump's map.json, when it has one), the per-pass IR
diffs (difflib), resources, instruction mix and hot lines, the measured heat per line when
`irscope profile` left a profile.json (measured.py), and the layout pictures (layouts.py). The view (views/report.py) only renders this model.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from irscope import artifacts, explain, stages
from irscope.artifacts import MANIFEST, sourcemap
from irscope.artifacts import passes as passes_mod
from irscope.artifacts.sourcemap import CLASSES
from irscope.compare import passcounts
from irscope.errors import BadInput
from irscope.records import Manifest, SourceMap, Stats
from irscope.report import layouts, measured

LANGS = stages.column("page")
MAX_STAGE_BYTES = 8 << 20  # a stage bigger than this is cut (the page says so)
MAX_DIFF_LINES = 1500  # per pass
MAX_LINE_CHARS = 300  # a longer diff line is cut (LLVM-dialect lines run to thousands)
DIFF_BUDGET = 2 << 20  # characters of pass diffs in one dump's page; later passes say they were left out
SHOWN_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "waves_per_eu", "matrix_instr_nonkdim", "kpack")


def find_dumps(paths: list[Path]) -> list[Path]:
    """Each path is a dump folder, or a folder holding dump folders (a capture's -o): BadInput otherwise."""
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        if not p.exists():
            raise BadInput(f"{p}: no such folder (give a dump folder, or a folder of dump folders)")
        if not p.is_dir():
            raise BadInput(f"{p}: not a folder (give a dump folder, or a folder of dump folders)")
        if (p / MANIFEST).is_file():
            out.append(p)
            continue
        found = sorted(
            Path(root)
            for root, dirs, files in os.walk(p)
            if MANIFEST in files
            and not Path(root).name.startswith(artifacts.TMP_PREFIX)
            and "captures" not in Path(root).parts
        )
        if not found:
            raise BadInput(f"{p}: not an irscope dump folder (no {MANIFEST} in it or below it)")
        out += found
    return list(dict.fromkeys(out))


def dump_model(folder: Path, index: int = 0, with_layouts: bool = True) -> dict[str, Any]:
    """One dump folder as the page's data."""
    m = artifacts.read_manifest(folder)
    texts = _stage_texts(folder, m)
    source = texts.get("source", {}).get("text", "")
    smap, why = _load_map(folder, m)
    options = {k: m["options"][k] for k in SHOWN_OPTIONS if (m.get("options") or {}).get(k) is not None}
    prof = measured.read(folder)  # a damaged profile.json is BadInput, as a damaged manifest is
    kernel_file = smap["kernel_file"] if smap else str(m.get("file") or "")
    first = (
        first_line(source, smap)
        if smap
        else first_line(source, {"kernel_file": kernel_file, "lines": prof["lines"]})
        if prof
        else 1
    )
    return {
        "id": f"d{index}",
        "title": f"{m['kernel']} · {m['target']}",  # report_model names what tells it from the others
        # what tells this compile from another of the kernel: its arguments (constexprs) and options
        "facets": {
            **{str(k): str(v) for k, v in (m.get("args") or {}).items()},
            **{k: str(v) for k, v in options.items()},
        },
        "folder": str(folder),
        "kernel": m["kernel"],
        "target": m["target"],
        "triton": m.get("triton_version", ""),
        "signature": m.get("signature", ""),
        "options": options,
        "notes": m.get("notes") or [],
        "stages": [dict(name=name, lang=LANGS.get(name, "text"), **t) for name, t in texts.items()],
        "source_first_line": first,
        "map": links(smap, first, len(source.splitlines())) if smap else {"available": False, "why": why},
        "profile": measured.model(prof, kernel_file, first, len(source.splitlines()), m["kernel"]) if prof else None,
        "resources": resources(m),
        "charts": charts(m.get("stats") or {}),
        "passes": pass_diffs(folder, m) if m.get("passes") is not None else None,
        "layouts": (layouts.pictures(texts["ttgir"]["text"]) if with_layouts and "ttgir" in texts else []),
        **findings_of(folder, m, kernel_file if smap else "", first, len(source.splitlines())),
    }


def findings_of(folder: Path, m: Manifest, kernel_file: str, first: int, source_lines: int) -> dict[str, Any]:
    """The dump's findings (irscope.explain) as the page shows them: {"findings": [...], "findings_error": ""}.
    A finding engine's failure costs the page nothing but the findings (the page says so)."""
    try:
        found = explain.findings(folder, m)
    except Exception as e:  # noqa: BLE001 - a finding engine's bug must not cost the dump its page
        return {"findings": [], "findings_error": f"{type(e).__name__}: {e}"}
    machine = "amdgcn" if m["target"].startswith("hip") else "sass"
    return {"findings": [finding(f, kernel_file, first, source_lines, machine) for f in found], "findings_error": ""}


def finding(f: explain.Finding, kernel_file: str, first: int, source_lines: int, machine: str) -> dict[str, Any]:
    """One finding as the page's data: what, why with evidence, the fix, and its links: `src` the source
    pane's line of its Python line (0: none there: no map, or another file), each TTGIR op and machine
    instruction as [stage, stage line, text] (line 0 when the text names none; `machine`: sass or amdgcn)."""
    src = f.where.line - first + 1 if f.where.line and kernel_file and _same_file(f.where.file, kernel_file) else 0
    return {
        "kind": f.kind,
        "title": explain.KINDS.get(f.kind, f.kind),
        "cause": f.cause,
        "what": f.what,
        "why": f.why,
        "evidence": list(f.evidence),
        "fix": f.fix.text,
        "tryable": f.fix.tryable,
        "line": f.where.line,
        "text": f.where.text,
        "src": src if 0 < src <= source_lines else 0,
        "ttgir": [_numbered(x, "ttgir") for x in f.where.ttgir],
        "machine": [_numbered(x, machine) for x in f.where.machine],
    }


_NUMBERED = re.compile(r"([a-z]+ )?(\d+): (.*)", re.S)


def _numbered(x: str, stage: str) -> list[Any]:
    """'57: tt.dot ...' -> [stage, 57, 'tt.dot ...'], 'sass 80: LDGSTS ...' -> ['sass', 80, 'LDGSTS ...'];
    a text that names no line -> [stage, 0, text]."""
    m = _NUMBERED.fullmatch(str(x))
    if not m:
        return [stage, 0, str(x)]
    return [(m.group(1) or stage).strip(), int(m.group(2)), m.group(3).strip()]


def _same_file(a: str, b: str) -> bool:
    return a == b or os.path.realpath(a) == os.path.realpath(b)


def _stage_texts(folder: Path, m: Manifest) -> dict[str, dict[str, Any]]:
    out = {}
    for name, fname in m["stages"].items():
        if name in stages.BINARY:
            continue
        try:
            raw = artifacts.inside(folder, fname, f"manifest.json stages.{name}").read_bytes()
        except OSError as e:
            raise BadInput(f"{folder}: {fname} is missing or unreadable ({e.strerror or e}); dump it again") from None
        cut = len(raw) > MAX_STAGE_BYTES
        if cut:
            raw_cut = raw[:MAX_STAGE_BYTES]
            text = artifacts.decode(raw_cut[: raw_cut.rfind(b"\n") + 1], folder, fname, f"manifest.json stages.{name}")
        else:
            text = artifacts.decode(raw, folder, fname, f"manifest.json stages.{name}")
        out[name] = {
            "text": text,
            "lines": text.count("\n") + (not text.endswith("\n") and bool(text)),
            "cut": cut,
            "bytes": len(raw),
        }
    return out


def _load_map(folder: Path, m: Manifest) -> tuple[SourceMap | None, str]:
    """The source map, or None and why there is none (the page says it)."""
    try:
        return sourcemap.load(folder, m), ""
    except BadInput as e:
        return None, str(e)


def first_line(source: str, smap: Mapping[str, Any]) -> int:  # a SourceMap, or a profile's lines
    """The kernel file's line number of the dump's source stage line 1 (the stage holds the kernel only):
    the offset most of the map's line texts agree on."""
    lines = [s.strip() for s in source.splitlines()]
    where: dict[str, list[int]] = {}
    for i, s in enumerate(lines):
        where.setdefault(s, []).append(i + 1)
    votes: Counter = Counter()
    for e in smap["lines"]:
        if e["file"] != smap["kernel_file"] or not e.get("text"):
            continue
        for j in where.get(e["text"], []):
            votes[e["line"] - j + 1] += 1
    return votes.most_common(1)[0][0] if votes else 1


def links(smap: SourceMap, first: int, source_lines: int) -> dict[str, Any]:
    """The source map as the page uses it: per source-pane line, what it became (stage lines and figures),
    and per stage line, the source-pane lines it came from."""
    machine = smap.get("machine")
    rows: dict[int, dict[str, Any]] = {}
    reverse: dict[str, dict[int, list[int]]] = {}
    elsewhere = 0
    for e in smap["lines"]:
        src = e["line"] - first + 1
        if e["file"] != smap["kernel_file"] or not 0 < src <= source_lines:
            elsewhere += 1
            continue
        figs = sourcemap.figures(e, machine)
        rows[src] = {
            "at": {s: f["at"] for s, f in e["stages"].items()},
            "n": figs["instructions"],
            "spills": figs["spills"],
            "classes": {c: figs[c] for c in CLASSES if figs[c]},
            "layouts": figs["layouts"],
            "convert_layouts": figs["convert_layouts"],
        }
        for s, f in e["stages"].items():
            for ln in f["at"]:
                reverse.setdefault(s, {}).setdefault(ln, []).append(src)
    hot = sorted(rows, key=lambda k: (-rows[k]["n"], k))[:15]
    return {
        "available": True,
        "machine": machine,
        "rows": rows,
        "reverse": reverse,
        "hot": [{"src": k, **rows[k]} for k in hot if rows[k]["n"]],
        "max_n": max((r["n"] for r in rows.values()), default=0),
        "elsewhere": elsewhere,
        "no_line": {s: f["n"] for s, f in (smap.get("no_line") or {}).items()},
        "stages": smap.get("stages") or {},
    }


def resources(m: Manifest) -> list[dict[str, Any]]:
    """The headline figures as cards: label, value, detail, and a 0..1 fill where one makes sense."""
    s: Mapping[str, Any] = m.get("stats") or {}
    occ = s.get("occupancy") or {}
    cards = []
    if m["target"].startswith("cuda"):
        cards.append(
            {
                "label": "registers",
                "value": s.get("registers", "?"),
                "detail": "per thread (ptxas)",
                "fill": (s["registers"] / 255) if isinstance(s.get("registers"), int) else None,
            }
        )
        cards.append(
            {
                "label": "spills",
                "value": f"{s.get('spills', 0)} B",
                "detail": f"{s.get('spill_store_bytes', 0)} B stored, {s.get('spill_load_bytes', 0)} B loaded",
                "bad": bool(s.get("spills")),
            }
        )
    else:
        cards.append(
            {
                "label": "VGPRs",
                "value": s.get("vgpr_count", "?"),
                "detail": f"{s.get('arch_vgprs', '?')} arch + {s.get('acc_vgprs', 0)} acc; "
                f"{s.get('sgpr_count', '?')} SGPRs",
                "fill": None,
            }
        )
        cards.append(
            {
                "label": "spills",
                "value": s.get("spills", 0),
                "detail": "VGPR + SGPR spill count",
                "bad": bool(s.get("spills")),
            }
        )
    cards.append(
        {
            "label": "shared memory",
            "value": s.get("shared_bytes", 0),
            "unit": "bytes",
            "detail": f"{s.get('shared_bytes', 0)} B per block",
        }
    )
    if occ:
        detail = (
            f"{_count(occ['blocks_per_sm'], 'block')}, {_count(occ['warps_per_sm'], 'warp')} per SM"
            if "blocks_per_sm" in occ
            else f"{_count(occ.get('waves_per_simd'), 'wave')} per SIMD"
        )
        cards.append(
            {
                "label": "occupancy",
                "value": occ["occupancy"],
                "unit": "share",
                "detail": f"{detail}; limited by {occ['limited_by']}",
                "fill": occ["occupancy"],
            }
        )
    cards.append({"label": "warps", "value": s.get("num_warps", "?"), "detail": "per block"})
    # the view prints a value of a "unit" with the terminal's formatters (views/console)
    return [{"fill": None, "bad": False, "unit": "", **c} for c in cards]


def _count(n: Any, word: str) -> str:
    """'1 block', '2 blocks'."""
    return f"{n} {word}" + ("" if n == 1 else "s")


def charts(s: Stats) -> list[dict[str, Any]]:
    """Instruction mix per stage, as bar charts: [{"title", "bars": [[label, count]]}] (empty bars dropped)."""
    out: list[dict[str, Any]] = []
    if sass := s.get("sass"):
        out.append(
            {
                "title": f"SASS: {sass['instructions']} instructions by class",
                "bars": [[k, v] for k, v in sass["classes"].items()],
            }
        )
        out.append({"title": "SASS: top opcodes", "bars": [[k, v] for k, v in sass["top"].items()]})
    if ptx := s.get("ptx"):
        ops = [[k, v] for k, v in ptx.items() if isinstance(v, int)]
        widths = [
            [f"{kind} {bits}b", n]
            for kind in ("global_load", "global_store", "shared_load", "shared_store")
            if isinstance(table := ptx.get(kind), dict)
            for bits, n in table.items()
        ]
        out.append({"title": "PTX: key operations", "bars": ops})
        out.append({"title": "PTX: memory ops by width (bits per thread)", "bars": widths})
    if a := s.get("amdgcn"):
        out.append(
            {
                "title": f"AMDGCN: {a['instructions']} instructions",
                "bars": [
                    [k, a[k]]
                    for k in ("mfma", "wmma", "lds_load", "lds_store", "async_copy_to_lds", "barrier", "scratch_ops")
                ],
            }
        )
        out.append({"title": "AMDGCN: top opcodes", "bars": [[k, v] for k, v in a["top"].items()]})
    if t := s.get("ttgir"):
        out.append(
            {"title": "TTGIR ops", "bars": [[k, v] for k, v in t.items() if isinstance(v, int) and k != "num_warps"]}
        )
    for c in out:
        c["bars"] = [b for b in c["bars"] if b[1]]
        c["max"] = max((b[1] for b in c["bars"]), default=0)
    return [c for c in out if c["bars"]]


def pass_diffs(folder: Path, m: Manifest) -> list[dict[str, Any]]:
    """Every recorded pass with its change counts (the aligned diff's, as `irscope passes` says them: a
    renumbering of values is no change), and for those that changed the IR, the unified diff (debug
    locations dropped) against the IR before it."""
    records, afters, first = passes_mod.load(folder, m)
    out: list[dict[str, Any]] = []
    before = first
    budget = DIFF_BUDGET
    for rec, after in zip(records, afters):
        al = passcounts.alignment(rec, before, after)  # +/- lines as `irscope passes` counts and shows them
        if al is not None:
            rec = dataclasses.replace(rec, added=al.added, removed=al.removed)
        item: dict[str, Any] = {
            "index": rec.index,
            "stage": rec.stage,
            "name": rec.name,
            "arg": rec.arg,
            "added": rec.added,
            "removed": rec.removed,
            "diff": None,
            "cut": False,
            "left_out": False,
        }
        if after is not None and rec.changed and before is not None:
            if budget <= 0:
                item["left_out"] = True
            else:
                diff = (
                    passcounts.unified(al)
                    if al is not None
                    else list(
                        difflib.unified_diff(
                            passes_mod.normalized_lines(before), passes_mod.normalized_lines(after), lineterm="", n=3
                        )
                    )[2:]
                )
                item["cut"] = len(diff) > MAX_DIFF_LINES or any(len(x) > MAX_LINE_CHARS for x in diff)
                item["diff"] = [x[:MAX_LINE_CHARS] for x in diff[:MAX_DIFF_LINES]]
                budget -= sum(len(x) for x in item["diff"])
        if after is not None:
            before = after
        out.append(item)
    return out


def picker_titles(models: list[dict[str, Any]]) -> None:
    """Each dump's title in the picker says what tells it from the other dumps of its kernel and target:
    the arguments and options that differ among them ('matmul_kernel · cuda:90 · BLOCK_SIZE_M=64
    num_stages=4'), not only the kernel's name; a dump alone keeps num_warps and num_stages; two dumps
    alike in all of it are told apart by their folders' names."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for d in models:
        groups.setdefault((d["kernel"], d["target"]), []).append(d)
    for group in groups.values():
        keys = list(dict.fromkeys(k for d in group for k in d["facets"]))
        differ = [k for k in keys if len({d["facets"].get(k) for d in group}) > 1]
        for d in group:
            shown = differ or [k for k in ("num_warps", "num_stages") if k in d["facets"]]
            what = " ".join(f"{k}={d['facets'][k]}" if k in d["facets"] else f"no {k}" for k in shown)
            d["title"] += f" · {what}" if what else ""
        titles = [d["title"] for d in group]
        for d in group:
            if titles.count(d["title"]) > 1:
                d["title"] += f" · {Path(d['folder']).name}"


def report_model(folders: list[Path], with_layouts: bool = True) -> dict[str, Any]:
    """The page for `irscope report DIR...`: one entry per dump folder found.

    A damaged dump among several (one bad folder of a capture's -o) does not cost the others: it is
    left out and named in `skipped` (the page and stderr say so, one line each). A folder named on
    the command line that is itself damaged, or a search where every dump is damaged, is BadInput."""
    found = find_dumps(folders)
    named = {Path(f) for f in folders}
    models: list[dict[str, Any]] = []
    skipped: list[str] = []
    for f in found:
        try:
            models.append(dump_model(f, len(models), with_layouts))
        except BadInput as e:
            if f in named or len(found) == 1:
                raise
            skipped.append(str(e))
    if not models:
        raise BadInput(
            f"no dump could be read: {skipped[0]}" + (f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else "")
        )
    picker_titles(models)
    kernels = list(dict.fromkeys(m["kernel"] for m in models))
    return {
        "kind": "dumps",
        "title": "irscope report: " + ", ".join(kernels[:3]) + (" ..." if len(kernels) > 3 else ""),
        "dumps": models,
        "skipped": skipped,
    }
