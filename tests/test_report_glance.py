"""The report reads at a glance (issue #38, item 6), checked on real dumps of examples/matmul.py for
cuda:90 in Debian's Chromium: the notes folded into one line that opens, the terminal's units on the diff
and sweep pages, a picker and titles that say what differs, a wide resizable Python pane that wraps
instead of scrolling sideways, layout pictures with axes and a legend, the best config first, and
"1 block" (not "1 blocks") on the page and in the terminal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import CHROMIUM, EXAMPLES, MATMUL, MATMUL_SIG16, NO_CHROMIUM, compile_example, run_in

needs_browser = pytest.mark.skipif(not CHROMIUM.exists(), reason=NO_CHROMIUM)


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    """examples/matmul.py for cuda:90 at num_stages=3 and num_stages=4 (128x128x64 tiles: 96 KiB and 128 KiB
    of shared memory, so the second fits one block per SM)."""
    from irscope import artifacts

    out = tmp_path_factory.mktemp("glance")
    return {
        n: artifacts.write(compile_example(MATMUL, MATMUL_SIG16, sets=(f"num_stages={n}",)), out / f"ns{n}")
        for n in (3, 4)
    }


def _manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


@pytest.fixture(scope="module")
def pages(dumps, tmp_path_factory):
    """The report of both dumps and the diff page of a diff made from Python (two folders: no labels but
    the folders' names)."""
    import irscope
    from irscope.report import output
    from irscope.views import report as view

    out = tmp_path_factory.mktemp("glance-pages")
    d = irscope.diff(dumps[3], dumps[4])
    return {
        "report": out / "report.html",
        "report_line": view.write_dumps([dumps[3], dumps[4]], out / "report.html"),
        "diff": output.write_page(out / "diff.html", d.html()),
        "diff_result": d.result,
    }


def _open(browser, path: Path, width: int = 1500, height: int = 900):
    pg = browser.new_page(viewport={"width": width, "height": height})
    errors: list[str] = []
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(path.resolve().as_uri())
    pg.wait_for_selector("body[data-ready='1']")
    return pg, errors


# ---------------------------------------------------------------- the model and the terminal


def test_diff_title_says_what_differs(pages):
    from irscope.report import pages as report_pages

    result = pages["diff_result"]
    assert result.a.label == str(result.a.folder)  # made from Python: the sides' labels are folders
    assert report_pages.diff_model(result)["title"] == "matmul_kernel: num_stages=3 vs num_stages=4"


def test_picker_names_what_tells_the_dumps_apart(dumps):
    from irscope.report import model

    m = model.report_model([dumps[3], dumps[4]], with_layouts=False)
    titles = [d["title"] for d in m["dumps"]]
    assert titles == [
        "matmul_kernel · cuda:90 · num_stages=3",
        "matmul_kernel · cuda:90 · num_stages=4",
    ]
    alone = model.report_model([dumps[3]], with_layouts=False)["dumps"][0]["title"]
    assert alone == "matmul_kernel · cuda:90 · num_warps=4 num_stages=3"  # alone: its warps and stages


def test_one_block_in_the_terminal_and_on_the_card(dumps):
    from irscope.report import model
    from irscope.views import dump as dump_view

    m = _manifest(dumps[4])
    occ = m["stats"]["occupancy"]
    assert occ["blocks_per_sm"] == 1  # 128 KiB of shared memory: one block per SM
    line = next(x for x in dump_view.resource_lines(m) if x.startswith("occupancy"))
    assert "(1 block, 4 warps per SM;" in line, line
    card = next(c for c in model.resources(m) if c["label"] == "occupancy")
    assert card["detail"].startswith("1 block, 4 warps per SM;")
    three = next(x for x in dump_view.resource_lines(_manifest(dumps[3])) if x.startswith("occupancy"))
    assert "(2 blocks, 8 warps per SM;" in three


# ---------------------------------------------------------------- in the browser


@needs_browser
def test_notes_fold_into_one_line_that_opens(browser, pages, dumps):
    pg, errors = _open(browser, pages["report"])
    notes = _manifest(dumps[3])["notes"]
    assert len(notes) >= 3
    details = pg.locator("#d0 details.notes")
    summary = details.locator("summary")
    assert f"{len(notes)} compile notes" in summary.inner_text()
    assert summary.bounding_box()["height"] < 24  # one line
    first = details.locator(".note", has_text=notes[0]).first
    assert not first.is_visible() and details.get_attribute("open") is None
    summary.click()
    assert first.is_visible() and first.inner_text() == f"note: {notes[0]}"
    assert details.locator(".note.mono").inner_text() == _manifest(dumps[3])["signature"]
    # the tabs come right after the meta line and the one line of notes
    nav = pg.locator("#d0 nav.tabs").bounding_box()
    summary.click()
    meta = pg.locator("#d0 > .meta").bounding_box()
    assert pg.locator("#d0 nav.tabs").bounding_box()["y"] < nav["y"]
    assert pg.locator("#d0 nav.tabs").bounding_box()["y"] - (meta["y"] + meta["height"]) < 40
    assert errors == []
    pg.close()


@needs_browser
def test_diff_page_units_and_title(browser, pages, dumps):
    from irscope.views.console import fmt_bytes, fmt_share

    pg, errors = _open(browser, pages["diff"])
    assert pg.title() == "matmul_kernel: num_stages=3 vs num_stages=4"
    assert pg.locator("header h1").inner_text() == "matmul_kernel: num_stages=3 vs num_stages=4"
    sa, sb = (_manifest(dumps[n])["stats"] for n in (3, 4))
    row = pg.locator("table.stats tr[data-stat='shared_bytes'] td")
    cells = row.all_inner_texts()
    assert cells[1:3] == [fmt_bytes(sa["shared_bytes"]), fmt_bytes(sb["shared_bytes"])] == ["96.0 KiB", "128.0 KiB"]
    assert cells[3] == "+32.0 KiB (+33%)"
    occ = pg.locator("table.stats tr[data-stat='occupancy.occupancy'] td").all_inner_texts()
    want = [fmt_share(s["occupancy"]["occupancy"]) for s in (sa, sb)]
    assert occ[1:3] == want and all(x.endswith("%") for x in want)
    table = pg.locator("table.stats").inner_text()
    assert str(sa["shared_bytes"]) not in table and str(sa["occupancy"]["occupancy"]) not in table
    assert errors == []
    pg.close()


@needs_browser
def test_picker_options_tell_configs_apart(browser, pages):
    pg, errors = _open(browser, pages["report"])
    options = pg.locator("#dump-pick option").all_inner_texts()
    assert len(set(options)) == 2 and [o.rsplit(" · ", 1)[-1] for o in options] == ["num_stages=3", "num_stages=4"]
    # num_stages=4: one block per SM, said so on its occupancy card
    pg.select_option("#dump-pick", index=1)
    pg.click("#d1 nav.tabs button[data-tab='figures']")
    card = pg.locator("#d1 .card", has=pg.locator(".l", has_text="occupancy"))
    assert card.locator(".d").inner_text().startswith("1 block, 4 warps per SM;")
    assert "1 blocks" not in pg.locator("body").inner_text()
    assert errors == []
    pg.close()


@needs_browser
def test_python_pane_fits_wraps_and_resizes(browser, pages, dumps):
    pg, errors = _open(browser, pages["report"])
    src = pg.locator("#d0 .pane[data-pane='0']")
    scroller = src.locator(".scroller")

    def no_sideways():
        return scroller.evaluate("s => s.scrollWidth <= s.clientWidth")

    source = (dumps[3] / "matmul_kernel.py").read_text().splitlines()
    longest = max(range(len(source)), key=lambda i: len(source[i])) + 1
    width = src.bounding_box()["width"]
    assert width > pg.locator("#d0 .pane[data-pane='1']").bounding_box()["width"]  # the widest pane
    assert no_sideways() and src.locator(".ln").count() == len(source)  # every line, none cut
    assert src.locator(f".ln[data-n='{longest}'] .code").inner_text() == source[longest - 1]
    # dragged 300 px narrower: long lines wrap (a row taller than one line), still nothing sideways
    bar = pg.locator("#d0 .splitter").bounding_box()
    x, y = bar["x"] + bar["width"] / 2, bar["y"] + 100
    pg.mouse.move(x, y)
    pg.mouse.down()
    pg.mouse.move(x - 150, y)
    pg.mouse.move(x - 300, y)
    pg.mouse.up()
    narrow = src.bounding_box()["width"]
    assert abs(narrow - (width - 300)) < 4, (width, narrow)
    assert no_sideways() and src.locator(f".ln[data-n='{longest}']").bounding_box()["height"] > 30
    # the keyboard moves it too
    pg.locator("#d0 .splitter").focus()
    pg.keyboard.press("ArrowRight")
    assert abs(src.bounding_box()["width"] - (narrow + 40)) < 2
    assert errors == []
    pg.close()


@needs_browser
def test_layout_pictures_readable_with_axes_and_legend(browser, pages, dumps):
    from tests.test_report import _blocked, _prod, _ttgir

    pg, errors = _open(browser, pages["report"])
    pg.click("#d0 nav.tabs button[data-tab='layouts']")
    fig = _blocked(_ttgir(dumps[3]), "blocked")
    box = pg.locator("#d0 .layout", has=pg.locator("h3", has_text="#blocked blocked")).first
    svg = box.locator("svg.layout-svg")
    cell = svg.locator("rect.cell").first
    assert float(cell.get_attribute("width")) >= 16  # large enough to read
    # the tile's axes: dim 1 along the top, dim 0 down the left, from 0
    axis = svg.locator("text.axis").all_text_contents()
    assert axis[0] == "0" and "dim 1" in svg.locator("text.axis-name").text_content()
    # the legend: a swatch per warp, coloured as that warp's lane-0 cells
    warps = _prod(fig["warpsPerCTA"])
    swatches = box.locator("svg.legend rect.swatch")
    assert swatches.count() == warps
    for w in range(warps):
        lane0 = svg.locator(f"rect.cell[data-w='{w}'][data-l='0']").first.get_attribute("fill")
        assert swatches.nth(w).get_attribute("fill") == lane0
    assert "lane" in box.locator(".legend-box .note").inner_text()
    # each cell says its lane (and its register when the cells are large): read back from the cells' data
    size = float(cell.get_attribute("width"))
    texts = svg.locator("text:not(.axis):not(.axis-name)").all_text_contents()
    lanes = svg.locator("rect.cell").evaluate_all("els => els.map(e => e.dataset.l)")
    regs = svg.locator("rect.cell").evaluate_all("els => els.map(e => e.dataset.r)")
    if size >= 24 and _prod(fig["sizePerThread"]) > 1:
        assert texts[: 2 * 3] == [lanes[0], "r" + regs[0], lanes[1], "r" + regs[1], lanes[2], "r" + regs[2]]
    else:
        assert texts[:3] == lanes[:3]
    assert errors == []
    pg.close()


@needs_browser
def test_sweep_page_best_first_in_the_terminals_units(browser, tmp_path):
    from irscope.report import output
    from irscope.report import pages as report_pages
    from irscope.sweep.configs import Config
    from irscope.views import report as view

    stats = [
        {"registers": 200, "spills": 0, "shared_bytes": 98304, "occupancy": {"occupancy": 0.25}},
        {"registers": 96, "spills": 0, "shared_bytes": 65536, "occupancy": {"occupancy": 0.5}},
        {"registers": 255, "spills": 64, "shared_bytes": 131072, "occupancy": {"occupancy": 0.125}},
    ]
    configs = [
        Config(i, f"num_warps={w}", {"num_warps": w}, None, None, status="ok", stats=s)
        for i, (w, s) in enumerate(zip((4, 8, 2), stats))
    ]
    m = report_pages.sweep_model(configs)
    pg, errors = _open(browser, output.write_page(tmp_path / "sweep.html", view.render(m)))
    assert pg.title() == "irscope sweep · num_warps"  # what the configs differ in
    col = {c: i + 1 for i, c in enumerate(m["columns"])}
    cells = lambda c: pg.locator(f"table.sweep tbody tr td:nth-child({col[c]})").all_inner_texts()  # noqa: E731
    assert cells("config") == ["num_warps=8", "num_warps=4", "num_warps=2"]  # best (static rank 1) first
    assert cells("static rank") == ["1", "2", "3"]
    assert cells("shared") == ["64.0 KiB", "96.0 KiB", "128.0 KiB"] and cells("occupancy") == ["50%", "25%", "12%"]
    # the chart: the best config's point highest, the worst lowest
    pts = pg.locator("svg.scatter circle.pt").evaluate_all(
        "els => els.map(e => [e.querySelector('title').textContent, +e.getAttribute('cy')])"
    )
    by_y = [label.split(":")[0] for label, _ in sorted(pts, key=lambda p: p[1])]
    assert by_y == ["num_warps=8", "num_warps=4", "num_warps=2"]
    # sorting still sorts by the value, not by its text
    pg.click(f"table.sweep th[data-col='{col['shared'] - 1}']")
    assert cells("shared") == ["64.0 KiB", "96.0 KiB", "128.0 KiB"]
    pg.click(f"table.sweep th[data-col='{col['shared'] - 1}']")
    assert cells("shared") == ["128.0 KiB", "96.0 KiB", "64.0 KiB"]
    assert errors == []
    pg.close()


@pytest.mark.torch
@needs_browser
def test_capture_of_autotune_configs_in_the_picker(browser, tmp_path):
    """examples/scripts/matmul_autotune.py's three CUDA configs, captured: each option says its own tiles."""
    out = tmp_path / "cap"
    r = run_in(None, "capture", str(EXAMPLES / "scripts" / "matmul_autotune.py"), "--target", "cuda:90", "-o", str(out))
    assert r.code == 0, r.err
    page = tmp_path / "cap.html"
    r = run_in(None, "report", str(out), "-o", str(page), "--no-layouts")
    assert r.code == 0, r.err
    pg, errors = _open(browser, page)
    options = pg.locator("#dump-pick option").all_inner_texts()
    assert len(options) == 3 and len(set(options)) == 3
    for i, text in enumerate(options):
        pg.select_option("#dump-pick", index=i)
        folder = Path(pg.locator("section.dump:not([hidden]) .meta .mono").inner_text())
        args = _manifest(folder)["args"]
        for k in ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K"):
            assert f"{k}={args[k]}" in text
        assert "GROUP_SIZE_M" not in text  # the same in every config: not what tells them apart
    assert errors == []
    pg.close()


@needs_browser
def test_a_link_scrolls_the_wrapped_python_pane_to_its_line(browser, pages, dumps):
    """The Python pane draws every line (wrapped), so a link from a SASS line scrolls it by the row's own
    place: the highlighted line is on screen."""
    pg, errors = _open(browser, pages["report"], height=520)
    smap = json.loads((dumps[3] / "map.json").read_text())
    store = next(e for e in smap["lines"] if "tl.store(" in e["text"])
    sass_line = store["stages"]["sass"]["at"][0]
    pg.evaluate(f"""() => {{ const s = document.querySelector("#d0 .pane[data-pane='2'] .scroller");
                           s.scrollTop = {(sass_line - 5) * 18}; s.dispatchEvent(new Event('scroll')); }}""")
    pg.wait_for_selector(f"#d0 .pane[data-pane='2'] .ln[data-n='{sass_line}']")
    pg.click(f"#d0 .pane[data-pane='2'] .ln[data-n='{sass_line}']")
    src = pg.locator("#d0 .pane[data-pane='0']")
    first = int(src.get_attribute("data-hl-lines").split(",")[0])
    scroller = src.locator(".scroller")
    assert scroller.evaluate("s => s.scrollTop") > 0  # it had to scroll: the store is near the end
    row, box = src.locator(f".ln[data-n='{first}']").bounding_box(), scroller.bounding_box()
    assert box["y"] <= row["y"] and row["y"] + row["height"] <= box["y"] + box["height"]
    assert "tl.store(" in src.locator(".ln.hl .code").first.inner_text()
    assert errors == []
    pg.close()


def test_timed_sweep_lists_the_winner_first_and_medians_in_us():
    from types import SimpleNamespace as t

    from irscope.report import pages as report_pages
    from irscope.sweep.configs import Config
    from irscope.views import report as view

    configs = [
        Config(i, f"num_warps={w}", {"num_warps": w}, None, None, status="ok", stats={"registers": 100 + i})
        for i, w in enumerate((2, 4, 8, 16))
    ]
    medians = {"num_warps=2": 0.0312, "num_warps=4": 0.0205, "num_warps=8": 0.0121}  # ms; 16 was not timed
    timing = t(
        rows={k: t(median_ms=v, vs_winner=v / 0.0205) for k, v in medians.items()},
        winner=t(name="num_warps=4"),  # the winner of the final rounds, though 8 had the lower first median
        notes=[],
    )
    m = report_pages.sweep_model(configs, timing, "matmul_kernel on cuda:90")
    assert m["title"] == "matmul_kernel on cuda:90 · num_warps"
    label, median = m["columns"].index("config"), m["columns"].index("median")
    assert [r["cells"][label] for r in m["rows"]] == ["num_warps=4", "num_warps=8", "num_warps=2", "num_warps=16"]
    html = view.render(m)
    assert '<td data-v="20.5" class="num">20.5 us</td>' in html and m["rows"][0]["cells"][median] == 20.5


def test_cross_target_diff_title_and_inputs_as_the_terminal(tmp_path):
    """cuda:90 against hip:gfx942: the title names the targets, the inputs table leaves out the options of
    one backend only (as irscope diff's summary does) and says how many it left out."""
    from irscope import artifacts
    from irscope.compare import diff
    from irscope.compare.sides import load_side
    from irscope.report import pages as report_pages
    from irscope.views import report as view
    from tests.helpers import VECTOR_ADD

    sig = "*fp32:16, *fp32:16, *fp32:16, i32:16, 1024"
    a, b = (
        artifacts.write(compile_example(VECTOR_ADD, sig, target=t), tmp_path / t.replace(":", ""))
        for t in ("cuda:90", "hip:gfx942")
    )
    result = diff.compare(load_side("a", a), load_side("b", b))
    m = report_pages.diff_model(result)
    assert m["title"] == "add_kernel: cuda:90 vs hip:gfx942"
    one_sided = [d for d in result.inputs if d.a is None or d.b is None]
    assert one_sided and m["inputs_left_out"] == len(one_sided)
    assert all(a is not None and b is not None for _, a, b in m["inputs"])
    html = view.render(m)
    assert f"{len(one_sided)} options of one backend only left out" in html


@needs_browser
def test_python_pane_follows_a_narrower_window(browser, pages):
    pg, errors = _open(browser, pages["report"])
    src = pg.locator("#d0 .pane[data-pane='0']")
    wide = src.bounding_box()["width"]
    pg.set_viewport_size({"width": 900, "height": 900})
    pg.wait_for_function("() => document.querySelector('#d0 .pane[data-pane=\"0\"]').offsetWidth < 600")
    panes = pg.locator("#d0 .panes")
    narrow = src.bounding_box()["width"]
    assert narrow < wide
    for i in (1, 2):  # the stage panes keep room to be read
        assert pg.locator(f"#d0 .pane[data-pane='{i}']").bounding_box()["width"] >= 190
    assert panes.evaluate("p => p.scrollWidth <= p.clientWidth")  # the three panes still fit side by side
    assert src.locator(".scroller").evaluate("s => s.scrollWidth <= s.clientWidth")
    assert errors == []
    pg.close()
