"""irscope report: the model a dump folder becomes, the layout pictures, bad input, and the page
itself in a real browser (Debian's Chromium driven by Playwright; skipped only without it)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.helpers import CHROMIUM, MATMUL, MATMUL_SIG16, NO_CHROMIUM, compile_example, copy_without_map

needs_browser = pytest.mark.skipif(not CHROMIUM.exists(), reason=NO_CHROMIUM)


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    """The shipped matmul for cuda:90 with per-pass IR, the same with num_warps=8, and a copy without map.json."""
    from irscope import artifacts

    out = tmp_path_factory.mktemp("dumps")
    a = artifacts.write(compile_example(MATMUL, MATMUL_SIG16, passes=True), out / "a")
    b = artifacts.write(compile_example(MATMUL, MATMUL_SIG16, sets=("num_warps=8",)), out / "b")
    nomap = copy_without_map(a, out / "nomap" / "matmul_kernel" / a.name)
    return {"a": a, "b": b, "nomap": nomap, "root": out}


@pytest.fixture(scope="module")
def pages(dumps, tmp_path_factory):
    """The report of dump a (and of the map-less copy), the diff page of a vs b, a sweep page."""
    from irscope.compare import diff
    from irscope.compare.sides import load_side
    from irscope.report import model, output, pages
    from irscope.views import report as view

    out = tmp_path_factory.mktemp("pages")
    m = model.report_model([dumps["a"]])
    written = {"report": output.write_page(out / "report.html", view.render(m)), "model": m}
    written["nomap"] = output.write_page(out / "nomap.html", view.render(model.report_model([dumps["nomap"]])))
    result = diff.compare(load_side("a", dumps["a"]), load_side("b", dumps["b"]))
    written["diff_model"] = pages.diff_model(result)
    written["diff"] = output.write_page(out / "diff.html", view.render(written["diff_model"]))
    return written


def _ttgir(folder: Path) -> str:
    return next(folder.glob("*.ttgir")).read_text()


def _blocked(ttgir: str, name: str) -> dict[str, list[int]]:
    """sizePerThread etc. of `#name`, read straight from the TTGIR text (not through the report)."""
    line = next(x for x in ttgir.splitlines() if x.startswith(f"#{name} = #ttg.blocked"))
    return {
        k: [int(v) for v in re.search(k + r" = \[([\d, ]+)\]", line).group(1).split(",")]
        for k in ("sizePerThread", "threadsPerWarp", "warpsPerCTA")
    }


def _prod(xs):
    out = 1
    for x in xs:
        out *= x
    return out


# ---------------------------------------------------------------- the model


def test_links_follow_the_source_map(dumps, pages):
    """Each source-pane line links to the stage lines map.json gives its kernel line, and back."""
    d = pages["model"]["dumps"][0]
    smap = json.loads((dumps["a"] / "map.json").read_text())
    source = (dumps["a"] / "matmul_kernel.py").read_text().splitlines()
    first = d["source_first_line"]
    assert source[0].startswith("@triton.jit") and first == 11  # examples/matmul.py: the decorator is line 11
    dot = next(e for e in smap["lines"] if "tl.dot(" in e["text"])
    src = dot["line"] - first + 1
    assert "tl.dot(" in source[src - 1]
    row = d["map"]["rows"][src]
    assert row["at"]["ptx"] == dot["stages"]["ptx"]["at"] and row["at"]["sass"] == dot["stages"]["sass"]["at"]
    assert row["classes"].get("mma", 0) > 0
    for ln in dot["stages"]["sass"]["at"]:
        assert src in d["map"]["reverse"]["sass"][ln]


def test_pass_diffs_are_the_passes_changes(pages, dumps):
    """A pass's embedded diff has exactly its +/- line counts, and both are the aligned diff's (as `irscope
    passes` says them): a pass that drops ops is not charged with every later value it renumbered."""
    passes = pages["model"]["dumps"][0]["passes"]
    changed = [p for p in passes if p["diff"] and not p["cut"]]
    assert changed and all(p["diff"] is None for p in passes if not (p["added"] or p["removed"]))
    for p in changed:
        plus = sum(1 for x in p["diff"] if x.startswith("+"))
        minus = sum(1 for x in p["diff"] if x.startswith("-"))
        assert (plus, minus) == (p["added"], p["removed"]), p["name"]
    recorded = {r["index"]: r for r in json.loads((dumps["a"] / "manifest.json").read_text())["passes"]}
    fewer = [p["name"] for p in changed if p["added"] < recorded[p["index"]]["added"]]
    # the dump's line-by-line count took renumbered lines as added (3.9: CanonicalizerPass, CSEPass; the fork:
    # InlinerPass, CSEPass, ...): the page's counts are the aligned diff's
    assert fewer, fewer


def test_blocked_layout_cells_from_triton(dumps, pages):
    """Every element of a blocked layout's tile is held once, each warp holds sizePerThread x threadsPerWarp
    of them, and each thread's registers are a contiguous run of sizePerThread along the fastest dim."""
    lay = next(x for x in pages["model"]["dumps"][0]["layouts"] if x["name"] == "#blocked")
    fig = _blocked(_ttgir(dumps["a"]), "blocked")
    assert lay["ok"], lay["reason"]
    cells = lay["cells"]
    assert lay["tile"] == [
        a * b * c for a, b, c in zip(fig["sizePerThread"], fig["threadsPerWarp"], fig["warpsPerCTA"])
    ]
    assert set(cells["copies"]) == {1}
    assert cells["warps"] == _prod(fig["warpsPerCTA"]) and cells["lanes"] == 32
    assert cells["per_warp"] == [_prod(fig["sizePerThread"]) * _prod(fig["threadsPerWarp"])] * cells["warps"]
    cols, run = lay["tile"][1], fig["sizePerThread"][1]
    for i in range(0, len(cells["warp"]), run):  # order [1, 0]: registers run along the columns
        assert len({(cells["warp"][j], cells["lane"][j]) for j in range(i, i + run)}) == 1
        assert [cells["reg"][j] for j in range(i, i + run)] == list(range(cells["reg"][i], cells["reg"][i] + run))
    assert cols % run == 0


def test_layouts_not_converted_say_why():
    from irscope.report import layouts

    ttgir = (
        "#weird = #ttg.weird<{a = 1}>\n"
        "#multi = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], "
        "order = [1, 0], CTAsPerCGA = [2, 1], CTASplitNum = [2, 1], CTAOrder = [1, 0]}>\n"
        "#ok = #ttg.blocked<{sizePerThread = [2, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 2], order = [0, 1]}>\n"
        "#lin = #ttg.linear<{register = [[0, 1]], lane = [[1, 0], [0, 2]], warp = [], block = []}>\n"
    )
    got = {lay["name"]: lay for lay in layouts.pictures(ttgir)}
    assert not got["#weird"]["ok"] and "weird" in got["#weird"]["reason"]
    assert not got["#multi"]["ok"] and "CTAsPerCGA" in got["#multi"]["reason"]
    ok = got["#ok"]
    assert ok["ok"] and ok["tile"] == [16, 8] and ok["cells"]["per_warp"] == [64, 64]
    # order [0, 1]: a thread's two registers are two rows apart by one, in one column
    assert ok["cells"]["lane"][0] == ok["cells"]["lane"][8] and ok["cells"]["reg"][:9:8] == [0, 1]
    lin = got["#lin"]  # element (r, c) is register c % 2 of lane r + 2 * (c // 2)
    assert lin["ok"] and lin["tile"] == [2, 4] and set(lin["cells"]["copies"]) == {1}
    assert [(lin["cells"]["lane"][i], lin["cells"]["reg"][i]) for i in range(8)] == [
        (0, 0),
        (0, 1),
        (2, 0),
        (2, 1),
        (1, 0),
        (1, 1),
        (3, 0),
        (3, 1),
    ]


def test_a_layout_that_aborts_triton_is_reported_and_the_rest_drawn(monkeypatch):
    """Triton's C++ asserts kill the converting child: that layout says so, the next child does the rest."""
    import subprocess

    from irscope.report import layouts

    real, sizes = subprocess.run, []

    def run(cmd, input, **kw):
        items = json.loads(input)
        sizes.append(len(items))
        if len(sizes) == 1:  # the first child converts one layout, then dies as an assert would kill it
            done = real(cmd, input=json.dumps(items[:1]), **kw)
            return subprocess.CompletedProcess(
                cmd, -6, done.stdout, "python: LinearLayout.cpp:1: Assertion `ok' failed."
            )
        return real(cmd, input=input, **kw)

    monkeypatch.setattr(layouts.subprocess, "run", run)
    ttgir = "".join(
        f"#b{i} = #ttg.blocked<{{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [{w}, 1], "
        f"order = [1, 0]}}>\n"
        for i, w in enumerate((1, 2, 4))
    )
    got = layouts.pictures(ttgir)
    assert sizes == [3, 1]
    assert [g["ok"] for g in got] == [True, False, True]
    assert "aborted" in got[1]["reason"] and "Assertion" in got[1]["reason"]
    assert got[2]["cells"]["per_warp"] == [32] * 4


def test_shared_layout_swizzle_or_reason():
    """128-byte swizzle of fp16: row r's 16-byte chunk c lands in column c ^ (r % 8); where this Triton
    cannot convert shared layouts, the page says so and draws nothing."""
    from irscope.report import convert, layouts

    ttgir = "#shared = #ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}>\n"
    lay = layouts.pictures(ttgir)[0]
    if not _shared_supported(convert):
        assert not lay["ok"] and "shared" in lay["reason"] and lay["cells"] is None
        return
    assert lay["ok"] and lay["tile"] == [8, 64]
    col = lay["cells"]["column"]
    for r in range(8):
        assert [col[r * 64 + 8 * c] for c in range(8)] == [c ^ r for c in range(8)]


def _shared_supported(convert) -> bool:
    try:
        return convert.shared_supported()
    except ImportError:
        return False


# ---------------------------------------------------------------- the command


def test_bad_input_is_one_line_and_writes_nothing(tmp_path):
    from click.testing import CliRunner

    from irscope.cli.report import report

    out = tmp_path / "r.html"
    (tmp_path / "empty").mkdir()
    for args in (
        ["/nonexistent/dump", "-o", str(out)],
        [str(tmp_path / "empty"), "-o", str(out)],
        [str(tmp_path / "empty"), "-o", str(tmp_path / "no" / "such" / "r.html")],
        [str(tmp_path / "empty"), "-o", str(tmp_path)],
    ):
        r = CliRunner().invoke(report, args)
        assert r.exit_code == 2, (args, r.output)
        assert r.output.count("\n") == 1 and r.output.startswith("irscope: error: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]


def test_report_command_writes_one_page(dumps, tmp_path):
    from click.testing import CliRunner

    from irscope.cli.report import report

    out = tmp_path / "all.html"
    r = CliRunner().invoke(report, [str(dumps["root"]), "-o", str(out), "--no-layouts"])
    assert r.exit_code == 0, r.output
    html = out.read_text()
    assert html.count('<section class="dump"') == 3  # a, b and the copy, found below the folder
    assert [p.name for p in tmp_path.iterdir()] == ["all.html"]  # no temporary left behind
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", html)


# ---------------------------------------------------------------- in the browser


class Page:
    """A page opened from file://, with every request and console error it made."""

    def __init__(self, browser, path: Path):
        self.page = browser.new_page(viewport={"width": 1500, "height": 900})
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.url = path.resolve().as_uri()
        self.page.goto(self.url)
        self.page.wait_for_selector("body[data-ready='1']")

    def close(self):
        self.page.close()


@needs_browser
def test_page_offline_and_line_links(browser, dumps, pages):
    p = Page(browser, pages["report"])
    pg = p.page
    d = pages["model"]["dumps"][0]
    smap = json.loads((dumps["a"] / "map.json").read_text())
    dot = next(e for e in smap["lines"] if "tl.dot(" in e["text"])
    src = dot["line"] - d["source_first_line"] + 1
    pg.click(f".pane[data-pane='0'] .ln[data-n='{src}']")
    for i, stage in ((1, "ptx"), (2, "sass")):
        pane = pg.locator(f".pane[data-pane='{i}']")
        assert pane.get_attribute("data-stage") == stage
        want = sorted(dot["stages"][stage]["at"])
        assert pane.get_attribute("data-hl-lines") == ",".join(map(str, want))
        shown = [int(x) for x in pane.locator(".ln.hl").evaluate_all("els => els.map(e => e.dataset.n)")]
        assert shown and set(shown) <= set(want) and want[0] in shown  # scrolled to the first one
    # the reverse: a SASS line of the dot highlights the dot's Python line
    sass_line = dot["stages"]["sass"]["at"][-1]
    pg.evaluate(f"""() => {{ const s = document.querySelector(".pane[data-pane='2'] .scroller");
                           s.scrollTop = {(sass_line - 5) * 18}; s.dispatchEvent(new Event('scroll')); }}""")
    pg.wait_for_selector(f".pane[data-pane='2'] .ln[data-n='{sass_line}']")
    pg.click(f".pane[data-pane='2'] .ln[data-n='{sass_line}']")
    assert str(src) in pg.locator(".pane[data-pane='0']").get_attribute("data-hl-lines").split(",")
    assert p.requests == [p.url] and p.errors == []
    p.close()


@needs_browser
def test_stage_switch_and_lazy_rendering(browser, dumps, pages):
    p = Page(browser, pages["report"])
    pg = p.page
    sass = (dumps["a"] / "matmul_kernel.sass").read_text().splitlines()
    pane = pg.locator(".pane[data-pane='2']")
    assert len(sass) > 900 and pane.locator(".ln").count() < 200  # only what is on screen is in the DOM
    pg.select_option(".pane[data-pane='1'] .stage-pick", "ttgir")
    p1 = pg.locator(".pane[data-pane='1']")
    assert p1.get_attribute("data-stage") == "ttgir"
    ttgir = next(dumps["a"].glob("*.ttgir")).read_text().splitlines()
    assert p1.locator(".ln[data-n='1'] .code").inner_text() == ttgir[0]
    pg.click("nav.tabs button[data-tab='passes']")
    # the first changed pass's diff is shown (the aligned diff's: a pass may only remove lines)
    assert pg.locator(".diffview .dl.add").count() + pg.locator(".diffview .dl.del").count() > 0
    assert p.errors == [] and p.requests == [p.url]
    p.close()


@needs_browser
def test_layout_svgs_cells_per_warp(browser, dumps, pages):
    p = Page(browser, pages["report"])
    pg = p.page
    pg.click("nav.tabs button[data-tab='layouts']")
    ttgir = _ttgir(dumps["a"])
    layouts = pages["model"]["dumps"][0]["layouts"]
    for name in ("blocked", "blocked1"):
        fig = _blocked(ttgir, name)
        i = next(k for k, lay in enumerate(layouts) if lay["name"] == "#" + name)
        svg = pg.locator(f".layout[data-i='{i}'] svg.layout-svg")
        warps = svg.locator("rect.cell").evaluate_all("els => els.map(e => +e.dataset.w)")
        assert len(warps) == _prod(fig["sizePerThread"]) * _prod(fig["threadsPerWarp"]) * _prod(fig["warpsPerCTA"])
        for w in range(_prod(fig["warpsPerCTA"])):
            assert warps.count(w) == _prod(fig["sizePerThread"]) * _prod(fig["threadsPerWarp"])
        svg.locator("rect.cell").nth(37).click()  # a thread: its sizePerThread elements are outlined
        assert svg.locator("rect.cell.mine").count() == _prod(fig["sizePerThread"])
    assert p.errors == [] and p.requests == [p.url]
    p.close()


@needs_browser
def test_several_dumps_switch(browser, dumps, tmp_path):
    from irscope.views import report as view

    path = tmp_path / "two.html"
    view.write_dumps([dumps["a"], dumps["b"]], path, with_layouts=False)
    p = Page(browser, path)
    pg = p.page
    assert pg.locator("section.dump:not([hidden])").get_attribute("id") == "d0"
    pg.select_option("#dump-pick", "d1")
    shown = pg.locator("section.dump:not([hidden])")
    assert shown.get_attribute("id") == "d1" and "num_warps=8" in shown.locator(".meta").first.inner_text()
    sass = next(dumps["b"].glob("*.sass")).read_text().splitlines()
    assert shown.locator(".pane[data-pane='2'] .ln[data-n='3'] .code").inner_text() == sass[2]
    assert p.errors == [] and p.requests == [p.url]
    p.close()


@needs_browser
def test_page_without_map_says_so(browser, pages):
    p = Page(browser, pages["nomap"])
    pg = p.page
    assert "No source map" in pg.locator(".nomap-note").inner_text()
    pg.click(".pane[data-pane='0'] .ln[data-n='26']")
    assert pg.locator(".ln.hl").count() == 0
    assert p.errors == [] and p.requests == [p.url]
    p.close()


@needs_browser
def test_diff_page(browser, pages):
    m = pages["diff_model"]
    assert any(n == "num_warps" for n, *_ in m["stats"])
    p = Page(browser, pages["diff"])
    pg = p.page
    assert "num_warps" in pg.locator("table.stats").inner_text()
    pg.click("nav.tabs button[data-tab='stages']")
    changed = next(i for i, s in enumerate(m["stages"]) if s["status"] == "changed")
    pg.click(f"tr.stage-row[data-i='{changed}']")
    # the aligned diff's rows (issue #39; tests/test_align_report.py checks the rest)
    rows = pg.locator("table.sbs.aligned tr.chg, table.sbs.aligned tr.add, table.sbs.aligned tr.del").count()
    assert rows == sum(1 for r in m["stages"][changed]["rows"] if r[0] in ("changed", "added", "removed")) > 0
    pg.click("nav.tabs button[data-tab='lines']")
    assert m["by_line"]["available"] and pg.locator(".bl.changed").count() == len(m["by_line"]["rows"]) > 0
    assert p.errors == [] and p.requests == [p.url]
    p.close()


@needs_browser
def test_sweep_page_sorts(browser, tmp_path):
    from irscope.report import output, pages
    from irscope.sweep.configs import Config
    from irscope.views import report as view

    stats = [
        {"registers": 200, "spills": 0, "shared_bytes": 1024, "occupancy": {"occupancy": 0.25}},
        {"registers": 96, "spills": 0, "shared_bytes": 2048, "occupancy": {"occupancy": 0.5}},
        {"registers": 255, "spills": 64, "shared_bytes": 512, "occupancy": {"occupancy": 0.125}},
    ]
    configs = [
        Config(i, f"num_warps={w}", {"num_warps": w}, None, None, status="ok", stats=s)
        for i, (w, s) in enumerate(zip((4, 8, 2), stats))
    ]
    m = pages.sweep_model(configs)
    # best first: static rank 1 (num_warps=8) leads
    assert [r["cells"][m["columns"].index("static rank")] for r in m["rows"]] == [1, 2, 3]
    path = output.write_page(tmp_path / "sweep.html", view.render(m))
    p = Page(browser, path)
    pg = p.page
    assert pg.locator("svg.scatter circle.pt").count() == 3
    col = m["columns"].index("registers")
    pg.click(f"table.sweep th[data-col='{col}']")
    regs = pg.locator(f"table.sweep tbody tr td:nth-child({col + 1})").all_inner_texts()
    assert regs == ["96", "200", "255"]
    pg.click(f"table.sweep th[data-col='{col}']")
    assert pg.locator(f"table.sweep tbody tr td:nth-child({col + 1})").all_inner_texts() == ["255", "200", "96"]
    assert p.errors == [] and p.requests == [p.url]
    p.close()
