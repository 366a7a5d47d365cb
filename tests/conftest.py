"""Fixtures (an isolated irscope cache, the CLI runner) and the two skip rules: GPU tests and torch tests.

How tests/ is laid out, by what a test needs:
- tests/test_*.py: the CPU. Everything irscope does without launching a kernel, on any machine (a GPU's
  compile is a cross-compile; a script's launches go to irscope's stand-in GPU). Tests that check what is
  said *without* a GPU stay here, skipped where there is one.
- tests/gpu/test_*.py: a real CUDA GPU, one module per area (bench, capture, frontier, sweep, and fidelity:
  irscope's PTX equals the JIT's). Each module is marked `pytestmark = pytest.mark.gpu` and nothing else;
  imports at module level need no GPU (torch is imported inside the tests).
- tests/data/: the kernel files and scripts tests read (nothing a test writes: that goes to tmp_path).
- tests/helpers.py: what tests share besides fixtures (paths, signatures, run_cli, compile_example, load_module).

The skip rules (pytest_collection_modifyitems below):
- every test marked `gpu`, wherever it lives, is skipped with one reason when torch is missing or
  torch.cuda.is_available() is False. A stricter need (Hopper or newer) is a pytest.skip inside the test
  itself. On the GPU machine: `pytest tests/gpu` (or `pytest -m gpu`).
- every test marked `torch` (it imports torch, or runs a script that does: a capture) is skipped with one
  reason when torch is not installed; the README's set-up installs no torch. A module that imports torch at
  its top keeps `pytest.importorskip("torch")` there and is marked too (`pytestmark`), so that `-m torch`
  selects every test that needs it (CI's torch lane). Other optional packages (ray, optuna, helion,
  nbclient, Chromium) are skips inside the modules that need them.

Under pytest-xdist (`-n auto`) each worker is its own session: its own cache folder (tmp_path_factory is per
worker) and its own module fixtures; nothing a test writes goes to a fixed path. A test file's tests run on
one worker (--dist loadfile, pytest_configure below), so its module fixtures are made once.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

from tests.helpers import CHROMIUM, NO_CHROMIUM, run_cli


def _no_cuda_gpu() -> str:
    """Why gpu-marked tests cannot run here, or "" where torch sees a CUDA GPU."""
    try:
        import torch
    except ImportError:
        return "needs a CUDA GPU: torch is not installed"
    return "" if torch.cuda.is_available() else "needs a CUDA GPU: torch.cuda.is_available() is False"


def pytest_configure(config):
    """Under pytest-xdist (-n N), a test file's tests go to one worker (--dist loadfile) unless --dist was
    given: a module's fixtures (dumps compiled once for the module, a capture, a Ray cluster, a browser)
    are then made once, not once per worker that got some of its tests."""
    args = config.invocation_params.args
    if getattr(config.option, "dist", "no") == "load" and not any(str(a).startswith("--dist") for a in args):
        config.option.dist = "loadfile"


NO_TORCH = (
    "needs torch: not installed (pip install torch==2.13.0 --index-url "
    "https://download.pytorch.org/whl/cpu, the CPU build)"
)


def pytest_collection_modifyitems(config, items):
    """The skip rules: the `gpu` marker, skipped without a CUDA GPU (torch is asked once, and only when a gpu
    test was collected); the `torch` marker, skipped where torch is not installed (found, not imported)."""
    gpu_tests = [item for item in items if item.get_closest_marker("gpu") is not None]
    why = _no_cuda_gpu() if gpu_tests else ""
    if why:
        skip = pytest.mark.skip(reason=why)
        for item in gpu_tests:
            item.add_marker(skip)
    if importlib.util.find_spec("torch") is None:
        # a skipif put first: pytest says the first skipif that holds, so "needs torch" wins over a module's
        # own reason (liger-kernel missing, helion unusable), which is only the next thing to install
        skip = pytest.mark.skipif(True, reason=NO_TORCH)
        for item in items:
            if item.get_closest_marker("torch") is not None and item.get_closest_marker("gpu") is None:
                item.add_marker(skip, append=False)


@pytest.fixture(autouse=True, scope="session")
def _session_cache(tmp_path_factory):
    """Tests never read or write the user's ~/.cache/irscope."""
    old = os.environ.get("IRSCOPE_CACHE_DIR")
    os.environ["IRSCOPE_CACHE_DIR"] = str(tmp_path_factory.mktemp("irscope-cache"))
    yield
    if old is None:
        os.environ.pop("IRSCOPE_CACHE_DIR", None)
    else:
        os.environ["IRSCOPE_CACHE_DIR"] = old


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def worker_linecache():
    """For a test that runs a capture worker's function in this process: the rebuild seeds linecache with
    the recorded lines of the kernel's file (a worker's own cache, by design), which would leave this
    process's inspect (and pytest's tracebacks) reading a sparse copy of that file; put back after."""
    import linecache

    saved = dict(linecache.cache)
    yield
    linecache.cache.clear()
    linecache.cache.update(saved)


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium through Playwright, one per test module (skipped where it is not installed)."""
    if not CHROMIUM.exists():
        pytest.skip(NO_CHROMIUM)
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the test extra)")
    sync_playwright = sync_api.sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield b
        b.close()
