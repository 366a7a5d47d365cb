"""Findings where the engineer already looks (issue #40 items 1 and 4): in `irscope diff` (what appeared and what
went away between the sides: terminal, --json, irscope.Diff.findings, the diff page) and on the report page (each
finding with what, why, evidence and fix, linked to its Python line and its TTGIR op; checked in Chromium).

The real pair: examples/pitfalls/dot_loop.py on cuda:100 at num_warps=2 (tl.dot on mma.sync: tcgen05 needs 4 or 8
warps) against num_warps=4 (tcgen05); both sides pipeline the operands with cp.async (the TMA finding stays, with
other counts). Lines are found in the kernel's source, never written down here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_diff import irscope  # the CLI in this process (Triton stays warm)

import irscope as api
from irscope import explain
from irscope.compare.command import match_findings
from irscope.explain import Finding, Fix, Where
from tests.helpers import CHROMIUM, EXAMPLES, NO_CHROMIUM, VECTOR_ADD

DOT = EXAMPLES / "pitfalls" / "dot_loop.py"
SIG = "*fp16, *fp16, *fp16, i32:16, i32:16, i32:16, i32:16, 64, 64, 32, 'ieee'"
needs_browser = pytest.mark.skipif(not CHROMIUM.exists(), reason=NO_CHROMIUM)


def line_of(path: Path, fragment: str) -> int:
    (n,) = [i for i, text in enumerate(path.read_text().splitlines(), 1) if fragment in text]
    return n


DOT_LINE = line_of(DOT, "tl.dot(")
LOAD_A = line_of(DOT, "a = tl.load(")


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> dict:
    """`irscope diff` of the kernel file, num_warps=2 against 4, with --json and --html."""
    out = tmp_path_factory.mktemp("xint")
    code, text, err = irscope(
        "diff", DOT, "-t", "cuda:100", "-s", SIG, "--a", "num_warps=2", "--b", "num_warps=4",
        "-o", out / "dumps", "--json", "--html", out / "diff.html",
    )  # fmt: skip
    assert code == 1, err
    doc = json.loads(text)
    return {
        "doc": doc,
        "a": Path(doc["a"]["folder"]),
        "b": Path(doc["b"]["folder"]),
        "html": out / "diff.html",
        "out": out,
    }


def keys(items: list[dict]) -> list[list]:
    return [[f["kind"], f["where"]["line"], f["cause"]] for f in items]


# ---------------------------------------------------------------- diff: --json, terminal, API


def test_diff_json_lists_the_finding_that_went_away_and_nothing_else(pair):
    doc = pair["doc"]
    assert doc["inputs"]["options.num_warps"] == {"a": 2, "b": 4}
    f = doc["findings"]
    assert list(f) == ["appeared", "went_away", "both"]
    assert keys(f["went_away"]) == [["dot-not-tensor-core", DOT_LINE, "num-warps"]]
    assert f["went_away"][0]["fix"]["sets"] == {"num_warps": 4} and "mma.sync" in f["went_away"][0]["what"]
    assert f["appeared"] == []
    # the TMA finding is on both sides; what it says moved (24 cp.async a thread at 2 warps, 16 at 4): still one
    assert [keys([x["a"]]) + keys([x["b"]]) for x in f["both"]] == [[["tma-unused", LOAD_A, "pointer-loads"]] * 2]
    (both,) = f["both"]
    assert both["a"]["what"] != both["b"]["what"]
    assert "24 16-byte cp.async" in both["a"]["what"] and "16 16-byte cp.async" in both["b"]["what"]


def test_diff_terminal_lists_findings_after_the_summary(pair):
    code, out, err = irscope("diff", pair["a"], pair["b"])
    assert code == 1, err
    lines = out.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("findings"))
    assert lines[at].startswith("findings  1 went away, 0 appeared, 1 on both sides")
    assert at > next(i for i, x in enumerate(lines) if x.startswith("stages"))  # after the summary's stages
    rows = [x.strip() for x in lines[at + 1 :] if x.strip()[:2] in ("- ", "+ ", "= ")]
    assert len(rows) == 2
    assert rows[0].startswith(f"- line {DOT_LINE}") and "dot-not-tensor-core (num-warps)" in rows[0]
    assert rows[1].startswith(f"= line {LOAD_A}") and "tma-unused (pointer-loads)" in rows[1]
    # the other way round, the finding appears
    code, out, _ = irscope("diff", pair["b"], pair["a"])
    assert "findings  0 went away, 1 appeared, 1 on both sides" in out
    assert any(x.strip().startswith(f"+ line {DOT_LINE}") and "dot-not-tensor-core" in x for x in out.splitlines())


def test_diff_api_findings(pair):
    d = api.diff(pair["a"], pair["b"])
    fd = d.findings
    assert fd.changed and [f.key for f in fd.went_away] == [("dot-not-tensor-core", DOT_LINE, "num-warps")]
    assert fd.appeared == [] and [(a.key, b.key) for a, b in fd.both] == [
        (("tma-unused", LOAD_A, "pointer-loads"),) * 2
    ]
    assert d.json["findings"]["went_away"][0]["kind"] == "dot-not-tensor-core"
    same = api.diff(pair["a"], pair["a"]).findings
    assert not same.changed and len(same.both) == 2


def test_diff_of_one_folder_with_itself_says_the_findings_stayed(pair):
    code, out, _ = irscope("diff", pair["a"], pair["a"])
    assert code == 0
    assert "findings  0 went away, 0 appeared, 2 on both sides" in out


def test_narrow_loads_appear_when_the_pointers_lose_their_alignment(tmp_path):
    """vector_add with 16-byte pointers against 4-byte ones: a narrow-access finding appears on each access line."""
    sides = {}
    for name, sig in (
        ("a16", "*fp32:16, *fp32:16, *fp32:16, i32:16, 1024"),
        ("a4", "*fp32:4, *fp32:4, *fp32:4, i32:16, 1024"),
    ):
        code, _, err = irscope("dump", VECTOR_ADD, "-t", "cuda:90", "-s", sig, "-o", tmp_path / name)
        assert code == 0, err
        (sides[name],) = [m.parent for m in (tmp_path / name).glob("*/*/manifest.json")]
    code, out, _ = irscope("diff", sides["a16"], sides["a4"], "--json")
    f = json.loads(out)["findings"]
    lines = [line_of(VECTOR_ADD, frag) for frag in ("x = tl.load(", "y = tl.load(", "tl.store(")]
    assert keys(f["appeared"]) == [["narrow-access", n, "ptr-align"] for n in lines]
    assert f["went_away"] == [] and f["both"] == []


# ---------------------------------------------------------------- matching


def _finding(kind="narrow-access", line=12, cause="ptr-align", what="32 bits", text="x = tl.load(p)") -> Finding:
    return Finding(kind, cause, what, Where("k.py", line, text, [], []), "why", [], Fix("fix"))


def test_matching_by_key_ignores_what_moves():
    a = [_finding(what="8 instructions"), _finding(kind="spills", line=0, cause="registers")]
    b = [_finding(what="4 instructions"), _finding(line=13)]
    fd = match_findings(a, b)
    assert [(x.where.line, y.where.line) for x, y in fd.both] == [(12, 12)]
    assert [f.key for f in fd.went_away] == [("spills", 0, "registers")]
    assert [f.key for f in fd.appeared] == [("narrow-access", 13, "ptr-align")]
    # two findings of one key pair with two; a third is new
    fd = match_findings([_finding()] * 2, [_finding()] * 3)
    assert len(fd.both) == 2 and len(fd.appeared) == 1 and fd.went_away == []


def test_matching_by_the_lines_text_when_the_source_changed():
    a, b = [_finding(line=12)], [_finding(line=14)]  # two lines added above it
    assert len(match_findings(a, b).appeared) == 1
    fd = match_findings(a, b, by_text=True)
    assert len(fd.both) == 1 and not fd.changed
    assert match_findings(a, [_finding(line=14, text="x = tl.load(q)")], by_text=True).changed


def test_a_failing_finding_engine_costs_the_diff_nothing_but_its_findings(pair, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("a rule's bug")

    monkeypatch.setattr(explain, "findings", boom)
    code, out, _ = irscope("diff", pair["a"], pair["b"], "--json")
    doc = json.loads(out)
    assert code == 1 and doc["findings"] is None and doc["stats"]
    code, out, _ = irscope("diff", pair["a"], pair["b"])
    assert code == 1 and "findings  could not be computed" in out and "stats" in out
    from irscope.report import model

    d = model.dump_model(pair["a"], with_layouts=False)
    assert d["findings"] == [] and "a rule's bug" in d["findings_error"]


# ---------------------------------------------------------------- the report page's model


def test_report_model_links_each_finding(pair):
    from irscope.report import model

    d = model.dump_model(pair["a"], with_layouts=False)
    by_kind = {f["kind"]: f for f in d["findings"]}
    assert set(by_kind) == {"dot-not-tensor-core", "tma-unused"}
    f = by_kind["dot-not-tensor-core"]
    assert f["line"] == DOT_LINE and f["src"] == DOT_LINE - d["source_first_line"] + 1
    assert "tl.dot(" in f["text"] and f["fix"] == "num_warps=4 (or 8)" and f["tryable"] and f["why"] and f["evidence"]
    src = next(s for s in d["stages"] if s["name"] == "source")["text"].splitlines()
    assert "tl.dot(" in src[f["src"] - 1]
    ttgir = next(s for s in d["stages"] if s["name"] == "ttgir")["text"].splitlines()
    sass = next(s for s in d["stages"] if s["name"] == "sass")["text"].splitlines()
    assert f["ttgir"] and all(st == "ttgir" and "tt.dot" in ttgir[n - 1] for st, n, _ in f["ttgir"])
    assert f["machine"] and all(st == "sass" and "HMMA" in sass[n - 1] for st, n, _ in f["machine"])


# ---------------------------------------------------------------- in Chromium


@pytest.fixture(scope="module")
def page(pair, browser):
    code, _, err = irscope("report", pair["a"], "-o", pair["out"] / "report.html")
    assert code == 0, err
    pg = browser.new_page(viewport={"width": 1500, "height": 900})
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.goto((pair["out"] / "report.html").resolve().as_uri())
    pg.wait_for_selector("body[data-ready='1']")
    yield pg
    assert errors == []
    pg.close()


def _visible_in_scroller(pg, pane: int) -> bool:
    return pg.evaluate(
        """(pane) => {
          const p = document.querySelector(`.pane[data-pane='${pane}']`), s = p.querySelector('.scroller');
          const r = p.querySelector('.ln.hl').getBoundingClientRect(), b = s.getBoundingClientRect();
          return r.top >= b.top && r.bottom <= b.bottom;
        }""",
        pane,
    )


@needs_browser
def test_report_shows_each_finding(page):
    pg = page
    assert pg.locator("nav.tabs button[data-tab='findings']").text_content() == "Findings (2)"
    pg.click("nav.tabs button[data-tab='findings']")
    cards = pg.locator(".finding")
    assert cards.count() == 2
    dot = pg.locator(".finding[data-kind='dot-not-tensor-core']")
    text = dot.text_content()
    assert "mma.sync" in text and "tcgen05 needs 4 or 8 warps" in text and "num_warps=4 (or 8)" in text
    assert dot.locator(".f-ev li").count() >= 1 and "accelerate-matmul" in dot.locator(".f-ev").text_content()
    assert dot.locator("button.f-src").text_content() == f"line {DOT_LINE}"
    # the Python pane flags the finding lines (numbered as the kernel file is)
    pg.click("nav.tabs button[data-tab='code']")
    flagged = pg.locator(".pane[data-pane='0'] .ln.flag .no").evaluate_all("els => els.map(e => +e.textContent)")
    assert sorted(flagged) == [LOAD_A, DOT_LINE]


@needs_browser
def test_a_findings_line_link_scrolls_to_and_highlights_its_line(page):
    pg = page
    pg.click("nav.tabs button[data-tab='findings']")
    pg.click(".finding[data-kind='dot-not-tensor-core'] button.f-src")
    assert pg.locator("nav.tabs button[data-tab='code']").get_attribute("class") == "on"
    hl = pg.locator(".pane[data-pane='0'] .ln.hl")
    assert hl.count() == 1 and int(hl.locator(".no").text_content()) == DOT_LINE
    assert "tl.dot(" in hl.locator(".code").text_content()
    assert _visible_in_scroller(pg, 0)
    # its TTGIR op: the stage pane shows TTGIR, the op's line highlighted and in view
    pg.click("nav.tabs button[data-tab='findings']")
    link = pg.locator(".finding[data-kind='dot-not-tensor-core'] button.f-stage").first
    stage, n = link.text_content().split()
    assert stage == "ttgir"
    link.click()
    pane = pg.locator(".pane[data-pane='1']")
    assert pane.get_attribute("data-stage") == "ttgir" and pane.get_attribute("data-hl-lines") == n
    assert "tt.dot" in pg.locator(".pane[data-pane='1'] .ln.hl .code").text_content()
    assert _visible_in_scroller(pg, 1)
    assert int(pg.locator(".pane[data-pane='0'] .ln.hl.first .no").text_content()) == DOT_LINE  # what it came from


@needs_browser
def test_diff_page_has_the_findings_block(pair, browser):
    pg = browser.new_page()
    pg.goto(pair["html"].resolve().as_uri())
    pg.wait_for_selector("body[data-ready='1']")
    block = pg.locator(".findings-diff")
    assert block.locator("h3").text_content() == "Findings: 1 went away, 0 appeared, 1 on both sides"
    went = block.locator(".fd.went_away")
    assert went.count() == 1 and went.get_attribute("data-kind") == "dot-not-tensor-core"
    assert went.get_attribute("data-line") == str(DOT_LINE)
    assert block.locator(".fd.appeared").count() == 0 and block.locator(".fd.both").count() == 1
    # above the tabs and the side-by-side view, which stay as they were
    assert pg.evaluate("document.querySelector('.findings-diff').nextElementSibling.matches('nav.tabs')")
    pg.close()


@needs_browser
def test_without_a_source_map_the_line_is_text_and_the_ttgir_link_still_works(pair, browser, tmp_path):
    from irscope.report import model
    from irscope.views import report as view
    from tests.helpers import copy_without_map

    folder = copy_without_map(pair["a"], tmp_path / "nomap")
    d = model.dump_model(folder, with_layouts=False)
    (f,) = [x for x in d["findings"] if x["kind"] == "dot-not-tensor-core"]
    assert f["line"] == DOT_LINE and f["src"] == 0 and f["ttgir"][0][0] == "ttgir"
    (tmp_path / "r.html").write_text(view.render(model.report_model([folder], with_layouts=False)))
    pg = browser.new_page(viewport={"width": 1500, "height": 900})
    pg.goto((tmp_path / "r.html").resolve().as_uri())
    pg.wait_for_selector("body[data-ready='1']")
    pg.click("nav.tabs button[data-tab='findings']")
    card = pg.locator(".finding[data-kind='dot-not-tensor-core']")
    assert (
        card.locator("button.f-src").count() == 0
        and card.locator(".f-noline").first.text_content() == f"line {DOT_LINE}"
    )
    card.locator("button.f-stage").first.click()
    assert pg.locator(".pane[data-pane='1']").get_attribute("data-hl-lines") == str(f["ttgir"][0][1])
    assert "tt.dot" in pg.locator(".pane[data-pane='1'] .ln.hl .code").text_content()
    pg.close()
