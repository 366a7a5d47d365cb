"""Progress on a terminal (issue #38 item 4): drawn on stderr when stderr is a terminal (a pseudo-terminal
here), absent when stderr is piped and with --json; the packages report through the callable they are given."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
import threading

import pytest

from tests.helpers import DATA, VECTOR_ADD, run_in

SIG = "*fp32:16, *fp32:16, *fp32:16, i32:16, 1024"
BAR_GLYPHS = ("━", "⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏")


def run_on_pty(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """irscope with stderr on a pseudo-terminal and stdout piped: (exit code, stdout, what the terminal got)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(
        [sys.executable, "-m", "irscope", *args],
        stdout=subprocess.PIPE,
        stderr=slave,
        stdin=subprocess.DEVNULL,
        env=dict(os.environ, COLUMNS="120", **(env or {})),
    )
    os.close(slave)
    chunks: list[bytes] = []

    def read() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed its end
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert p.stdout is not None
    out = p.stdout.read().decode()
    p.wait(timeout=600)
    reader.join(timeout=10)
    os.close(master)
    return p.returncode, out, b"".join(chunks).decode(errors="replace")


def _drawn(terminal: str) -> bool:
    return any(g in terminal for g in BAR_GLYPHS)


@pytest.fixture
def cache(tmp_path):
    return {"IRSCOPE_CACHE_DIR": str(tmp_path / "cache")}


def test_dump_draws_its_progress_on_a_terminal(tmp_path, cache):
    code, out, terminal = run_on_pty(
        "dump", str(VECTOR_ADD), "-s", SIG, "-t", "cuda:90", "-o", str(tmp_path / "o"), env=cache
    )
    assert code == 0, terminal
    assert "compiling" in terminal and "add_kernel" in terminal and _drawn(terminal), terminal
    assert "1/1" in terminal  # n of N kernels
    assert "add_kernel" in out and "━" not in out  # stdout (piped) has the summary, never the bar


def test_dump_draws_nothing_when_stderr_is_piped(capsys, tmp_path, cache):
    r = run_in(capsys, "dump", str(VECTOR_ADD), "-s", SIG, "-t", "cuda:90", "-o", str(tmp_path / "o"), env=cache)
    assert r.code == 0, r.err
    assert "compiling" not in r.err and not _drawn(r.err) and "\x1b[" not in r.err, r.err


def test_json_draws_nothing_even_on_a_terminal(tmp_path, cache):
    code, out, terminal = run_on_pty(
        "dump", str(VECTOR_ADD), "-s", SIG, "-t", "cuda:90", "-o", str(tmp_path / "o"), "--json", env=cache
    )
    assert code == 0, terminal
    assert not _drawn(terminal) and "compiling" not in terminal, terminal
    assert out.lstrip().startswith("{")


def test_passes_says_it_records_every_pass(tmp_path, cache):
    code, _, terminal = run_on_pty(
        "passes", str(VECTOR_ADD), "-s", SIG, "-t", "cuda:90", "-o", str(tmp_path / "o"), env=cache
    )
    assert code == 0, terminal
    assert "compiling with the IR after every pass recorded" in terminal and _drawn(terminal), terminal


def test_sweep_draws_configs_n_of_n(tmp_path, cache):
    code, _, terminal = run_on_pty(
        "sweep",
        str(VECTOR_ADD),
        "-s",
        SIG,
        "-t",
        "cuda:90",
        "--axis",
        "num_warps=2,4",
        "-j",
        "1",
        "-o",
        str(tmp_path / "o"),
        env=cache,
    )
    assert code == 0, terminal
    assert "compiling configs" in terminal and "2/2" in terminal and _drawn(terminal), terminal


@pytest.mark.torch
def test_capture_draws_the_script_and_the_dumps(tmp_path, cache):
    pytest.importorskip("torch")
    code, _, terminal = run_on_pty(
        "capture", str(DATA / "capture_autotune.py"), "--compile-only", "-o", str(tmp_path / "o"), env=cache
    )
    assert code == 0, terminal
    assert "running capture_autotune.py on the stand-in GPU" in terminal, terminal
    assert "launches" in terminal and "kernel" in terminal and "computed" in terminal  # so far, and by the interpreter
    assert "dumping 6 kernels" in terminal and "6/6" in terminal, terminal


# ---------------------------------------------------------------- the module itself


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_reporter_draws_only_on_a_terminal_and_says_nested_waits_in_the_outer_line():
    from irscope.views.progress import Reporter

    assert not Reporter(stream=io.StringIO()).enabled  # not a terminal: nothing
    assert not Reporter(enabled=False, stream=FakeTerminal()).enabled  # --json: nothing
    term = FakeTerminal()
    with Reporter(stream=term)("running {odd} [name].py") as tick:  # braces and brackets are text
        tick("[bold]x[/bold]", 0)
    assert "running {odd} [name].py" in term.getvalue() and "[bold]x[/bold]" in term.getvalue()
    term = FakeTerminal()
    progress = Reporter(stream=term)
    with progress("outer work", 2) as advance:
        advance("first")
        with progress("making the triton==3.8.0 environment") as step:  # a wait inside: no second display
            step("installing triton==3.8.0", 0)
        advance("second")
    text = term.getvalue()
    assert "outer work" in text and "2/2" in text
    assert "making the triton==3.8.0 environment: installing triton==3.8.0" in text


def test_an_environment_being_made_is_said_with_its_cost_and_place(tmp_path, monkeypatch):
    """envs.ensure: the note names the release, about 60 s and 0.9 GB, where it goes and how to remove it;
    the progress hears each phase of making it (the index and the install are stood in for: no network)."""
    from irscope.releases import envs

    monkeypatch.setenv("IRSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(envs, "check_on_index", lambda release, flag: None)
    monkeypatch.setattr(envs, "running", lambda release: None)
    made = []

    def fake_make(release, folder, flag, step=None):
        step("installing triton==3.8.0 (uv)", 0)
        made.append(folder)
        return envs.Env(release, "/nowhere/python", release.version, "made with uv", 1.0)

    monkeypatch.setattr(envs, "_make", fake_make)
    notes: list[str] = []
    heard: list[tuple[str, str]] = []

    class Progress:
        def __call__(self, what, total=None):
            import contextlib

            return contextlib.nullcontext(lambda detail="", n=1: heard.append((what, detail)))

    env = envs.ensure(envs.parse("3.8.0"), "--a-triton", notes.append, Progress())
    assert env.how == "made with uv" and made == [tmp_path / "cache" / "envs"]
    [note] = notes
    assert "triton==3.8.0" in note and str(tmp_path / "cache" / "envs" / "triton-3.8.0") in note
    assert "about 60 s and 0.9 GB" in note and "irscope envs remove 3.8.0" in note
    assert heard == [("making the triton==3.8.0 environment", "installing triton==3.8.0 (uv)")]


def test_bench_says_its_compiles_and_its_rounds(monkeypatch):
    """bench.run hands its phases to the progress (the rounds run in the GPU process: a GPU-less stand-in
    session answers here, so the phases are checked on any machine)."""
    import contextlib

    from irscope import jobs
    from irscope.timing import bench
    from irscope.timing.launch import Launch
    from irscope.timing.variant import Variant

    job = jobs.resolve_one(jobs.Request(VECTOR_ADD, (), SIG, target="cuda:90"), "bench times")
    monkeypatch.setattr(bench, "require_gpu", lambda: None)
    monkeypatch.setattr(bench, "compile_variants", lambda vs: [setattr(v, "status", "not compiled") for v in vs])

    class Session:  # what TimingSession.finish answers when nothing was timed
        launch, ref, measure_kwargs = None, None, {}

        def start(self, launch, **kwargs):
            self.launch = launch

        def finish(self, order, budget):
            return "stand-in", {"variants": {}}

        def close(self):
            pass

    heard: list[str] = []

    @contextlib.contextmanager
    def progress(what, total=None):
        heard.append(what)
        yield lambda detail="", n=1: heard.append(detail)

    variants = [Variant("baseline", job.spec, job.settings), Variant("num_warps=8", job.spec, job.settings)]
    bench.run(variants, Launch({}, (1, 1, 1)), session=Session(), max_seconds=5, progress=progress)
    assert heard == [
        "timing 2 variants in interleaved rounds",
        "compiling baseline",
        "compiling num_warps=8",
        "rounds on the GPU until the intervals are tight, at most 5 s",
    ]
