"""Capture on a real GPU (moved from tests/test_capture.py): the example scripts pass their own checks, a real
run of `irscope capture SCRIPT` gives the PTX of the compile-only capture (which tests/test_capture.py checks on
irscope's stand-in GPU), and the examples capture without stopping."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import DATA, EXAMPLES, run_cli

pytestmark = pytest.mark.gpu

SCRIPT = DATA / "capture_tutorial.py"
SCRIPTS = sorted((EXAMPLES / "scripts").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_example_scripts_pass_their_own_checks_on_a_gpu(script):
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600, check=False)
    assert p.returncode == 0, p.stderr
    assert ": ok" in p.stdout


def test_real_run_capture_gives_the_ptx_of_the_compile_only_capture(tmp_path):
    import torch

    major, minor = torch.cuda.get_device_capability()
    target = f"cuda:{major * 10 + minor}"
    real = run_cli("capture", str(SCRIPT), "-o", str(tmp_path / "real"), "--json")
    assert real.code == 0, real.err
    only = run_cli("capture", str(SCRIPT), "--compile-only", "-t", target, "-o", str(tmp_path / "only"), "--json")
    assert only.code == 0, only.err
    real_doc, only_doc = json.loads(real.out), json.loads(only.out)
    assert real_doc["capture"]["mode"] == "gpu" and real_doc["capture"]["stopped"] is None
    assert only_doc["capture"]["mode"] == "compile-only"

    def ptx_by_capture(doc):
        return {
            (k["name"], k["capture"]["config"], k["signature"]): Path(k["stages"]["ptx"]).read_text()
            for k in doc["kernels"]
        }

    a, b = ptx_by_capture(real_doc), ptx_by_capture(only_doc)
    assert set(a) == set(b) and len(a) == 4
    for key in a:
        assert a[key] == b[key], key
    for k in real_doc["kernels"]:
        assert k["capture"]["matches_launch"] == {"ttgir": True, "ptx": True}, k["name"]
    winners = [k["capture"]["winner"] for k in real_doc["kernels"] if k["name"] == "axpy_kernel"]
    assert sorted(winners) == [False, True]


@pytest.mark.parametrize("script", ["matmul_autotune", "fused_softmax", "fused_attention"])
def test_examples_capture_on_a_gpu_without_stopping(script, tmp_path):
    r = run_cli("capture", str(EXAMPLES / "scripts" / f"{script}.py"), "-o", str(tmp_path), "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["capture"]["stopped"] is None and doc["kernels"]
    for k in doc["kernels"]:
        assert all(k["capture"]["matches_launch"].values()), k["name"]
