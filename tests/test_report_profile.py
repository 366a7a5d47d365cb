"""The report's source gutter with a measured profile (#32): heat from profile.json (each Python line's share of
the warp-stall samples, top stall reason in the tooltip) where the dump was measured, the static instruction
counts where it was not, and a damaged profile.json refused as a damaged manifest is.

The figures are the H200's (tests/data/profile: ncu's recordings of examples/matmul.py at 4096^3 fp16, num_stages
1 and 3, derive.py says how), written into real dumps of the same kernel compiled here.
"""

from __future__ import annotations

import json
import shutil

import pytest

from tests.helpers import (
    CHROMIUM,
    MATMUL,
    MATMUL_SIG16,
    NO_CHROMIUM,
    compile_example,
    copy_without_map,
    run_in,
    write_profile,
)

needs_browser = pytest.mark.skipif(not CHROMIUM.exists(), reason=NO_CHROMIUM)


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    """matmul at num_stages=1 measured, the same unmeasured, and a measured copy without map.json."""
    from irscope import artifacts

    out = tmp_path_factory.mktemp("measured")
    measured = artifacts.write(compile_example(MATMUL, MATMUL_SIG16, sets=("num_stages=1",)), out / "measured")
    plain = out / "plain" / "matmul_kernel" / measured.name
    shutil.copytree(measured, plain)
    write_profile(measured, 1)
    nomap = copy_without_map(measured, out / "nomap" / "matmul_kernel" / measured.name)
    return {"measured": measured, "plain": plain, "nomap": nomap}


@pytest.fixture(scope="module")
def pages(dumps, tmp_path_factory):
    from irscope.report import model, output
    from irscope.views import report as view

    out = tmp_path_factory.mktemp("pages")
    got = {}
    for name, folder in dumps.items():
        got[name + "_model"] = m = model.report_model([folder])
        got[name] = output.write_page(out / f"{name}.html", view.render(m))
    return got


def _file_line(d: dict, src: int) -> int:
    return src + d["source_first_line"] - 1


def test_the_model_places_the_measured_heat_on_the_kernel_lines(pages):
    """Line 34 (the A tile's tl.load) holds 46 % of the samples at num_stages=1, mostly long scoreboard; the
    dot (line 36) is next, mostly barrier; each line's text is the kernel's own."""
    d = pages["measured_model"]["dumps"][0]
    prof = d["profile"]
    assert prof["by"] == "measured by ncu 2025.3.1.0 on NVIDIA H200"
    hot = [(_file_line(d, h["src"]), round(h["share"], 3), h["top_reason"]) for h in prof["hot"][:2]]
    assert hot == [(34, 0.461, "long scoreboard"), (36, 0.433, "barrier")]
    source = next(s for s in d["stages"] if s["name"] == "source")["text"].splitlines()
    assert "tl.load(a_ptrs" in source[prof["hot"][0]["src"] - 1]
    assert "tl.dot" in source[prof["hot"][1]["src"] - 1]
    assert prof["max_share"] == prof["hot"][0]["share"]
    cards = {c["label"]: c for c in prof["cards"]}
    assert cards["duration"]["value"] == "348.4 us" and cards["DRAM bandwidth"]["value"] == "626 GB/s"
    assert cards["DRAM bandwidth"]["fill"] == pytest.approx(0.1301)
    assert pages["plain_model"]["dumps"][0]["profile"] is None
    assert prof["other_kernel"] == ""


def test_a_profile_of_another_kernel_is_said_on_the_page(dumps, tmp_path):
    from irscope.report import model
    from irscope.views import report as view

    folder = tmp_path / "d"
    shutil.copytree(dumps["measured"], folder)
    doc = json.loads((folder / "profile.json").read_text())
    doc["kernel"] = "rmsnorm_fwd"
    (folder / "profile.json").write_text(json.dumps(doc))
    m = model.report_model([folder])
    assert m["dumps"][0]["profile"]["other_kernel"] == "rmsnorm_fwd"
    assert "profile.json measured kernel rmsnorm_fwd, not this dump's matmul_kernel" in view.render(m)


def test_without_a_source_map_the_profile_still_places_its_lines(pages):
    """The profile's own line texts find where the kernel starts in its file."""
    d = pages["nomap_model"]["dumps"][0]
    assert not d["map"]["available"]
    assert _file_line(d, d["profile"]["hot"][0]["src"]) == 34


GUTTER = """() => Array.from(document.querySelectorAll("#d0 .pane[data-pane='0'] .ln")).filter(r => r.querySelector(".gut i"))
  .map(r => { const i = r.querySelector(".gut i");
              return {line: +r.querySelector(".no").textContent, cls: i.className, width: parseFloat(i.style.width),
                      title: i.getAttribute("title")}; })"""


def _gutter(browser, path):
    pg = browser.new_page(viewport={"width": 1500, "height": 1400})
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(path.resolve().as_uri())
    pg.wait_for_selector("body[data-ready='1']")
    bars = pg.evaluate(GUTTER)
    note = pg.locator("#d0 .gutter-note").evaluate_all("els => els.map(e => [e.dataset.gutter, e.textContent])")
    return pg, bars, note, errors


@needs_browser
def test_the_gutter_shows_measured_heat(browser, pages):
    pg, bars, note, errors = _gutter(browser, pages["measured"])
    assert errors == []
    widest = max(bars, key=lambda b: b["width"])
    assert widest["line"] == 34 and "heat" in widest["cls"].split()
    assert widest["title"].startswith("46.1 % of warp-stall samples") and "long scoreboard" in widest["title"]
    dot = next(b for b in bars if b["line"] == 36)
    assert "barrier" in dot["title"].split("top stalls: ")[1].split(",")[0]
    assert all("instructions" not in b["title"].split(";")[0] for b in bars)  # no static counts left
    assert [n[0] for n in note] == ["measured"] and "measured by ncu 2025.3.1.0 on NVIDIA H200" in note[0][1]
    pg.click("#d0 nav.tabs button[data-tab='figures']")
    first = pg.locator("#d0 table.hot.measured tbody tr").first
    assert first.locator("td").first.text_content() == "34"
    first.click()  # a hot line leads to the code, highlighted
    assert pg.locator("#d0 .pane[data-pane='0']").get_attribute("data-hl-count") == "1"
    pg.close()


@needs_browser
def test_the_gutter_falls_back_to_static_counts(browser, pages):
    pg, bars, note, errors = _gutter(browser, pages["plain"])
    assert errors == [] and bars
    assert all("heat" not in b["cls"] and " sass instructions" in b["title"] for b in bars)
    assert [n[0] for n in note] == ["static"] and "static, not measured" in note[0][1]
    assert pg.locator("#d0 table.hot.measured").count() == 0
    pg.close()


@needs_browser
def test_the_gutter_shows_heat_without_a_source_map(browser, pages):
    pg, bars, note, errors = _gutter(browser, pages["nomap"])
    assert errors == []
    assert max(bars, key=lambda b: b["width"])["line"] == 34 and [n[0] for n in note] == ["measured"]
    pg.close()


# ---------------------------------------------------------------- bad input


def _damage(folder, how: str) -> None:
    path = folder / "profile.json"
    if how == "not json":
        path.write_text('{"kernel": "matmul_kernel", ')
        return
    doc = json.loads(path.read_text())
    if how == "samples":
        doc["lines"][0]["samples"] = "many"
    elif how == "stall":
        doc["totals"]["stalls"]["long_sb"] = [1]
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize(
    "how,field", [("not json", "not valid JSON"), ("samples", "lines[0].samples"), ("stall", "totals.stalls.long_sb")]
)
def test_a_damaged_profile_is_one_line_naming_the_file_and_field(capsys, dumps, tmp_path, how, field):
    folder = tmp_path / "d"
    shutil.copytree(dumps["measured"], folder)
    _damage(folder, how)
    out = tmp_path / "r.html"
    r = run_in(capsys, "report", str(folder), "-o", str(out))
    assert r.code == 2, r.err
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and "profile.json" in lines[0] and field in lines[0], r.err
    assert not out.exists() and not list(tmp_path.glob(".irscope-tmp-*"))


def test_a_damaged_profile_among_several_dumps_is_named_and_left_out(capsys, dumps, tmp_path):
    """As for any damaged child of a folder of dumps: the others are reported, the bad one named."""
    root = tmp_path / "capture"
    shutil.copytree(dumps["measured"], root / "good" / "matmul_kernel" / "x")
    shutil.copytree(dumps["measured"], root / "bad" / "matmul_kernel" / "x")
    _damage(root / "bad" / "matmul_kernel" / "x", "samples")
    out = tmp_path / "r.html"
    r = run_in(capsys, "report", str(root), "-o", str(out))
    assert r.code == 0, r.err
    assert "1 dump; 1 damaged left out" in r.out
    note = [x for x in r.err.splitlines() if "left out a damaged dump" in x]
    assert len(note) == 1 and "bad" in note[0] and "lines[0].samples" in note[0]
    assert "measured by ncu" in out.read_text()
