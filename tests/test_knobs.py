"""irscope/knobs.py is the one table of knobs: docs/guides/knobs.md lists each, and no other module reads one."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from irscope import knobs

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "irscope"
GUIDE = ROOT / "docs" / "guides" / "knobs.md"


def _readme_table() -> list[tuple[str, str, str]]:
    text = GUIDE.read_text()
    section = text.split("# Environment knobs", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            rows.append((cells[0].strip("`"), cells[1], cells[2]))
    return rows


def test_every_knob_is_in_the_guide_table_as_knobs_py_says_it():
    readme = _readme_table()
    assert readme == knobs.table(), "docs/guides/knobs.md's 'Environment knobs' table differs from irscope/knobs.py's"
    names = {name for name, _, _ in readme}
    assert {k.name for k in knobs.KNOBS} | {s.name for s in knobs.SETTINGS} <= names


def test_the_knobs_guide_is_the_one_table_under_its_title():
    """The guide's title comes first and no other heading splits the table (a row under a later heading would
    be read as part of another section); the README and the other guides link to it rather than copy it."""
    text = GUIDE.read_text()
    assert text.startswith("# Environment knobs\n")
    table_end = text.rindex("\n| ")
    between = text[:table_end]
    assert "\n## " not in between and between.count("\n### ") == 0
    assert "(docs/guides/knobs.md)" in (ROOT / "README.md").read_text()


def _environ_reads(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, name) of every os.environ / os.getenv access whose key is a string constant."""
    found = []
    for node in ast.walk(tree):
        key = None
        if isinstance(node, ast.Subscript) and _is_environ(node.value):
            key = node.slice
        elif (
            isinstance(node, ast.Call)
            and node.args
            and (
                (
                    isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("get", "pop", "setdefault")
                    and _is_environ(node.func.value)
                )
                or (isinstance(node.func, ast.Attribute) and node.func.attr == "getenv")
            )
        ):
            key = node.args[0]
        elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):
            key = node.left
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            found.append((node.lineno, key.value))
    return found


def _is_environ(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "environ"


def test_no_module_but_knobs_reads_an_irscope_variable():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "knobs.py":
            continue
        rel = path.relative_to(ROOT)
        tree = ast.parse(path.read_text(), str(path))
        wrong += [f"{rel}:{line}: {name}" for line, name in _environ_reads(tree) if name.startswith("IRSCOPE_")]
        # a name built at run time, or read through a helper: the text itself, outside knobs.py
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and any(
                    isinstance(a, ast.Constant)
                    and isinstance(a.value, str)
                    and re.fullmatch(r"IRSCOPE_[A-Z_]+", a.value)
                    for a in node.args
                )
                and not _writes_launcher(node)
            ):
                wrong.append(f"{rel}:{node.lineno}: {ast.unparse(node)[:60]}")
    assert not wrong, wrong


def _writes_launcher(node: ast.Call) -> bool:
    return isinstance(node.func, ast.Attribute) and node.func.attr == "write_text"


def test_the_check_sees_an_environ_read():
    tree = ast.parse("import os\nos.environ.get('IRSCOPE_X')\nos.environ['IRSCOPE_Y']\nos.getenv('IRSCOPE_Z', '')\n")
    assert [n for _, n in _environ_reads(tree)] == ["IRSCOPE_X", "IRSCOPE_Y", "IRSCOPE_Z"]


def test_knobs_are_read_when_used(monkeypatch, tmp_path):
    monkeypatch.setenv("IRSCOPE_CACHE_DIR", str(tmp_path))
    assert knobs.cache_dir() == tmp_path
    monkeypatch.setenv("IRSCOPE_CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert knobs.cache_dir() == tmp_path / "xdg" / "irscope"
    monkeypatch.setenv("IRSCOPE_STANDIN_OP_S", "-1")
    assert knobs.STANDIN_OP_S.get() == 0.5
    monkeypatch.setenv("IRSCOPE_STANDIN_OP_S", "2")
    assert knobs.STANDIN_OP_S.get() == 2.0
    monkeypatch.setenv("IRSCOPE_INTERPRET_TOTAL_S", "nope")
    assert knobs.INTERPRET_TOTAL_S.get() == 120.0 and knobs.INTERPRET_TOTAL_S.given(3.0) == 3.0
    monkeypatch.setenv("IRSCOPE_RECIPES", f"{tmp_path}{__import__('os').pathsep}")
    assert knobs.RECIPES.get() == (tmp_path,)


def test_the_load_timeout_is_a_process_wide_setting():
    from irscope.errors import BadInput
    from irscope.kernel import loader

    try:
        loader.set_load_timeout(5)
        assert knobs.LOAD_TIMEOUT.get() == 5.0
        with pytest.raises(BadInput, match="--load-timeout"):
            knobs.LOAD_TIMEOUT.set(float("inf"))
    finally:
        knobs.LOAD_TIMEOUT.reset()
    assert knobs.LOAD_TIMEOUT.get() == loader.DEFAULT_LOAD_TIMEOUT == 30.0
