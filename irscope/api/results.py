"""What the Python API returns: a Dump (one dump folder), a Diff (two dumps compared), a Capture (the
dumps one call compiled) and a Sweep (a sweep's configs). Each reads its folder lazily, has a one-line
repr, and shows the report's page inline in a notebook (_repr_html_); nothing here prints."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from irscope import artifacts, explain
from irscope.api import display
from irscope.artifacts import profiled, sourcemap
from irscope.compare.align import Alignment
from irscope.compare.command import FindingsDiff, match_findings
from irscope.compare.diff import DiffResult, StageDiff
from irscope.compare.sides import load_side
from irscope.compare.summary import StageSummary
from irscope.explain import Finding
from irscope.records import Manifest, Profile, Stats
from irscope.report import model as report_model
from irscope.report import pages
from irscope.views import diff as diff_view


class Stages(Mapping):
    """A dump's stages, name -> text (bytes for binaries: cubin, hsaco), each read from the folder when
    first asked for."""

    def __init__(self, folder: Path, manifest: Manifest):
        self._folder, self._manifest = folder, manifest
        self._read: dict[str, str | bytes] = {}

    def __getitem__(self, name: str) -> str | bytes:
        if name not in self._manifest["stages"]:
            raise KeyError(f"{name!r}: no such stage in this dump; stages: {', '.join(self._manifest['stages'])}")
        if name not in self._read:
            self._read[name] = artifacts.read_stage(self._folder, self._manifest, name)
        return self._read[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._manifest["stages"])

    def __len__(self) -> int:
        return len(self._manifest["stages"])

    def __repr__(self) -> str:
        return f"Stages({', '.join(self)})"


class Dump:
    """One dump folder: what irscope dump writes for a kernel under one set of settings.

    .folder     the folder (manifest.json, every stage, map.json)
    .manifest   manifest.json as a dict (what was compiled, options, stats, pins, notes)
    .stages     name -> text (bytes for binaries), read lazily
    .stats      registers, spills, shared memory, occupancy, instruction mix (manifest["stats"])
    .options    the effective compile options (manifest["options"])
    .lines(n)   what Python line n (or "file.py:n") became in every stage: the source map's entry
    .profile    the profile.json `irscope profile` (irscope.profile) wrote into the folder, or None
    .findings   what `irscope explain` says of it (irscope.explain.Finding: what, where, why, fix)
    """

    def __init__(self, folder: Path | str, manifest: Manifest | None = None, cached: bool | None = None):
        self.folder = Path(folder)
        if manifest is None:  # a folder given by hand: read as diff reads one (the one reader)
            side = load_side("a", self.folder)
            self.folder, manifest = side.folder, side.manifest
        self.manifest: Manifest = manifest
        self.cached = cached
        self.stages = Stages(self.folder, manifest)

    @property
    def kernel(self) -> str:
        return self.manifest["kernel"]

    @property
    def target(self) -> str:
        return self.manifest["target"]

    @property
    def stats(self) -> Stats:
        return self.manifest.get("stats") or {}

    @property
    def options(self) -> dict[str, Any]:
        return self.manifest.get("options") or {}

    @property
    def notes(self) -> list[str]:
        return list(self.manifest.get("notes") or [])

    @property
    def findings(self) -> list[Finding]:
        """The findings of this dump (irscope.explain.findings): read from the folder, no compile."""
        return explain.findings(self.folder, self.manifest)

    @property
    def profile(self) -> Profile | None:
        """What a profile measured (artifacts/profiled's document: "lines" hottest first, "totals", "tool",
        "device"); None when the folder was never profiled. BadInput for a damaged profile.json."""
        return profiled.read(self.folder)

    def lines(self, line: int | str) -> dict[str, Any]:
        """The source map's entry for a line of the kernel (36) or of any file (`"standard.py:43"`):
        {"file", "line", "text", "stages": {stage: {"at": [stage file lines], "units", "ops", ...}}}, as
        `irscope lines DIR --line N --json` gives it. BadInput for a line that produced no code."""
        return sourcemap.find_line(sourcemap.load(self.folder, self.manifest), str(line))

    def html(self, layouts: bool = True) -> str:
        """The report's page of this dump (as irscope report DIR writes it), self-contained."""
        return display.page(report_model.report_model([self.folder], with_layouts=layouts))

    def _repr_html_(self) -> str:
        return display.iframe(self.html(), title=f"irscope report: {self.kernel}")

    def __repr__(self) -> str:
        s: Mapping[str, Any] = self.stats
        figures = [f"{k}={s[k]}" for k in ("registers", "spills", "shared_bytes") if s.get(k) is not None]
        opts = self.options
        shown = [f"{k}={opts[k]}" for k in ("num_warps", "num_stages") if k in opts]
        return f"<irscope.Dump {self.kernel} {self.target} {' '.join(shown + figures)} {self.folder}>"


class StageText(str):
    """A stage's unified diff (a str, as before) with the comparison behind it."""

    stage_diff: StageDiff

    def __new__(cls, text: str, sd: StageDiff) -> StageText:
        self = super().__new__(cls, text)
        self.stage_diff = sd
        return self

    @property
    def added(self) -> int:
        return self.stage_diff.added

    @property
    def removed(self) -> int:
        return self.stage_diff.removed

    @property
    def renamed(self) -> int:
        return self.stage_diff.renamed

    @property
    def moved(self) -> int:
        return self.stage_diff.moved

    @property
    def summary(self) -> StageSummary | None:
        return self.stage_diff.summary

    @property
    def alignment(self) -> Alignment | None:
        return self.stage_diff.alignment


class Diff:
    """Two dumps of one kernel compared, as irscope diff A B does it.

    .json         the document `irscope diff A B --json` prints (schema irscope_diff 1), as a dict
    .stats        the stats that changed: {name: {"a", "b"}}
    .inputs       what went in differently (target, options.*, env.*): {name: {"a", "b"}}
    .equal        no stat, stage or pass differs
    .stage(name)  that stage's unified diff (aligned unless raw=True), "" when equal: a str that also
                  carries .added, .removed, .renamed, .moved, .summary (compare.summary.StageSummary) and
                  .alignment (compare.align.Alignment: the rows, the renaming)
    .summary      {stage: [lines in words]} for the stages that differ: ops added and removed by kind,
                  allocations, classes, loops, registers, barriers (as `irscope diff` prints them)
    .findings     irscope explain's findings matched across the sides (compare.command.FindingsDiff):
                  .appeared (on b only), .went_away (on a only), .both ([(a's, b's)]), .changed
    .result       the compare.diff.DiffResult underneath
    """

    def __init__(self, result: DiffResult, context: int = 3):
        self.result = result
        self.context = context
        self.a, self.b = Dump(result.a.folder, result.a.manifest), Dump(result.b.folder, result.b.manifest)
        self._json: dict[str, Any] | None = None
        self._findings: FindingsDiff | None = None

    @property
    def json(self) -> dict[str, Any]:
        if self._json is None:
            self._json = json.loads(diff_view.diff_json(self.result, self.context))
        return self._json

    @property
    def stats(self) -> Stats:
        return self.json["stats"]

    @property
    def inputs(self) -> dict[str, Any]:
        return self.json["inputs"]

    @property
    def equal(self) -> bool:
        return self.result.equal

    def stage(self, name: str) -> str:
        """The stage's unified diff ('--- a/STAGE ...', '+++ b/STAGE ...', hunks), '' when equal."""
        sd = self.result.stage(name)
        if sd is None:
            have = [s.stage for s in self.result.stages]
            raise KeyError(f"{name!r}: not a text stage of either side; stages: {', '.join(have)}")
        lines = diff_view.unified_lines(self.result, sd, self.context)
        return StageText("\n".join(lines) + "\n" if lines else "", sd)

    @property
    def summary(self) -> dict[str, list[str]]:
        out = {}
        for sd in self.result.stages:
            if not sd.equal:
                out[sd.stage] = sd.summary.words() if sd.summary is not None else [f"+{sd.added} -{sd.removed} lines"]
        return out

    @property
    def findings(self) -> FindingsDiff:
        """The findings that appeared or went away from a to b, matched by Finding.key (read, no compile)."""
        if self._findings is None:
            by_text = self.result.sources_differ  # lines move when the source changed: matched by their text
            self._findings = match_findings(self.a.findings, self.b.findings, by_text=by_text)
        return self._findings

    def html(self) -> str:
        """The diff's page (as irscope diff A B --html writes it)."""
        return display.page(pages.diff_model(self.result))

    def _repr_html_(self) -> str:
        return display.iframe(self.html(), title=f"irscope diff: {self.a.kernel}")

    def __repr__(self) -> str:
        changed = [s.stage for s in self.result.stages if not s.equal]
        return (
            f"<irscope.Diff {self.a.kernel}: {'equal' if self.equal else 'different'}; "
            f"{len(self.result.stats.deltas)} stats changed, {len(changed)} of {len(self.result.stages)} "
            f"stages differ ({', '.join(changed) or 'none'})>"
        )


class Capture(list):
    """The dumps of the kernels one call compiled (a list of Dump, in capture order).

    .stopped    why the call ended early (its exception, one line), or None
    .value      what the call returned
    .notes      what the stand-in GPU did not do (shape-only ops, launches not computed)
    .skipped    {label: why} for autotune configs a launch would reject, and captures that failed
    .run        the capture.records.ScriptRun underneath
    """

    def __init__(self, run: Any, value: Any):
        super().__init__(
            Dump(c.result.folder, c.result.manifest, c.result.cached) for c in run.captures if c.result is not None
        )
        self.run, self.value, self.stopped = run, value, run.stopped
        self.notes = list(run.standin_notes)
        self.skipped = {
            c.label: c.skipped or c.failure or c.problem
            for c in run.captures
            if c.result is None and (c.skipped or c.failure or c.problem)
        }

    def html(self, layouts: bool = True) -> str:
        return display.page(report_model.report_model([d.folder for d in self], with_layouts=layouts))

    def _repr_html_(self) -> str:
        return display.iframe(self.html(), title="irscope capture") if self else "<p>no kernel dumped</p>"

    def __repr__(self) -> str:
        names = ", ".join(d.kernel for d in self)
        return (
            f"<irscope.Capture {len(self)} dump{'s' if len(self) != 1 else ''} ({names}) on {self.run.target.name}"
            + (f"; stopped: {self.stopped}" if self.stopped else "")
            + ">"
        )


class Sweep:
    """A sweep's configs (sweep.engine Config: .label, .values, .status, the dump's stats), best first.

    .configs   every config, in the table's order;  .best  the first usable one (None if none compiled)
    """

    def __init__(self, outcome: Any, title: str = ""):
        self.outcome, self.title = outcome, title
        self.configs = list(outcome.ordered)
        self.best = next((c for c in self.configs if getattr(c, "usable", False)), None)

    def html(self) -> str:
        return display.page(pages.sweep_model(self.configs, self.outcome.timed, self.title))

    def _repr_html_(self) -> str:
        return display.iframe(self.html(), title=f"irscope sweep {self.title}")

    def __repr__(self) -> str:
        best = f"; best {self.best.label}" if self.best is not None else ""
        return f"<irscope.Sweep {self.title}: {len(self.configs)} configs{best}>"


__all__ = ["Capture", "Diff", "Dump", "Stages", "Sweep"]
