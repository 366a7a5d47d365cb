"""A process that aborts cannot take irscope down (issue #41 item 6, and compiler aborts): the `irscope` command
forks, the child runs the command and reports on the status channel (compile/status.py), the parent says what
a death by a signal ended. A captured script that SIGKILLs itself, os.abort()s or segfaults keeps its captures
(dumped by the parent's workers from the closures the channel carried); a compile that aborts is one line that
names the kernel, the target and the stage, exit 1. Fresh processes (run_cli): only irscope.entry forks.
"""

from __future__ import annotations

import json
import mmap
import os
import pty
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from irscope.compile import status
from irscope.entry import ended
from tests.helpers import DATA, EXAMPLES, ROOT, run_cli

pytestmark = pytest.mark.skipif(not status.available(), reason="no fork or sigtimedwait here: irscope runs in-process")

SCRIPT = """
import os, signal, sys
import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

{second}

x = torch.ones(1024, device=DEVICE)
y = torch.ones(1024, device=DEVICE)
out = torch.empty_like(x)
add_kernel[(8,)](x, y, out, 1024, BLOCK=128)
add_kernel[(8,)](x, y, out, 1024, BLOCK=128)
scale_kernel[(4,)](out, 1024, BLOCK=256)
how = sys.argv[1]
if how == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
elif how == "abort":
    os.abort()
elif how == "segv":
    import ctypes
    ctypes.string_at(0)
print("not reached")
"""
SCALE = """
@triton.jit
def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2, mask=m)
"""
# a kernel that reads its enclosing function's variable: closure.describe refuses it (a worker could not rebuild
# it from data)
SCALE_NOT_DATA = """
def _make():
    two = tl.constexpr(2)

    @triton.jit
    def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=m) * two, mask=m)

    return scale_kernel


scale_kernel = _make()
"""
WS_SIG = (
    "tensordesc<fp16[128, 64]>, tensordesc<fp16[64, 128]>, tensordesc<fp16[128, 128]>, i32:16, i32:16, i32:16, "
    "128, 128, 64, 4, 24, 4"
)


def _lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("irscope:")]


def _ptx(folder: str) -> str:
    return next(Path(folder).glob("*.ptx")).read_text()


@pytest.mark.torch
@pytest.mark.parametrize(("how", "name"), [("kill", "SIGKILL"), ("abort", "SIGABRT"), ("segv", "SIGSEGV")])
def test_a_script_that_dies_by_a_signal_keeps_and_dumps_its_captures(tmp_path, how, name):
    pytest.importorskip("torch")
    script = tmp_path / "dies.py"
    script.write_text(SCRIPT.format(second=SCALE))
    out = tmp_path / "out"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    r = run_cli(
        "capture", str(script), "--target", "h100", "-o", str(out), "--json", "--", how, env={"TMPDIR": str(tmp)}
    )
    assert r.code == 0, r.err
    assert _lines(r.err) == [
        f"irscope: the script stopped: ended by {name} after 3 launches (the captures up to there are kept); "
        "2 kernels captured"
    ]
    doc = json.loads(r.out)
    run = doc["capture"]
    assert run["stopped"] == f"ended by {name} after 3 launches"
    assert run["launches"] == 3
    caps = {c["kernel"]: c for c in run["captures"]}
    assert caps["add_kernel"]["launches"] == 2 and caps["scale_kernel"]["launches"] == 1
    assert caps["add_kernel"]["grid"] == [8, 1, 1]
    for kernel, cap in caps.items():
        assert cap["dumped_in"] == "worker"
        assert re.search(rf"\.entry {kernel}\(", _ptx(cap["folder"]))
        spec = json.loads(Path(cap["spec"]).read_text())  # the replayable spec file, written under -o
        assert Path(cap["spec"]).parent == out / "captures" and spec["kernel"] == kernel and spec["target"] == "cuda:90"
    assert caps["add_kernel"]["signature"] == "*fp32:16, *fp32:16, *fp32:16, i32:16, 128"
    assert [k["name"] for k in doc["kernels"]] == ["add_kernel", "scale_kernel"]
    assert not list(tmp.glob("irscope-supervisor-*"))  # the supervisor's scratch folder is gone


WILD = """
import torch
import triton
import triton.language as tl


@triton.jit
def wild_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs + (1 << 40), tl.load(x_ptr + offs))  # 4 TiB past its tensor, unmasked


x = torch.ones(64, device="cuda")
wild_kernel[(1,)](x, BLOCK=64)
wild_kernel[(1,)](x, BLOCK=64)
print("not reached")
"""


@pytest.mark.torch
def test_a_kernel_that_crashes_the_interpreter_is_named(tmp_path):
    """A kernel whose unmasked store leaves its tensors ends the process while Triton's interpreter computes
    it (a GPU would raise an illegal address): the stop names the launch and the kernel, and says it was the
    kernel's own access as the interpreter ran it, with the way to capture without computing."""
    pytest.importorskip("torch")
    script = tmp_path / "wild.py"
    script.write_text(WILD)
    r = run_cli("capture", str(script), "--target", "h100", "-o", str(tmp_path / "out"), "--json")
    assert r.code == 0, r.err
    run = json.loads(r.out)["capture"]
    assert run["stopped"].startswith(
        "ended by SIGSEGV in launch 1 (wild_kernel), which Triton's interpreter was computing on the CPU "
        "(raised in the kernel's own code as the interpreter ran it"
    ), run["stopped"]
    assert "IRSCOPE_INTERPRET_TOTAL_S=0" in run["stopped"]
    assert [c["kernel"] for c in run["captures"]] == ["wild_kernel"]  # captured, and dumped by the supervisor
    assert re.search(r"\.entry wild_kernel\(", _ptx(run["captures"][0]["folder"]))
    # computing off: the same script is captured to its end, its kernel dumped, nothing computed
    r = run_cli(
        "capture",
        str(script),
        "--target",
        "h100",
        "-o",
        str(tmp_path / "out2"),
        "--json",
        env={"IRSCOPE_INTERPRET_TOTAL_S": "0"},
    )
    assert r.code == 0, r.err
    assert json.loads(r.out)["capture"]["stopped"] is None


@pytest.mark.torch
def test_a_capture_whose_closure_is_not_data_is_named_as_not_dumped(tmp_path):
    pytest.importorskip("torch")
    script = tmp_path / "dies.py"
    pytest.importorskip("jinja2")
    script.write_text(SCRIPT.format(second=SCALE_NOT_DATA))
    out, page = tmp_path / "out", tmp_path / "report.html"
    r = run_cli("capture", str(script), "--target", "h100", "-o", str(out), "--html", str(page), "--", "kill")
    assert r.code == 1, r.err  # a capture not dumped: as a failed dump
    lines = _lines(r.err)
    assert lines[0].startswith("irscope: the script stopped: ended by SIGKILL after 3 launches")
    assert lines[1] == (
        "irscope: error: capture 2 (scale_kernel): not dumped: scale_kernel reads variables of an enclosing "
        "function (a closure)"
    ), lines
    assert "capture 1/2  add_kernel" in r.out and "not dumped" in r.out
    assert re.search(r"\.entry add_kernel\(", _ptx(str(next((out / "add_kernel").iterdir()))))
    assert not (out / "scale_kernel").exists()
    assert sorted(p.name for p in (out / "captures").iterdir()) == ["add_kernel-1.json", "scale_kernel-1.json"]
    assert f"wrote {page} (1 dump," in r.out and "add_kernel" in page.read_text()  # --html, of what was dumped


@pytest.mark.torch
def test_a_script_that_dies_before_launching_is_one_line(tmp_path):
    pytest.importorskip("torch")
    script = tmp_path / "dies.py"
    script.write_text("import os, signal\nimport torch\nos.kill(os.getpid(), signal.SIGKILL)\n")
    r = run_cli("capture", str(script), "--target", "h100", "-o", str(tmp_path / "out"))
    assert r.code == 2
    assert _lines(r.err) == [
        f"irscope: error: {script}: the script ended by SIGKILL before it launched a Triton kernel"
    ], r.err
    assert not (tmp_path / "out").exists()


COUNTS_SIGINT = """
import signal, sys, time
import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2, mask=m)


x = torch.ones(1024, device=DEVICE)
scale_kernel[(4,)](x, 1024, BLOCK=256)
hits = []
signal.signal(signal.SIGINT, lambda signum, frame: hits.append(signum))  # the script's own handler counts them
print("launched", flush=True)
deadline = time.monotonic() + 120
while not hits and time.monotonic() < deadline:
    time.sleep(0.05)
time.sleep(1.5)  # a second SIGINT, were one sent on, lands here
open(sys.argv[1], "w").write(str(len(hits)))
"""


@pytest.mark.torch
def test_a_ctrl_c_on_the_terminal_reaches_the_script_once(tmp_path):
    """The terminal sends SIGINT to the whole foreground process group, the supervised child included: the
    supervisor does not send it a second one (a script that counts them sees one)."""
    pytest.importorskip("torch")
    script = tmp_path / "counts.py"
    script.write_text(COUNTS_SIGINT)
    out, hits = tmp_path / "out", tmp_path / "hits"
    argv = [
        sys.executable,
        "-m",
        "irscope",
        "capture",
        str(script),
        "--target",
        "h100",
        "-o",
        str(out),
        "--",
        str(hits),
    ]
    pid, master = pty.fork()
    if pid == 0:  # a new session whose controlling terminal is the pty: irscope runs in its foreground group
        try:
            os.execve(sys.executable, argv, dict(os.environ, PYTHONPATH=str(ROOT)))
        finally:
            os._exit(127)
    text = _read_pty(master, until=b"launched", seconds=240)
    assert b"launched" in text, text
    os.write(master, b"\x03")  # Ctrl-C, as typed
    text += _read_pty(master, until=None, seconds=240)
    _, wait_status = os.waitpid(pid, 0)
    said = text.decode(errors="replace")
    assert os.waitstatus_to_exitcode(wait_status) == 0, said
    assert hits.read_text() == "1"
    assert re.search(r"\.entry scale_kernel\(", _ptx(str(next((out / "scale_kernel").iterdir()))))


@pytest.mark.torch
def test_kill_9_of_irscope_ends_the_command_too(tmp_path):
    """SIGKILL cannot be sent on: the child dies with its supervisor (PR_SET_PDEATHSIG), as one process did."""
    pytest.importorskip("torch")
    if not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_PDEATHSIG is Linux's")
    script = tmp_path / "counts.py"
    script.write_text(COUNTS_SIGINT)
    argv = [sys.executable, "-m", "irscope", "capture", str(script), "--target", "h100", "-o", str(tmp_path / "o")]
    p = subprocess.Popen(
        [*argv, "--", str(tmp_path / "hits")], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT
    )
    try:
        assert p.stdout is not None and b"launched" in p.stdout.readline()
        child = int(Path(f"/proc/{p.pid}/task/{p.pid}/children").read_text().split()[0])
        p.kill()
        p.wait(timeout=60)
        deadline = time.monotonic() + 30
        while Path(f"/proc/{child}").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]
    finally:
        p.kill()


def _read_pty(master: int, until: bytes | None, seconds: float) -> bytes:
    """What the pty says until `until` appears (None: until it closes), or `seconds` pass."""
    got = b""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and (until is None or until not in got):
        ready, _, _ = select.select([master], [], [], 0.5)
        if not ready:
            continue
        try:
            data = os.read(master, 4096)
        except OSError:  # EIO: every process holding the terminal is gone
            break
        if not data:
            break
        got += data
    return got


def test_a_compile_that_aborts_names_the_kernel_target_and_stage(tmp_path):
    """Triton 3.9's NVPTX back end cannot select Hopper's wgmma for sm_100: LLVM aborts the process in the
    PTX stage (the Gluon WS example, compiled for Blackwell)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = tmp_path / "out"
    r = run_cli(
        "dump", str(EXAMPLES / "gluon_ws_matmul.py"), "--kernel", "matmul_ws_kernel", "--target", "cuda:100",
        "--signature", WS_SIG, "--no-cache", "-o", str(out), env={"TMPDIR": str(tmp)},
    )  # fmt: skip
    if r.code == 0:
        pytest.skip("this Triton compiles Hopper's wgmma for sm_100 without aborting")
    assert r.code == 1, r.err
    assert _lines(r.err) == [
        "irscope: error: the compile of matmul_ws_kernel for cuda:100 aborted in stage 'ptx' (SIGABRT): "
        "LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.wgmma.commit_group.sync.aligned"
    ], r.err
    assert not out.exists()  # nothing half-written
    assert not list(tmp.glob("irscope-supervisor-*"))  # the compile's stderr file is gone with its folder


def test_a_compile_killed_in_the_front_end_is_named_so(tmp_path):
    """data/crashes_compiler.py SIGKILLs the compiling process while the front end evaluates BLOCK=512."""
    r = run_cli(
        "dump", str(DATA / "crashes_compiler.py"), "--kernel", "copy", "--signature", "*fp32, *fp32, i32:16, 512",
        "--target", "h100", "--no-cache", "-o", str(tmp_path / "out"),
    )  # fmt: skip
    assert r.code == 1
    assert _lines(r.err.replace("kernel file says hello", "")) == [
        "irscope: error: the compile of copy for cuda:90 aborted in stage 'frontend' (SIGKILL)"
    ], r.err


def test_a_death_outside_a_compile_or_a_script_is_one_line(tmp_path):
    kernel = tmp_path / "dies_on_import.py"
    kernel.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    r = run_cli("dump", str(kernel), "--signature", "*fp32", "--target", "h100", "-o", str(tmp_path / "out"))
    assert r.code == 128 + signal.SIGSEGV
    assert _lines(r.err) == [
        "irscope: error: irscope's process ended by SIGSEGV (in neither a compile nor a captured script)"
    ], r.err


def test_the_child_s_own_exit_status_is_the_command_s(tmp_path):
    r = run_cli("dump", str(tmp_path / "missing.py"), "--signature", "*fp32", "--target", "h100")
    assert r.code == 2 and len(_lines(r.err)) == 1 and "missing.py" in r.err


# ---------------------------------------------------------------- the parts, called


def test_where_follows_compiles_and_scripts_to_their_ends():
    compile_rec = {"kind": "compile", "kernel": "k", "target": "cuda:90", "stage": "ttgir", "stderr": None}
    script_rec = {"kind": "script", "script": "s.py", "run": ""}
    assert status.where([]) == (None, None)
    assert status.where([script_rec, compile_rec]) == (compile_rec, script_rec)
    assert status.where([script_rec, compile_rec, {"kind": "idle", "ended": "compile"}]) == (None, script_rec)
    assert status.where([script_rec, {"kind": "idle", "ended": "script"}, compile_rec]) == (compile_rec, None)


def test_the_compiler_s_last_words_skip_its_stack_dump():
    text = (
        'some warning\npython: /src/Foo.cpp:12: void f(): Assertion `x && "bad"\' failed.\n'
        "PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/\nStack dump:\n"
        "0.\tProgram arguments: python\n #0 0x00007f0 llvm::sys::PrintStackTrace\n 1 0x00007f1 abort\n"
    )
    assert status.last_words(text) == 'python: /src/Foo.cpp:12: void f(): Assertion `x && "bad"\' failed.'
    assert status.last_words("only a note\n\n") == "only a note"
    assert status.last_words("") == ""


def _report(tmp_path, records=()):
    return status.Report(list(records), str(tmp_path), mmap.mmap(-1, status.SHARED_BYTES))


def test_the_stderr_file_is_read_only_from_inside_the_scratch_folder(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "stderr-1").write_text("LLVM ERROR: x\n")
    (tmp_path / "outside").write_text("secret\n")
    os.symlink(tmp_path / "outside", scratch / "link")
    os.mkfifo(scratch / "fifo")
    report = _report(scratch)
    assert report.stderr_tail("stderr-1") == "LLVM ERROR: x\n"
    for name in ("../outside", "link", "fifo", "", None, ".."):
        assert report.stderr_tail(name) == ""


def test_the_command_runs_unsupervised_when_no_folder_or_process_is_to_be_had(tmp_path, monkeypatch):
    def refused(*args, **kwargs):
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(status.os, "fork", refused)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    status.fork(ended)  # no process to spare: returns, in this process, as it was
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == mask and not status.attached()
    assert list(tmp_path.iterdir()) == []  # its scratch folder removed
    monkeypatch.setattr(status.tempfile, "mkdtemp", refused)
    status.fork(ended)  # no temporary folder: the same
    assert not status.attached()


def test_launch_counters_are_shared_with_the_supervisor(tmp_path, monkeypatch):
    """The child counts into anonymous shared memory (no system call a launch); the parent reads it after."""
    report = _report(tmp_path)
    monkeypatch.setattr(status, "_CHANNEL", status._Channel())
    status.count(5, 1, 5)  # not attached: nothing counted
    assert report.launches() == 0
    pid = os.fork()
    if pid == 0:  # the child: attached, counts, dies by a signal
        try:
            status.attach(os.open(os.devnull, os.O_WRONLY), str(tmp_path), report._counters)
            status.count(7, 2, 4)
            status.count(9, status.COUNTERS, 1)  # a capture past the counters: the run's count only
            os.kill(os.getpid(), signal.SIGKILL)
        finally:
            os._exit(1)
    _, wait_status = os.waitpid(pid, 0)
    assert os.WTERMSIG(wait_status) == signal.SIGKILL
    assert (report.launches(), report.launches(2), report.launches(1), report.launches(status.COUNTERS)) == (9, 4, 0, 0)


def test_ended_passes_the_child_s_status_through_and_keeps_quiet_for_sigterm(tmp_path, capsys):
    assert ended(3 << 8, _report(tmp_path)) == 3
    assert ended(signal.SIGTERM, _report(tmp_path)) == 128 + signal.SIGTERM
    assert capsys.readouterr().err == ""
