"""The direct mode's shape (issue #37 item 3): records keyed by the command line as typed, no module-level
state in irscope/direct, output written through the stream the recorder and serve are given."""

from __future__ import annotations

import ast
import io
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import run_cli

PACKAGE = Path(__file__).resolve().parent.parent / "irscope"
SIG = "*fp32, *fp32, *fp32, i32:16, 1024"
KERNEL = """import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
"""


def _kernel(tmp_path: Path) -> Path:
    kern = tmp_path / "kern.py"
    kern.write_text(KERNEL)
    return kern


def _dump(tmp_path: Path, *args: str) -> dict:
    r = run_cli("dump", *args, "--json", cwd=tmp_path, env={"IRSCOPE_CACHE_DIR": str(tmp_path / "cache")})
    assert r.code == 0, r.err
    return json.loads(r.out)["kernels"][0]


# ---------------------------------------------------------------- no module-level state


def _mutable(value: ast.expr | None) -> bool:
    return isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)) or (
        isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in ("list", "dict", "set")
    )


def test_the_direct_mode_holds_no_module_level_mutable_state():
    """What a run records lives on its Recorder: no module of irscope/direct assigns a list, dict or set at
    its top level or rebinds a global, and the cache keeps no list of what it restored (cache.NOTED)."""
    from irscope.compile import cache

    wrong = []
    for path in sorted((PACKAGE / "direct").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            if _mutable(value):
                wrong.append(f"{path.name}:{node.lineno}")
        wrong += [f"{path.name}:{n.lineno}: global" for n in ast.walk(tree) if isinstance(n, ast.Global)]
    assert not wrong, wrong
    assert not hasattr(cache, "NOTED")
    assert not (PACKAGE / "compile" / "direct.py").exists() and not (PACKAGE / "report" / "repeat.py").exists()


# ---------------------------------------------------------------- keyed by the argv


def test_the_key_is_the_argv_as_typed_where_and_how_it_runs(tmp_path, monkeypatch):
    from irscope.direct import Recorder

    args = ["dump", "k.py", "-s", SIG, "-o", "out"]
    key = Recorder(args).key()
    assert key is not None and Recorder(list(args)).key() == key
    assert Recorder(["dump", "k.py", "-s", SIG, "--out", "out"]).key() != key  # not parsed: another line
    assert Recorder(args + ["--debug"]).key() != key
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "0")
    assert Recorder(args).key() != key  # a watched variable
    monkeypatch.delenv("TRITON_DEFAULT_FP_FUSION")
    monkeypatch.chdir(tmp_path)
    assert Recorder(args).key() != key  # another working folder
    assert Recorder(None).key() is None and not Recorder(None).active


def test_two_spellings_of_one_request_are_two_records_each_served_after_its_own_run(tmp_path):
    kern = _kernel(tmp_path)
    short = [str(kern), "-s", SIG, "-t", "h100", "-o", str(tmp_path / "out")]
    long = [str(kern), "--signature", SIG, "--target", "h100", "--out", str(tmp_path / "out")]
    assert _dump(tmp_path, *short)["cache"] is None
    assert _dump(tmp_path, *short)["cache"] == "direct"
    assert _dump(tmp_path, *long)["cache"] == "key"  # a miss of the direct mode: the full path's cache hit
    again = _dump(tmp_path, *long)
    assert again["cache"] == "direct" and again["folder"] == _dump(tmp_path, *short)["folder"]
    records = [json.loads(p.read_text()) for p in (tmp_path / "cache" / ".irscope-direct").glob("*.json")]
    assert len(records) == 2 and {r["command"] for r in records} == {"dump"}
    assert {r["out"] for r in records} == {str(tmp_path / "out")} and all(r["view"] == {"json": True} for r in records)


def test_no_cache_is_never_served_from_the_cache(tmp_path):
    kern = _kernel(tmp_path)
    args = [str(kern), "-s", SIG, "-t", "h100", "-o", str(tmp_path / "out"), "--no-cache"]
    assert [_dump(tmp_path, *args)["cache"] for _ in range(2)] == [None, None]
    assert not list((tmp_path / "cache" / ".irscope-direct").glob("*.json"))


def test_a_same_size_edit_with_the_mtime_put_back_is_seen(tmp_path):
    """The kernel file is stamped as git stamps its index (size, mtime, ctime, inode): the edit moved the
    ctime, so it is hashed and found changed."""
    kern = _kernel(tmp_path)
    args = [str(kern), "-s", SIG, "-t", "h100", "-o", str(tmp_path / "out")]
    _dump(tmp_path, *args)
    assert _dump(tmp_path, *args)["cache"] == "direct"
    st = kern.stat()
    edited = KERNEL.replace("mask=mask) + tl.load", "mask=mask) * tl.load")
    assert len(edited) == len(KERNEL)
    kern.write_text(edited)
    os.utime(kern, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert kern.stat().st_size == st.st_size and kern.stat().st_mtime_ns == st.st_mtime_ns
    changed = _dump(tmp_path, *args)
    assert changed["cache"] != "direct" and "arith.mulf" in Path(changed["stages"]["ttir"]).read_text()


# ---------------------------------------------------------------- the stream it is given


def test_printed_renders_into_the_stream_it_gives_and_never_swaps_stdout():
    from irscope.direct.recorder import printed

    real = sys.stdout
    seen = []

    def render(stream) -> int:
        seen.append((stream, sys.stdout is real))
        stream.write("the output\n")
        return 1

    out = io.StringIO()
    assert printed(render, out) == (1, "the output\n")
    assert out.getvalue() == "the output\n"
    assert len(seen) == 1 and isinstance(seen[0][0], io.StringIO) and seen[0][0] is not out and seen[0][1]


_SERVE = (
    "import io, json, sys\nfrom irscope import direct\nargv = {args!r}\nrec = direct.Recorder(argv)\n"
    "buf = io.StringIO()\nstatus = direct.serve(rec, buf)\n"
    "if status is None:\n    from irscope.cli import main\n    main(argv, recorder=rec)\n"
    "else:\n    sys.stdout.write('SERVED ' + json.dumps([status, buf.getvalue()]))\n"
)


def test_serve_writes_through_the_stream_it_is_given(tmp_path):
    kern = _kernel(tmp_path)
    args = ["lines", str(kern), "-s", SIG, "-t", "h100", "-o", str(tmp_path / "out"), "--sort", "line"]

    def run() -> str:
        p = subprocess.run(
            [sys.executable, "-c", _SERVE.format(args=args)],
            cwd=tmp_path,
            capture_output=True,
            check=False,
            text=True,
            timeout=300,
            env=dict(os.environ, IRSCOPE_CACHE_DIR=str(tmp_path / "cache")),
        )
        assert p.returncode == 0, p.stderr
        return p.stdout

    full = run()
    assert not full.startswith("SERVED") and "add_kernel on cuda:90" in full
    served = run()
    assert served.startswith("SERVED ")
    assert json.loads(served.removeprefix("SERVED ")) == [0, full]


def test_a_cache_hit_carries_this_runs_options_not_the_entrys(tmp_path):
    """num_warps=4 set on the command line compiles what the default compiles (one entry): the served
    manifest says what this run asked for (explain --try and the report read user_options), on the full
    path's hit and on the direct mode's repeat; the run that set nothing gets {} back."""
    kern = _kernel(tmp_path)
    base = [str(kern), "-s", SIG, "-t", "h100", "-o", str(tmp_path / "out")]

    def options(*extra: str) -> tuple[str | None, dict]:
        got = _dump(tmp_path, *base, *extra)
        return got["cache"], json.loads((Path(got["folder"]) / "manifest.json").read_text())["user_options"]

    assert options() == (None, {})
    assert options("--set", "num_warps=4") == ("key", {"num_warps": 4})
    assert options("--set", "num_warps=4") == ("direct", {"num_warps": 4})
    assert options() == ("direct", {})
