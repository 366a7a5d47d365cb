"""docs/img/report-findings.png: the report's Findings tab on a real dump, in Debian's Chromium.

    PYTHONPATH=$PWD python docs/img/findings_screenshot.py   (from the repository root; needs Playwright and
                                                              /usr/bin/chromium; no torch, no GPU)

It dumps examples/pitfalls/dot_loop.py for cuda:100 at num_warps=2 (tl.dot on mma.sync, the operands by
cp.async: two findings), writes its report and shoots the Findings tab at 1500x900.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IMG = ROOT / "docs" / "img"
DOT = ROOT / "examples" / "pitfalls" / "dot_loop.py"
SIG = "*fp16, *fp16, *fp16, i32:16, i32:16, i32:16, i32:16, 64, 64, 32, 'ieee'"


def page(tmp: Path) -> Path:
    import irscope
    from irscope.views import report as view

    os.chdir(tmp)  # the page names the folder as given: a short relative one
    d = irscope.dump(str(DOT), signature=SIG, target="cuda:100", set={"num_warps": 2}, out="irscope-out")
    view.write_dumps([Path(os.path.relpath(d.folder, tmp))], tmp / "report.html")
    return tmp / "report.html"


def shoot(path: Path) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        pg = browser.new_page(viewport={"width": 1500, "height": 900})
        pg.goto(path.resolve().as_uri())
        pg.wait_for_selector("body[data-ready='1']")
        pg.click("nav.tabs button[data-tab='findings']")
        pg.screenshot(path=str(IMG / "report-findings.png"))
        browser.close()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as t:
        shoot(page(Path(t)))
