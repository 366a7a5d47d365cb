"""The stand-in GPU's device answers against a real GPU's (issue #27 item 4).

tests/test_capture_standin_devices.py's table (CASES: little snippets over .device, .to/.cuda/.cpu,
Module.to, the default device, op results, mixing, numpy) holds what its author expects a GPU to
answer. Here the same snippets run twice on the H200: plainly, in this process, and on the stand-in
GPU of this chip in a child process (tensors on the CPU answering as the GPU's). Both must agree;
the first test says where the table's expectations were wrong, so it can be corrected.

    pytest tests/gpu/test_standin_devices_gpu.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_capture_standin_devices import CASES, answer

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
STANDIN = """
import json
from irscope.kernel.targets import parse_target
from irscope.standin import gpu
from tests.test_capture_standin_devices import CASES, answer
with gpu.machine(parse_target("h200")):
    got = {name: answer(snippet) for name, (snippet, _) in CASES.items()}
print(json.dumps(got))
"""


def _json(value):
    return json.loads(json.dumps(value))  # tuples as lists, as the child's answers come back


def _real() -> dict:
    return {name: _json(answer(snippet)) for name, (snippet, _) in CASES.items()}


def test_the_table_says_what_this_gpu_answers():
    real = _real()
    wrong = {n: {"table": _json(CASES[n][1]), "gpu": real[n]} for n in CASES if _json(CASES[n][1]) != real[n]}
    assert not wrong, json.dumps(wrong, indent=1)


def test_the_stand_in_answers_as_this_gpu(tmp_path):
    real = _real()
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run(
        [sys.executable, "-c", STANDIN], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600, check=False
    )
    assert p.returncode == 0, p.stderr[-3000:]
    standin = json.loads(p.stdout.strip().splitlines()[-1])
    differ = {n: {"gpu": real[n], "stand-in": standin[n]} for n in CASES if standin[n] != real[n]}
    assert not differ, json.dumps(differ, indent=1)
