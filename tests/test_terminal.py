"""The terminal (issue #38 item 3): `--color auto|always|never` and NO_COLOR, the pager on a terminal (as git: never
when piped, `--no-pager`, $IRSCOPE_PAGER / $PAGER, less with LESS=FRX), `--stage` without loc(...) unless
`--locs`, and a bare `irscope` that prints its help and exits 0. A terminal is a pseudo-terminal (pty)."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import MATMUL, MATMUL_SIG16, VECTOR_ADD, run_in

ANSI = re.compile(r"\x1b\[[0-9;]*m")
VECTOR_SIG = "*fp32, *fp32, *fp32, i32:16, 1024"
SASS = ("dump", str(VECTOR_ADD), "--signature", VECTOR_SIG, "--target", "cuda:90", "--stage", "sass")


def on_a_terminal(*args: str, env: dict | None = None, timeout: float = 300) -> tuple[int, str]:
    """irscope with its stdout and stderr on a pseudo-terminal: (exit status, what the terminal showed)."""
    master, slave = pty.openpty()
    full_env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "PAGER", "IRSCOPE_PAGER", "LESS")}
    full_env.update(env or {})
    full_env.setdefault("TERM", "xterm")
    proc = subprocess.Popen(
        [sys.executable, "-m", "irscope", *args], stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=full_env
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: every writer closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=timeout), b"".join(chunks).decode("utf-8", "replace")


def _recording_pager(path: Path) -> str:
    """A pager (run through the shell, as irscope runs one) that writes $LESS and what it reads to `path`."""
    script = f"import os, sys; open({str(path)!r}, 'w').write(os.environ.get('LESS', '-') + '\\n' + sys.stdin.read())"
    return f'{sys.executable} -c "{script}"'


@pytest.fixture(scope="module")
def sass_plain() -> str:
    run = run_in(None, *SASS)
    assert run.code == 0, run.err
    assert "/*0000*/" in run.out
    return run.out


def test_bare_irscope_prints_its_help_and_exits_0(capsys):
    run = run_in(capsys)
    assert run.code == 0
    assert run.out.startswith("Usage: irscope [OPTIONS] COMMAND [ARGS]...")
    assert "Commands:" in run.out and "dump" in run.out and "--color [auto|always|never]" in run.out
    assert "error" not in run.out.lower() + run.err.lower()
    assert run.err == ""


def test_piped_output_has_no_colour_and_always_colours_it(sass_plain, capsys):
    assert "\x1b[" not in sass_plain
    run = run_in(capsys, "--color", "always", *SASS)
    assert run.code == 0, run.err
    assert "\x1b[2m/*0000*/\x1b[0m" in run.out  # the offset: one dim comment span
    assert ANSI.sub("", run.out) == sass_plain  # the same bytes, coloured
    never = run_in(capsys, "--color", "never", *SASS)
    assert never.out == sass_plain


def test_a_terminal_gets_colour_unless_no_color_or_never(sass_plain, capsys):
    code, shown = on_a_terminal("--no-pager", *SASS)
    assert code == 0
    assert "\x1b[2m/*0000*/\x1b[0m" in shown and "\x1b[92m" in shown
    # no colour (SGR): the progress line on stderr may still move the cursor (erase-line), as a terminal's should
    code, shown = on_a_terminal("--no-pager", *SASS, env={"NO_COLOR": "1"})
    assert code == 0 and "/*0000*/" in shown and not ANSI.search(shown)
    code, shown = on_a_terminal("--no-pager", "--color", "never", *SASS)
    assert code == 0 and "/*0000*/" in shown and not ANSI.search(shown)
    # NO_COLOR set but empty does not count (no-color.org); --color always wins over NO_COLOR
    code, shown = on_a_terminal("--no-pager", *SASS, env={"NO_COLOR": ""})
    assert "\x1b[2m/*0000*/" in shown
    run = run_in(capsys, "--color", "always", *SASS, env={"NO_COLOR": "1"})
    assert "\x1b[2m/*0000*/" in run.out


def test_the_pager_reads_a_stage_on_a_terminal_and_never_a_pipe(tmp_path, sass_plain, capsys):
    paged = tmp_path / "paged.txt"
    pager = _recording_pager(paged)
    code, shown = on_a_terminal(*SASS, env={"IRSCOPE_PAGER": pager})
    assert code == 0
    less, text = paged.read_text().split("\n", 1)
    assert less == "FRX"  # LESS=FRX unless set, as git sets it
    assert ANSI.sub("", text) == sass_plain and "\x1b[2m/*0000*/\x1b[0m" in text  # coloured for the terminal
    assert "/*0000*/" not in shown  # the pager had it, not the terminal
    paged.unlink()
    # $PAGER when IRSCOPE_PAGER is unset, and the user's own LESS is kept
    code, _ = on_a_terminal(*SASS, env={"PAGER": pager, "LESS": "R"})
    assert code == 0 and paged.read_text().split("\n", 1)[0] == "R"
    paged.unlink()
    # piped: no pager; --no-pager: none; IRSCOPE_PAGER=cat or '': none
    assert run_in(capsys, *SASS, env={"IRSCOPE_PAGER": pager}).out == sass_plain and not paged.exists()
    code, shown = on_a_terminal("--no-pager", *SASS, env={"IRSCOPE_PAGER": pager})
    assert code == 0 and "/*0000*/" in shown and not paged.exists()
    for off in ("cat", ""):
        code, shown = on_a_terminal(*SASS, env={"IRSCOPE_PAGER": off, "PAGER": pager})
        assert code == 0 and "/*0000*/" in shown and not paged.exists()


def test_a_pager_that_quits_early_ends_the_output_quietly():
    code, shown = on_a_terminal(*SASS, env={"IRSCOPE_PAGER": f'{sys.executable} -c "import sys; sys.stdin.read(10)"'})
    assert code == 0, shown
    assert "Traceback" not in shown and "error" not in shown.lower()


def test_stage_hides_locs_unless_asked(capsys):
    args = ("dump", str(MATMUL), "--signature", MATMUL_SIG16, "--target", "cuda:90", "--stage", "ttgir")
    hidden = run_in(capsys, *args)
    kept = run_in(capsys, *args, "--locs")
    assert hidden.code == kept.code == 0, hidden.err + kept.err
    assert "loc(" not in hidden.out and "#loc" not in hidden.out
    assert "loc(#loc" in kept.out and re.search(r"^#loc\d* = loc\(", kept.out, re.M)
    assert '"ttg.num-warps" = 4 : i32' in hidden.out and "tt.func public @matmul_kernel(" in hidden.out
    # what --locs prints is the dump folder's file as it is
    doc = run_in(capsys, *args[:-2], "--json")
    assert doc.code == 0, doc.err
    assert kept.out == Path(json.loads(doc.out)["kernels"][0]["stages"]["ttgir"]).read_text()
    # a stage other than MLIR is never touched
    assert run_in(capsys, *args[:-1], "ptx").out == run_in(capsys, *args[:-1], "ptx", "--locs").out


def test_a_diff_goes_through_the_pager_on_a_terminal(tmp_path, capsys):
    paged = tmp_path / "paged.txt"
    args = ("diff", str(VECTOR_ADD), "--signature", VECTOR_SIG, "--target", "cuda:90")
    args += ("--a", "num_warps=4", "--b", "num_warps=8", "--stage", "ttgir")
    code, shown = on_a_terminal(*args, env={"IRSCOPE_PAGER": _recording_pager(paged)})
    assert code == 1  # the sides differ
    text = ANSI.sub("", paged.read_text().split("\n", 1)[1])
    # the module's attributes line, side a's and side b's (their order is the Triton's: the fork adds some)
    assert re.search(r'^-module attributes \{.*"ttg.num-warps" = 4 ', text, re.M), text[-2000:]
    assert re.search(r'^\+module attributes \{.*"ttg.num-warps" = 8 ', text, re.M)
    assert "num-warps" not in ANSI.sub("", shown)  # the pager had the diff, not the terminal
    piped = run_in(capsys, *args, env={"IRSCOPE_PAGER": _recording_pager(tmp_path / "never.txt")})
    assert piped.code == 1 and re.search(r'^\+module attributes \{.*"ttg.num-warps" = 8 ', piped.out, re.M)
    assert not (tmp_path / "never.txt").exists()


def test_color_after_the_command_says_where_it_goes(capsys):
    for option, args, hint in (
        ("--color", ("dump", "--color", "never", "k.py"), "irscope --color never dump ..."),
        ("--no-pager", ("recipes", "show", "--no-pager", "h100"), "irscope --no-pager recipes show ..."),
    ):
        run = run_in(capsys, *args)
        assert run.code == 2 and run.out == ""
        assert run.err == f"irscope: error: {option} is an option of irscope itself, given before the command: {hint}\n"


def test_the_default_pager_is_less_where_installed(monkeypatch, tmp_path):
    from irscope.views import console

    class Terminal:
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stdout", Terminal())
    for name in ("IRSCOPE_PAGER", "PAGER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(console.DISPLAY, "pager", True)
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")
    assert console.pager_command() == "less"
    monkeypatch.setattr("shutil.which", lambda name: None)
    assert console.pager_command() is None  # no less: straight to the terminal, not into a missing pager
    monkeypatch.setenv("PAGER", "most")
    assert console.pager_command() == "most"
    monkeypatch.setenv("IRSCOPE_PAGER", "cat")
    assert console.pager_command() is None
    monkeypatch.setattr(console.DISPLAY, "pager", False)  # --no-pager
    monkeypatch.delenv("IRSCOPE_PAGER")
    assert console.pager_command() is None
