"""The cache is data (issue #41): a shared cache, one restored from elsewhere or written by another user
may hold anything. Every hostile entry and record here is ignored (with one note for an entry) and the
work done the full way: nothing is published outside -o, no link is followed, no FIFO or device is
opened, no forged output or exit status is served, no traceback, no hang."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import run_cli
from tests.test_direct_recorder import KERNEL, SIG  # the kernel file the direct-mode tests dump

SECRET = "TOP-SECRET-NOT-PTX"


# ------------------------------------------------------------------ entries, one by one (in process)


def _entry(root: Path, key: str = "ab" * 32, kernel: str = "add_kernel", target: str = "cuda:90") -> Path:
    """A well-formed entry under `key` in the cache at root (its checksums and digest as irscope writes them)."""
    from irscope.compile import cache

    entry = root / key
    entry.mkdir(parents=True)
    (entry / "add_kernel.ptx").write_text("// ptx\n")
    manifest = {"kernel": kernel, "target": target, "stages": {"ptx": "add_kernel.ptx"}}
    (entry / "manifest.json").write_text(json.dumps(manifest))
    cache._write_checksums(entry, key)
    return entry


def _resign(entry: Path, key: str) -> None:
    """What a hostile writer does after an edit: checksums and the digest computed afresh."""
    from irscope.compile import cache

    (entry / cache.CHECKSUMS).unlink()
    sums = {}
    for p in sorted(entry.rglob("*")):
        if p.is_file() and not p.is_symlink():
            sums[p.relative_to(entry).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
        elif p.is_symlink() and p.exists() and p.is_file():
            sums[p.relative_to(entry).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    doc = {"key": key, "files": sums, "digest": cache._digest(key, sums)}
    (entry / cache.CHECKSUMS).write_text(json.dumps(doc))


def _manifest(kernel="add_kernel", target="cuda:90"):
    return {"kernel": kernel, "target": target, "stages": {"ptx": "add_kernel.ptx"}}


def _set_manifest(entry: Path, key: str, manifest) -> None:
    (entry / "manifest.json").write_text(manifest if isinstance(manifest, str) else json.dumps(manifest))
    _resign(entry, key)


def _secret(tmp: Path) -> Path:
    path = tmp / "secret.txt"
    path.write_text(SECRET)
    return path


def _link_stage(entry, key, tmp):
    (entry / "add_kernel.ptx").unlink()
    (entry / "add_kernel.ptx").symlink_to(_secret(tmp))
    _resign(entry, key)


def _link_extra(entry, key, tmp):
    (entry / "extra.txt").symlink_to(_secret(tmp))
    _resign(entry, key)


def _link_folder(entry, key, tmp):
    outside = tmp / "outside"
    outside.mkdir()
    (outside / "x.txt").write_text(SECRET)
    (entry / "sub").symlink_to(outside)
    _resign(entry, key)


def _entry_is_link(entry, key, tmp):
    real = tmp / "elsewhere"
    shutil.move(entry, real)
    entry.symlink_to(real)


def _fifo_manifest(entry, key, tmp):
    (entry / "manifest.json").unlink()
    os.mkfifo(entry / "manifest.json")


def _fifo_stage(entry, key, tmp):
    (entry / "add_kernel.ptx").unlink()
    os.mkfifo(entry / "add_kernel.ptx")


def _zero_manifest(entry, key, tmp):
    (entry / "manifest.json").unlink()
    (entry / "manifest.json").symlink_to("/dev/zero")


def _moved_under_another_key(entry, key, tmp):
    other = entry.parent / ("cd" * 32)
    _entry(entry.parent, "cd" * 32)
    shutil.rmtree(entry)
    shutil.move(other, entry)  # a valid entry of another key, checksums and all


HOSTILE = {
    "kernel name climbs out": lambda e, k, t: _set_manifest(e, k, _manifest(kernel="../../../escaped")),
    "kernel name absolute": lambda e, k, t: _set_manifest(e, k, _manifest(kernel=str(t / "abs"))),
    "kernel name with a slash": lambda e, k, t: _set_manifest(e, k, _manifest(kernel="a/b")),
    "target climbs out": lambda e, k, t: _set_manifest(e, k, _manifest(target="../../x")),
    "kernel name with NUL": lambda e, k, t: _set_manifest(e, k, _manifest(kernel="add\u0000kernel")),
    "kernel name too long": lambda e, k, t: _set_manifest(e, k, _manifest(kernel="k" * 300)),
    "kernel name with ESC": lambda e, k, t: _set_manifest(e, k, _manifest(kernel="add\u001b]0;pwned\u0007")),
    "deeply nested manifest": lambda e, k, t: _set_manifest(e, k, '{"kernel": "add_kernel", "x": ' + "[" * 100000),
    "nested past the limit": lambda e, k, t: _set_manifest(
        e, k, {**_manifest(), "x": json.loads("[" * 200 + "]" * 200)}
    ),
    "stage file is a link outside": _link_stage,
    "extra file is a link outside": _link_extra,
    "a folder in it is a link outside": _link_folder,
    "the entry is a link": _entry_is_link,
    "manifest is a FIFO": _fifo_manifest,
    "stage file is a FIFO": _fifo_stage,
    "manifest is /dev/zero": _zero_manifest,
    "an entry moved under another key": _moved_under_another_key,
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_entry_is_never_served_nor_followed(case, tmp_path, monkeypatch):
    from irscope.compile import cache

    monkeypatch.setenv("IRSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    key = "ab" * 32
    entry = _entry(tmp_path / "cache", key)
    HOSTILE[case](entry, key, tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    before = sorted(p.name for p in tmp_path.iterdir())
    code = (
        "import sys\nfrom pathlib import Path\nfrom irscope.compile import cache\n"
        f"out = Path({str(out)!r})\n"
        "try:\n"
        f"    hit = cache.restore({key!r}, lambda m: cache.folder_for(out, m, {key!r}))\n"
        "except cache.Damaged as e:\n    print('DAMAGED', e)\nelse:\n    print('HIT', hit)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=dict(os.environ))
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert p.stdout.startswith("DAMAGED") or p.stdout.strip() == "HIT None", p.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing published beside -o
    assert not [f for f in out.rglob("*") if f.is_file() and SECRET in f.read_text(errors="replace")]
    assert not list(out.rglob("*")) or all(cache.TMP_PREFIX not in f.name for f in out.rglob("*"))


def test_a_good_entry_is_still_served(tmp_path, monkeypatch):
    from irscope.compile import cache

    monkeypatch.setenv("IRSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    key = "ab" * 32
    _entry(tmp_path / "cache", key)
    hit = cache.restore(key, lambda m: cache.folder_for(tmp_path / "out", m, key))
    assert hit is not None and hit[0] == tmp_path / "out" / "add_kernel" / "cuda90-abababab"
    assert (hit[0] / "add_kernel.ptx").read_text() == "// ptx\n"


@pytest.mark.parametrize("key", ["../forged", "/etc", "ab/cd", "", "AB" * 32, "ab\u0000cd" * 8, 7])
def test_an_entry_key_that_is_not_a_digest_names_no_path(key, tmp_path, monkeypatch):
    from irscope.compile import cache

    monkeypatch.setenv("IRSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(cache.Damaged):
        cache.entry_path(key)


# ------------------------------------------------------------------ the commands, against a hostile cache


def _kernel(tmp_path: Path) -> Path:
    kern = tmp_path / "kern.py"
    kern.write_text(KERNEL)
    return kern


def _env(tmp_path: Path) -> dict:
    return {"IRSCOPE_CACHE_DIR": str(tmp_path / "cache")}


def _spoil_every_entry(tmp_path: Path, how) -> int:
    entries = [p for p in (tmp_path / "cache").iterdir() if len(p.name) == 64 and p.is_dir()]
    for entry in entries:
        how(entry, entry.name, tmp_path)
    return len(entries)


def _outside_out(tmp_path: Path, known: set) -> set:
    return {p for p in tmp_path.rglob("*") if not p.is_relative_to(tmp_path / "out")} - known


def _check(r, tmp_path, known, notes_max=1) -> None:
    assert r.code == 0, r.err
    assert "Traceback" not in r.err and "internal error" not in r.err, r.err
    assert SECRET not in r.out
    assert "\x1b" not in r.out and "\x1b" not in r.err
    assert len([line for line in r.err.splitlines() if "damaged" in line]) <= notes_max, r.err
    new = {p for p in _outside_out(tmp_path, known) if not p.is_relative_to(tmp_path / "cache")}
    assert not new, new  # nothing written outside -o (and the cache)


@pytest.mark.parametrize(
    "case", ["kernel name climbs out", "stage file is a link outside", "the entry is a link", "manifest is a FIFO"]
)
def test_dump_lines_passes_and_the_api_against_a_hostile_cache(case, tmp_path):
    kern = _kernel(tmp_path)
    out = str(tmp_path / "out")
    argv = {
        "dump": ["dump", str(kern), "-s", SIG, "-t", "h100", "-o", out, "--json"],
        "lines": ["lines", str(kern), "-s", SIG, "-t", "h100", "-o", out, "--json"],
        "passes": ["passes", str(kern), "-s", SIG, "-t", "h100", "-o", out],
    }
    for args in argv.values():
        assert run_cli(*args, cwd=tmp_path, env=_env(tmp_path)).code == 0
    shutil.rmtree(tmp_path / "cache" / ".irscope-direct")  # each repeat looks the entry up by the full key
    known = set(_outside_out(tmp_path, set()))
    assert _spoil_every_entry(tmp_path, HOSTILE[case]) >= 2
    known |= {p for p in tmp_path.rglob("*") if not p.is_relative_to(tmp_path / "out")}
    for name, args in argv.items():
        r = run_cli(*args, cwd=tmp_path, env=_env(tmp_path))
        _check(r, tmp_path, known)
        if name == "dump":
            kept = json.loads(r.out)["kernels"][0]
            assert kept["cache"] is None and Path(kept["folder"]).is_relative_to(tmp_path / "out")
            assert SECRET not in Path(kept["stages"]["ptx"]).read_text()
    api = (
        "import irscope, json\n"
        f"d = irscope.dump({str(kern)!r}, signature={SIG!r}, target='h100', out={out!r})\n"
        "print(d.folder)\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", api],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=dict(os.environ, **_env(tmp_path)),
    )
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert Path(p.stdout.strip()).is_relative_to(tmp_path / "out")


# ------------------------------------------------------------------ the direct mode's records


def _dump_args(tmp_path: Path, kern: Path) -> list[str]:
    return ["dump", str(kern), "-s", SIG, "-t", "h100", "-o", str(tmp_path / "out")]


def _record(tmp_path: Path) -> Path:
    return next((tmp_path / "cache" / ".irscope-direct").glob("*.json"))


def _served_run(tmp_path, kern, *extra):
    return run_cli(*_dump_args(tmp_path, kern), *extra, cwd=tmp_path, env=_env(tmp_path))


def _forge(path: Path, edit) -> None:
    """Edit a record as a writer without the records' secret can: the JSON, its MAC left as it was."""
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))


RECORD_EDITS = {
    "made-up summary with escapes": lambda d: d.update(summary="\x1b]0;pwned\x07\x1b[2Jfolder /etc: 1 registers\n"),
    "status 255": lambda d: d.update(status=255),
    "status a string": lambda d: d.update(status="boom"),
    "no entries": lambda d: d.update(entries=[]),
    "entry key climbs out": lambda d: d["entries"][0].update(key="../forged"),
}


@pytest.mark.parametrize("case", list(RECORD_EDITS))
def test_a_forged_record_is_never_served(case, tmp_path):
    kern = _kernel(tmp_path)
    assert _served_run(tmp_path, kern).code == 0
    first = _served_run(tmp_path, kern)
    assert first.code == 0 and "(from cache)" in first.out  # served from its record
    _forge(_record(tmp_path), RECORD_EDITS[case])
    r = _served_run(tmp_path, kern)
    assert r.code == 0 and "Traceback" not in r.err and "\x1b" not in r.out, r.err
    assert "1 registers" not in r.out and "pwned" not in r.out
    assert "add_kernel" in r.out and len(list(_record(tmp_path).parent.glob("*.json"))) == 1


class _Pipe(io.StringIO):
    def isatty(self) -> bool:
        return False


def _serve_record(key: str, doc: dict) -> tuple[int | None, str]:
    """Serve `doc` written under `key` with a valid MAC (as a writer holding the secret could): its status
    and what it printed to a pipe."""
    from irscope.direct import Recorder, record, serve

    doc = json.loads(json.dumps(doc))
    doc.pop("mac", None)
    record.write(key, doc)
    assert record.read(key) is not None  # its MAC holds

    class Recorded(Recorder):
        def key(self) -> str:
            return key

    out = _Pipe()
    return serve(Recorded([]), out), out.getvalue()


def test_a_record_with_a_valid_mac_is_still_checked(tmp_path, monkeypatch):
    """Even a record with a valid MAC cannot set the exit status, serve nothing as written, follow a key
    out of the cache, have its summary printed in place of the dump's own or print escape sequences raw."""
    kern = _kernel(tmp_path)
    assert _served_run(tmp_path, kern).code == 0
    path = _record(tmp_path)
    good = json.loads(path.read_text())
    monkeypatch.chdir(tmp_path)
    for name, value in _env(tmp_path).items():
        monkeypatch.setenv(name, value)
    status, text = _serve_record(path.stem, good)
    if status is None:  # this process's environment is not the record's: serve it as the run had it
        monkeypatch.setattr(
            os, "environ", {**good["env"], **{k: v for k, v in os.environ.items() if k not in good["env"]}}
        )
        for name in [n for n, v in good["env"].items() if v is None]:
            os.environ.pop(name, None)
        status, text = _serve_record(path.stem, good)
    assert status == 0 and "add_kernel" in text and "(from cache)" in text, text  # the unedited record is served
    for case, edit in RECORD_EDITS.items():
        doc = json.loads(json.dumps(good))
        edit(doc)
        status, text = _serve_record(path.stem, doc)
        assert status in (None, 0), (case, status)
        assert "\x1b" not in text and "1 registers" not in text and "pwned" not in text, (case, text)
        assert not (tmp_path / "forged").exists()
    # a `placed` folder pointing at another dump (its stamp valid) is not served in this entry's place
    from irscope.compile import cache

    monkeypatch.setattr(cache, "RACY_NS", 0)
    served = good["entries"][0]
    mine = tmp_path / "out" / "add_kernel"
    (folder,) = mine.iterdir()
    other = tmp_path / "out" / "matmul_kernel" / folder.name
    shutil.copytree(folder, other)
    manifest = json.loads((other / "manifest.json").read_text())
    (other / "manifest.json").write_text(json.dumps({**manifest, "kernel": "matmul_kernel"}))
    doc = json.loads(json.dumps(good))
    doc["entries"][0]["placed"] = {
        "out": str(tmp_path / "out"),
        "folder": str(other),
        "stamp": cache.placed_stamp(served["key"], other),
    }
    assert doc["entries"][0]["placed"]["stamp"] is not None
    status, text = _serve_record(path.stem, doc)
    assert status == 0 and "matmul_kernel" not in text and f"add_kernel/{folder.name}" in text, text


def test_a_record_that_is_a_fifo_or_dev_zero_does_not_hang(tmp_path):
    kern = _kernel(tmp_path)
    assert _served_run(tmp_path, kern).code == 0
    path = _record(tmp_path)
    for make in (lambda: os.mkfifo(path), lambda: path.symlink_to("/dev/zero")):
        path.unlink()
        make()
        r = _served_run(tmp_path, kern)  # run_cli's timeout fails a hang
        assert r.code == 0 and "Traceback" not in r.err, r.err


def test_records_in_a_folder_others_can_write_are_not_served(tmp_path, monkeypatch):
    kern = _kernel(tmp_path)
    assert _served_run(tmp_path, kern, "--json").code == 0
    assert json.loads(_served_run(tmp_path, kern, "--json").out)["kernels"][0]["cache"] == "direct"
    folder = tmp_path / "cache" / ".irscope-direct"
    assert folder.stat().st_mode & 0o077 == 0 and (folder / "mac-secret").stat().st_mode & 0o077 == 0
    from irscope.direct import record

    monkeypatch.setenv("IRSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    folder.chmod(0o777)
    assert record._secret(create=False) is None  # a folder others may write: no record is read
    assert record.read(_record(tmp_path).stem) is None


# ------------------------------------------------------------------ a hostile capture folder


def test_a_worker_compiles_the_closure_the_parent_sent_never_the_spec_file_read_back(tmp_path, worker_linecache):
    """Text written into -o/captures/KERNEL-N.json after irscope wrote it (a default argument on the def
    line that runs code) never runs in a worker: the worker rebuilds from the closure sent over the pipe."""
    from irscope.capture import closure, parallel
    from tests.test_capture_parallel import _make_plain

    doc, _ = closure.describe(_make_plain())
    marker = tmp_path / "ran"
    tampered = json.loads(json.dumps(doc))
    fn = next(iter(tampered["functions"].values()))
    fn["lines"][1] = fn["lines"][1].replace(
        "BLOCK: tl.constexpr)", f"BLOCK: tl.constexpr, _=open({str(marker)!r}, 'w').write('ran'))"
    )
    spec = tmp_path / "_plain-1.json"
    spec.write_text(json.dumps({"closure": tampered}))
    sent = dict(doc, cache_key="0" * 64)  # the parent's closure, told apart by its key
    result, _ = parallel.dump_capture({"spec_file": str(spec), "closure": sent})
    assert result == {"status": "not rebuilt", "reason": "the rebuilt kernel's Triton cache key differs"}
    assert not marker.exists()


CAPTURE_SCRIPT = (
    KERNEL
    + """
import torch

x = torch.ones(1024, device="cuda")
add_kernel[(1,)](x, x, x, 1024, BLOCK=1024)
"""
)


@pytest.mark.torch
@pytest.mark.parametrize("plant", ["captures is a link", "a dangling link where a spec file goes"])
def test_a_capture_writes_spec_files_only_as_regular_files_inside_o(plant, tmp_path):
    script = tmp_path / "script.py"
    script.write_text(CAPTURE_SCRIPT)
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    if plant == "captures is a link":
        (out / "captures").symlink_to(elsewhere)
    else:
        (out / "captures").mkdir()
        (out / "captures" / "add_kernel-1.json").symlink_to(elsewhere / "planted.json")
    r = run_cli(
        "capture",
        str(script),
        "--compile-only",
        "--target",
        "cuda:90",
        "-o",
        str(out),
        cwd=tmp_path,
        env=_env(tmp_path),
    )
    assert "Traceback" not in r.err, r.err
    assert not list(elsewhere.iterdir())  # nothing written through a link
    if plant == "captures is a link":
        assert r.code == 2 and len(r.err.strip().splitlines()) == 1 and "symbolic link" in r.err, r.err
    else:
        assert r.code == 0, r.err
        written = out / "captures" / "add_kernel-2.json"
        assert written.is_file() and not written.is_symlink()


def test_a_report_page_swapped_in_the_cache_is_never_written_as_the_report(tmp_path):
    """The page copy beside a report's record, swapped with its size and sha256 put in the record (by a
    writer without the records' secret): the report is built again, not copied from the cache."""
    kern = _kernel(tmp_path)
    assert _served_run(tmp_path, kern).code == 0
    (folder,) = (tmp_path / "out" / "add_kernel").iterdir()
    args = ["report", str(folder), "-o", str(tmp_path / "page.html"), "--no-layouts"]
    for _ in range(2):
        r = _report(tmp_path, args)
        assert r.returncode == 0, r.stderr
    assert "(from cache)" in r.stdout  # the repeat was served
    records = tmp_path / "cache" / ".irscope-direct"
    (copy,) = records.glob("*.html")
    evil = b"<html><script>alert('pwned')</script></html>"
    copy.write_bytes(evil)
    rec = copy.with_suffix(".json")
    doc = json.loads(rec.read_text())
    doc["page"] = {"size": len(evil), "sha256": hashlib.sha256(evil).hexdigest()}
    rec.write_text(json.dumps(doc))
    (tmp_path / "page.html").unlink()
    r = _report(tmp_path, args)
    assert r.returncode == 0 and "(from cache)" not in r.stdout, r.stderr
    assert b"pwned" not in (tmp_path / "page.html").read_bytes()


def _report(tmp_path: Path, args: list[str]) -> subprocess.CompletedProcess:
    """irscope report as the command runs it, with RACY_NS 0: folders written a moment ago may be stamped."""
    code = f"import sys\nfrom irscope.compile import cache\ncache.RACY_NS = 0\nfrom irscope.entry import main\nsys.argv[1:] = {args!r}\nmain()\n"
    env = dict(os.environ, **_env(tmp_path))
    return subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
