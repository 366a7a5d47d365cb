"""The Python API (irscope.dump, diff, capture; Dump, Diff, Capture): what it returns, its errors (the
CLI's messages), its pages inline in a notebook (an <iframe srcdoc> whose CSP'd script runs), that
`import irscope` stays cheap, and examples/irscope.ipynb run headless with nbclient."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

import irscope
from tests.helpers import (
    CHROMIUM,
    DATA,
    EXAMPLES,
    MATMUL,
    MATMUL_SIG16,
    NO_CHROMIUM,
    VECTOR_ADD,
    load_module,
    run_in,
)

VECTOR_SIG = "*fp32, *fp32, *fp32, i32:16, 1024"


@pytest.fixture(scope="module")
def matmul(tmp_path_factory):
    """The shipped matmul for h100 at num_stages 3 and 4 (the kernel given as an object, then as a file)."""
    out = tmp_path_factory.mktemp("api")
    kernel = load_module(MATMUL).matmul_kernel
    d3 = irscope.dump(kernel, signature=MATMUL_SIG16, target="h100", set={"num_stages": 3}, out=out)
    d4 = irscope.dump(
        MATMUL, name="matmul_kernel", signature=MATMUL_SIG16, target="h100", set={"num_stages": 4}, out=out
    )
    return d3, d4


def test_dump_returns_stages_stats_options(tmp_path, capfd):
    d = irscope.dump(VECTOR_ADD, signature=VECTOR_SIG, target="cuda:90", out=tmp_path)
    assert capfd.readouterr() == ("", "")  # nothing printed as a side effect
    assert isinstance(d, irscope.Dump) and d.folder.parent.parent == tmp_path
    assert '"ttg.num-warps" = 4' in d.stages["ttgir"]
    assert isinstance(d.stages["cubin"], bytes) and ".visible .entry add_kernel" in d.stages["ptx"]
    assert d.options["num_warps"] == 4 and isinstance(d.stats["registers"], int)
    assert d.manifest["kernel"] == "add_kernel" and d.target == "cuda:90"
    assert list(d.stages) == list(d.manifest["stages"])
    eight = irscope.dump(VECTOR_ADD, signature=VECTOR_SIG, target="cuda:90", set={"num_warps": 8}, out=tmp_path)
    assert '"ttg.num-warps" = 8' in eight.stages["ttgir"] and eight.options["num_warps"] == 8
    assert eight.folder != d.folder
    assert repr(d).startswith("<irscope.Dump add_kernel cuda:90 num_warps=4") and "\n" not in repr(d)


def test_dump_by_name_and_const(tmp_path):
    d = irscope.dump(
        VECTOR_ADD,
        args={"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32:16"},
        const={"BLOCK_SIZE": 256},
        out=tmp_path,
    )
    assert d.manifest["args"]["BLOCK_SIZE"] in ("256", 256) or "256" in json.dumps(d.manifest["args"])


def test_lines_of_the_dot_name_ptx_and_sass_lines(matmul):
    d3, _ = matmul
    n = next(i for i, text in enumerate(MATMUL.read_text().splitlines(), 1) if "tl.dot(" in text)
    entry = d3.lines(n)
    assert entry["line"] == n and "tl.dot(" in entry["text"]
    for stage in ("ptx", "sass"):
        at = entry["stages"][stage]["at"]
        assert at and all(isinstance(x, int) for x in at)
    sass = d3.stages["sass"].splitlines()
    assert any("HGMMA" in sass[i - 1] or "WGMMA" in sass[i - 1].upper() for i in entry["stages"]["sass"]["at"])


def test_diff_of_num_stages_3_and_4(matmul, tmp_path):
    d3, d4 = matmul
    df = irscope.diff(d3, d4)
    assert isinstance(df, irscope.Diff) and not df.equal
    assert df.inputs["options.num_stages"] == {"a": 3, "b": 4}
    assert df.stats["shared_bytes"]["a"] < df.stats["shared_bytes"]["b"]
    text = df.stage("ttgir")
    assert text.startswith("--- a/ttgir") and text.splitlines()[1].startswith("+++ b/ttgir")
    assert df.stage("ttir") == ""  # num_stages acts after TTIR
    # the same content as the command's --json
    r = run_in(None, "diff", str(d3.folder), str(d4.folder), "--json")
    assert r.code == 1, r.err
    cli = json.loads(r.out)
    assert df.json["stats"] == cli["stats"] and df.json["inputs"] == cli["inputs"]
    assert df.json["stages"] == cli["stages"] and df.json["irscope_diff"] == 1
    assert irscope.diff(str(d3.folder), d4.folder).stats == df.stats  # folders too
    assert "different" in repr(df) and "ttgir" in repr(df)


def test_bad_input_is_the_clis_message(tmp_path):
    with pytest.raises(irscope.BadInput) as e:
        irscope.dump(VECTOR_ADD, signature="*fp32, *fp32, *fp32, i32:17, 1024", out=tmp_path)
    r = run_in(None, "dump", str(VECTOR_ADD), "--signature", "*fp32, *fp32, *fp32, i32:17, 1024", "-o", str(tmp_path))
    assert r.code == 2 and r.err.strip() == f"irscope: error: {e.value}"
    with pytest.raises(irscope.BadInput, match="not an option"):
        irscope.dump(VECTOR_ADD, signature=VECTOR_SIG, set={"num_warpz": 8}, out=tmp_path)
    with pytest.raises(irscope.BadInput, match="not an irscope dump folder|no such folder"):
        irscope.diff(tmp_path / "nothing", tmp_path)
    assert not list(tmp_path.iterdir())


def test_compile_failure_names_the_stage(tmp_path):
    with pytest.raises(irscope.CompileFailure) as e:
        irscope.dump(DATA / "frontend_error.py", signature="*fp32, i32, 128", out=tmp_path)
    assert e.value.stage == "source" and "undefined_scale" in str(e.value)
    assert "compile failed in stage 'source'" in str(e.value)


def _add(n: int):
    """A launch as Triton's tutorial writes it: tensors on "cuda", the kernel launched, the result checked."""
    import torch

    add_kernel = load_module(VECTOR_ADD).add_kernel
    x = torch.rand(n, device="cuda")
    y = torch.rand(n, device="cuda")
    out = torch.empty_like(x)
    add_kernel[(n + 1023) // 1024,](x, y, out, n, BLOCK_SIZE=1024)
    assert torch.allclose(out, x + y)
    return out.sum().item()


@pytest.mark.torch
def test_capture_of_a_function_call():
    pytest.importorskip("torch")
    cap = irscope.capture(_add, 4096, target="h100")
    assert isinstance(cap, irscope.Capture) and len(cap) >= 1 and cap.stopped is None
    d = cap[0]
    assert isinstance(d, irscope.Dump) and d.kernel == "add_kernel" and d.target == "cuda:90"
    assert "i32:16" in d.manifest["signature"] and '"ttg.num-warps" = 4' in d.stages["ttgir"]
    assert isinstance(cap.value, float)  # the call ran: its result was computed on the stand-in
    assert repr(cap).startswith("<irscope.Capture 1 dump (add_kernel) on cuda:90")
    with pytest.raises(irscope.BadInput, match="without launching a Triton kernel"):
        irscope.capture(lambda: 1)


def test_repr_html_is_the_report_in_an_iframe(matmul):
    d3, d4 = matmul
    import html
    import re

    for obj in (d3, irscope.diff(d3, d4)):
        h = obj._repr_html_()
        assert h.startswith('<iframe sandbox="allow-scripts"') and h.endswith("</iframe>")
        assert 'srcdoc="&lt;!doctype html&gt;' in h and "Content-Security-Policy" in h
        assert "<script" not in h and h.count('"') == 2 * 4  # all of the page is escaped, in one attribute
        [srcdoc] = re.findall(r'srcdoc="([^"]*)"', h)
        page = html.unescape(srcdoc)
        assert page == obj.html()  # the report's own page, as irscope writes it
        assert "script-src 'sha256-" in html.unescape(page) and "unsafe-inline" not in page  # the CSP, hashed


@pytest.mark.skipif(not CHROMIUM.exists(), reason=NO_CHROMIUM)
def test_the_pages_hashed_script_runs_inside_srcdoc(matmul, browser):
    d3, d4 = matmul
    for obj in (d3, irscope.diff(d3, d4)):
        page = browser.new_page()
        errors: list[str] = []
        page.on("console", lambda m, errors=errors: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
        page.set_content(f"<!doctype html><html><body>{obj._repr_html_()}</body></html>")
        frame = page.frames[1]
        frame.wait_for_selector("body[data-ready='1']", timeout=30000)  # report.js ran, under its CSP
        assert (
            frame.evaluate(
                "() => { try { return window.parent.document.body === null; } catch (e) { return 'blocked'; } }"
            )
            == "blocked"
        )  # opaque origin
        assert errors == []
        page.close()


def test_sweep_compiles_the_grid(tmp_path):
    s = irscope.sweep(
        VECTOR_ADD, signature=VECTOR_SIG, target="h100", grid={"num_warps": [4, 8]}, workers=1, out=tmp_path
    )
    assert [c.label for c in s.configs] == ["num_warps=4", "num_warps=8"] and s.best is not None
    assert repr(s).startswith("<irscope.Sweep add_kernel: 2 configs")
    assert s._repr_html_().startswith('<iframe sandbox="allow-scripts"')


def test_import_irscope_is_cheap():
    code = (
        "import sys, irscope; heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('triton', 'torch', 'jinja2', 'rich', 'click')); api = 'irscope.api' in sys.modules; "
        "print(heavy, api, irscope.dump.__module__, 'irscope.api' in sys.modules)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout.split() == ["[]", "False", "irscope.api", "True"], r.stderr


def test_capture_and_sweep_are_the_functions_and_their_packages_still_import():
    """irscope.capture / irscope.sweep name the functions even though capture/ and sweep/ are packages of
    irscope: those load from sys.modules, so nothing may reach them as attributes (`import irscope.capture.x
    as y` would): irscope, its tests and benchmarks import them with `from irscope.capture import ...`."""
    import re

    from irscope.capture import command  # noqa: F401  the package, as irscope imports it
    from irscope.profile import command as profile_command  # noqa: F401
    from irscope.sweep import command as sweep_command  # noqa: F401

    assert callable(irscope.capture) and irscope.capture.__module__ == "irscope.api"
    assert callable(irscope.sweep) and irscope.sweep.__module__ == "irscope.api"
    assert callable(irscope.profile) and irscope.profile.__module__ == "irscope.api"
    root = Path(__file__).resolve().parent.parent
    as_attribute = re.compile(
        r"^\s*import irscope\.(capture|sweep|profile)\b|irscope\.(capture|sweep|profile)\.[a-z_]+\(", re.M
    )
    wrong = [
        str(p)
        for d in ("irscope", "tests", "benchmarks")
        for p in (root / d).rglob("*.py")
        if as_attribute.search(p.read_text())
    ]
    assert not wrong, wrong


NOTEBOOK = EXAMPLES / "irscope.ipynb"


def test_the_notebook_is_committed_without_outputs():
    nb = json.loads(NOTEBOOK.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(not c["outputs"] and c.get("execution_count") is None for c in code)


@pytest.mark.skipif(
    importlib.util.find_spec("nbclient") is None or importlib.util.find_spec("ipykernel") is None,
    reason="nbclient and ipykernel (the test extra) are not installed",
)
def test_the_notebook_runs_headless(tmp_path):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(EXAMPLES)}}).execute()
    outputs = {
        c.metadata.get("tags", ["?"])[0]: c.outputs
        for c in nb.cells
        if c.cell_type == "code" and c.metadata.get("tags")
    }
    html = [o["data"]["text/html"] for o in outputs["report"] if "text/html" in o.get("data", {})]
    assert html and html[0].startswith("<iframe") and "Content-Security-Policy" in html[0]
    stats = "".join(o.get("data", {}).get("text/plain", "") for o in outputs["diff-stats"])
    assert "num_stages" in stats and "shared_bytes" in stats
    pinned = "".join(o.get("data", {}).get("text/plain", "") for o in outputs["pin"])
    assert "ok" in pinned
    assert all(o["output_type"] != "error" for outs in outputs.values() for o in outs)


def _add_then_exit(n: int):
    _add(n)
    raise SystemExit(3)  # a function that ends its process, as a script's main() may


@pytest.mark.torch
def test_a_captured_call_that_exits_keeps_its_captures_and_a_torch_outside_the_range_is_said(monkeypatch):
    """run_call keeps what was captured when the function raises SystemExit (a BaseException), as a script's
    run does; on a torch release outside the tested range the capture's notes say so (standin/versions.py)."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch, "__version__", "2.99.0")
    cap = irscope.capture(_add_then_exit, 4096, target="h100")
    assert len(cap) >= 1 and cap[0].kernel == "add_kernel"
    assert cap.stopped is not None and "SystemExit" in cap.stopped
    assert any("torch 2.99.0 is newer than the releases the stand-in GPU is tested with" in n for n in cap.notes)
