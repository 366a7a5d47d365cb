"""A dump folder is data from anyone: hostile strings in every string field of manifest.json, map.json and
passes/index.json (and in a sweep's configs) are shown as text on the report, diff and sweep pages, and
never run, navigate, request or open a dialog, in a real Chromium (Debian's, driven by Playwright).

Each folder is a copy of a real dump (the shipped matmul, per-pass IR, on small tiles), with hostile strings put
in every field the page shows; the fields that name files stay real file names inside the folder (the
folder's path checks reject anything else, which tests/test_folder_is_data.py covers).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.helpers import CHROMIUM, MATMUL, MATMUL_SIG16, NO_CHROMIUM, compile_example

# the shipped matmul on 64x64x32 tiles: every part of the page (passes, layouts, figures, the gutter) with a
# quarter of the 128x128 tile's layout cells, which the browser would hover, click and poke one by one
SMALL_TILES = MATMUL_SIG16.replace("128, 128, 64, 8", "64, 64, 32, 8")

needs_browser = pytest.mark.skipif(not CHROMIUM.exists(), reason=NO_CHROMIUM)

# what an attacker writes into a folder's JSON: markup, attribute break-outs (both quotes), URLs, a
# </script> for the JSON blob, line separators that end a JS string literal, template syntax
HOSTILE = [
    '"><script>window.__pwn=1</script>',
    'x" autofocus tabindex="0" onfocus="window.__pwn=2" y="',
    "' onmouseover='window.__pwn=3",
    "javascript:window.__pwn=4",
    "</script><script>window.__pwn=5</script>",
    '<img src=x onerror="window.__pwn=6">',
    '<meta http-equiv="refresh" content="0;url=http://127.0.0.1:9/leak">',
    "\u2028\u2029<!--<script>window.__pwn=7//",
    '<svg onload="window.__pwn=8"></svg>',
    '<a href="http://127.0.0.1:9/leak" id="go">go</a>',
    '<iframe src="http://127.0.0.1:9/leak"></iframe>',
    "<style>*{background:url(http://127.0.0.1:9/leak)}</style>",
    "x' autofocus onfocus='window.__pwn=9' tabindex='0",
    "{{ 7*7 }}${window.__pwn=10}`+(window.__pwn=11)+`",
    '<base href="http://127.0.0.1:9/"><form action="http://127.0.0.1:9/leak"><button>go</button></form>',
    "&lt;b&gt;&amp;&#34;",
    '"]);window.__pwn=12;//',
]
LEAK = "127.0.0.1:9"


class Hostile:
    """Hands out hostile strings, each unique (a number first), all of them in turn."""

    def __init__(self, tag: str):
        self.tag, self.n, self.given = tag, 0, []

    def __call__(self) -> str:
        s = f"{self.tag}{self.n}{HOSTILE[self.n % len(HOSTILE)]}"
        self.n += 1
        self.given.append(s)
        return s


# stage keys renamed to hostile names in manifest.json and map.json (their files stay the real ones);
# source (the Python pane), frontend (the passes' first IR) and ttgir (the layouts) keep their names
RENAMED = ("ptx", "sass", "ttir", "llir")  # sass (the machine stage) gets the autofocus/onfocus one


def _stage_names() -> dict[str, str]:
    """The same hostile names for both sides of the diff (so the stages pair up)."""
    h = Hostile("S")
    return {s: h() for s in RENAMED}


def make_hostile(src: Path, dst: Path, tag: str) -> dict:
    """A copy of dump `src` at `dst` with hostile strings in every string field the page can show."""
    shutil.copytree(src, dst)
    h = Hostile(tag)
    names = _stage_names()
    m = json.loads((dst / "manifest.json").read_text())
    m["kernel"], m["triton_version"], m["signature"] = h(), h(), h()
    m["target"] = "cuda:90" + h()  # still a CUDA target: the same cards and stats are drawn
    m["notes"] = [h() for _ in range(len(HOSTILE))]
    for k in ("num_stages", "num_ctas", "maxnreg", "waves_per_eu", "kpack", "matrix_instr_nonkdim"):
        m["options"][k] = h()
    m["options"].update({h(): h() for _ in range(3)})
    m["args"] = {h(): h() for _ in m["args"]}
    m["stages"] = {names.get(k, k): v for k, v in m["stages"].items()}
    stats = m["stats"]
    stats["occupancy"]["limited_by"] = h()
    stats["sass"]["top"] = {h(): v for v in stats["sass"]["top"].values()}
    stats["sass"]["classes"] = {h(): v for v in stats["sass"]["classes"].values()}
    for p in m["passes"]:
        p["name"], p["arg"], p["stage"] = h(), h(), h()
    (dst / "manifest.json").write_text(json.dumps(m))
    (dst / "passes" / "index.json").write_text(json.dumps(m["passes"]))

    smap = json.loads((dst / "map.json").read_text())
    kernel_file = smap["kernel_file"]
    smap["kernel_file"] = h()
    smap["machine"] = names[smap["machine"]]
    smap["stages"] = {names.get(k, k): v for k, v in smap["stages"].items()}
    smap["files"] = {h(): n for n in smap["files"].values()}
    smap["no_line"] = {names.get(k, k): v for k, v in smap["no_line"].items()}
    for i, e in enumerate(smap["lines"]):
        e["stages"] = {names.get(k, k): v for k, v in e["stages"].items()}
        e["file"] = smap["kernel_file"] if e["file"] == kernel_file else h()
        if i % 3 == 2:  # a third of the texts: the rest still place the source (first_line's votes)
            e["text"] = h()
        for st in e["stages"].values():
            if "ops" in st:
                st["ops"] = {h(): v for v in st["ops"].values()}
    (dst / "map.json").write_text(json.dumps(smap))
    return {"folder": dst, "manifest": m, "map": smap, "given": h.given, "stage_names": names}


def make_hostile_profile(dst: Path, smap: dict, h: Hostile) -> dict:
    """A profile.json in hostile copy `dst` (#32): hostile stall reasons, texts, tool, device and command, a line
    in a hostile file, and numbers no float holds (a 4,001-digit integer is valid JSON); its lines on the map's
    (hostile) kernel file, so the gutter shows their heat."""
    lines = [
        {
            "file": e["file"],
            "line": e["line"],
            "text": h(),
            "samples": 100 + 7 * i,
            "share": 0.1,
            "stalls": {h(): 60 + i, h(): 40},
            "executed": 1e308,
            "bytes": 10**4000,
        }
        for i, e in enumerate(smap["lines"])
        if e["file"] == smap["kernel_file"]
    ]
    lines[0]["samples"] = 10**4000
    lines.append({"file": h(), "line": 3, "text": h(), "samples": 50, "share": 0.01, "stalls": {h(): 50}})
    doc = {
        "irscope_profile": 1,
        "kernel": h(),
        "tool": h(),
        "device": h(),
        "command": h(),
        "totals": {
            "samples": 10**4,
            "stalls": {h(): 7000, h(): 3000},
            "executed": 1,
            "bytes": 1,
            "duration_ns": 10**4000,
            "dram_gbps": 1e308,
            "dram_peak_share": 10**4000,
            "tensor_tflops": -1e308,
            "tensor_peak_share": -5,
        },
        "lines": lines,
    }
    (dst / "profile.json").write_text(json.dumps(doc))
    return doc


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """Two real dumps (per-pass IR both): the shipped matmul on 64x64x32 tiles for cuda:90, and with num_warps=8."""
    from irscope import artifacts

    out = tmp_path_factory.mktemp("real")
    return {
        "a": artifacts.write(compile_example(MATMUL, SMALL_TILES, passes=True), out / "a"),
        "b": artifacts.write(compile_example(MATMUL, SMALL_TILES, sets=("num_warps=8",), passes=True), out / "b"),
    }


@pytest.fixture(scope="module")
def hostile(real, tmp_path_factory):
    """The hostile copies, and the report, diff and sweep pages of them (through the real code path)."""
    from irscope.compare import diff
    from irscope.compare.sides import load_side
    from irscope.report import model, output, pages
    from irscope.views import report as view

    out = tmp_path_factory.mktemp("hostile")
    a = make_hostile(real["a"], out / "dumps" / "a", "A")
    b = make_hostile(real["b"], out / "dumps" / "b", "B")
    b["profile"] = make_hostile_profile(b["folder"], b["map"], Hostile("P"))  # a's gutter stays static
    rm = model.report_model([a["folder"], b["folder"]])
    for d in rm["dumps"]:  # findings quote the folder's IR and source lines: hostile ones, on both dumps
        d["findings"] = _hostile_findings(Hostile("F"))
    d["findings_error"] = Hostile("E")()  # the second dump: the engine's failure, said as text
    report = output.write_page(out / "report.html", view.render(rm))
    dm = pages.diff_model(diff.compare(load_side("a", a["folder"]), load_side("b", b["folder"])))
    h = Hostile("G")
    dm["findings"] = {k: [_short(h) for _ in range(2)] for k in ("went_away", "appeared", "both")} | {"error": ""}
    diff_page = output.write_page(out / "diff.html", view.render(dm))
    sm, configs, timing = _sweep()
    sweep = output.write_page(out / "sweep.html", view.render(sm))
    return {
        "a": a,
        "b": b,
        "report_model": rm,
        "report": report,
        "diff_model": dm,
        "diff": diff_page,
        "sweep_model": sm,
        "sweep": sweep,
        "configs": configs,
    }


def _hostile_findings(h: Hostile) -> list[dict]:
    """Findings as report.model.finding makes them, every string hostile; one links to a real source line and TTGIR
    line, one to a stage the page does not have."""
    return [
        {
            "kind": h(),
            "title": h(),
            "cause": h(),
            "what": h(),
            "why": h(),
            "evidence": [h(), h()],
            "fix": h(),
            "tryable": i == 0,
            "line": 7 + i,
            "text": h(),
            "src": 3 if i == 0 else 0,
            "ttgir": [["ttgir", 5, h()], [h(), 6, h()]],
            "machine": [[h(), 9, h()], ["sass", 0, h()]],
        }
        for i in range(2)
    ]


def _short(h: Hostile) -> dict:
    return {"kind": h(), "cause": h(), "line": 4, "what": h()}


def _sweep():
    """A sweep page whose title, axes, values, labels, statuses, reasons and notes are hostile."""
    from irscope.report import pages
    from irscope.sweep.configs import Config

    h = Hostile("W")
    axis = h()
    stats = [
        {"registers": 200, "spills": 0, "shared_bytes": 1024, "occupancy": {"occupancy": 0.25}},
        {"registers": 96, "spills": 0, "shared_bytes": 2048, "occupancy": {"occupancy": 0.5}},
        {"registers": 255, "spills": 64, "shared_bytes": 512, "occupancy": {"occupancy": 0.125}},
        {},
    ]
    configs = [
        Config(i, h(), {axis: h(), "num_warps": h()}, None, None, status="ok" if s else h(), reason=h(), stats=s)
        for i, s in enumerate(stats)
    ]
    t = SimpleNamespace
    timing = t(
        rows={c.label: t(median_ms=0.01 * (i + 1), vs_winner=1 + 0.1 * i) for i, c in enumerate(configs[:3])},
        winner=t(name=configs[1].label),
        notes=[h(), h()],
    )
    return pages.sweep_model(configs, timing, h()), configs, timing


# ---------------------------------------------------------------- the HTML as written (before any script)


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self.styles: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in = tag if tag in ("script", "style") else None
        if self._in:
            (self.scripts if tag == "script" else self.styles).append("")

    def handle_data(self, data):
        if self._in == "script":
            self.scripts[-1] += data
        elif self._in == "style":
            self.styles[-1] += data

    def handle_endtag(self, tag):
        self._in = None


def _raw_script_and_style(html: str) -> tuple[str, str]:
    """The inlined script's and style's exact text, read from the page's bytes (not through any parser)."""
    scripts = re.findall(r"<script>(.*?)</script>", html, re.S)
    styles = re.findall(r"<style>(.*?)</style>", html, re.S)
    assert len(scripts) == 1 and len(styles) == 1
    return scripts[0], styles[0]


def _csp(html: str) -> dict[str, list[str]]:
    metas = re.findall(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', html)
    assert len(metas) == 1
    content = metas[0].replace("&#39;", "'").replace("&#x27;", "'")
    out: dict[str, list[str]] = {}
    for part in content.split(";"):
        words = part.split()
        if words:
            out[words[0]] = words[1:]
    return out


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


@pytest.mark.parametrize("kind", ["report", "diff", "sweep"])
def test_csp_hashes_the_one_script_and_style(hostile, kind):
    """No 'unsafe-inline' anywhere; script-src and style-src are exactly the hashes of the inlined script
    and style (computed here from the page's bytes); no request, form or <base> is allowed."""
    html = hostile[kind].read_text()
    csp = _csp(html)
    script, style = _raw_script_and_style(html)
    assert "'unsafe-inline'" not in " ".join(sum(csp.values(), []))
    assert csp["default-src"] == ["'none'"]
    assert csp["script-src"] == [_sha256(script)]
    assert csp["style-src"] == [_sha256(style)]
    assert csp["form-action"] == ["'none'"] and csp["base-uri"] == ["'none'"]
    assert "navigate-to" not in csp  # Chromium logs "Unrecognized ... directive" as a console error


@pytest.mark.parametrize("kind", ["report", "diff", "sweep"])
def test_written_html_has_no_markup_from_the_folder(hostile, kind):
    """Parsed as written: no handler attribute, URL attribute, base, form, link, frame, image or extra
    meta or script; the JSON data blob parses back to what the page was given."""
    html = hostile[kind].read_text()
    p = _Tags()
    p.feed(html)
    names = [t for t, _ in p.tags]
    assert names.count("script") == 2 and names.count("style") == 1 and names.count("meta") == 3
    for bad in ("a", "img", "iframe", "object", "embed", "base", "form", "link", "button[type=submit]", "frame"):
        assert bad not in names, bad
    for tag, attrs in p.tags:
        for k in attrs:
            assert not k.startswith("on"), (tag, k)
            assert k not in ("href", "src", "srcdoc", "action", "formaction", "autofocus", "style", "xlink:href"), (
                tag,
                k,
            )
        if tag == "meta":
            assert attrs.get("http-equiv") in (None, "Content-Security-Policy"), attrs
    data = json.loads(p.scripts[0])
    assert data["kind"] == {"report": "dumps"}.get(kind, kind)
    assert "</script" not in p.scripts[0].lower() and "\u2028" not in p.scripts[0] and "<" not in p.scripts[0]


def test_hostile_strings_reach_the_models(hostile):
    """The page really carries the hostile strings (so the browser tests below test something)."""
    d = hostile["report_model"]["dumps"][0]
    a = hostile["a"]
    assert d["kernel"] == a["manifest"]["kernel"] and d["notes"] == a["manifest"]["notes"]
    assert d["map"]["available"], d["map"].get("why")
    assert d["map"]["machine"] == a["stage_names"]["sass"]
    assert {s["name"] for s in d["stages"]} >= set(a["stage_names"].values())
    assert [p["name"] for p in d["passes"]] == [p["name"] for p in a["manifest"]["passes"]]
    prof, d1 = hostile["b"]["profile"], hostile["report_model"]["dumps"][1]
    assert d1["profile"]["by"] == f"measured by {prof['tool']} on {prof['device']}"
    reasons = {k for e in prof["lines"] for k in e["stalls"]}
    tips = [r["tip"] for r in d1["profile"]["rows"].values()]
    assert tips and all(any(k in t for k in reasons) for t in tips)
    assert json.loads(json.dumps(d1["profile"], allow_nan=False))  # the huge numbers came out finite
    stages = [s["stage"] for s in hostile["diff_model"]["stages"]]
    assert set(a["stage_names"].values()) <= set(stages)
    assert any(
        s["status"] != "equal" and s["stage"] in a["stage_names"].values() for s in hostile["diff_model"]["stages"]
    )


# ---------------------------------------------------------------- in the browser

HOOKS = """
window.__dialogs = [];
window.__csp = [];
for (const n of ["alert", "confirm", "prompt", "print", "open"]) {
  window[n] = function () { window.__dialogs.push(n + ": " + Array.from(arguments).join(" ")); return null; };
}
document.addEventListener("securitypolicyviolation",
  (e) => window.__csp.push(e.violatedDirective + " " + e.blockedURI + " " + (e.sample || "")), true);
"""

POKE = """() => {
  // every event an injected handler could hang on, on every element of the page, then focus it; the
  // clicks do not bubble (an injected handler is on the element itself; the page's own are tried above)
  const kinds = ["mouseover", "mouseenter", "mousemove", "mousedown", "mouseup", "mouseout", "mouseleave",
                 "pointerover", "pointerenter", "focus", "focusin", "blur", "keydown", "keyup", "input", "change",
                 "wheel", "scroll", "load", "error", "animationstart", "transitionend", "toggle", "beforeinput"];
  let n = 0;
  for (const e of Array.from(document.querySelectorAll("*"))) {
    for (const k of kinds) e.dispatchEvent(new Event(k, {bubbles: false}));
    e.dispatchEvent(new MouseEvent("click", {bubbles: false, cancelable: true}));
    e.dispatchEvent(new MouseEvent("dblclick", {bubbles: false, cancelable: true}));
    if (e.focus) e.focus();
    n++;
  }
  return n;
}"""

DOM_CHECK = """() => {
  const bad = [];
  for (const e of document.querySelectorAll("*")) {
    const tag = e.tagName.toLowerCase();
    if (["a", "img", "iframe", "object", "embed", "base", "form", "link", "frame", "image", "foreignobject"].includes(tag)) bad.push(tag);
    for (const a of Array.from(e.attributes)) {
      const k = a.name.toLowerCase();
      if (k.startsWith("on") || ["href", "src", "srcdoc", "action", "formaction", "autofocus", "xlink:href"].includes(k)) bad.push(tag + " " + k);
      // report.js sets sizes through the CSSOM (numbers only): nothing else may be in a style attribute
      if (k === "style" && !/^((width|height): [0-9.]+(px|%)|transform: translateY\\([0-9.]+px\\));$/.test(a.value)) bad.push(tag + " style=" + a.value);
      if (k === "http-equiv" && a.value !== "Content-Security-Policy") bad.push(tag + " " + k);
    }
  }
  return {bad: bad, scripts: document.scripts.length, metas: document.querySelectorAll("meta").length};
}"""


class Probe:
    """A page opened from file:// that records every request, navigation, dialog, CSP violation and
    console error, and whether window.__pwn was ever set."""

    def __init__(self, browser, path: Path):
        self.page = browser.new_page(viewport={"width": 1500, "height": 900})
        self.requests: list[str] = []
        self.navigations: list[str] = []
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.page.add_init_script(HOOKS)
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("framenavigated", lambda f: self.navigations.append(f.url))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.url = path.resolve().as_uri()
        self.page.goto(self.url)
        self.page.wait_for_selector("body[data-ready='1']")

    def poke(self):
        assert self.page.evaluate(POKE) > 50
        for _ in range(25):  # and real keyboard focus, as autofocus/onfocus attacks want
            self.page.keyboard.press("Tab")

    def check(self):
        pg = self.page
        pg.wait_for_timeout(400)  # a meta refresh of 0 seconds would have gone by now
        assert pg.url == self.url
        assert pg.evaluate("typeof window.__pwn") == "undefined"
        assert pg.evaluate("window.__dialogs") == [] and self.dialogs == []
        assert pg.evaluate("window.__csp") == []
        assert self.requests == [self.url], self.requests
        assert self.navigations == [self.url], self.navigations
        assert self.errors == [], self.errors
        dom = pg.evaluate(DOM_CHECK)
        assert dom == {"bad": [], "scripts": 2, "metas": 3}, dom

    def text(self, selector: str) -> list[str]:
        return self.page.locator(selector).evaluate_all("els => els.map(e => e.textContent)")

    def close(self):
        self.page.close()


def _click_lines(pg, pane: int, count: int = 12):
    """Click the pane's first lines. Playwright's click() scrolls the element into view and moves the mouse onto
    it before pressing (a hover's mouseover, mouseenter and mousemove come with it): no hover() of its own."""
    lines = pg.locator(f"section.dump:not([hidden]) .pane[data-pane='{pane}'] .ln")
    for i in range(min(count, lines.count())):
        ln = lines.nth(i)
        if ln.is_visible():
            ln.click()


def _check_findings(p: Probe, m: dict) -> None:
    """The hostile findings shown as text on the first dump (every link clicked), the engine's error on the second."""
    pg, d = p.page, m["dumps"][0]
    pg.click("#d0 nav.tabs button[data-tab='findings']")
    shown = p.text("#d0 .finding")
    assert len(shown) == 2
    for f, text in zip(d["findings"], shown):
        for k in ("kind", "cause", "what", "why", "fix", "text"):
            assert f[k] in text, k
        assert all(e in text for e in f["evidence"]) and all(x[2] in text for x in f["ttgir"] + f["machine"])
    assert p.text("#d0 .finding .f-kind") == [f["kind"] for f in d["findings"]]
    for button in pg.locator("#d0 .finding button.f-link").all():
        pg.click("#d0 nav.tabs button[data-tab='findings']")
        button.click()
    assert m["dumps"][1]["findings_error"] in p.text("#d1 .tab[data-tab='findings'] .warn")[0]


@needs_browser
def test_report_page_runs_nothing_from_the_folder(browser, hostile):
    p = Probe(browser, hostile["report"])
    pg = p.page
    m = hostile["report_model"]
    a, d = hostile["a"], m["dumps"][0]
    # shown literally: the title, the kernel, the notes, the stages, the passes
    assert pg.title() == m["title"] and a["manifest"]["kernel"] in m["title"]
    assert p.text("#d0 .meta b") == [a["manifest"]["kernel"]]
    meta = p.text("#d0 > .meta")[0]
    assert a["manifest"]["target"] in meta and a["manifest"]["triton_version"] in meta
    assert p.text("#d0 > details.notes > .note.mono") == [a["manifest"]["signature"]]
    notes = p.text("#d0 > details.notes > .note")
    assert all(f"note: {n}" in notes for n in a["manifest"]["notes"])
    assert p.text("#dump-pick option") == [x["title"] for x in m["dumps"]]
    picks = p.text("#d0 .pane[data-pane='1'] .stage-pick option")
    assert set(a["stage_names"].values()) <= set(picks)
    assert p.text("#d0 .pass-table tbody td:nth-child(3)") == [x["name"] for x in d["passes"]]
    assert pg.locator("#d0 .pass-table tbody td:nth-child(3)").evaluate_all("els => els.map(e => e.title)") == [
        x["arg"] for x in d["passes"]
    ]
    # the gutter's bars name the machine stage (a hostile name) in their title
    titles = pg.locator("#d0 .pane[data-pane='0'] .gut i").evaluate_all("els => els.map(e => e.getAttribute('title'))")
    assert titles and all(a["stage_names"]["sass"] in t for t in titles)

    _check_findings(p, m)
    for dump in ("d0", "d1"):
        pg.select_option("#dump-pick", dump)
        sec = f"section#{dump}"
        for pane in (1, 2):  # every stage in both pickers, clicking lines in all three panes
            for value in pg.locator(f"{sec} .pane[data-pane='{pane}'] .stage-pick option").evaluate_all(
                "els => els.map(e => e.value)"
            ):
                pg.select_option(f"{sec} .pane[data-pane='{pane}'] .stage-pick", value)
                assert pg.locator(f"{sec} .pane[data-pane='{pane}']").get_attribute("data-stage") == value
                _click_lines(pg, pane, 2)
        for pane in (0, 1, 2):
            _click_lines(pg, pane)
        for bar in pg.locator(f"{sec} .gut i").all()[:10]:
            bar.hover()
        if dump == "d1":  # measured heat: the hostile stall reasons and tool shown as text
            prof = hostile["b"]["profile"]
            reasons = {k for e in prof["lines"] for k in e["stalls"]}
            heat = pg.locator(f"{sec} .pane[data-pane='0'] .gut i.heat").evaluate_all(
                "els => els.map(e => e.getAttribute('title'))"
            )
            assert heat and all(any(k in t for k in reasons) for t in heat)
            note = p.text(f"{sec} .gutter-note.measured")[0]
            assert prof["tool"] in note and prof["device"] in note
        pg.click(f"{sec} nav.tabs button[data-tab='passes']")
        pg.uncheck(f"{sec} .changed-only")
        rows = pg.locator(f"{sec} .pass-table tr[data-i]")
        for i in list(range(12)) + list(range(12, rows.count(), 7)):  # the rest are clicked by poke()
            rows.nth(i).click()
            hunk = pg.locator(f"{sec} .diffview .dl.hunk").first.text_content()
            want = m["dumps"][int(dump[1:])]["passes"][i]
            assert hunk.startswith(f"{want['name']} ({want['arg']}) in {want['stage']}: ")
        pg.click(f"{sec} nav.tabs button[data-tab='figures']")
        for tr in pg.locator(f"{sec} table.hot tr[data-src]").all():
            pg.click(f"{sec} nav.tabs button[data-tab='figures']")
            tr.click()  # hovered on the way (_click_lines says how)
        pg.click(f"{sec} nav.tabs button[data-tab='layouts']")
        for svg in pg.locator(f"{sec} svg.layout-svg").all():
            cells = svg.locator("rect.cell")
            for k in (0, 37):
                if cells.count() > k:
                    cells.nth(k).click()  # scrolled to and hovered on the way (_click_lines says how)
        p.poke()
    p.check()
    p.close()


@needs_browser
def test_diff_page_runs_nothing_from_the_folders(browser, hostile):
    p = Probe(browser, hostile["diff"])
    pg = p.page
    m = hostile["diff_model"]
    names = hostile["a"]["stage_names"]
    fd = m["findings"]
    assert p.text(".findings-diff .fd-what") == [f["what"] for k in ("went_away", "appeared", "both") for f in fd[k]]
    assert p.text(".findings-diff .fd b") == [f["kind"] for k in ("went_away", "appeared", "both") for f in fd[k]]
    pg.click("nav.tabs button[data-tab='stages']")
    assert [t.split("\n")[0] for t in p.text("tr.stage-row td:first-child")] == [s["stage"] for s in m["stages"]]
    for i, s in enumerate(m["stages"]):
        pg.click(f"tr.stage-row[data-i='{i}']")  # hovered on the way (_click_lines says how)
        if s["status"] == "equal":
            assert p.text(".sbs-wrap p.note")[0].startswith(s["stage"] + " is the same")
            continue
        assert pg.locator("table.sbs").get_attribute("data-stage") == s["stage"]
        shown = pg.locator("table.sbs tr.replace, table.sbs tr.insert, table.sbs tr.delete").count()
        assert shown == sum(1 for r in s["rows"] if r[0] in ("replace", "insert", "delete"))
    assert any(s["stage"] in names.values() and s["status"] != "equal" for s in m["stages"])
    for tab in ("stats", "lines", "passes", "stages"):
        if pg.locator(f"nav.tabs button[data-tab='{tab}']").count():
            pg.click(f"nav.tabs button[data-tab='{tab}']")
    p.poke()
    p.check()
    p.close()


@needs_browser
def test_sweep_page_runs_nothing_from_the_configs(browser, hostile):
    p = Probe(browser, hostile["sweep"])
    pg = p.page
    m = hostile["sweep_model"]
    assert pg.title() == m["title"]
    assert p.text("table.sweep th") == m["columns"]
    label = m["columns"].index("config")
    assert p.text(f"table.sweep tbody td:nth-child({label + 1})") == [r["cells"][label] for r in m["rows"]]
    assert sorted(r["cells"][label] for r in m["rows"]) == sorted(c.label for c in hostile["configs"])
    for note in m["notes"]:
        assert note in p.text("main > .note")
    for th in pg.locator("table.sweep th").all():
        th.click()  # hovered on the way (_click_lines says how)
    for pt in pg.locator("svg.scatter circle.pt").all():
        pt.hover()
    p.poke()
    p.check()
    p.close()
