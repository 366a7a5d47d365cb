"""The one package map (docs/architecture.md's "Packages" table) holds to the tree: every package and
top-level module of irscope has its row, every row names something that exists, and every module of a
package is named (in backticks) in its package's row. Nothing else in the repository keeps a map of the
packages, and no text names the `core` package that was split into kernel/, artifacts/ and compile/."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "irscope"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
# modules that are an entry point rather than a part: `python -m irscope` and the console script
ENTRY_POINTS = {"__init__", "__main__"}


def _rows() -> dict[str, str]:
    """The Packages table: the row's name (`adapter/` -> adapter, `jobs.py` -> jobs) -> the row's text."""
    text = ARCHITECTURE.read_text()
    section = text.split("## Packages", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\|\s*`([\w.]+?)(/|\.py)?`\s*\|", line)
        if m:
            rows[m.group(1)] = line
    return rows


def _tree() -> dict[str, list[str]]:
    """Top-level names of irscope (packages and modules) -> the modules of a package ([] for a module)."""
    out = {}
    for path in sorted(PACKAGE.iterdir()):
        if path.is_dir() and (path / "__init__.py").exists():
            out[path.name] = sorted(p.stem for p in path.glob("*.py") if p.stem != "__init__")
        elif path.suffix == ".py" and path.stem not in ENTRY_POINTS:
            out[path.stem] = []
    return out


def test_every_package_and_top_level_module_has_a_row_and_every_row_exists():
    rows, tree = _rows(), _tree()
    assert set(tree) - set(rows) == set(), "packages or modules with no row in docs/architecture.md"
    assert set(rows) - set(tree) == set(), "rows in docs/architecture.md naming nothing in irscope/"


def test_every_module_of_a_package_is_named_in_its_row():
    rows, tree = _rows(), _tree()
    missing = {
        name: [m for m in modules if f"`{m}`" not in rows.get(name, "") and f"`{m}." not in rows.get(name, "")]
        for name, modules in tree.items()
    }
    assert {k: v for k, v in missing.items() if v} == {}


def test_no_stale_names_of_the_core_package():
    """`core` was split into kernel/, artifacts/ and compile/; a comment naming core.x or core/x.py sends a
    reader to a file that does not exist."""
    pattern = re.compile(r"(?<![\w.])(?<!tensor )core(?:[./][a-z_]+|'s\b|\b(?= never| calls))")
    hits = []
    for path in [
        *PACKAGE.rglob("*.py"),
        *(ROOT / "docs").rglob("*.md"),
        ROOT / "README.md",
        *(ROOT / "benchmarks").glob("*.py"),
    ]:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line) and "tl.core" not in line:
                hits.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert hits == []
