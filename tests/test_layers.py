"""Kernel generators on the stand-in GPU (issue #27): Helion and torch.compile (Inductor) scripts
run unmodified through `irscope dump SCRIPT --target h100 --json`; each generated kernel is
captured and says what generated it."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

LAYERS = Path(__file__).parent / "data" / "layers"
ROOT = Path(__file__).resolve().parents[1]

needs_helion = pytest.mark.skipif(importlib.util.find_spec("helion") is None or importlib.util.find_spec("torch") is None,
                                  reason="helion and torch are not installed")


def _dump(script: str, tmp_path: Path, *args: str) -> tuple[dict, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-m", "irscope", "dump", str(LAYERS / script), "--target", "h100",
                        "-o", str(tmp_path / "out"), "--json", *(["--", *args] if args else [])],
                       capture_output=True, text=True, env=env, timeout=900, check=False)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout), p.stderr


def _ttgir_num_warps(kernel: dict) -> int:
    text = Path(kernel["stages"]["ttgir"]).read_text()
    return int(text.split('"ttg.num-warps" = ', 1)[1].split(" ", 1)[0])


@needs_helion
def test_helion_fixed_config(tmp_path):
    doc, err = _dump("helion_matmul.py", tmp_path)
    assert "helion_matmul: checks passed" in err          # the script's own allclose ran on computed results
    assert doc["capture"]["stopped"] is None
    kernels = doc["kernels"]
    assert len(kernels) == 1
    k = kernels[0]
    gen = k["capture"]["generated_by"]
    assert gen["layer"] == "helion" and gen["kernel"] == "matmul"
    assert Path(gen["source"]).name == "helion_matmul.py"
    assert gen["config"]["block_sizes"] == [16, 16, 16] and gen["config"]["num_warps"] == 4
    assert "block_sizes=[16, 16, 16]" in k["capture"]["config"]
    assert _ttgir_num_warps(k) == gen["config"]["num_warps"]
    assert k["file"] == gen["generated"]                  # the dump's source is Helion's generated file
    # the two-level map: the Helion line of the addmm reaches generated lines with a tl.dot
    generated = Path(gen["generated"]).read_text().splitlines()
    lines16 = gen["src_lines"]["helion_matmul.py:16"]
    assert any("tl.dot" in generated[n - 1] for n in lines16)
    manifest = json.loads((Path(k["folder"]) / "manifest.json").read_text())
    assert manifest["generated_by"]["layer"] == "helion"


@needs_helion
def test_helion_every_config_captured(tmp_path):
    doc, err = _dump("helion_two_configs.py", tmp_path)
    assert "helion_two_configs: checks passed" in err
    configs = [k["capture"]["generated_by"]["config"] for k in doc["kernels"]]
    assert {(c["block_sizes"][0], c["num_warps"]) for c in configs} >= {(32, 2), (64, 8)}
    for k in doc["kernels"]:
        assert _ttgir_num_warps(k) == k["capture"]["generated_by"]["config"]["num_warps"]


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
@pytest.mark.xfail(reason="#27 open: Dynamo fakeifies the stand-in's CPU tensors as CPU, so Inductor "
                          "generates C++ for them, not Triton (see the prototype's report)", strict=True)
def test_inductor_kernels_captured(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "irscope", "dump", str(LAYERS / "inductor_mlp.py"), "--target", "h100",
                        "-o", str(tmp_path / "out"), "--json"], capture_output=True, text=True, env=env,
                       timeout=900, check=False)
    assert p.returncode == 0, p.stderr[-2000:]
    doc = json.loads(p.stdout)
    assert doc["kernels"] and all(k["capture"]["generated_by"]["layer"] == "inductor" for k in doc["kernels"])
