"""The two CLI runners of tests/helpers.py (issue #37 item 6, tests by tier): run_in (irscope.cli.main in this
process) gives the exit code, stdout and stderr that run_cli (a fresh `python -m irscope`) gives, and puts back
what one command line sets for the process, so that in-process tests stay independent in any order."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

import pytest

from tests.helpers import MATMUL, VECTOR_ADD, run_cli, run_in

SIG = "*fp32, *fp32, *fp32, i32:16, 1024"


def _cases(tmp):
    return {
        "a success, --json": ("signature", str(MATMUL), "--kernel", "matmul_kernel", "--json"),
        "a table": ("signature", str(VECTOR_ADD)),
        "help": ("diff", "--help"),
        "click's own bad input": ("frontier", "A", "B", "--stage", "ptx"),
        "irscope's bad input": ("dump", str(VECTOR_ADD), "-s", SIG, "--set", "=4", "-o", str(tmp / "o")),
        "an option before the command": ("dump", "--color", "never", str(VECTOR_ADD)),
        "no profile": ("profile", str(tmp)),
        "a missing file": ("signature", str(tmp / "missing.py")),
    }


@pytest.mark.parametrize("case", list(_cases(Path())))
def test_in_process_equals_a_fresh_process(case, tmp_path, capsys):
    argv = _cases(tmp_path)[case]
    fresh = run_cli(*argv)
    assert tuple(run_in(None, *argv)) == (fresh.code, fresh.out, fresh.err)
    assert tuple(run_in(capsys, *argv)) == (fresh.code, fresh.out, fresh.err)
    assert fresh.out or fresh.err  # each case says something: an empty pair would compare equal for nothing


def test_one_run_leaves_nothing_behind(tmp_path):
    """--color, --no-pager, --load-timeout, cwd, env and sys.path (the kernel file's folder) hold for one
    run_in call only."""
    from irscope import knobs
    from irscope.views import console

    def state():
        return os.getcwd(), list(sys.path), dataclasses.astuple(console.DISPLAY), knobs.LOAD_TIMEOUT.get()

    before = state()
    kernel = tmp_path / "k" / "add.py"
    kernel.parent.mkdir()
    kernel.write_text(VECTOR_ADD.read_text())
    argv = ("--color", "always", "--no-pager", "signature", str(kernel), "--load-timeout", "7")
    r = run_in(None, *argv, cwd=tmp_path, env={"IRSCOPE_TIERS_PROBE": "1"})
    assert r.code == 0 and "\x1b[" in r.out and "add_kernel" in r.out, r.err
    assert state() == before and "IRSCOPE_TIERS_PROBE" not in os.environ
    assert str(kernel.parent) not in sys.path and os.getcwd() != str(tmp_path)


def test_a_system_exit_with_text_is_status_1_and_its_text_on_stderr(monkeypatch):
    """As Python's own exit does for sys.exit("text")."""
    import irscope.cli

    def exits(argv):
        sys.exit("stopped: the reason")

    monkeypatch.setattr(irscope.cli, "main", exits)
    assert tuple(run_in(None, "anything")) == (1, "", "stopped: the reason\n")
