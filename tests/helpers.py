"""What tests share besides fixtures: paths, signatures, the CLI runner and an in-process compile.
Test modules import these from here (`from tests.helpers import ...`); conftest.py holds fixtures and the gpu skip rule."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import io
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

# Meta's fork (fbtriton 3.7.4): its gl.load drops a Gluon tensor's layout ("expected broadcast left input
# to be a distributed_type"), its interpreter's create_dot takes another arity, and its compile imports
# torch. Tests of exactly those skip there, saying so; everything else runs on the fork too.
FBTRITON = importlib.util.find_spec("triton.language.extra.tlx") is not None
FB_GLUON_LOAD = "fbtriton 3.7.4's gl.load drops the layout of a Gluon tensor (examples/gluon_add.py cannot compile)"

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
DATA = Path(__file__).resolve().parent / "data"

VECTOR_ADD = EXAMPLES / "vector_add.py"
MATMUL = EXAMPLES / "matmul.py"
# strides divisible by 16, as a launch on 4096x4096 tensors gets them: the pipeliner can multi-buffer
MATMUL_SIG16 = (
    "*fp16, *fp16, *fp16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, 128, 128, 64, 8"
)
# the report's pages are tested in Debian's Chromium, driven by Playwright (its own browser download is not used)
CHROMIUM = Path("/usr/bin/chromium")
NO_CHROMIUM = (
    "Debian's chromium is not installed at /usr/bin/chromium (apt-get install chromium); the page is not "
    "tested in a browser"
)

MATMUL_SIG = "*fp16:16, *fp16:16, *fp16:16, i32, i32, i32, i32, i32:1, i32, i32:1, i32, i32:1, 128, 128, 64, 8"
FLOATS_N = ("x_ptr=*fp32", "out_ptr=*fp32", "n=i32:16")  # the runtime parameters of the kernels in data/faulty.py


@dataclass
class Run:
    code: int
    out: str
    err: str

    def __iter__(self):
        """`code, out, err = run_in(...)` as well as `r.code`."""
        return iter((self.code, self.out, self.err))


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None) -> Run:
    """irscope in a fresh process, as a user runs it: for what only a process shows (a signal, an interrupt,
    a child crashing, the direct-mode repeat served by irscope.entry, the environment read at start-up,
    stdin or a terminal, a --debug traceback). Everything else goes through run_in (about 2 s less a call)."""
    full_env = dict(os.environ, **(env or {}))
    p = subprocess.run(
        [sys.executable, "-m", "irscope", *args], capture_output=True, text=True, cwd=cwd, env=full_env, timeout=300
    )
    return Run(p.returncode, p.stdout, p.stderr)


def run_in(capsys, *args: str, cwd: Path | None = None, env: dict | None = None) -> Run:
    """irscope.cli.main(args) in this process: the exit code, stdout and stderr a fresh process gives for
    the same command line (main turns every error into its line and status; a SystemExit's text goes to
    stderr with status 1, as Python's own exit does). `capsys` is pytest's fixture, or None (a module
    fixture): the output is then caught here. `cwd` and `env` hold for this call only; so does what one
    command line sets for the process (the display settings, --load-timeout, sys.path)."""
    from irscope import knobs
    from irscope.cli import main
    from irscope.views import console

    display = dataclasses.replace(console.DISPLAY)
    path = list(sys.path)
    caught = (io.StringIO(), io.StringIO())
    with contextlib.ExitStack() as stack:
        if cwd is not None:
            stack.enter_context(_cwd(cwd))
        stack.enter_context(_environ(env or {}))
        if capsys is None:
            stack.enter_context(contextlib.redirect_stdout(caught[0]))
            stack.enter_context(contextlib.redirect_stderr(caught[1]))
        else:
            capsys.readouterr()
        try:
            main(list(args))
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if isinstance(e.code, str):
                print(e.code, file=sys.stderr)
        finally:
            with contextlib.suppress(ValueError):  # a stdout the command closed
                sys.stdout.flush()
            sys.path[:] = path
            knobs.LOAD_TIMEOUT.reset()
            console.configure(**dataclasses.asdict(display))
        out, err = (caught[0].getvalue(), caught[1].getvalue()) if capsys is None else capsys.readouterr()
    return Run(code, out, err)


@contextlib.contextmanager
def _cwd(path: Path):
    """The working folder for one run_in call (contextlib.chdir is Python 3.11's); put back after."""
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


@contextlib.contextmanager
def _environ(changes: dict):
    """os.environ with `changes` for one run_in call; put back after."""
    old = {k: os.environ.get(k) for k in changes}
    os.environ.update(changes)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def compile_example(
    path: Path,
    signature: str,
    target: str = "cuda:90",
    sets: tuple[str, ...] = (),
    kernel: str | None = None,
    passes: bool = False,
    consts: tuple[str, ...] = (),
    sass: bool = True,
):
    """Compile in-process through the same jobs the CLI uses; returns Artifacts. sass=False leaves out the SASS
    (no nvdisasm run, as a sweep compiles) for a test that reads none of it."""
    from irscope import jobs
    from irscope.compile import compiler

    request = jobs.Request(Path(path), (kernel,) if kernel else (), signature, consts=tuple(consts), target=target)
    job = jobs.resolve_one(request.with_sets(tuple(sets), "--set"), "a test compiles")
    return compiler.compile_spec(job.spec, job.settings, with_passes=passes, with_sass=sass)


def load_module(path: Path):
    """A kernel file imported as a module of its own (GPU tests launch its kernels through Triton's JIT)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@contextlib.contextmanager
def cache_dir(path: Path):
    """IRSCOPE_CACHE_DIR set to `path` for a module fixture's own dumps (conftest's is per session); put back after."""
    old = os.environ.get("IRSCOPE_CACHE_DIR")
    os.environ["IRSCOPE_CACHE_DIR"] = str(path)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("IRSCOPE_CACHE_DIR", None)
        else:
            os.environ["IRSCOPE_CACHE_DIR"] = old


PROFILES = DATA / "profile"  # profile.json documents derived from the H200's ncu recordings (derive.py says how)


def write_profile(folder: Path, num_stages: int) -> Path:
    """Give a dump folder of examples/matmul.py the profile measured on the H200 at `num_stages` (1 or 3), its
    lines placed on this dump's kernel file (the recording's path was the GPU machine's checkout)."""
    import json

    from irscope.artifacts import profiled

    doc = json.loads((PROFILES / f"matmul_ns{num_stages}.json").read_text())
    kernel_file = json.loads((Path(folder) / "manifest.json").read_text())["file"]
    for e in doc["lines"]:
        e["file"] = kernel_file
    doc.pop("irscope_profile")
    return profiled.write(Path(folder), doc)


def copy_without_map(folder: Path, dest: Path) -> Path:
    """A copy of a dump folder whose map.json is gone and whose manifest says so (as an older irscope's)."""
    import json
    import shutil

    shutil.copytree(folder, dest)
    (dest / "map.json").unlink()
    manifest = json.loads((dest / "manifest.json").read_text())
    manifest["map"] = None
    (dest / "manifest.json").write_text(json.dumps(manifest))
    return dest
