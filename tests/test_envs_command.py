"""`irscope envs` (issue #38 item 4): the Triton environments irscope made, listed (release, size, last use,
path) and removed; bad input one line, exit 2; nothing that is not an env irscope made is touched (the cache
is data: a symlink is never followed out of it)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers import run_in


def _make_env(envs: Path, dist: str, version: str, megabytes: int = 1, marker: bool = True) -> Path:
    """A folder as envs.ensure leaves one: bin/python, some bytes, the marker written last."""
    folder = envs / f"{dist}-{version}"
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "python").write_text("#!/bin/sh\n")
    (folder / "lib").mkdir()
    (folder / "lib" / "blob").write_bytes(b"\0" * (megabytes * 10**6))
    if marker:
        doc = {"irscope_env": 1, "dist": dist, "version": version, "triton": version, "how": "made with uv"}
        (folder / "irscope-env.json").write_text(json.dumps(doc))
    return folder


@pytest.fixture
def cache(tmp_path):
    envs = tmp_path / "cache" / "envs"
    envs.mkdir(parents=True)
    return envs


def envs_cli(cache: Path, *args: str):
    return run_in(None, "envs", *args, env={"IRSCOPE_CACHE_DIR": str(cache.parent)})


def test_lists_each_env_with_release_size_last_use_and_path(cache):
    _make_env(cache, "triton", "3.8.0", megabytes=3)
    _make_env(cache, "fbtriton", "3.7.4", megabytes=1)
    r = envs_cli(cache)
    assert r.code == 0, r.err
    row = next(line for line in r.out.splitlines() if line.startswith("3.8.0"))
    assert "3 MB" in row and str(cache / "triton-3.8.0") in row and "never" in row  # not used since made
    assert any(line.startswith("fbtriton==3.7.4") for line in r.out.splitlines())
    assert "2 environments, 4 MB in" in r.out

    doc = json.loads(envs_cli(cache, "--json").out)
    by = {e["release"]: e for e in doc["envs"]}
    assert set(by) == {"3.8.0", "fbtriton==3.7.4"}
    assert by["3.8.0"]["size_bytes"] >= 3 * 10**6 and by["3.8.0"]["path"] == str(cache / "triton-3.8.0")
    assert by["3.8.0"]["last_used"] is None and doc["total_bytes"] >= 4 * 10**6


def test_last_use_is_when_a_run_last_found_it(cache, monkeypatch):
    from irscope.releases import envs, inventory

    _make_env(cache, "triton", "3.8.0")
    monkeypatch.setenv("IRSCOPE_CACHE_DIR", str(cache.parent))
    assert inventory.listed().envs[0].last_used is None
    assert envs.find(envs.parse("3.8.0")) is not None  # what diff-releases and bisect call
    [env] = inventory.listed().envs
    assert (
        env.last_used is not None
        and abs(env.last_used - os.path.getmtime(cache / "triton-3.8.0" / ".irscope-last-use")) < 1
    )


def test_remove_one_leaves_the_others(cache):
    _make_env(cache, "triton", "3.8.0")
    _make_env(cache, "triton", "3.6.0")
    r = envs_cli(cache, "remove", "3.8.0")
    assert r.code == 0, r.err
    assert "removed 3.8.0" in r.out
    assert not (cache / "triton-3.8.0").exists() and (cache / "triton-3.6.0" / "irscope-env.json").is_file()
    assert not [p for p in cache.iterdir() if p.name.startswith(".tmp-")]  # nothing half-removed left behind


def test_remove_all_takes_the_unfinished_builds_too(cache):
    _make_env(cache, "triton", "3.8.0")
    _make_env(cache, "fbtriton", "3.7.4")
    (cache / ".tmp-triton-3.9.0-abc" / "venv").mkdir(parents=True)
    listed = envs_cli(cache)
    assert "1 unfinished build" in listed.out
    r = envs_cli(cache, "remove", "--all", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert {e["release"] for e in doc["removed"]} == {"3.8.0", "fbtriton==3.7.4"}
    assert len(doc["unfinished_removed"]) == 1
    assert [p.name for p in cache.iterdir() if not p.name.endswith(".lock")] == []


@pytest.mark.parametrize(
    "args, words",
    [
        (["remove", "foo"], "not a release number"),
        (["remove", "3.7.0"], "no environment of triton 3.7.0 (made: 3.8.0)"),
        (["remove"], "name a release"),
        (["remove", "3.8.0", "--all"], "not both"),
        (["remove", "/usr/bin/python3"], "not an interpreter"),
        (["remove", "cuda==12.0"], "not a Triton distribution"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_removes_nothing(cache, args, words):
    _make_env(cache, "triton", "3.8.0")
    r = envs_cli(cache, *args)
    lines = [line for line in r.err.splitlines() if line.strip()]
    assert r.code == 2 and len(lines) == 1 and lines[0].startswith("irscope: error:"), r.err
    assert words in lines[0], lines[0]
    assert "Traceback" not in r.err
    assert (cache / "triton-3.8.0" / "irscope-env.json").is_file()


def test_refuses_what_irscope_did_not_make_and_never_follows_a_symlink_out(cache, tmp_path):
    # a folder of the right name without irscope's marker: someone else's
    _make_env(cache, "triton", "3.5.0", marker=False)
    # a symlink in envs/ to an env-looking folder elsewhere
    outside = _make_env(tmp_path / "elsewhere", "triton", "3.4.0")
    (cache / "triton-3.4.0").symlink_to(outside, target_is_directory=True)
    # a real env that holds a symlink out of the cache
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("mine")
    env = _make_env(cache, "triton", "3.8.0")
    (env / "lib" / "link-out").symlink_to(precious, target_is_directory=True)

    listed = json.loads(envs_cli(cache, "--json").out)
    assert [e["release"] for e in listed["envs"]] == ["3.8.0"]  # only what irscope made, the link not followed
    assert listed["envs"][0]["size_bytes"] < 2 * 10**6  # the link counted as a link, not its target

    for name in ("3.5.0", "3.4.0"):
        r = envs_cli(cache, "remove", name)
        assert r.code == 2 and "not an environment irscope made" in r.err, r.err
    assert (cache / "triton-3.5.0" / "lib" / "blob").is_file()
    assert (outside / "irscope-env.json").is_file() and (cache / "triton-3.4.0").is_symlink()

    r = envs_cli(cache, "remove", "--all")
    assert r.code == 0, r.err
    assert not (cache / "triton-3.8.0").exists()
    assert (precious / "keep.txt").read_text() == "mine"  # the link removed, never its target
    assert (cache / "triton-3.5.0").is_dir() and (outside / "irscope-env.json").is_file()


def test_an_env_being_made_is_not_removed(cache):
    import fcntl

    _make_env(cache, "triton", "3.8.0")
    with open(cache / ".triton-3.8.0.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # as envs.ensure holds it while it makes the env
        r = envs_cli(cache, "remove", "3.8.0")
    assert r.code == 2 and "another irscope run is making it" in r.err, r.err
    assert (cache / "triton-3.8.0" / "irscope-env.json").is_file()
