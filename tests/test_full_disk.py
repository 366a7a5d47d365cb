"""A write the machine refuses (a full disk, a quota, a file-size limit) is the place's fault: one line that
says which write and why, exit 1, nothing half-written under -o; never "compile failed" or "crashed".

The refusal is made real with RLIMIT_FSIZE in the child (SIGXFSZ ignored, so a write past it fails with
EFBIG, as a full disk fails with ENOSPC): every file irscope, Triton or a sweep worker writes over 30 KB."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import MATMUL, MATMUL_SIG16

resource = pytest.importorskip("resource")  # POSIX
signal = pytest.importorskip("signal")


def _limited() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (30_000, 30_000))


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, IRSCOPE_CACHE_DIR=str(tmp_path / "cache"), TRITON_CACHE_DIR=str(tmp_path / "triton"))
    return subprocess.run(
        [sys.executable, "-m", "irscope", *args, "-o", str(tmp_path / "out")],
        preexec_fn=_limited,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


MATMUL_ARGS = [str(MATMUL), "-k", "matmul_kernel", "-t", "h100", "-s", MATMUL_SIG16]


def test_a_dump_that_cannot_write_says_so_in_one_line(tmp_path):
    p = _run(tmp_path, "dump", *MATMUL_ARGS)
    assert p.returncode == 1, (p.stdout, p.stderr)
    (line,) = p.stderr.strip().splitlines()
    assert line.startswith("irscope: error: could not write ") and line.endswith(": File too large"), line
    assert "Traceback" not in p.stderr and not list((tmp_path / "out").rglob("manifest.json"))


def test_a_sweep_that_cannot_write_marks_its_configs_not_written_not_crashed(tmp_path):
    p = _run(tmp_path, "sweep", *MATMUL_ARGS, "--axis", "num_warps=4,8")
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "crashed" not in p.stdout and "compile failed" not in p.stdout and "2 not written" in p.stdout
    p = _run(tmp_path, "sweep", *MATMUL_ARGS, "--axis", "num_warps=4,8", "--json")
    configs = json.loads(p.stdout)["configs"]
    assert [c["status"] for c in configs] == ["not written"] * 2, configs
    assert all(c["reason"].startswith("could not write ") and c["reason"].endswith("File too large") for c in configs)
