"""One dump folder read once for the rules: manifest, TTGIR as data, the source map, the machine code."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from irscope import artifacts
from irscope.artifacts import sourcemap
from irscope.errors import BadInput
from irscope.explain import ir
from irscope.explain.model import Where
from irscope.records import Manifest, SourceMap


@dataclass
class Context:
    folder: Path
    manifest: Manifest
    texts: dict[str, list[str]] = field(default_factory=dict)  # stage -> its lines, read on first use

    @property
    def target(self) -> str:
        return self.manifest["target"]

    @property
    def vendor(self) -> str:
        return "amd" if self.target.startswith("hip") else "nvidia"

    @property
    def arch(self) -> int:
        """The CUDA compute capability (90), or the gfx number (942)."""
        digits = re.sub(r"\D", "", self.target.split(":", 1)[-1])
        return int(digits) if digits else 0

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.manifest.get("options") or {})

    @property
    def stats(self) -> dict[str, Any]:
        return dict(self.manifest.get("stats") or {})

    def stage_text(self, stage: str) -> str:
        name = (self.manifest.get("stages") or {}).get(stage)
        if not name:
            return ""
        return artifacts.read_text(self.folder, name, f"manifest.json stages.{stage}")

    @cached_property
    def module(self) -> ir.Module:
        return ir.parse(self.stage_text("ttgir"))

    @cached_property
    def source_map(self) -> SourceMap | None:
        try:
            return sourcemap.load(self.folder, self.manifest)
        except BadInput:  # a folder without a map (or a damaged one): findings name no machine instructions
            return None

    @cached_property
    def kernel_file(self) -> str:
        if self.source_map is not None:
            return self.source_map.get("kernel_file") or ""
        return ""

    @property
    def machine_stage(self) -> str:
        return "amdgcn" if self.vendor == "amd" else "sass"

    def lines_of(self, stage: str) -> list[str]:
        if stage not in self.texts:
            self.texts[stage] = self.stage_text(stage).splitlines()
        return self.texts[stage]

    def entry(self, line: int) -> dict[str, Any] | None:
        if self.source_map is None:
            return None
        for e in self.source_map.get("lines") or []:
            if e.get("line") == line and _same(e.get("file", ""), self.kernel_file):
                return dict(e)
        return None

    def stage_at(self, line: int, stage: str) -> list[tuple[int, str]]:
        """The (stage line, text) a Python line of the kernel file became in `stage`."""
        e = self.entry(line)
        if e is None:
            return []
        text = self.lines_of(stage)
        at = ((e.get("stages") or {}).get(stage) or {}).get("at") or []
        return [(n, text[n - 1].strip()) for n in at if 0 < n <= len(text)]

    def py_line(self, op: ir.Op) -> int:
        """The kernel file's line of an op (the outermost frame in the kernel file: a helper's op names its caller)."""
        for file, line in op.frames:
            if not self.kernel_file or _same(file, self.kernel_file) or file.endswith(Path(self.kernel_file).name):
                return line
        return op.frames[0][1] if op.frames else 0

    def where(self, line: int, ops: list[ir.Op], machine: list[str] | None = None) -> Where:
        e = self.entry(line) or {}
        if machine is None:
            machine = [f"{n}: {t}" for n, t in self.stage_at(line, self.machine_stage)][:6]
        return Where(
            self.kernel_file,
            line,
            str(e.get("text", "")),
            [f"{op.n}: {op.text[:160]}" for op in ops][:4],
            machine,
        )


def _same(a: str, b: str) -> bool:
    return a == b or os.path.realpath(a) == os.path.realpath(b)
