"""The workspace an MCP server is given at start: every path a tool is handed is resolved against it
(relative paths from the root, symlinks followed) and refused when it ends outside it.

Kernel files and scripts are code: they run, as for a user who typed the command, but only from inside
the root. Spec files, dump folders, recipe files and arguments are data; a spec file names the kernel
file it replays, and that file must lie inside the root too (else the spec would run code from outside).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from irscope.errors import BadInput
from irscope.kernel import specfile

DEFAULT_OUT = "irscope-out"  # as the CLI's -o default, under the root


@dataclass(frozen=True)
class Workspace:
    """The root (absolute, symlinks resolved) and the checks against it."""

    root: Path

    @classmethod
    def at(cls, root: str | os.PathLike[str]) -> Workspace:
        path = Path(root).expanduser()
        if not path.is_dir():
            raise BadInput(f"--root {root}: not a folder; give the workspace the server may read and write")
        return cls(path.resolve())

    def path(self, text: str | os.PathLike[str], keyword: str) -> Path:
        """`text` resolved inside the root (relative to it); BadInput naming `keyword` when it is outside,
        through a symlink or not, or holds a NUL."""
        raw = os.fspath(text)
        if not raw or "\0" in raw:
            raise BadInput(f"{keyword}={raw!r}: give a path inside the workspace {self.root}")
        given = Path(raw).expanduser()
        resolved = (given if given.is_absolute() else self.root / given).resolve()
        if resolved != self.root and self.root not in resolved.parents:
            raise BadInput(
                f"{keyword}={raw}: outside the workspace {self.root} (the server reads and writes only inside it)"
            )
        return resolved

    def existing(self, text: str | os.PathLike[str], keyword: str, what: str) -> Path:
        """A path inside the root that exists (`what` names what was expected: "a kernel file", ...)."""
        path = self.path(text, keyword)
        if not path.exists():
            raise BadInput(f"{keyword}={text}: no such file or folder in the workspace {self.root}; give {what}")
        return path

    def kernel(self, text: str, keyword: str = "kernel") -> Path:
        """A kernel file or a spec file inside the root; a spec file's own kernel file must be inside it too."""
        path = self.existing(text, keyword, "a kernel file (.py) or a spec file (.json)")
        if path.suffix == ".json" and path.is_file():
            doc = specfile.read_spec_document(path)
            self.path(doc["file"], f"{keyword} ({path.name}'s file)")
        return path

    def folder(self, text: str, keyword: str) -> Path:
        """A dump folder inside the root (a folder holding manifest.json)."""
        path = self.existing(text, keyword, "a dump folder (the folder a dump returned)")
        if not path.is_dir():
            raise BadInput(f"{keyword}={text}: not a folder; give a dump folder (the folder a dump returned)")
        return path

    def out(self, text: str | None) -> Path:
        """The output folder: inside the root (default ROOT/irscope-out, as the CLI's -o default)."""
        return self.path(text or DEFAULT_OUT, "out")

    def recipe(self, text: str | None) -> str | None:
        """A recipe: a shipped name (h100, ...) as it is, a path confined to the root."""
        if text is None or ("/" not in text and os.sep not in text and not text.endswith(".toml")):
            return text
        return str(self.existing(text, "recipe", "a recipe file (.toml) or a recipe's name"))
