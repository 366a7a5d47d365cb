"""Size and responsiveness of `irscope report` on a big kernel.

    python benchmarks/bench_report.py [DUMP_DIR] [--reps 3]

Without DUMP_DIR it dumps the shipped matmul for an A100 with 256x256x64 tiles and 4 warps, with
--passes, into a temporary folder: mma.sync and spills make a PTX of about 4,400 lines and a SASS of
about 6,500 (Triton 3.6).
Then it measures:
  build        building the report (model, layouts in Triton's child process, rendering), median of reps
  size         the HTML file, and its parts: stage texts, pass diffs, layout cells
  load         time-to-interactive in Debian's Chromium from file:// (navigation to the page's ready
               mark: the data parsed, three panes rendered), median of reps
  click        a click on the Python line with the most machine instructions until the three panes
               are highlighted and scrolled (median of 5)
  scroll       jumping to the end of the biggest pane until its lines are rendered (median of 5)
  dom lines    how many lines the panes hold in the DOM (lazy rendering keeps this small)
and checks that the page made no request but its own file and logged no error.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIG = (
    "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, 256, 256, 64, 8"
)
CHROMIUM = "/usr/bin/chromium"


def big_dump(out: Path) -> Path:
    from irscope import artifacts
    from tests.conftest import MATMUL, compile_example

    art = compile_example(MATMUL, SIG, target="cuda:80", sets=("num_warps=4",), passes=True)
    return artifacts.write(art, out)


def build(folder: Path, path: Path, reps: int) -> tuple[float, dict]:
    from irscope.report import model as report_model
    from irscope.report import output
    from irscope.views import report as view

    times = []
    for _ in range(reps):
        t = time.perf_counter()
        m = report_model.report_model([folder])
        output.write_page(path, view.render(m))
        times.append(time.perf_counter() - t)
    return statistics.median(times), m


def browser_figures(path: Path, line: int, reps: int) -> dict:
    from playwright.sync_api import sync_playwright

    out: dict = {"load_s": [], "click_ms": [], "scroll_ms": []}
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        for _ in range(reps):
            page = b.new_page(viewport={"width": 1500, "height": 900})
            requests, errors = [], []
            page.on("request", lambda r, requests=requests: requests.append(r.url))
            page.on("console", lambda m, errors=errors: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
            t = time.perf_counter()
            page.goto(path.resolve().as_uri())
            page.wait_for_selector("body[data-ready='1']")
            out["load_s"].append(time.perf_counter() - t)
            for _ in range(5):
                out["click_ms"].append(
                    page.evaluate(f"""() => {{
                    const t = performance.now();
                    document.querySelector(".pane[data-pane='0'] .ln[data-n='{line}']").click();
                    return performance.now() - t; }}""")
                )
                out["scroll_ms"].append(
                    page.evaluate("""() => new Promise(done => {
                    const s = document.querySelector(".pane[data-pane='2'] .scroller");
                    const t = performance.now(); s.scrollTop = s.scrollHeight;
                    requestAnimationFrame(() => requestAnimationFrame(() => { s.scrollTop = 0;
                        done(performance.now() - t); })); })""")
                )
            out["dom_lines"] = page.evaluate("() => document.querySelectorAll('.ln').length")
            out["requests"], out["errors"] = requests, errors
            page.close()
        b.close()
    return {
        "load_s": statistics.median(out["load_s"]),
        "click_ms": statistics.median(out["click_ms"]),
        "scroll_ms": statistics.median(out["scroll_ms"]),
        "dom_lines": out["dom_lines"],
        "requests": out["requests"],
        "errors": out["errors"],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dump", nargs="?", type=Path)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.dump or big_dump(Path(tmp) / "dump")
        path = Path(tmp) / "report.html"
        build_s, m = build(folder, path, args.reps)
        d = m["dumps"][0]
        lines = {s["name"]: s["lines"] for s in d["stages"]}
        hot = d["map"]["hot"][0]["src"] if d["map"].get("available") and d["map"]["hot"] else 1
        parts = {
            "stages": sum(len(s["text"]) for s in d["stages"]),
            "pass diffs": len(json.dumps([p["diff"] for p in d["passes"] or []])),
            "layout cells": len(json.dumps([lay["cells"] for lay in d["layouts"]])),
        }
        fig = browser_figures(path, hot, args.reps) if Path(CHROMIUM).exists() else None
        size = path.stat().st_size
    print(f"kernel     {d['kernel']} {d['target']}: " + ", ".join(f"{k} {v} lines" for k, v in lines.items()))
    print(f"build      {build_s:.2f} s (median of {args.reps})")
    print(f"size       {size / 1024:.0f} KiB (" + ", ".join(f"{k} {v / 1024:.0f} KiB" for k, v in parts.items()) + ")")
    if fig is None:
        print(f"browser    skipped: no {CHROMIUM}")
        return
    print(f"load       {fig['load_s'] * 1e3:.0f} ms to interactive from file:// (median of {args.reps})")
    print(f"click      {fig['click_ms']:.1f} ms: Python line {hot} -> highlighted in three panes")
    print(f"scroll     {fig['scroll_ms']:.1f} ms: to the end of the SASS pane, rendered (two frames)")
    print(f"dom lines  {fig['dom_lines']} in the DOM for {sum(lines.values())} stage lines")
    print(f"requests   {len(fig['requests'])} (the file itself); console errors {len(fig['errors'])}")


if __name__ == "__main__":
    main()
