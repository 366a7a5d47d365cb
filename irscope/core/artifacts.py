"""Artifacts: everything one compile produced, and how it is laid out on disk.

Layout of `-o DIR` (kernels, targets and settings never overwrite each other):

    DIR/<kernel>/<target>-<key8>/
        manifest.json          what was compiled, with which settings, stage files, stats
        <kernel>.py            the kernel's Python source
        <kernel>.frontend      the IR straight out of the frontend (before any pass)
        <kernel>.ttir  .ttgir  .llir  .ptx  .cubin  .sass      (NVIDIA)
        <kernel>.ttir  .ttgir  .llir  .amdgcn  .hsaco          (AMD)
        passes/                with --passes: the IR after every MLIR pass + index.json
        compile.log            anything the compiler printed, when it printed something

A dump folder is written under a temporary name and renamed into place, so a
failed or interrupted dump never leaves a half-written folder.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from irscope.errors import BadInput

MANIFEST = "manifest.json"
BINARY_STAGES = {"cubin", "hsaco"}

# Triton's asm key -> irscope stage name. Triton calls the frontend's output "source".
TRITON_STAGE_NAMES = {"source": "frontend"}


@dataclass
class PassRecord:
    index: int
    stage: str
    name: str          # e.g. TritonGPUCoalesce
    arg: str           # e.g. tritongpu-coalesce
    added: int = 0     # lines added by this pass (after vs before)
    removed: int = 0
    file: str = ""     # passes/NNN-Name.mlir (IR after the pass), relative to the dump folder

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed)


@dataclass
class Artifacts:
    kernel: str
    file: str
    target: str
    target_reason: str
    signature: str
    args: dict[str, str]                 # parameter -> spec element (replayable)
    options: dict[str, Any]              # effective options, as Triton compiled them
    user_options: dict[str, Any]         # what --set (and later recipes) changed
    option_sources: dict[str, str]
    env: dict[str, str]
    stages: dict[str, str | bytes]       # ordered: source, frontend, ttir, ttgir, llir, ptx, cubin, sass
    times_ms: dict[str, float]
    metadata: dict[str, Any]
    triton_version: str
    ptxas_log: str = ""
    compile_log: str = ""
    notes: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    passes: list[PassRecord] | None = None
    pass_texts: list[str] | None = None  # IR after each pass (None where not dumped)
    key: str = ""
    folder: Path | None = None           # set once written
    compiled: Any = None                 # Triton's CompiledKernel (in memory only; for launching on a GPU)
    pins: list[dict[str, Any]] = field(default_factory=list)  # each pin/option set and its check (pins.check)
    recipe: dict[str, Any] | None = None  # {"name", "path", "variant"} of the recipe applied

    def stage_files(self) -> dict[str, str]:
        return {name: stage_filename(self.kernel, name) for name in self.stages}

    def manifest(self) -> dict[str, Any]:
        return {
            "irscope": 1,
            "kernel": self.kernel,
            "file": self.file,
            "target": self.target,
            "target_reason": self.target_reason,
            "signature": self.signature,
            "args": self.args,
            "triton_version": self.triton_version,
            "options": self.options,
            "user_options": self.user_options,
            "option_sources": self.option_sources,
            "env": self.env,
            "stages": self.stage_files(),
            "times_ms": self.times_ms,
            "metadata": self.metadata,
            "stats": self.stats,
            "notes": self.notes,
            "passes": None if self.passes is None else [p.__dict__ for p in self.passes],
            "key": self.key,
            "recipe": self.recipe,
            "pins": self.pins,
        }


def stage_filename(kernel: str, stage: str) -> str:
    return f"{kernel}.py" if stage == "source" else f"{kernel}.{stage}"


def folder_for(out_dir: Path, art: Artifacts) -> Path:
    slug = art.target.replace(":", "")
    return out_dir / art.kernel / f"{slug}-{art.key[:8]}"


def write(art: Artifacts, out_dir: Path) -> Path:
    """Write all files under a temporary name, then rename into place."""
    final = folder_for(out_dir, art)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        write_into(art, tmp)
        _replace_dir(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    art.folder = final
    return final


def write_into(art: Artifacts, folder: Path) -> None:
    for name, content in art.stages.items():
        path = folder / stage_filename(art.kernel, name)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    if art.compile_log.strip():
        (folder / "compile.log").write_text(art.compile_log)
    if art.ptxas_log.strip():
        (folder / "ptxas.log").write_text(art.ptxas_log)
    if art.passes is not None and art.pass_texts is not None:
        pdir = folder / "passes"
        pdir.mkdir()
        for rec, text in zip(art.passes, art.pass_texts):
            header = (f"// irscope: IR after pass {rec.index} {rec.name} ({rec.arg}) in stage {rec.stage}; "
                      f"+{rec.added} -{rec.removed} lines\n")
            (folder / rec.file).write_text(header + (text if text is not None else
                                                     "// (not dumped: the module is translated to LLVM IR next;"
                                                     " see the llir stage)\n"))
        (pdir / "index.json").write_text(json.dumps([p.__dict__ for p in art.passes], indent=1))
    (folder / MANIFEST).write_text(json.dumps(art.manifest(), indent=1, default=str))


def _replace_dir(tmp: Path, final: Path) -> None:
    if final.exists():
        old = final.with_name(f".{final.name}.old.{os.getpid()}")
        os.replace(final, old)
        os.replace(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, final)


def read_manifest(folder: Path) -> dict[str, Any]:
    path = Path(folder) / MANIFEST
    if not path.is_file():

        raise BadInput(f"{folder}: not an irscope dump folder (no {MANIFEST})")
    return json.loads(path.read_text())


def read_stage(folder: Path, manifest: dict[str, Any], stage: str) -> str | bytes:
    path = Path(folder) / manifest["stages"][stage]
    return path.read_bytes() if stage in BINARY_STAGES else path.read_text()
