"""Nothing captured is ever lost: SIGINT, SIGTERM, --time-limit and a script's own failure end the
script, not the capture. Each test runs `irscope capture SCRIPT -o DIR` in a fresh process on a script
that launches one kernel and then waits (or fails): the spec file and the dump folder are written,
the capture is listed, one stderr line says why the script stopped, and the exit status is 0.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import VECTOR_ADD, run_cli

pytest.importorskip("torch")
pytestmark = pytest.mark.torch

HEAD = """
import time
import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


x = torch.ones(1024, device=DEVICE)
out = torch.empty_like(x)
"""
LAUNCH = 'scale_kernel[(4,)](x, out, x.numel(), BLOCK=256)\nprint("launched", flush=True)\n'
WAIT = "while True:\n    time.sleep(0.05)\n"
# a script's own `except KeyboardInterrupt` does not keep it running after irscope's Ctrl-C
STUBBORN = (
    "while True:\n    try:\n        time.sleep(0.05)\n    except KeyboardInterrupt:\n"
    '        print("ignored", flush=True)\n'
)


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "waits.py"
    path.write_text(HEAD + body)
    return path


def _lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("irscope:")]


def _dump(script: Path, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "irscope",
        "capture",
        str(script),
        "--compile-only",
        "--target",
        "cuda:90",
        "-o",
        str(out),
        *extra,
    ]


def _signalled(cmd: list[str], signum: int, wait_for: str = "launched") -> tuple[int, str, str]:
    """Run irscope, send `signum` once the script printed `wait_for`; (exit status, stdout, stderr)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        seen = []
        for line in p.stdout:
            seen.append(line)
            if line.strip() == wait_for:
                break
        else:
            raise AssertionError(f"the script never said {wait_for!r}: {p.stderr.read()}")
        time.sleep(0.3)  # into the script's waiting loop
        p.send_signal(signum)
        out, err = p.communicate(timeout=240)
        return p.returncode, "".join(seen) + out, err
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def _kept(out_dir: Path) -> None:
    assert (out_dir / "captures" / "scale_kernel-1.json").is_file()
    folders = list((out_dir / "scale_kernel").iterdir())
    assert len(folders) == 1 and (folders[0] / "manifest.json").is_file()


@pytest.mark.parametrize(
    "signum, said", [(signal.SIGINT, "interrupted (SIGINT)"), (signal.SIGTERM, "terminated (SIGTERM)")]
)
def test_signal_after_a_capture_keeps_it(tmp_path, signum, said):
    out_dir = tmp_path / "out"
    code, out, err = _signalled(_dump(_script(tmp_path, LAUNCH + STUBBORN), out_dir), signum)
    assert code == 0, err
    assert _lines(err) == [f"irscope: the script stopped: {said} after 1 kernel; the captures up to there are kept"]
    assert "capture 1/1  scale_kernel" in out
    _kept(out_dir)


def test_time_limit_ends_a_script_that_never_ends(tmp_path):
    out_dir = tmp_path / "out"
    start = time.monotonic()
    r = run_cli(
        "capture",
        str(_script(tmp_path, LAUNCH + WAIT)),
        "--compile-only",
        "--target",
        "cuda:90",
        "-o",
        str(out_dir),
        "--time-limit",
        "3",
    )
    took = time.monotonic() - start
    assert r.code == 0, r.err
    assert 3 <= took < 120
    assert _lines(r.err) == [
        ("irscope: the script stopped: time limit of 3 s reached after 1 kernel; the captures up to there are kept")
    ]
    _kept(out_dir)


def test_a_script_that_raises_after_a_launch_keeps_its_capture(tmp_path):
    out_dir = tmp_path / "out"
    r = run_cli(
        "capture",
        str(_script(tmp_path, LAUNCH + 'raise RuntimeError("boom")\n')),
        "--compile-only",
        "--target",
        "cuda:90",
        "-o",
        str(out_dir),
    )
    assert r.code == 0, r.err
    [line] = _lines(r.err)
    assert line.startswith("irscope: the script stopped: waits.py:") and "RuntimeError: boom" in line
    assert "1 kernel captured" in line
    _kept(out_dir)


def test_sigint_before_any_launch_is_one_line_and_nothing_written(tmp_path):
    out_dir = tmp_path / "out"
    code, _, err = _signalled(
        _dump(_script(tmp_path, 'print("ready", flush=True)\n' + WAIT), out_dir), signal.SIGINT, wait_for="ready"
    )
    assert code == 2
    [line] = _lines(err)
    assert "interrupted (SIGINT) before the script launched a Triton kernel" in line
    assert not (out_dir / "captures").exists()


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "x"])
def test_time_limit_must_be_a_positive_number(tmp_path, value):
    r = run_cli(
        "capture", str(_script(tmp_path, LAUNCH)), "--compile-only", "-o", str(tmp_path / "o"), "--time-limit", value
    )
    assert r.code == 2 and "--time-limit" in r.err
    assert not (tmp_path / "o").exists()


def test_time_limit_is_refused_with_a_signature(tmp_path):
    r = run_cli(
        "dump",
        str(VECTOR_ADD),
        "--signature",
        "*fp32, *fp32, *fp32, i32, 1024",
        "-o",
        str(tmp_path / "o"),
        "--time-limit",
        "3",
    )
    assert r.code == 2 and "--time-limit: applies when FILE is a script run for capture" in r.err


def test_handlers_and_timer_are_put_back(tmp_path):
    """In-process: after run_script (here: a script that launches nothing, so bad input), SIGINT,
    SIGTERM and SIGALRM have their old handlers and no timer is left running."""
    from irscope.capture import runner
    from irscope.errors import BadInput
    from irscope.kernel.targets import parse_target

    script = tmp_path / "nothing.py"
    script.write_text("x = 1\n")
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM)}
    with pytest.raises(BadInput):
        runner.run_script(script, [], parse_target("cuda:90"), "test", "compile-only", [], time_limit=30)
    assert {s: signal.getsignal(s) for s in before} == before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
