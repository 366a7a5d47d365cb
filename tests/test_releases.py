"""Across Triton releases: envs made from the index, diff and capture diff across two releases, bisect.

One env is made per test session (marked `envs`; `-m "not envs"` leaves them out): triton 3.6.0 when
the running Triton is 3.9.0, else 3.9.0, under the session's own irscope cache (under pytest-xdist, the
workers' caches share one envs/ folder: envs.ensure's lock has the first worker make it, the others
find it made). IRSCOPE_RELEASES
(e.g. 3.5.1,3.7.1,3.8.0) adds a smoke test per release: its env made through irscope's own env
code, then the examples dumped there for cuda:90 and hip:gfx942 (.ci/run's releases lane).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from irscope import adapter, jobs, knobs
from irscope.errors import BadInput
from irscope.releases import bisect, envs, worker
from tests.helpers import EXAMPLES, FBTRITON, run_cli, run_in

VECTOR_ADD = ("examples/vector_add.py", "add_kernel", "*fp32, *fp32, *fp32, i32, 1024")
MATMUL = (
    "examples/matmul.py",
    "matmul_kernel",
    "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, "
    "i32:1, i32:16, i32:1, i32:16, i32:1, 128, 128, 64, 8",
)
ROOT = Path(__file__).resolve().parent.parent
OFFLINE = {"PIP_INDEX_URL": "file:///nonexistent", "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": "", "PIP_EXTRA_INDEX_URL": ""}


def _running() -> str:
    return adapter.triton_version()


def _shared_envs(tmp_path_factory) -> None:
    """Under xdist, this worker's CACHE/envs is a link to one folder beside the workers' own, so that an env
    is made once per run, not once per worker (without xdist, the session's cache is already the one)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    shared = tmp_path_factory.getbasetemp().parent / "shared-envs"
    shared.mkdir(exist_ok=True)
    link = envs.envs_dir()
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(shared, target_is_directory=True)


@pytest.fixture(scope="session")
def other_release(_session_cache, tmp_path_factory) -> str:
    """The one env this session makes: 3.6.0 beside a running 3.9.0, else 3.9.0."""
    _shared_envs(tmp_path_factory)
    version = "3.6.0" if _running().startswith("3.9") else "3.9.0"
    try:
        env = envs.ensure(envs.parse(version))
    except BadInput as e:  # a machine with no package index (the GPU machine): nothing to make an env from
        if "cannot list the releases" not in str(e):
            raise
        pytest.skip(f"needs the package index: {e}")
    assert env.triton == version and Path(env.python).exists()
    return version


def _pair(other: str) -> tuple[str, str]:
    """(older, newer) of the other release and the running one; under a fork whose version is no release
    on the index (fbtriton 3.7.4+fb), two upstream releases (the second env is made on demand)."""
    if FBTRITON:
        return ("3.6.0", "3.9.0")
    return tuple(sorted((other, _running().split("+")[0]), key=envs.version_key))


# ---------------------------------------------------------------- no env made


def test_release_texts_parse():
    assert envs.parse("3.6.0") == envs.Release("3.6.0", "triton", "3.6.0")
    assert envs.parse("fbtriton==3.7.4").requirement == "fbtriton==3.7.4"
    assert envs.parse("triton==3.9.0").name == "triton-3.9.0"
    for bad in ("pytorch==2.0", "three", "/no/such/python"):
        with pytest.raises(BadInput):
            envs.parse(bad, "--a-triton")


def test_predicates_are_data():
    p = bisect.parse_predicate("registers  >  168")
    assert (p.kind, p.name, p.op, p.value) == ("compare", "registers", ">", 168.0)
    assert bisect.parse_predicate("ptx changed").kind == "stage changed"
    assert bisect.parse_predicate("sass.classes.mma changed").kind == "stat changed"
    assert bisect.parse_predicate("compile fails").kind == "compile fails"
    for bad in ("__import__('os') > 1", "registers > 1; spills", "spills >", "ptx"):
        with pytest.raises(BadInput):
            bisect.parse_predicate(bad)


def test_one_maker_per_env(monkeypatch, tmp_path):
    """Concurrent runs making one env: the lock lets one make it, the others find it made."""
    monkeypatch.setenv("IRSCOPE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(envs, "check_on_index", lambda release, flag: None)
    made = []

    def fake_make(release, folder, flag, step=None):
        made.append(release.name)
        venv = folder / release.name
        (venv / "bin").mkdir(parents=True)
        (venv / "bin" / "python").write_text("")
        (venv / envs.MARKER).write_text(json.dumps({"triton": release.version}))
        return envs.Env(release, str(venv / "bin" / "python"), release.version, "made with pip")

    monkeypatch.setattr(envs, "_make", fake_make)
    threads = [threading.Thread(target=envs.ensure, args=(envs.parse("3.4.0"),)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert made == ["triton-3.4.0"]
    assert envs.find(envs.parse("3.4.0")).how == "found"


def test_unknown_release_is_one_line_before_anything_compiles(tmp_path):
    out = tmp_path / "out"
    r = run_in(
        None,
        "diff-releases",
        str(EXAMPLES / "vector_add.py"),
        "--kernel",
        "add_kernel",
        "-s",
        VECTOR_ADD[2],
        "--a-triton",
        "9.9.9",
        "--b-triton",
        _running(),
        "-o",
        str(out),
    )
    assert r.code == 2, r.err
    assert len(r.err.strip().splitlines()) == 1 and "9.9.9" in r.err and "not a release" in r.err
    assert not out.exists()


def test_offline_is_one_line(tmp_path):
    r = run_in(
        None,
        "diff-releases",
        str(EXAMPLES / "vector_add.py"),
        "--kernel",
        "add_kernel",
        "-s",
        VECTOR_ADD[2],
        "--a-triton",
        "3.4.0",
        "-o",
        str(tmp_path / "out"),
        env=OFFLINE,
    )
    assert r.code == 2, r.err
    assert len(r.err.strip().splitlines()) == 1 and "package index" in r.err
    assert not (tmp_path / "out").exists()


def test_bisect_has_no_time_flag(tmp_path):
    """Bisecting by timing is not built: there is no --time flag (it only ever refused)."""
    r = run_in(
        None,
        "bisect",
        str(EXAMPLES / "vector_add.py"),
        "--kernel",
        "add_kernel",
        "-s",
        VECTOR_ADD[2],
        "--good",
        "3.6.0",
        "--bad",
        "3.9.0",
        "--time",
        "-o",
        str(tmp_path / "out"),
    )
    lines = r.err.strip().splitlines()
    assert (
        r.code == 2
        and len(lines) == 1
        and lines[0].startswith("irscope: error: No such option")
        and "--time" in lines[0]
    )
    assert "--time" not in run_in(None, "bisect", "--help").out and not (tmp_path / "out").exists()


# ---------------------------------------------------------------- one env made per session


@pytest.mark.envs
def test_diff_across_two_releases(other_release, tmp_path):
    old, new = _pair(other_release)
    r = run_cli(
        "diff-releases",
        str(EXAMPLES / "vector_add.py"),
        "--kernel",
        "add_kernel",
        "-s",
        VECTOR_ADD[2],
        "--target",
        "cuda:90",
        "--a-triton",
        old,
        "--b-triton",
        new,
        "-o",
        str(tmp_path / "out"),
        "--json",
    )
    assert r.code in (0, 1), r.err
    doc = json.loads(r.out)
    assert doc["inputs"]["triton_version"] == {"a": old, "b": new}


@pytest.mark.envs
@pytest.mark.torch
def test_capture_across_two_releases(other_release, tmp_path):
    pytest.importorskip("torch")
    cap = tmp_path / "cap"
    r = run_cli(
        "capture", str(ROOT / "examples/scripts/vector_add.py"), "--target", "h100", "--compile-only", "-o", str(cap)
    )
    assert r.code == 0, r.err
    old, new = _pair(other_release)
    r = run_cli("diff-releases", str(cap), "--a-triton", old, "--b-triton", new, "-o", str(tmp_path / "out"))
    assert r.code in (0, 1), r.err
    assert "add_kernel" in r.out and f"triton {old}" in r.out and f"triton {new}" in r.out
    assert any(v in r.out for v in ("same", "stats changed", "code changed"))
    r = run_cli("diff-releases", str(cap), "--a-triton", old, "--b-triton", new, "-o", str(tmp_path / "out"), "--json")
    doc = json.loads(r.out)
    assert doc["a"]["triton"] == old and doc["kernels"][0]["kernel"] == "add_kernel"


@pytest.mark.envs
def test_bisect_names_a_release(other_release, tmp_path, monkeypatch, capsys):
    """Over the two releases this session has (the index's list narrowed to them: one env made)."""
    from click.testing import CliRunner

    from irscope.cli import cli

    old, new = _pair(other_release)
    monkeypatch.setattr(envs, "index_versions", lambda dist="triton": [old, new])
    r = CliRunner().invoke(
        cli,
        [
            "bisect",
            str(EXAMPLES / "vector_add.py"),
            "--kernel",
            "add_kernel",
            "-s",
            VECTOR_ADD[2],
            "--target",
            "cuda:90",
            "--good",
            old,
            "--bad",
            new,
            "--when",
            "ptx changed",
            "-o",
            str(tmp_path / "out"),
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["first_bad"] == new and doc["last_good"] == old


# ---------------------------------------------------------------- IRSCOPE_RELEASES: the releases lane


@pytest.mark.envs
@pytest.mark.parametrize(
    "release",
    knobs.RELEASES.get() or [pytest.param("", marks=pytest.mark.skip(reason="IRSCOPE_RELEASES names no release"))],
)
def test_release_dumps_the_examples(release, tmp_path, _session_cache):
    env = envs.ensure(envs.parse(release))
    msgs = [
        worker.message(jobs.Request(ROOT / f, (k,), s, target=t), tmp_path, False, True)
        for f, k, s in (VECTOR_ADD, MATMUL)
        for t in ("cuda:90", "hip:gfx942")
    ]
    results = worker.run_all([env.python], [msgs])[0]
    for msg, res in zip(msgs, results):
        assert res["status"] == "ok", (msg["request"]["file"], msg["request"]["target"], res)
        manifest = json.loads((Path(res["folder"]) / "manifest.json").read_text())
        assert manifest["triton_version"].startswith(env.triton)
        assert manifest["stats"], manifest["target"]
