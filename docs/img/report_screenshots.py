"""The report's screenshots in docs/guides/report-page.md, made from real dumps in Debian's Chromium.

    PYTHONPATH=$PWD python docs/img/report_screenshots.py   (from the repository root; needs torch for
                                                             the capture, Playwright and /usr/bin/chromium)

It captures examples/scripts/matmul_autotune.py for cuda:90 (three autotune configs), dumps
examples/matmul.py at num_stages=3 and 4 and diffs them from Python, sweeps num_warps x num_stages of
examples/matmul.py (compiled, not timed), and writes docs/img/report-*.png at 1500x900.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IMG = ROOT / "docs" / "img"
MATMUL = ROOT / "examples" / "matmul.py"
SIG = (
    "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, 128, 128, 64, 8"
)


def pages(tmp: Path) -> dict[str, Path]:
    import irscope
    from irscope.report import output
    from irscope.views import report as view

    cap = tmp / "cap"
    script = ROOT / "examples" / "scripts" / "matmul_autotune.py"
    subprocess.run(
        [sys.executable, "-m", "irscope", "capture", str(script), "--target", "cuda:90", "-o", str(cap)], check=True
    )
    view.write_dumps([cap], tmp / "capture.html")
    a, b = (
        irscope.dump(str(MATMUL), signature=SIG, target="cuda:90", set={"num_stages": n}, out=tmp / f"ns{n}")
        for n in (3, 4)
    )
    output.write_page(tmp / "diff.html", irscope.diff(a, b, by_line=True).html())
    s = irscope.sweep(
        str(MATMUL), signature=SIG, target="cuda:90", grid={"num_warps": [4, 8], "num_stages": [2, 3, 4]}, workers=2
    )
    output.write_page(tmp / "sweep.html", s.html())
    return {"capture": tmp / "capture.html", "diff": tmp / "diff.html", "sweep": tmp / "sweep.html"}


def shoot(files: dict[str, Path]) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        pg = browser.new_page(viewport={"width": 1500, "height": 900})

        def go(name: str) -> None:
            pg.goto(files[name].resolve().as_uri())
            pg.wait_for_selector("body[data-ready='1']")

        def shot(name: str) -> None:
            pg.screenshot(path=str(IMG / f"report-{name}.png"))

        go("capture")
        pg.select_option("#dump-pick", index=2)
        shot("code")
        sec = "section.dump:not([hidden])"
        pg.click(f"{sec} details.notes summary")
        shot("notes")
        pg.click(f"{sec} details.notes summary")
        pg.click(f"{sec} nav.tabs button[data-tab='figures']")
        shot("figures")
        pg.click(f"{sec} nav.tabs button[data-tab='layouts']")
        shot("layouts")
        go("diff")
        shot("diff")
        go("sweep")
        shot("sweep")
        browser.close()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as t:
        shoot(pages(Path(t)))
