"""Every stage irscope knows, one row each: Triton's `add_stages` idea applied to irscope's own knowledge.

A stage is one file of a dump folder: the kernel's Python source, then each output of Triton's
pipeline (and SASS, which irscope disassembles itself). Everything irscope says about a stage by
name (which vendor has it, whether it is text, which stages the source map reads, what the
terminal and the page highlight it as, how a diff normalises it) is read from `ROWS`, so a new
stage is one row here; a new stage in a known language needs nothing else (the normalisers in
compare/normalize.py and the location parsers in artifacts/lineinfo.py are keyed by `language`).

Which stages a given Triton version or kernel kind actually produces (no TTIR for a Gluon kernel)
stays in adapter/: this table says what a stage is, not when it exists.

Order matters: ROWS are in pipeline order (the source map, the vendor lists in messages and the
command-line choices read it). Nothing here imports the rest of irscope: every layer may read it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Stage:
    """One stage: what it is, and what each part of irscope does with it."""

    name: str  # irscope's name: the dump folder's file and the --stage choice
    description: str  # one line for the dump summary's stages table
    vendor: str | None  # "cuda" / "hip": only that backend produces it; None: every backend
    language: str  # python, mlir, llvm, ptx, sass, amdgcn, binary: keys normalisers and parsers
    text: bool  # a text file (False: a binary, read as bytes, never diffed or printed as text)
    triton_key: str | None  # its key in CompiledKernel.asm; None: not one of Triton's outputs
    lexer: str | None = None  # the terminal's syntax colouring: views/lexers.py's name (python: Pygments')
    page: str | None = None  # the report page's highlighter (report.js languages); None: plain text
    pinnable: bool = False  # pins may edit it: Triton can compile onward from an edited file of it
    passes: bool = False  # Triton runs an MLIR pass pipeline in it: its output is the IR after its last pass
    mapped: bool = False  # carries the line locations the source map reads (artifacts/lineinfo.py)
    isa: str | None = None  # "native": a GPU's machine code; "virtual": PTX; None: an IR or no code
    gluon: bool = False  # only a Gluon kernel's compile has it (Triton 3.5+)
    launch_check: bool = False  # compared with the kernel a captured script launched (capture, gpu mode)


ROWS: tuple[Stage, ...] = (
    Stage("source", "the kernel's Python source", None, "python", True, None, lexer="python", page="python"),
    Stage("frontend", "Python -> TTIR (frontend)", None, "mlir", True, "source", lexer="mlir", page="mlir"),
    Stage(
        "ttir",
        "TTIR optimisation",
        None,
        "mlir",
        True,
        "ttir",
        lexer="mlir",
        page="mlir",
        pinnable=True,
        passes=True,
        mapped=True,
    ),
    Stage("glir", "Gluon IR", None, "mlir", True, "glir", lexer="mlir", page="mlir", mapped=True, gluon=True),
    Stage(
        "ttgir",
        "TTIR -> TTGIR (layouts, pipelining)",
        None,
        "mlir",
        True,
        "ttgir",
        lexer="mlir",
        page="mlir",
        pinnable=True,
        passes=True,
        mapped=True,
        launch_check=True,
    ),
    Stage("llir", "TTGIR -> LLVM IR", None, "llvm", True, "llir", lexer="llvm", page="llvm", mapped=True),
    Stage(
        "ptx",
        "LLVM IR -> PTX",
        "cuda",
        "ptx",
        True,
        "ptx",
        lexer="ptx",
        page="ptx",
        mapped=True,
        isa="virtual",
        launch_check=True,
    ),
    Stage("cubin", "PTX -> cubin (ptxas)", "cuda", "binary", False, "cubin"),
    Stage(
        "sass",
        "cubin -> SASS (nvdisasm)",
        "cuda",
        "sass",
        True,
        None,
        lexer="sass",
        page="sass",
        mapped=True,
        isa="native",
    ),
    Stage(
        "amdgcn",
        "LLVM IR -> AMDGCN",
        "hip",
        "amdgcn",
        True,
        "amdgcn",
        lexer="amdgcn",
        page="amdgcn",
        mapped=True,
        isa="native",
        launch_check=True,
    ),
    Stage("hsaco", "AMDGCN -> hsaco (linker)", "hip", "binary", False, "hsaco"),
)

_BY_NAME: dict[str, Stage] = {s.name: s for s in ROWS}
_BY_TRITON_KEY: dict[str, str] = {s.triton_key: s.name for s in ROWS if s.triton_key}
_FIELDS = frozenset(f.name for f in fields(Stage))


class _Any(enum.Enum):
    ANY = "any"


ANY = _Any.ANY  # names()'s default for a column: any value


def names(  # noqa: PLR0913
    *,
    vendor: str | None | _Any = ANY,
    language: str | _Any = ANY,
    text: bool | _Any = ANY,
    pinnable: bool | _Any = ANY,
    passes: bool | _Any = ANY,
    mapped: bool | _Any = ANY,
    isa: str | None | _Any = ANY,
    gluon: bool | _Any = ANY,
    launch_check: bool | _Any = ANY,
) -> tuple[str, ...]:
    """The stages whose row has every value given, in pipeline order.

    Values match exactly: vendor="hip" is the stages only HIP has (amdgcn, hsaco), vendor=None the
    ones every backend has. The readers ask by meaning (text=True, mapped=True), never by a list of names.
    """
    want = {k: v for k, v in locals().items() if v is not ANY}
    return tuple(s.name for s in ROWS if all(getattr(s, k) == v for k, v in want.items()))


def get(name: str) -> Stage | None:
    """The row of a stage, or None for a name irscope does not know (a newer Triton's stage, a hand-edited
    manifest): callers treat an unknown stage as plain text, never fail on it."""
    return _BY_NAME.get(name)


def language(name: str) -> str | None:
    """The stage's language (what its normaliser and location parser are keyed by); None if unknown."""
    row = _BY_NAME.get(name)
    return row.language if row else None


def description(name: str) -> str:
    """The dump summary's line for a stage ('' for one irscope does not know)."""
    row = _BY_NAME.get(name)
    return row.description if row else ""


def column(field: str) -> dict[str, object]:
    """{stage: value} of one column, for the rows that have a value (e.g. column("lexer")): for tables
    another layer looks a stage up in with its own default."""
    if field not in _FIELDS:
        raise KeyError(field)
    return {s.name: getattr(s, field) for s in ROWS if getattr(s, field) is not None}


def from_triton(key: str) -> str:
    """irscope's name for a key of Triton's CompiledKernel.asm (Triton calls the frontend's output
    "source"; irscope's "source" is the kernel's Python file). An unknown key is kept as it is."""
    return _BY_TRITON_KEY.get(key, key)


def unit(name: str) -> str:
    """What the source map counts one of in a stage: instructions (LLVM IR and the assemblies), else ops."""
    return "instructions" if language(name) in ("llvm", "ptx", "sass", "amdgcn") else "ops"


TEXT: tuple[str, ...] = names(text=True)
BINARY: tuple[str, ...] = names(text=False)
MLIR: tuple[str, ...] = names(language="mlir")
MAPPED: tuple[str, ...] = names(mapped=True)  # the source map's stages, in pipeline order
# the first of these a source map has is the one whose instructions its tables count: a GPU's own
# machine code, else PTX
MACHINE: tuple[str, ...] = names(isa="native") + names(isa="virtual")
# the command line's --stage choices: every kernel's stages in pipeline order, then the Gluon-only ones
CHOICES: tuple[str, ...] = names(gluon=False) + names(gluon=True)
