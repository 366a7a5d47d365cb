"""The report's diff page draws the aligned diff (issue #39): stages side by side, row by row, changed
tokens marked inside a line, renamed-only lines faded, equal runs folded, each row linked to its Python
line (map.json) on both sides. Checked in Chromium (skipped only without it)."""

from __future__ import annotations

import pytest

from tests.helpers import CHROMIUM, MATMUL, MATMUL_SIG16, NO_CHROMIUM, compile_example

needs_browser = pytest.mark.skipif(not CHROMIUM.exists(), reason=NO_CHROMIUM)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """matmul on cuda:90 with num_stages 3 and 4, their diff's model and page."""
    from irscope import artifacts
    from irscope.compare import diff
    from irscope.compare.sides import load_side
    from irscope.report import output, pages
    from irscope.views import report as view

    out = tmp_path_factory.mktemp("aligned")
    a = artifacts.write(compile_example(MATMUL, MATMUL_SIG16, sets=("num_stages=3",)), out / "a")
    b = artifacts.write(compile_example(MATMUL, MATMUL_SIG16, sets=("num_stages=4",)), out / "b")
    model = pages.diff_model(diff.compare(load_side("a", a), load_side("b", b)))
    return model, output.write_page(out / "diff.html", view.render(model))


def _stage(model, name):
    return next((i, s) for i, s in enumerate(model["stages"]) if s["stage"] == name)


def test_the_model_carries_aligned_rows_with_marks_and_python_lines(page):
    model, _ = page
    _, s = _stage(model, "ttgir")
    assert s["aligned"] and s["words"][0].startswith("+")
    rows = [r for r in s["rows"] if r[0] != "fold"]
    # the buffers' depth 3 -> 4 is a substitution said once in words: the allocs that differ by it alone are
    # renamed (faded, folded with the equal runs), not changed
    assert "substituted: memdesc 3x128x64xf16 -> 4x128x64xf16 (multi-buffer depth 3 -> 4, 6 lines)" in s["words"]
    flat = [x for r in s["rows"] for x in (r[1] if r[0] == "fold" else [r])]
    alloc = [r for r in flat if "local_alloc" in r[2]]
    assert len(alloc) == 2 and all(r[0] == "renamed" and "3x" in r[2] and "4x" in r[4] for r in alloc)
    (wait,) = [r for r in rows if r[0] == "changed" and "ttg.async_wait" in r[2]]
    (sa, ea), (sb, eb) = wait[5][0], wait[6][0]
    assert (wait[2][sa:ea], wait[4][sb:eb]) == ("2", "4")  # the token that changed, only: {num = 2} -> {num = 4}
    assert wait[7] is not None and wait[8] is not None and wait[7][0] == wait[8][0]  # one Python line on both sides
    folds = [r for r in s["rows"] if r[0] == "fold"]
    assert folds and all(len(f[1]) > 1 and all(x[0] in ("equal", "renamed") for x in f[1]) for f in folds)
    # every changed row is shown (never folded): b's lines marked changed are the stage's +lines
    assert sum(1 for r in rows if r[0] in ("changed", "added")) == s["added"] > 0
    assert sum(1 for r in rows if r[0] in ("changed", "removed")) == s["removed"] > 0


@needs_browser
def test_the_aligned_stage_in_chromium(browser, page):
    model, path = page
    pg = browser.new_page(viewport={"width": 1500, "height": 1000})
    errors, requests = [], []
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("request", lambda r: requests.append(r.url))
    pg.goto(path.resolve().as_uri())
    pg.wait_for_selector("body[data-ready='1']")
    pg.click("nav.tabs button[data-tab='stages']")
    i, s = _stage(model, "ttgir")
    pg.click(f"tr.stage-row[data-i='{i}']")
    table = pg.locator("table.sbs.aligned[data-stage='ttgir']")
    assert table.count() == 1
    shown = [r for r in s["rows"] if r[0] != "fold"]
    for kind, cls in (("changed", "chg"), ("added", "add"), ("removed", "del"), ("renamed", "ren")):
        assert table.locator(f"tr.al.{cls}").count() == sum(1 for r in shown if r[0] == kind), kind
    # changed tokens marked inside the line: the async_wait's count, on each side
    wait = table.locator("tr.al.chg", has_text="ttg.async_wait").first
    assert wait.locator("td.a mark.tok").first.inner_text() == "2"
    assert wait.locator("td.b mark.tok").first.inner_text() == "4"
    # the Python line on both sides, from map.json
    py = wait.locator("td.py")
    assert py.nth(0).inner_text() == py.nth(1).inner_text() != "" and py.nth(0).inner_text().startswith("py ")
    # renamed-only lines faded, changed ones not
    grey = table.locator("tr.al.ren td.b").first.evaluate("e => getComputedStyle(e).color")
    plain = table.locator("tr.al.eq td.b").first.evaluate("e => getComputedStyle(e).color")
    assert grey != plain
    # equal runs folded; a click opens one
    fold = table.locator("tr.al.fold").first
    hidden = int(fold.inner_text().split()[1])
    before = table.locator("tr.al").count()
    fold.click()
    assert table.locator("tr.al").count() == before - 1 + hidden
    # the summary in words first
    words = pg.locator("ul.al-words li").all_inner_texts()
    assert words == s["words"] and any("+2 ttg.async_copy_global_to_local" in w for w in words)
    assert errors == [] and requests == [path.resolve().as_uri()]
    pg.close()
