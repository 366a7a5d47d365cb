"""A dump folder is data: every file its JSON names is read from inside it or refused, and no output
path replaces anything but a regular file. Each case runs the real command, as a user would, on a real
dump whose JSON a hostile author edited; the file outside must never reach the output."""

from __future__ import annotations

import functools
import json
import os
import shutil
import socket
from pathlib import Path

import pytest

from tests.helpers import VECTOR_ADD, compile_example, run_cli, run_in

VECTOR_SIG = "*fp32:16, *fp32:16, *fp32:16, i32:16, 1024"
SECRET = "irscope-secret-do-not-print"


@pytest.fixture(scope="module")
def dump(tmp_path_factory) -> Path:
    """vector_add for cuda:90 with per-pass IR and a source map."""
    from irscope import artifacts

    out = tmp_path_factory.mktemp("dump")
    return artifacts.write(compile_example(VECTOR_ADD, VECTOR_SIG, passes=True), out / "d")


@pytest.fixture(scope="module")
def secret(tmp_path_factory) -> Path:
    """A file outside every dump folder, whose text must never be printed or embedded."""
    path = tmp_path_factory.mktemp("outside") / "secret.txt"
    path.write_text(f"{SECRET}\n// -----// IR Dump Before X (x) ('builtin.module' operation) //----- //\n")
    return path


def _copy(dump: Path, tmp_path: Path, name: str = "d") -> Path:
    folder = tmp_path / name
    shutil.copytree(dump, folder)
    return folder


def _edit(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def _relative_to(folder: Path, target: Path) -> str:
    return os.path.relpath(target, folder)


def _refused(r, field: str) -> None:
    assert r.code == 2, (r.code, r.out, r.err)
    assert SECRET not in r.out and SECRET not in r.err
    lines = [x for x in r.err.splitlines() if x.strip()]
    assert len(lines) == 1 and field in lines[0] and "Traceback" not in r.err, r.err


def _stage_name(folder: Path, stage: str) -> str:
    return json.loads((folder / "manifest.json").read_text())["stages"][stage]


# each way a name can leave the folder: absolute, climbing with .., a link inside pointing outside
ESCAPES = ["absolute", "dotdot", "symlink"]


def _escape(folder: Path, secret: Path, how: str, keep_name: str) -> str:
    """The name to put in the folder's JSON for `how`."""
    if how == "absolute":
        return str(secret)
    if how == "dotdot":
        return _relative_to(folder, secret)
    link = folder / keep_name
    link.unlink()
    link.symlink_to(secret)
    return keep_name


@pytest.mark.parametrize("how", ESCAPES)
def test_diff_stage_refuses_a_stage_file_outside(capsys, dump, secret, tmp_path, how):
    a, b = _copy(dump, tmp_path, "a"), _copy(dump, tmp_path, "b")
    name = _escape(b, secret, how, _stage_name(b, "ttgir"))
    _edit(b / "manifest.json", lambda m: m["stages"].__setitem__("ttgir", name))
    _refused(run_in(capsys, "diff", str(a), str(b), "--stage", "ttgir"), "stages.ttgir")


@pytest.mark.parametrize("how", ESCAPES)
def test_report_refuses_a_stage_file_outside(capsys, dump, secret, tmp_path, how):
    d = _copy(dump, tmp_path)
    name = _escape(d, secret, how, _stage_name(d, "ptx"))
    _edit(d / "manifest.json", lambda m: m["stages"].__setitem__("ptx", name))
    page = tmp_path / "r.html"
    _refused(run_in(capsys, "report", str(d), "-o", str(page)), "stages.ptx")
    assert not page.exists()


@pytest.mark.parametrize("how", ESCAPES)
def test_passes_refuses_a_pass_file_outside(capsys, dump, secret, tmp_path, how):
    d = _copy(dump, tmp_path)
    first = json.loads((d / "manifest.json").read_text())["passes"][0]["file"]
    name = _escape(d, secret, how, first)
    _edit(d / "manifest.json", lambda m: m["passes"][0].__setitem__("file", name))
    _refused(run_in(capsys, "passes", str(d), "--first", SECRET), "passes[0].file")


@pytest.mark.parametrize("how", ESCAPES)
def test_lines_refuses_a_mapped_stage_file_outside(capsys, dump, secret, tmp_path, how):
    d = _copy(dump, tmp_path)
    smap = json.loads((d / "map.json").read_text())
    name = _escape(d, secret, how, smap["stages"]["ptx"]["file"])
    _edit(d / "map.json", lambda m: m["stages"]["ptx"].__setitem__("file", name))
    line = next(e["line"] for e in smap["lines"] if e["stages"].get("ptx", {}).get("at"))
    _refused(run_in(capsys, "lines", str(d), "--line", str(line), "--stage", "ptx"), "map.json stages.ptx.file")


@pytest.mark.parametrize("how", ["absolute", "dotdot"])
def test_a_map_named_outside_the_folder_is_refused(capsys, dump, secret, tmp_path, how):
    d = _copy(dump, tmp_path)
    name = str(secret) if how == "absolute" else _relative_to(d, secret)
    _edit(d / "manifest.json", lambda m: m.__setitem__("map", name))
    _refused(run_in(capsys, "lines", str(d)), "manifest.json map")


def test_a_stage_that_is_a_device_is_refused(cli, dump, tmp_path):
    """/dev/zero behind a link inside the folder: refused, not read until memory runs out (a fresh process, the
    cli fixture: a wrong check would fill it, not this one)."""
    d = _copy(dump, tmp_path)
    name = _stage_name(d, "ttgir")
    (d / name).unlink()
    (d / name).symlink_to("/dev/zero")
    _refused(cli("diff", str(dump), str(d), "--stage", "ttgir"), "stages.ttgir")


def test_links_inside_the_folder_still_work(capsys, dump, tmp_path):
    """A stage file that is a link to another file of the same folder is data inside it: read."""
    d = _copy(dump, tmp_path)
    name = _stage_name(d, "ttgir")
    real = d / "kept.ttgir"
    (d / name).rename(real)
    (d / name).symlink_to(real.name)
    r = run_in(capsys, "diff", str(dump), str(d), "--stage", "ttgir")
    assert r.code == 0, r.err


# ---------------------------------------------------------------- outputs never replace a non-file


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


def _socket(tmp_path: Path) -> Path:
    path = tmp_path / "sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.close()
    return path


def _device(tmp_path: Path) -> Path:
    """A character device of the test's own (null's numbers), never the machine's /dev/null: if the
    code under test is wrong, it replaces this node, not the system's."""
    import stat

    path = tmp_path / "dev-null"
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device node needs root")
    return path


def _link_to_device(tmp_path: Path) -> Path:
    link = tmp_path / "link"
    link.symlink_to(_device(tmp_path))
    return link


def _irscope(capsys, kind: str):
    """How an output case runs irscope: in this process, but in a fresh one (run_cli, with its time limit) for a
    fifo, which a wrong check would open for writing and wait on forever."""
    return run_cli if kind == "fifo" else functools.partial(run_in, capsys)


NON_FILES = {
    "device": _device,
    "fifo": _fifo,
    "socket": _socket,
    "folder": lambda tmp: tmp,
    "link to a device": _link_to_device,
}


def _unchanged(path: Path, kind: str) -> None:
    import stat

    mode = path.stat().st_mode
    want = {
        "device": stat.S_ISCHR,
        "fifo": stat.S_ISFIFO,
        "socket": stat.S_ISSOCK,
        "folder": stat.S_ISDIR,
        "link to a device": stat.S_ISCHR,
    }[kind]
    assert want(mode), f"{path} was replaced"


@pytest.mark.parametrize("kind", sorted(NON_FILES))
def test_report_output_must_be_a_regular_file(capsys, dump, tmp_path, kind):
    target = NON_FILES[kind](tmp_path)
    r = _irscope(capsys, kind)("report", str(dump), "-o", str(target))
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1 and "-o" in r.err, r.err
    _unchanged(target, kind)


@pytest.mark.parametrize("kind", ["device", "fifo", "link to a device"])
def test_diff_html_must_be_a_regular_file(capsys, dump, tmp_path, kind):
    target = NON_FILES[kind](tmp_path)
    r = _irscope(capsys, kind)("diff", str(dump), str(dump), "--html", str(target))
    assert r.code == 2 and "--html" in r.err and len(r.err.strip().splitlines()) == 1, r.err
    _unchanged(target, kind)


@pytest.mark.parametrize("flag", ["--db", "--write-recipe", "--html"])
@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_sweep_outputs_must_be_regular_files(capsys, tmp_path, flag, kind):
    target = NON_FILES[kind](tmp_path)
    extra = ["--history"] if flag == "--db" else []
    r = _irscope(capsys, kind)(
        "sweep",
        str(VECTOR_ADD),
        "-s",
        VECTOR_SIG,
        "--target",
        "cuda:90",
        "--axis",
        "num_warps=2,4",
        flag,
        str(target),
        *extra,
        "-o",
        str(tmp_path / "out"),
    )
    assert r.code == 2 and flag in r.err and len(r.err.strip().splitlines()) == 1, r.err
    _unchanged(target, kind)
    assert not (tmp_path / "out").exists()  # refused before any work


@pytest.mark.parametrize("kind", ["device", "fifo", "socket", "folder"])
def test_script_log_must_be_a_regular_file(capsys, tmp_path, kind):
    target = NON_FILES[kind](tmp_path)
    script = tmp_path / "s.py"
    script.write_text("print('ran')\n")
    r = _irscope(capsys, kind)("capture", str(script), "--target", "cuda:90", "--script-log", str(target))
    assert r.code == 2 and "--script-log" in r.err and "ran" not in r.out, (r.out, r.err)
    _unchanged(target, kind)


def test_regular_and_new_output_files_are_written(capsys, dump, tmp_path):
    old = tmp_path / "old.html"
    old.write_text("old")
    assert run_in(capsys, "report", str(dump), "-o", str(old)).code == 0 and "<!doctype html>" in old.read_text()
    new = tmp_path / "new.html"
    assert run_in(capsys, "report", str(dump), "-o", str(new)).code == 0 and new.is_file()
