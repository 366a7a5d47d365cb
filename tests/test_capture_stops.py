"""Whose stop it is (issue #42 item 4): a script that stops after a launch is one line that names the
script's line and, when the exception came out of other code, whose code raised it: a library's (its
package and file), a module beside the script (the script's own), or irscope's. The real-world corpus
(benchmarks/corpus.py) reads this to say whose each stop is."""

from __future__ import annotations

import json

import pytest

from tests.helpers import DATA, run_in

pytest.importorskip("torch")
pytestmark = pytest.mark.torch

STOPS = DATA / "stops"


def _stopped(capsys, script: str, tmp_path) -> str:
    r = run_in(capsys, "capture", str(STOPS / script), "--compile-only", "-o", str(tmp_path / "out"), "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert len(doc["capture"]["captures"]) == 1  # the launch before the stop is kept
    return doc["capture"]["stopped"]


def test_a_library_s_own_check_is_named_with_its_package_and_file(capsys, tmp_path):
    stopped = _stopped(capsys, "raises_in_library.py", tmp_path)
    assert stopped.startswith("raises_in_library.py:17: ValueError: ")
    assert "(raised in torch's own code: torch/nn/utils/clip_grad.py:" in stopped


def test_a_module_beside_the_script_is_the_script_s_own(capsys, tmp_path):
    stopped = _stopped(capsys, "raises_in_helper.py", tmp_path)
    assert stopped.startswith("raises_in_helper.py:18: ValueError: expected nothing, got 8")
    assert stopped.endswith("(raised in the script's own stop_helper.py:6)")


def test_a_failure_at_the_script_s_own_line_names_no_other_code(capsys, tmp_path):
    r = run_in(
        capsys, "capture", str(DATA / "capture_fails_late.py"), "--compile-only", "-o", str(tmp_path / "o"), "--json"
    )
    stopped = json.loads(r.out)["capture"]["stopped"]
    # check() is the script's own function: its raise is at the script's line 16, nothing else is named
    assert stopped == "capture_fails_late.py:16: ValueError: bad result 8", stopped
