"""An install sized to the job (issue #38 item 1): `pip install -e .` brings what dump, passes, lines and diff need,
and nothing an extra brings; each extra is named for what it serves; a command that needs an optional package
and finds it missing says in one line which extra to install (capture, which has no extra, names the CPU torch).

A package is made missing by running the child on a view of site-packages without it (`without`)."""

from __future__ import annotations

import ast
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import tomllib

from tests.helpers import EXAMPLES, ROOT, VECTOR_ADD, Run

# what the extras (and capture's torch) bring, as the names of their entries in site-packages begin
EXTRAS = (
    "jinja2",
    "ray",
    "optuna",
    "cmaes",
    "pynvml",
    "nvidia-ml-py",
    "mcp",
    "torch",
    "functorch",
    "playwright",
    "helion",
    "mkdocs",
)
VECTOR_SIG = "*fp32, *fp32, *fp32, i32:16, 1024"


def without(missing: tuple[str, ...], *args: str, cwd: Path | None = None) -> Run:
    """irscope's CLI in a fresh process whose packages are this interpreter's but the `missing` ones: a view
    of site-packages (a link per entry, none for a missing package or its dist-info), run with -S so that
    nothing else is on the path, as a venv without those packages would run it."""
    purelib = Path(sysconfig.get_paths()["purelib"])
    view = Path(tempfile.mkdtemp(prefix="irscope-without-"))
    for entry in purelib.iterdir():
        if not entry.name.lower().replace("_", "-").startswith(missing) and not entry.name.endswith(".pth"):
            (view / entry.name).symlink_to(entry)
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{view}")
    code = "from irscope.cli import main; import sys; main(sys.argv[1:])"
    try:
        p = subprocess.run(
            [sys.executable, "-S", "-c", code, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
        )
    finally:
        shutil.rmtree(view)
    return Run(p.returncode, p.stdout, p.stderr)


def _one_line_error(run: Run) -> str:
    assert run.code == 2, run.out + run.err
    lines = run.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("irscope: error: "), run.err
    assert "Traceback" not in run.err
    return lines[0]


def test_the_base_install_asks_for_no_extra():
    tree = ast.parse((ROOT / "setup.py").read_text())
    deps = next(
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "DEPENDENCIES" for t in node.targets)
    )
    names = {ast.literal_eval(e).split(">")[0].split(";")[0].split("[")[0].strip() for e in deps.elts}
    assert names == {"click", "rich", "pygments", "tomli"}
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["report"] == ["jinja2>=3"]
    assert extras["search"] == ["optuna>=3.5", "cmaes"]
    assert extras["ray"] == ["ray[default]>=2.9"] and extras["nvml"] == ["nvidia-ml-py>=12"]
    assert extras["mcp"] == ["mcp>=2.3,<3"]
    assert extras["docs"] == ["mkdocs-material>=9", "mkdocstrings[python]>=0.26"]
    # numpy for the interpreter, never torch: PyPI's torch is the CUDA build (capture names the CPU one)
    assert extras["capture"] == ["numpy>=1.24"]
    for need in ("pytest>=8", "pytest-xdist>=3.5", "jinja2>=3", "optuna>=3.5", "cmaes", "mcp>=2.3,<3", "helion>=1.5"):
        assert need in extras["test"]
    assert not any(d.startswith("torch") for d in extras["test"])  # the README's test lane runs without torch


def test_dump_passes_lines_and_diff_work_without_any_extra(tmp_path):
    spec = (str(VECTOR_ADD), "--signature", VECTOR_SIG, "--target", "cuda:90")
    run = without(EXTRAS, "dump", *spec, "--passes", "-o", str(tmp_path))
    assert run.code == 0, run.err
    (folder,) = [p.parent for p in tmp_path.rglob("manifest.json")]
    assert "ld.global.v4" in (folder / "add_kernel.ptx").read_text()
    for args in (
        ("passes", str(folder)),
        ("lines", str(folder)),
        ("diff", *spec, "--a", "num_warps=4", "--b", "num_warps=8"),
    ):
        run = without(EXTRAS, *args)
        assert run.code in (0, 1), (args, run.err)  # diff: 1 when the sides differ
        assert "ModuleNotFoundError" not in run.err and "internal error" not in run.err, run.err


def test_report_without_jinja2_names_the_report_extra(tmp_path):
    page = tmp_path / "report.html"
    line = _one_line_error(without(("jinja2",), "report", str(tmp_path), "-o", str(page)))
    assert "Jinja2" in line and "pip install 'irscope[report]'" in line
    # dump --html: refused before the compile, nothing written
    out = tmp_path / "dumps"
    run = without(("jinja2",), "dump", str(VECTOR_ADD), "--signature", VECTOR_SIG, "--html", str(page), "-o", str(out))
    assert "pip install 'irscope[report]'" in _one_line_error(run)
    assert not page.exists() and not out.exists()


def test_capture_without_torch_names_the_cpu_build(tmp_path):
    run = without(("torch",), "capture", str(EXAMPLES / "scripts" / "vector_add.py"), "-o", str(tmp_path / "c"))
    line = _one_line_error(run)
    assert "No module named 'torch'" in line or "torch" in line
    assert "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in line


def test_search_and_clocks_name_their_extras(monkeypatch):
    from irscope.sweep import search
    from irscope.timing import clocks

    monkeypatch.setitem(sys.modules, "optuna", None)
    assert "pip install 'irscope[search]'" in search.available("optuna")[1]
    monkeypatch.delitem(sys.modules, "optuna")
    if importlib.util.find_spec("optuna") is not None:  # the cmaes check comes after Optuna's
        monkeypatch.setitem(sys.modules, "cmaes", None)
        assert search.available("optuna-cmaes") == ("optuna", search.available("optuna-cmaes")[1])
        assert "pip install 'irscope[search]'" in search.available("optuna-cmaes")[1]
    monkeypatch.setitem(sys.modules, "pynvml", None)
    reader, why = clocks.nvml_reader()
    assert reader is None and "pip install 'irscope[nvml]'" in why


def test_timing_without_torch_says_to_install_it():
    args = (
        "bench",
        str(VECTOR_ADD),
        "--args",
        "x_ptr=randn(4096, fp32), y_ptr=randn(4096, fp32), out_ptr=empty(4096, fp32), n_elements=4096, BLOCK_SIZE=1024",
        "--grid",
        "4",
    )
    line = _one_line_error(without(("torch", "functorch"), *args))
    assert "torch is not installed here (pip install torch: the build for this GPU)" in line
