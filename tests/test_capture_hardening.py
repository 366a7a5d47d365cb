"""Issue #31, the capture half: what a user sees when a library, a signal, a print or --debug
meets irscope's capture. Each test runs a tiny script under tests/data/ through the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.helpers import run_cli

pytest.importorskip("torch")

DATA = Path(__file__).parent / "data"


def _lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("irscope:")]


def test_a_library_cache_object_is_not_iterated(tmp_path):
    """FlagGems' LibTuner: its cache is a ConfigCache (no keys()); irscope leaves it alone."""
    r = run_cli("dump", str(DATA / "capture_config_cache.py"), "--compile-only", "--target", "cuda:90",
                "-o", str(tmp_path / "out"))
    assert r.code == 0, r.err
    assert "config cache ok" in r.out
    assert "the script stopped" not in r.err and "internal error" not in r.err, r.err
    assert "capture 1/2  add_one_kernel" in r.out and "capture 2/2  add_one_kernel" in r.out


def test_an_exception_in_a_capture_hook_is_irscopes(tmp_path):
    """A failure inside irscope's own hook is reported as irscope's, not as the script's failure
    (here the script itself breaks the hook, then runs the FlagGems-like one)."""
    script = tmp_path / "breaks_hook.py"
    script.write_text("import runpy\nfrom irscope.capture import recorder\n"
                      "def broken(self, tuner):\n    raise TypeError(\"'int' object is not iterable\")\n"
                      "recorder.Recorder._take_tuner = broken\n"
                      f"runpy.run_path({str(DATA / 'capture_config_cache.py')!r}, run_name='__main__')\n")
    r = run_cli("dump", str(script), "--compile-only", "--target", "cuda:90", "-o", str(tmp_path / "out"))
    assert r.code == 1, r.err
    assert _lines(r.err) == ["irscope: internal error in its capture hook: TypeError: 'int' object is not iterable "
                             "(run again with --debug for the traceback)"], r.err
