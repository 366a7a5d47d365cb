"""The README is a landing page and docs/ a site that holds together: the README stays short and shows the two
commands the project decided on (CI's readme lane runs them as written), and every relative link in README.md
and docs/ reaches a file (and a heading, where it names one). `mkdocs build --strict` (CI's docs lane) checks
the same for the built site; these checks run without MkDocs installed."""

from __future__ import annotations

import importlib.util
import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"

SETUP = (
    "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/irscope dump examples/matmul.py --kernel "
    'matmul_kernel --target h100 --signature "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, '
    'i32:1, i32:16, i32:1, i32:16, i32:1, 128, 128, 64, 8"'
)
TESTS = '.venv/bin/pip install -e ".[test]" && .venv/bin/python -m pytest -q -n auto'

FENCE = re.compile(r"^```.*?^```", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _pages() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def _code_blocks(text: str) -> list[str]:
    return [block.split("\n", 1)[1].rsplit("```", 1)[0] for block in FENCE.findall(text)]


def _links(text: str) -> list[str]:
    """Markdown link targets outside code (a `[x](y)` inside backticks or a fence is an example, not a link)."""
    return LINK.findall(INLINE_CODE.sub("", FENCE.sub("", text)))


def _slug(heading: str) -> str:
    """The anchor Python-Markdown's toc extension (MkDocs') gives a heading."""
    text = INLINE_CODE.sub(lambda m: m.group(0).strip("`"), heading)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, re.M)}


def _broken(page: Path) -> list[str]:
    """The relative links of one page that reach no file, or a heading its target lacks."""
    bad = []
    for target in _links(page.read_text()):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            bad.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            bad.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    return bad


def test_the_readme_is_a_landing_page_of_at_most_250_lines():
    lines = README.read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; the reference belongs in docs/guides/"


def test_the_readme_shows_the_two_commands_as_decided():
    blocks = [block.strip() for block in _code_blocks(README.read_text())]
    assert blocks[0] == SETUP, "the README's first command is not the set-up command"
    assert blocks[1] == TESTS, "the README's second command is not the test command"
    heading = README.read_text().index("## The two commands")
    assert heading < README.read_text().index(SETUP) < README.read_text().index(TESTS)


def test_every_relative_link_in_the_readme_and_docs_resolves():
    pages = _pages()
    assert len(pages) > 20 and sum(len(_links(p.read_text())) for p in pages) > 50
    broken = [line for page in pages for line in _broken(page)]
    assert broken == []


def test_links_in_docs_stay_inside_docs():
    """MkDocs publishes docs/ only: a page's link to a repository file outside it would 404 on the site
    (name such files as code, `benchmarks/results/...`)."""
    outside = []
    for page in sorted(DOCS.rglob("*.md")):
        for target in _links(page.read_text()):
            path = target.partition("#")[0]
            if path and not re.match(r"[a-z][a-z0-9+.-]*:", path):
                if DOCS.resolve() not in (page.parent / path).resolve().parents:
                    outside.append(f"{page.relative_to(ROOT)}: {target}")
    assert outside == []


def test_the_link_check_sees_a_broken_link_and_a_missing_heading(tmp_path):
    (tmp_path / "b.md").write_text("# Title: `b`\n\n## Diff by line\n")
    page = tmp_path / "a.md"
    page.write_text(
        "[ok](b.md#diff-by-line) [ok](b.md#title-b) [gone](c.md) [no heading](b.md#nope) `[code](x.md)`\n"
        "```\n[fenced](y.md)\n```\n[web](https://example.com/z.md)\n"
    )
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        assert _broken(page) == ["a.md: c.md (no such file)", "a.md: b.md#nope (no such heading)"]
    finally:
        ROOT = saved


def test_docs_hold_no_run_logs_or_raw_records():
    """Run logs and GPU records live in benchmarks/results/; docs/ is the site."""
    stray = [p.relative_to(ROOT) for p in DOCS.rglob("*") if p.suffix in (".log", ".json")]
    assert stray == []
    assert (ROOT / "benchmarks" / "results" / "history.md").is_file()


def test_column_docstrings_become_lists_for_the_api_pages():
    """docs/hooks/columns.py (the griffe extension mkdocs.yml loads) turns irscope's aligned-column docstrings
    into Markdown lists and escapes what Markdown would read as emphasis or HTML; prose and examples pass."""
    pytest.importorskip("griffe", reason="griffe comes with the docs extra (mkdocstrings[python])")
    spec = importlib.util.spec_from_file_location("columns", DOCS / "hooks" / "columns.py")
    columns = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(columns)
    doc = (
        "Compile one kernel: `irscope dump`.\n\n"
        "kernel     the @triton.jit function, or the path of its file (then `name`\n"
        "           picks the kernel)\n"
        'signature  as --signature: "*fp16:16, i32:16"\n'
        "the rest as irscope.dump, fn(*args) in __init__.\n\n"
        "    irscope.dump(k)  -> Dump"
    )
    assert columns.columns_to_markdown(doc).split("\n") == [
        "Compile one kernel: `irscope dump`.",
        "",
        "- `kernel`: the @triton.jit function, or the path of its file (then `name` picks the kernel)",
        '- `signature`: as --signature: "\\*fp16:16, i32:16"',
        "",
        "the rest as irscope.dump, fn(\\*args) in \\_\\_init\\_\\_.",
        "",
        "    irscope.dump(k)  -> Dump",
    ]
