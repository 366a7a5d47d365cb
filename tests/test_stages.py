"""The stage registry (irscope/stages.py): one row per stage, and nothing else in irscope lists stages.

Issue #26's "done when": string literals naming stages sit in a collection literal of two or more
stage names in irscope/stages.py and one adapter module only (the stages a Triton version or kernel
kind has stay with the adapter); everywhere else asks the registry by meaning.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from irscope import stages
from irscope.artifacts import lineinfo
from irscope.compare import normalize
from tests.helpers import VECTOR_ADD, compile_example

PACKAGE = Path(__file__).resolve().parent.parent / "irscope"
STAGE_NAMES = {s.name for s in stages.ROWS}
LANGUAGES = {s.language for s in stages.ROWS}
ADD_SIG = "*fp32, *fp32, *fp32, i32:16, 1024"


def _stage_lists(tree: ast.Module) -> list[tuple[int, list[str]]]:
    """Collection literals (list, tuple, set, dict keys) naming two or more stages.

    A language table ({"mlir": ..., "ptx": ...}: every string a stage language, some of them no
    stage's name) is keyed by language, not by stage: the registry's `language` column reads it.
    """
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            elts = node.elts
        elif isinstance(node, ast.Dict):
            elts = [k for k in node.keys if k is not None]
        else:
            continue
        strings = [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        named = [s for s in strings if s in STAGE_NAMES]
        if len(named) < 2:
            continue
        if all(s in LANGUAGES for s in strings) and any(s not in STAGE_NAMES for s in strings):
            continue
        found.append((node.lineno, named))
    return found


def test_stage_names_are_listed_only_in_the_registry_and_one_adapter_module():
    where: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).as_posix()
        for line, named in _stage_lists(ast.parse(path.read_text(), str(path))):
            where.setdefault(rel, []).append(f"{line}: {named}")
    others = {m: hits for m, hits in where.items() if m != "irscope/stages.py"}
    adapter = [m for m in others if m.startswith("irscope/adapter/")]
    assert len(adapter) <= 1, {m: others[m] for m in adapter}
    rest = {m: hits for m, hits in others.items() if m not in adapter}
    assert not rest, f"stage lists outside irscope/stages.py: read the registry instead: {rest}"


def test_the_scan_sees_a_stage_list_and_lets_a_language_table_pass():
    code = (
        'A = ("ttgir", "ptx")\nB = {"sass": 1, "amdgcn": 2}\nC = {"mlir": 1, "ptx": 2}\n'
        'D = ("source", "kind")\nif s in ("cubin", "hsaco"): pass\n'
    )
    assert [line for line, _ in _stage_lists(ast.parse(code))] == [1, 2, 5]


def test_rows_are_unique_and_well_formed():
    assert len(STAGE_NAMES) == len(stages.ROWS)
    keys = [s.triton_key for s in stages.ROWS if s.triton_key]
    assert len(keys) == len(set(keys))
    for s in stages.ROWS:
        assert s.vendor in (None, "cuda", "hip"), s
        assert s.language in ("python", "mlir", "llvm", "ptx", "sass", "amdgcn", "binary"), s
        assert s.text == (s.language != "binary"), s
        assert s.description, s
        assert not s.pinnable or (s.language == "mlir" and s.passes), s  # pins compile onward from MLIR
        assert s.text or not (s.mapped or s.lexer or s.page or s.launch_check), s


def test_a_real_cuda_dump_writes_only_registry_stages_of_its_vendor():
    art = compile_example(VECTOR_ADD, ADD_SIG)
    assert set(art.stages) <= STAGE_NAMES, set(art.stages) - STAGE_NAMES
    for name, content in art.stages.items():
        row = stages.get(name)
        assert row.vendor in (None, "cuda"), name
        assert isinstance(content, str) == row.text, name
    assert {"source", "frontend", "ttir", "ttgir", "llir", "ptx", "cubin", "sass"} <= set(art.stages)
    # every stage the source map counts is a text stage the registry says is mapped
    mapped = set(art.source_map["stages"])
    assert mapped and mapped <= set(stages.TEXT) and mapped <= set(stages.MAPPED)
    assert art.source_map["machine"] == stages.MACHINE[0] == "sass"


def test_vendor_stages():
    hip = stages.names(vendor="hip")
    assert "amdgcn" in hip and "hsaco" in hip and "ptx" not in hip
    assert stages.names(vendor="cuda") == ("ptx", "cubin", "sass")  # pipeline order: the --stage message's
    assert not set(stages.names(vendor=None)) & (set(hip) | set(stages.names(vendor="cuda")))


def test_every_text_stage_has_a_normaliser_and_every_mapped_stage_a_location_parser():
    for name in stages.TEXT:
        assert stages.language(name) in normalize.NORMALIZERS, name
    for name in stages.MAPPED:
        assert stages.get(name).text, name
        assert stages.language(name) in lineinfo.UNITS, name
    for name in stages.MACHINE:
        assert name in stages.MAPPED and stages.get(name).isa, name


def test_a_stage_is_normalised_by_its_language_and_an_unknown_one_as_plain_text():
    mlir = "%0 = tt.load %x loc(#loc3)\n"
    assert normalize.normalize("glir", mlir).lines == normalize.mlir(mlir).lines
    assert normalize.normalize("frontend", mlir).lines == normalize.mlir(mlir).lines
    assert normalize.normalize("not-a-stage", "a  \n\nb\n").lines == ["a", "b"]


def test_lookups():
    assert stages.get("nope") is None and stages.language("nope") is None and stages.description("nope") == ""
    assert stages.from_triton("source") == "frontend"  # Triton's "source" is the frontend's TTIR
    assert stages.from_triton("ttgir") == "ttgir" and stages.from_triton("launcher_src") == "launcher_src"
    assert stages.BINARY == ("cubin", "hsaco")
    assert set(stages.MLIR) == {"frontend", "ttir", "glir", "ttgir"}
    assert stages.names(pinnable=True) == ("ttir", "ttgir")
    assert stages.MACHINE == ("sass", "amdgcn", "ptx")
    assert stages.unit("ttgir") == "ops" and stages.unit("sass") == "instructions"
    with pytest.raises(KeyError):
        stages.column("no_such_column")


def test_the_command_lines_stage_choices_are_unchanged():
    """--help lists the same choices in the same order as before the registry (glir, added with Gluon, last)."""
    import click

    from irscope.cli import cli

    def choices(command: str) -> list[str]:
        option = next(p for p in cli.commands[command].params if p.name in ("stage", "stages"))
        assert isinstance(option.type, click.Choice)
        return list(option.type.choices)

    assert choices("dump") == [
        "source",
        "frontend",
        "ttir",
        "ttgir",
        "llir",
        "ptx",
        "cubin",
        "sass",
        "amdgcn",
        "hsaco",
        "glir",
    ]
    assert choices("diff") == ["source", "frontend", "ttir", "ttgir", "llir", "ptx", "sass", "amdgcn", "glir"]
    assert choices("lines") == ["ttir", "ttgir", "llir", "ptx", "sass", "amdgcn", "glir"]
