"""`irscope capture SCRIPT [-- ARGS]` is its own command; `irscope dump` takes a kernel file or a spec file.

The old spelling `irscope dump SCRIPT [-- ARGS]` (no --signature/--arg/--const) still captures for one
release: one note on stderr names the new command, then it does what capture does, its capture-only flags
included. Those flags given to dump with a kernel file or a spec file are refused in one line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import VECTOR_ADD, run_in

pytest.importorskip("torch")
pytestmark = pytest.mark.torch

SIG = "*fp32, *fp32, *fp32, i32, 1024"
NOTE = (
    "irscope: note: 'irscope dump SCRIPT' is now 'irscope capture SCRIPT'; the old form goes away in the next release"
)
CAPTURE_ONLY = [
    ["--compile-only"],
    ["--jobs", "2"],
    ["--script-log", "{tmp}/log.txt"],
    ["--time-limit", "3"],
    ["--", "--n", "4"],
]

SCRIPT = """
import sys
import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


n = int(sys.argv[sys.argv.index("--n") + 1])
x = torch.ones(n, device=DEVICE)
out = torch.empty_like(x)
scale_kernel[(1,)](x, out, n, BLOCK=256)
print("script args", sys.argv[1:], flush=True)
"""


def _irscope_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("irscope:")]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The same capture twice: `irscope capture` and the old `irscope dump SCRIPT`, with the capture-only
    flags (which dump takes, hidden, for its old spelling)."""
    root = tmp_path_factory.mktemp("cli_capture")
    script = root / "scales.py"
    script.write_text(SCRIPT)
    done = {}
    for command in ("capture", "dump"):
        log = root / f"{command}.log"
        r = run_in(
            None,
            command,
            str(script),
            "--target",
            "cuda:90",
            "--compile-only",
            "--jobs",
            "1",
            "--script-log",
            str(log),
            "-o",
            str(root / command),
            "--json",
            "--",
            "--n",
            "100",
        )
        done[command] = (r, json.loads(r.out) if r.code == 0 else None, log)
    return root, done


def _meaning(doc: dict) -> dict:
    """What a capture found and dumped, without the paths and timings that differ between two runs."""
    cap = doc["capture"]
    return {
        "mode": cap["mode"],
        "target": cap["target"],
        "args": cap["args"],
        "launches": cap["launches"],
        "captures": [(c["kernel"], c.get("config")) for c in cap["captures"]],
        "kernels": [(k["name"], k["target"], list(k["stages"])) for k in doc["kernels"]],
    }


def test_capture_runs_the_script_and_dumps_its_kernel(runs):
    _, done = runs
    r, doc, log = done["capture"]
    assert r.code == 0, r.err
    assert not _irscope_lines(r.err)  # no note, no warning
    assert _meaning(doc)["captures"] == [("scale_kernel", None)]
    assert doc["capture"]["args"] == ["--n", "100"] and doc["capture"]["mode"] == "compile-only"
    assert "script args ['--n', '100']" in log.read_text()  # -- ARGS reached the script; --script-log took its output
    for k in doc["kernels"]:
        assert "ptx" in k["stages"] and all(Path(p).stat().st_size > 0 for p in k["stages"].values())


def test_old_dump_spelling_says_one_note_and_captures_the_same(runs):
    _, done = runs
    (_, new_doc, _), (old, old_doc, old_log) = done["capture"], done["dump"]
    assert old.code == 0, old.err
    assert _irscope_lines(old.err) == [NOTE]  # the note once, and nothing else irscope says
    assert _meaning(old_doc) == _meaning(new_doc)
    assert "script args ['--n', '100']" in old_log.read_text()


@pytest.mark.parametrize("flags", CAPTURE_ONLY, ids=lambda f: f[0].lstrip("-") or "args")
@pytest.mark.parametrize("kind", ["kernel", "spec"])
def test_dump_refuses_a_capture_only_flag_in_one_line(runs, tmp_path, kind, flags):
    root, _ = runs
    file = str(VECTOR_ADD) if kind == "kernel" else str(next((root / "capture" / "captures").glob("*.json")))
    spec = ["--signature", SIG] if kind == "kernel" else []
    out = tmp_path / "out"
    r = run_in(None, "dump", file, *spec, "-o", str(out), *[f.format(tmp=tmp_path) for f in flags])
    assert r.code == 2, r.err
    assert len(r.err.strip().splitlines()) == 1
    name = "ARGS" if flags[0] == "--" else flags[0]
    assert (
        r.err.startswith(f"irscope: error: {name}: applies when FILE is a script run for capture")
        and "irscope capture SCRIPT" in r.err
    )
    assert not out.exists() and not (tmp_path / "log.txt").exists()


def test_capture_of_a_spec_file_is_refused_naming_dump(runs, tmp_path):
    """A spec file is a kernel with its specialization: dump compiles it; there is no script to run."""
    root, _ = runs
    spec = next((root / "capture" / "captures").glob("*.json"))
    r = run_in(None, "capture", str(spec), "-o", str(tmp_path / "out"))
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1
    assert f"a spec file, not a script; its kernel is compiled by irscope dump {spec}" in r.err
    assert not (tmp_path / "out").exists()


def test_capture_takes_no_specialization(tmp_path):
    r = run_in(None, "capture", str(VECTOR_ADD), "--signature", SIG, "-o", str(tmp_path / "out"))
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1 and "--signature" in r.err
    assert not (tmp_path / "out").exists()


def test_old_spelling_refuses_lines_before_its_note(runs, tmp_path):
    root, _ = runs
    r = run_in(None, "dump", str(root / "scales.py"), "--lines", "-o", str(tmp_path / "out"))
    assert r.code == 2 and r.err.strip().splitlines() == [
        (
            "irscope: error: --lines: shows one kernel's hot lines under its summary; for a captured script run "
            "irscope lines on each dump folder it lists"
        )
    ]


def test_help_shows_the_capture_flags_on_capture_only():
    capture, dump = run_in(None, "capture", "--help"), run_in(None, "dump", "--help")
    assert capture.code == dump.code == 0
    assert "Usage: irscope capture [OPTIONS] SCRIPT [-- ARGS]" in capture.out
    assert "irscope capture SCRIPT" in dump.out
    for flag in ("--compile-only", "--script-log", "--time-limit", "--jobs"):
        assert flag in capture.out and flag not in dump.out
    assert "--signature" in dump.out and "--signature" not in capture.out


@pytest.mark.parametrize("command", ["capture", "dump"])
def test_a_kernel_file_without_a_specialization_is_one_line_naming_dump(tmp_path, command):
    """It runs as a script, launches nothing: one line (the old spelling's note is not said on bad input)
    that names the dump with a specialization."""
    r = run_in(None, command, str(VECTOR_ADD), "-o", str(tmp_path / "out"))
    lines = _irscope_lines(r.err)
    assert r.code == 2 and len(lines) == 1, r.err
    assert "ran to the end without launching a Triton kernel" in lines[0]
    assert f"give a specialization: irscope dump {VECTOR_ADD} --signature" in lines[0]
    assert not (tmp_path / "out").exists()
