"""irscope's result cache and dump folders under concurrency, damage and killed runs (issue 19)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from irscope import artifacts
from irscope.compile import cache
from irscope.direct import record
from tests.helpers import ROOT, VECTOR_ADD, run_in

SIG = "*fp32, *fp32, *fp32, i32:16, 1024"
DUMP = ("dump", str(VECTOR_ADD), "-s", SIG, "-t", "h100", "--json")


def _dump(out: Path, cache_dir: Path, *extra: str):
    """One dump in this process (run_in) into `cache_dir`; the tests of processes racing start their own."""
    r = run_in(None, *DUMP, "-o", str(out), *extra, env={"IRSCOPE_CACHE_DIR": str(cache_dir)})
    return r, (json.loads(r.out)["kernels"][0] if r.code == 0 else None)


def _complete(folder: Path) -> None:
    manifest = json.loads((folder / artifacts.MANIFEST).read_text())
    assert manifest["stages"]
    for name in manifest["stages"].values():
        assert (folder / name).is_file(), name
    assert not (folder / cache.CHECKSUMS).exists()


def _only_entry(cache_dir: Path) -> Path:
    entries = [p for p in cache_dir.iterdir() if not p.name.startswith(".")]
    assert len(entries) == 1
    return entries[0]


# The cache key includes irscope's own code (by mtime): an edit to irscope between the warm-up and
# the run under test makes a new key. A test's first attempt starts from a copy of the module's warm-up
# (one compile for all of them); on such a drift it retries, warming up right before.
def _warm(base: Path, seed: Path | None = None) -> tuple[Path, Path, Path]:
    """One compile into a cache of its own, or a copy of `seed` (a folder _warm made): (out dir, cache dir,
    the dump folder)."""
    if seed is None:
        r, js = _dump(base / "o", base / "cache")
        assert r.code == 0, r.err
        return base / "o", base / "cache", Path(js["folder"])
    shutil.copytree(seed, base)
    [manifest] = (base / "o").glob("*/*/" + artifacts.MANIFEST)
    return base / "o", base / "cache", manifest.parent


@pytest.fixture(scope="module")
def warm(tmp_path_factory) -> Path:
    """A folder with o/ and cache/ after one dump: what each test's first attempt copies."""
    base = tmp_path_factory.mktemp("warm") / "w"
    _warm(base)
    return base


def _drifted(cache_dir: Path) -> bool:
    return len([p for p in cache_dir.iterdir() if not p.name.startswith(".")]) > 1


def test_eight_identical_dumps_into_one_folder_at_once_all_succeed(tmp_path, warm):
    for attempt in range(3):
        if _eight_at_once(tmp_path / str(attempt), warm if attempt == 0 else None):
            return
    pytest.fail("irscope's code kept changing under the test")


def _eight_at_once(base: Path, seed: Path | None) -> bool:
    out, cache_dir, folder = _warm(base, seed)
    env = dict(os.environ, IRSCOPE_CACHE_DIR=str(cache_dir))
    t0 = time.monotonic()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "irscope", *DUMP, "-o", str(out)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    results = [(p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for p in procs]
    elapsed = time.monotonic() - t0
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    for code, _stdout, err in results:
        assert code == 0, err
        assert "Traceback" not in err and "note" not in err
    if _drifted(cache_dir):
        return False
    assert all(json.loads(stdout)["kernels"][0]["cached"] is True for _, stdout, _ in results)
    _complete(folder)
    # no temporaries left behind in the output folder or the cache
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]
    assert not [p for p in cache_dir.iterdir() if p.name.startswith(".") and p.name != record.RECORD_DIR]
    assert not [p for p in (cache_dir / record.RECORD_DIR).glob(".*")]  # the direct mode's records: none half-written
    print(f"8 concurrent cached dumps: {elapsed:.2f} s")
    return True


def test_concurrent_fresh_compiles_and_no_cache_runs_all_succeed(tmp_path):
    env = dict(os.environ, IRSCOPE_CACHE_DIR=str(tmp_path / "cache"))
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "irscope", *DUMP, "-o", str(tmp_path / "o"), *(["--no-cache"] if i % 2 else [])],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    results = [(p.wait(timeout=300), p.communicate()) for p in procs]
    for code, (_stdout, err) in results:
        assert code == 0, err
    _complete(Path(json.loads(results[0][1][0])["kernels"][0]["folder"]))
    entry = _only_entry(tmp_path / "cache")
    assert (entry / cache.CHECKSUMS).is_file()


def _damage_manifest_truncated(entry: Path) -> None:
    text = (entry / artifacts.MANIFEST).read_text()
    (entry / artifacts.MANIFEST).write_text(text[: len(text) // 2])


def _damage_manifest_list(entry: Path) -> None:
    (entry / artifacts.MANIFEST).write_text("[]")


def _damage_manifest_no_stages(entry: Path) -> None:
    m = json.loads((entry / artifacts.MANIFEST).read_text())
    del m["stages"]
    (entry / artifacts.MANIFEST).write_text(json.dumps(m))


def _damage_stage_emptied(entry: Path) -> None:
    (entry / "add_kernel.ttir").write_text("")


def _damage_stage_deleted(entry: Path) -> None:
    (entry / "add_kernel.ptx").unlink()


def _damage_stage_garbled(entry: Path) -> None:
    path = entry / "add_kernel.ttgir"
    text = path.read_text()
    path.write_text(text.replace("tt.load", "tt.lood", 1))


DAMAGES = {
    "truncated manifest": (_damage_manifest_truncated, "manifest.json unreadable"),
    "[] manifest": (_damage_manifest_list, "not a dump manifest"),
    "no stages": (_damage_manifest_no_stages, "lists no stages"),
    "emptied stage": (_damage_stage_emptied, "add_kernel.ttir does not match"),
    "deleted stage": (_damage_stage_deleted, "add_kernel.ptx is missing"),
    "garbled stage": (_damage_stage_garbled, "add_kernel.ttgir does not match"),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_damaged_entry_is_recompiled_replaced_and_said_once(tmp_path, warm, damage):
    for attempt in range(3):
        if _damaged_run(tmp_path / str(attempt), damage, warm if attempt == 0 else None):
            return
    pytest.fail("irscope's code kept changing under the test")


def _damaged_run(tmp_path: Path, damage: str, seed: Path | None) -> bool:
    _warm(tmp_path, seed)
    entry = _only_entry(tmp_path / "cache")
    spoil, reason = DAMAGES[damage]
    spoil(entry)

    r, js = _dump(tmp_path / "o", tmp_path / "cache")
    assert r.code == 0, r.err
    if _drifted(tmp_path / "cache"):  # the damaged entry was not even looked up
        return False
    assert js["cached"] is False
    notes = [line for line in r.err.splitlines() if "damaged" in line]
    assert len(notes) == 1, r.err
    assert notes[0].startswith(f"irscope: note: cache entry {entry.name[:16]} was damaged (")
    assert reason in notes[0] and notes[0].endswith("; recompiled")
    assert "Traceback" not in r.err
    _complete(Path(js["folder"]))

    again, js2 = _dump(tmp_path / "o", tmp_path / "cache")
    assert again.code == 0, again.err
    if _drifted(tmp_path / "cache"):
        return False
    assert js2["cached"] is True and "damaged" not in again.err
    _complete(Path(js2["folder"]))
    return True


def test_no_cache_replaces_a_damaged_entry(tmp_path, warm):
    for attempt in range(3):
        base = tmp_path / str(attempt)
        _warm(base, warm if attempt == 0 else None)
        _damage_manifest_list(_only_entry(base / "cache"))
        r, js = _dump(base / "o", base / "cache", "--no-cache")
        assert r.code == 0 and js["cached"] is False, r.err
        again, js2 = _dump(base / "o", base / "cache")
        assert again.code == 0, again.err
        if _drifted(base / "cache"):
            continue
        assert js2["cached"] is True, again.err
        assert "damaged" not in r.err + again.err
        return
    pytest.fail("irscope's code kept changing under the test")


def test_stale_temporaries_are_removed_fresh_ones_kept(tmp_path):
    root = tmp_path / "d"
    root.mkdir()
    old_dir = root / f"{artifacts.TMP_PREFIX}cuda90-12345678.abc"
    old_dir.mkdir()
    (old_dir / "add_kernel.ttir").write_text("half")
    old_file = root / f"{artifacts.TMP_PREFIX}x.file"
    old_file.write_text("")
    fresh = root / f"{artifacts.TMP_PREFIX}cuda90-12345678.def"
    fresh.mkdir()
    other = root / ".hidden-but-not-ours"
    other.mkdir()
    an_hour_ago = time.time() - 3700
    for p in (old_dir, old_file, other):
        os.utime(p, (an_hour_ago, an_hour_ago))

    tmp = artifacts.make_tmp(root / "cuda90-12345678")
    assert not old_dir.exists() and not old_file.exists()
    assert fresh.exists() and other.exists() and tmp.exists()


def test_stale_temporaries_in_out_dir_and_cache_go_on_the_next_dump(tmp_path):
    _, _, folder = _warm(tmp_path)
    kdir = tmp_path / "o" / folder.parent.name
    kdir.mkdir(parents=True, exist_ok=True)
    stale = [
        kdir / f"{artifacts.TMP_PREFIX}{folder.name}.killed",
        tmp_path / "cache" / f"{artifacts.TMP_PREFIX}abcd.killed",
    ]
    old = time.time() - 7200
    for p in stale:
        p.mkdir()
        (p / "manifest.json").write_text("{")
        os.utime(p, (old, old))
    r, js = _dump(tmp_path / "o", tmp_path / "cache")
    assert r.code == 0, r.err
    assert not stale[0].exists()
    r, js = _dump(tmp_path / "o", tmp_path / "cache", "--no-cache")  # a store writes into the cache root
    assert r.code == 0, r.err
    assert not stale[1].exists()


def test_publish_replaces_a_non_empty_folder_atomically(tmp_path):
    final = tmp_path / "k" / "f"
    for version in ("one", "two"):
        tmp = artifacts.make_tmp(final)
        (tmp / "v").write_text(version)
        artifacts.publish(tmp, final)
        assert (final / "v").read_text() == version
        assert not tmp.exists()
    assert sorted(p.name for p in final.parent.iterdir()) == ["f"]


def test_publish_without_atomic_exchange_falls_back_to_a_lock(tmp_path, monkeypatch):
    monkeypatch.setattr(artifacts, "_exchange", lambda a, b: None)
    final = tmp_path / "k" / "f"
    for version in ("one", "two"):
        tmp = artifacts.make_tmp(final)
        (tmp / "v").write_text(version)
        artifacts.publish(tmp, final)
        assert (final / "v").read_text() == version
    assert not [
        p for p in final.parent.iterdir() if p.name.startswith(artifacts.TMP_PREFIX) and not p.name.endswith(".lock")
    ]


def _publish_many(final: str, tag: int, rounds: int) -> None:
    for i in range(rounds):
        tmp = artifacts.make_tmp(Path(final))
        for name in ("a", "b", "c"):
            (tmp / name).write_text(f"{tag}-{i}")
        (tmp / artifacts.MANIFEST).write_text(json.dumps({"stages": {"a": "a", "b": "b", "c": "c"}}))
        artifacts.publish(tmp, Path(final))


def test_publishers_racing_on_one_folder_never_fail_and_a_reader_never_sees_half(tmp_path):
    import multiprocessing

    final = tmp_path / "k" / "f"
    _publish_many(str(final), 0, 1)
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_publish_many, args=(str(final), tag, 40)) for tag in range(1, 9)]
    for p in procs:
        p.start()
    reads = 0
    while any(p.is_alive() for p in procs):
        manifest = json.loads((final / artifacts.MANIFEST).read_text())  # always there, always whole
        texts = {(final / name).read_text() for name in manifest["stages"].values()}
        # each file whole and present (files read one by one may come from successive versions)
        assert "" not in texts and all("-" in t for t in texts)
        reads += 1
    for p in procs:
        p.join()
        assert p.exitcode == 0
    assert reads > 0
    assert sorted(p.name for p in final.parent.iterdir()) == ["f"]
