"""Issue #31, the capture half: what a user sees when a library, a signal, a print or --debug
meets irscope's capture. Each test runs a tiny script under tests/data/ through the CLI."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import run_cli

pytest.importorskip("torch")
pytestmark = pytest.mark.torch

DATA = Path(__file__).parent / "data"


def _lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("irscope:")]


def test_a_library_cache_object_is_not_iterated(tmp_path):
    """FlagGems' LibTuner: its cache is a ConfigCache (no keys()); irscope leaves it alone."""
    r = run_cli(
        "capture",
        str(DATA / "capture_config_cache.py"),
        "--compile-only",
        "--target",
        "cuda:90",
        "-o",
        str(tmp_path / "out"),
    )
    assert r.code == 0, r.err
    assert "config cache ok" in r.out
    assert "the script stopped" not in r.err and "internal error" not in r.err, r.err
    assert "capture 1/2  add_one_kernel" in r.out and "capture 2/2  add_one_kernel" in r.out


def test_an_exception_in_a_capture_hook_is_irscopes(tmp_path):
    """A failure inside irscope's own hook is reported as irscope's, not as the script's failure
    (here the script itself breaks the hook, then runs the FlagGems-like one)."""
    script = tmp_path / "breaks_hook.py"
    script.write_text(
        "import runpy\nfrom irscope.capture import recorder\n"
        "def broken(self, tuner):\n    raise TypeError(\"'int' object is not iterable\")\n"
        "recorder.Recorder._take_tuner = broken\n"
        f"runpy.run_path({str(DATA / 'capture_config_cache.py')!r}, run_name='__main__')\n"
    )
    r = run_cli("capture", str(script), "--compile-only", "--target", "cuda:90", "-o", str(tmp_path / "out"))
    assert r.code == 1, r.err
    assert _lines(r.err) == [
        (
            "irscope: internal error in its capture hook: TypeError: 'int' object is not iterable "
            "(run again with --debug for the traceback)"
        )
    ], r.err


SEVERAL = """
import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * SALT, mask=mask)


x = torch.ones(4096, device=DEVICE)
out = torch.empty_like(x)
for block in (32, 64, 128, 256, 512, 1024, 2048, 4096):
    scale_kernel[(triton.cdiv(4096, block),)](x, out, x.numel(), BLOCK=block)
"""


def test_sigterm_during_the_dumps_writes_what_is_done(tmp_path):
    """SIGTERM once the first dump folder exists: the --json document lists the finished dumps,
    one line says how far the dumps got, and the exit status is 143."""
    script = tmp_path / "several.py"  # a constant of its own: no cache anywhere has these kernels
    script.write_text(SEVERAL.replace("SALT", repr(1.0 + time.time_ns() % 100000 / 1e6)))
    out_dir = tmp_path / "out"
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "irscope",
            "capture",
            str(script),
            "--compile-only",
            "--target",
            "cuda:90",
            "-o",
            str(out_dir),
            "--json",
            "--no-cache",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    try:
        deadline = time.monotonic() + 240
        while not list(out_dir.glob("scale_kernel/*/manifest.json")):
            assert p.poll() is None, p.communicate()
            assert time.monotonic() < deadline, "no dump folder appeared"
            time.sleep(0.05)
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=240)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 143, err
    [line] = [ln for ln in _lines(err) if ln.startswith("irscope: stopped by")]
    m = re.match(r"irscope: stopped by SIGTERM after (\d+) of 8 dumps; ", line)
    assert m, line
    doc = json.loads(out)
    finished = int(m.group(1))
    assert 1 <= finished <= 8
    assert len(doc["kernels"]) == finished
    assert doc["capture"]["dumps_stopped"] == f"SIGTERM after {finished} of 8 dumps"
    assert len(doc["capture"]["specs"]) == 8
    assert all(Path(k["folder"], "manifest.json").is_file() for k in doc["kernels"])


def test_printed_standin_tensors_read_like_gpu_tensors(tmp_path):
    """print(x) of a stand-in tensor says device='cuda:0', where a GPU run's print says it."""
    r = run_cli(
        "capture", str(DATA / "capture_prints.py"), "--compile-only", "--target", "cuda:90", "-o", str(tmp_path / "out")
    )
    assert r.code == 0, r.err
    assert "repr tensor([0., 2., 4., 6.], device='cuda:0')" in r.out
    assert "str tensor([0., 2., 4., 6.], device='cuda:0')" in r.out
    assert "half tensor([1., 1.], device='cuda:0', dtype=torch.float16)" in r.out
    assert "list [tensor([0.], device='cuda:0')]" in r.out
    assert "fstring tensor([1, 2], device='cuda:0')" in r.out


def test_debug_shows_the_scripts_own_traceback(tmp_path):
    """--debug: the script's failure line is followed by its traceback on stderr (without: one line)."""
    script = DATA / "capture_fails_late.py"
    r = run_cli("capture", str(script), "--compile-only", "--target", "cuda:90", "-o", str(tmp_path / "out"), "--debug")
    assert r.code == 0, r.err
    err = r.err.splitlines()
    [at] = [i for i, line in enumerate(err) if line.startswith("irscope: the script stopped: capture_fails_late.py:16")]
    assert err[at + 1] == "Traceback (most recent call last):"
    assert f'  File "{script}", line 21, in <module>' in err[at + 2 :]
    assert f'  File "{script}", line 16, in check' in err[at + 2 :]
    assert "ValueError: bad result 8" in err[at + 2 :]
    assert "runpy" not in r.err
    plain = run_cli("capture", str(script), "--compile-only", "--target", "cuda:90", "-o", str(tmp_path / "out2"))
    assert "Traceback" not in plain.err


def test_a_kernel_that_cannot_compile_raises_at_its_launch_in_the_script(tmp_path):
    """A kernel the compiler rejects for cuda:90 (that the interpreter would run) raises
    CompilationError at each launch, inside the script, as a GPU launch does: the script's own
    except falls back and it ends; the capture says it raised there."""
    import triton

    removed = not hasattr(triton.language, "make_block_ptr") or "removed" in (
        triton.language.make_block_ptr.__doc__ or ""
    )
    r = run_cli(
        "capture",
        str(DATA / "capture_cannot_compile.py"),
        "--compile-only",
        "--target",
        "cuda:90",
        "-o",
        str(tmp_path / "out"),
        "--json",
    )
    assert "the script stopped" not in r.err and "internal error" not in r.err, r.err
    assert r.err.count("small dot raised CompilationError; falling back to torch") == 2, r.err
    assert ("block pointers raised CompilationError" in r.err) == removed, r.err
    assert ("block pointers launched" in r.err) != removed, r.err
    assert "done" in r.err
    caps = {c["kernel"]: c for c in json.loads(r.out)["capture"]["captures"]}
    small = caps["small_dot_kernel"]
    assert small["launches"] == 0  # it never launched: each launch raised
    [note] = [n for n in small["notes"] if n.startswith("raised in the script at the launch, as a GPU would: ")]
    assert "CompilationError: Input shapes should have" in note
    assert small["failed"]  # the dump compiles it too, and says where it fails
    blocks = caps["block_ptr_copy_kernel"]
    assert (blocks["launches"] == 0) == removed
    assert any("Block pointers have been removed" in n for n in blocks["notes"]) == removed
