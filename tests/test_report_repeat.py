"""A repeat of `irscope report` (irscope/direct/report.py, issues #29 and #37): served from its record without building the
page, importing Triton, click or jinja2, and never stale: any change to a dump folder, the page's
templates, irscope, Triton or the environment builds the page again."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import run_cli, run_in

SIG = "*fp32, *fp32, *fp32, i32, 1024"
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

# every run through irscope.entry as the command does; RACY_NS 0: folders written a moment ago may be
# stamped (no two-second wait)
_RUN = (
    "import sys\nfrom irscope.compile import cache\nfrom irscope.direct import record\nfrom irscope.direct import report as repeat\n"
    "cache.RACY_NS = 0\n{patch}\nfrom irscope.entry import main\nsys.argv[1:] = {args!r}\nmain()\n"
)


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    """One vector_add dump folder (copied per test: a copy is other inodes, as a fresh dump would be)."""
    where = tmp_path_factory.mktemp("made")
    r = run_in(
        None,
        "dump",
        str(EXAMPLES / "vector_add.py"),
        "-s",
        SIG,
        "-t",
        "h100",
        "-o",
        str(where / "out"),
        env={"IRSCOPE_CACHE_DIR": str(where / "cache")},
    )
    assert r.code == 0, r.err
    return where / "out"


@pytest.fixture
def dumps(made, tmp_path) -> Path:
    shutil.copytree(made, tmp_path / "out")
    return tmp_path / "out"


def _report(tmp_path: Path, *args: str, patch: str = "", env: dict | None = None) -> tuple[str, str]:
    """(stdout, stderr) of `irscope report ARGS` run in tmp_path."""
    p = subprocess.run(
        [sys.executable, "-c", _RUN.format(patch=patch, args=["report", *args])],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, IRSCOPE_CACHE_DIR=str(tmp_path / "cache"), **(env or {})),
    )
    assert p.returncode == 0, p.stderr
    return p.stdout, p.stderr


def _served(out: str) -> bool:
    assert out.startswith("wrote "), out
    return out.rstrip().endswith("(from cache)")


def test_a_repeat_is_served_without_building_the_page_or_importing_triton(dumps, tmp_path):
    first, _ = _report(tmp_path, "out", "-o", "page.html")
    assert not _served(first)
    page = tmp_path / "page.html"
    before = page.stat()
    p = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", _RUN.format(patch="", args=["report", "out", "-o", "page.html"])],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, IRSCOPE_CACHE_DIR=str(tmp_path / "cache")),
    )
    assert p.returncode == 0, p.stderr
    assert _served(p.stdout) and p.stdout.removesuffix(" (from cache)\n") == first.rstrip("\n")
    imported = {line.split("|")[-1].strip() for line in p.stderr.splitlines() if line.startswith("import time:")}
    assert not {m for m in imported if m.split(".")[0] in ("triton", "torch", "click", "rich", "jinja2")}, imported
    assert "irscope.report.model" not in imported
    after = page.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # left as it was


def test_a_changed_file_in_a_dump_folder_builds_the_page_again(dumps, tmp_path):
    _report(tmp_path, "out", "-o", "page.html", "--no-layouts")
    assert _served(_report(tmp_path, "out", "-o", "page.html", "--no-layouts")[0])
    ttir = next(dumps.rglob("*.ttir"))
    ttir.write_text(ttir.read_text().replace("tt.store", "tt.store "))  # same meaning, one byte more
    out, _ = _report(tmp_path, "out", "-o", "page.html", "--no-layouts")
    assert not _served(out)
    assert "tt.store " in (tmp_path / "page.html").read_text()
    assert _served(_report(tmp_path, "out", "-o", "page.html", "--no-layouts")[0])


def test_an_edit_of_the_same_size_is_seen_too(dumps, tmp_path):
    _report(tmp_path, "out", "-o", "page.html", "--no-layouts")
    ttir = next(dumps.rglob("*.ttir"))
    text = ttir.read_text()
    st = ttir.stat()
    ttir.write_text(text.replace("tt.load", "tt.LOAD"))
    os.utime(ttir, ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime put back; the ctime moved
    out, _ = _report(tmp_path, "out", "-o", "page.html", "--no-layouts")
    assert not _served(out) and "tt.LOAD" in (tmp_path / "page.html").read_text()


def test_a_new_dump_in_a_folder_of_dumps_builds_the_page_again(dumps, tmp_path):
    assert "(1 dump," in _report(tmp_path, "out", "-o", "page.html", "--no-layouts")[0]
    kernel_dir = next(p for p in dumps.iterdir() if p.is_dir())
    shutil.copytree(kernel_dir, dumps / "again")
    out, _ = _report(tmp_path, "out", "-o", "page.html", "--no-layouts")
    assert not _served(out) and "(2 dumps," in out


def test_a_deleted_or_edited_page_is_put_back_whole(dumps, tmp_path):
    _report(tmp_path, "out", "-o", "page.html", "--no-layouts")
    page = tmp_path / "page.html"
    built = page.read_bytes()
    page.unlink()
    assert _served(_report(tmp_path, "out", "-o", "page.html", "--no-layouts")[0]) and page.read_bytes() == built
    page.write_bytes(built.replace(b"<html", b"<html data-edited", 1))
    assert _served(_report(tmp_path, "out", "-o", "page.html", "--no-layouts")[0]) and page.read_bytes() == built
    assert not list(tmp_path.glob(".irscope-tmp-*"))


def test_a_lost_or_damaged_copy_of_the_page_builds_it_again(dumps, tmp_path):
    _report(tmp_path, "out", "-o", "page.html", "--no-layouts")
    page = tmp_path / "page.html"
    built = page.read_bytes()
    copy = next((tmp_path / "cache" / ".irscope-direct").glob("*.html"))
    copy.write_bytes(copy.read_bytes().replace(b"<html", b"<html data-damaged", 1))
    page.unlink()
    assert not _served(_report(tmp_path, "out", "-o", "page.html", "--no-layouts")[0]) and page.read_bytes() == built
    copy.unlink()
    page.unlink()
    assert not _served(_report(tmp_path, "out", "-o", "page.html", "--no-layouts")[0]) and page.read_bytes() == built


def test_another_triton_irscope_or_template_builds_the_page_again(dumps, tmp_path):
    args = ("out", "-o", "page.html")
    _report(tmp_path, *args)
    assert _served(_report(tmp_path, *args)[0])
    assert not _served(_report(tmp_path, *args, patch="record._metadata_version = lambda path: '9.9.9'")[0])
    assert not _served(_report(tmp_path, *args)[0])  # that run recorded 9.9.9: built once, then served
    assert _served(_report(tmp_path, *args)[0])
    assert not _served(_report(tmp_path, *args, patch="record.package_fingerprint = lambda: 'other code'")[0])
    # the page's own template, style and script are part of what it is made from
    templates = tmp_path / "templates"
    shutil.copytree(repeat_templates(), templates)
    patch = f"repeat.TEMPLATES = __import__('pathlib').Path({str(templates)!r})"
    args = (*args, "--no-layouts")
    _report(tmp_path, *args, patch=patch)
    assert _served(_report(tmp_path, *args, patch=patch)[0])
    with open(templates / "report.css", "a") as fh:
        fh.write("\n")
    assert not _served(_report(tmp_path, *args, patch=patch)[0])


def repeat_templates() -> Path:
    from irscope.direct import report

    return report.TEMPLATES


def test_an_env_knob_or_the_layouts_flag_is_another_page(dumps, tmp_path):
    _report(tmp_path, "out", "-o", "page.html")
    assert _served(_report(tmp_path, "out", "-o", "page.html")[0])
    assert not _served(_report(tmp_path, "out", "-o", "page.html", env={"TRITON_ALWAYS_COMPILE": "1"})[0])
    assert not _served(_report(tmp_path, "out", "-o", "page.html", "--no-layouts")[0])
    assert _served(_report(tmp_path, "out", "-o", "page.html", "--no-layouts")[0])
    # the watched environment is part of the key: the knob's run is a record of its own, and the run
    # without it still served from the first (the page put back over the --no-layouts one)
    assert _served(_report(tmp_path, "out", "-o", "page.html", env={"TRITON_ALWAYS_COMPILE": "1"})[0])
    assert _served(_report(tmp_path, "out", "-o", "page.html", "--no-layouts")[0])
    built = (tmp_path / "page.html").read_bytes()
    assert _served(_report(tmp_path, "out", "-o", "page.html")[0])
    assert (tmp_path / "page.html").read_bytes() != built


def test_a_page_written_inside_its_dump_folder_is_still_served(dumps, tmp_path):
    _report(tmp_path, "out", "-o", "out/page.html", "--no-layouts")
    assert _served(_report(tmp_path, "out", "-o", "out/page.html", "--no-layouts")[0])
    (dumps / "page.html").unlink()
    assert _served(_report(tmp_path, "out", "-o", "out/page.html", "--no-layouts")[0])
    assert (dumps / "page.html").is_file()


def test_a_folder_with_a_symlink_or_a_damaged_dump_is_never_recorded(dumps, tmp_path):
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("not part of the dump")
    kernel_dir = next(p for p in dumps.iterdir() if p.is_dir())
    link = kernel_dir / "notes.txt"
    link.symlink_to(outside)
    _report(tmp_path, "out", "-o", "page.html", "--no-layouts")
    assert not _served(_report(tmp_path, "out", "-o", "page.html", "--no-layouts")[0])
    link.unlink()
    damaged = dumps / "broken"
    shutil.copytree(next(kernel_dir.iterdir()) if not (kernel_dir / "manifest.json").exists() else kernel_dir, damaged)
    (damaged / "manifest.json").write_text("{not json")
    for _ in range(2):
        out, err = _report(tmp_path, "out", "-o", "page.html", "--no-layouts")
        assert not _served(out) and "damaged" in out and "left out a damaged dump" in err


def test_a_record_is_keyed_by_the_command_line_as_typed(dumps, tmp_path):
    """Nothing is parsed to serve a repeat: -o and --output are two command lines, each recorded by its
    first run, and a bad -o is still the CLI's to refuse, also after a served run."""
    assert not _served(_report(tmp_path, "out", "-o", "page.html")[0])
    assert _served(_report(tmp_path, "out", "-o", "page.html")[0])
    assert not _served(_report(tmp_path, "out", "--output", "page.html")[0])
    assert _served(_report(tmp_path, "out", "--output", "page.html")[0])
    assert _served(_report(tmp_path, "out", "-o", "page.html")[0])
    records = [json.loads(p.read_text()) for p in (tmp_path / "cache" / ".irscope-direct").glob("*.json")]
    assert len(records) == 2 and all(r["request"]["output"] == "page.html" for r in records)
    (tmp_path / "dir.html").mkdir()  # through irscope.entry, as typed: its direct mode must not serve it
    r = run_cli("report", "out", "-o", "dir.html", cwd=tmp_path, env={"IRSCOPE_CACHE_DIR": str(tmp_path / "cache")})
    assert r.code == 2 and "dir.html" in r.err and "Traceback" not in r.err
