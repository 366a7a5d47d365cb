"""Environments with another Triton: named, found, made on demand from the package index, reused.

A side of a diff (or a bisect step) names its Triton as text: a release ("3.6.0", "triton==3.6.0"),
the fork ("fbtriton==3.7.4"), or a path to a Python interpreter that has the Triton to use. parse()
turns that into a Release; ensure() returns an Env whose interpreter has it:

    the running interpreter   when it already has that distribution and version (nothing is made)
    CACHE/envs/DIST-VERSION/  made once, reused afterwards: `uv venv` + `uv pip install` when uv is
                              on PATH, else `python -m venv --without-pip` + this interpreter's pip
                              (`pip --python`); the env holds only the Triton (irscope's worker entry
                              needs nothing else: irscope comes from PYTHONPATH)

Making one is safe when several runs ask at once: one lock file per env (flock), the env built in
a `.tmp-*` folder beside it and renamed into place whole, with a marker file (`irscope-env.json`)
written last inside it; a run that waited on the lock finds the env made. `irscope envs` (inventory.py)
lists and removes them. Before anything is made
the release is checked against the index (`pip index versions`): offline or an unknown release is
one line (BadInput, exit 2), before anything compiles.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from irscope import knobs
from irscope.errors import BadInput

MARKER = "irscope-env.json"
LAST_USE = ".irscope-last-use"  # touched each time a run finds the env (irscope envs shows when)
DISTS = ("triton", "fbtriton")
_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?([.+\-\w]*)?$")
INSTALL_TIMEOUT = 1800.0


@dataclass(frozen=True)
class Release:
    """A Triton to compile with: a distribution and version, or an interpreter given by path."""

    text: str  # as given (--a-triton's value)
    dist: str = "triton"
    version: str = ""
    python: str | None = None  # a given interpreter (its Triton is whatever it has)

    @property
    def name(self) -> str:
        return f"{self.dist}-{self.version}" if self.python is None else self.python

    @property
    def requirement(self) -> str:
        return f"{self.dist}=={self.version}"

    def __str__(self) -> str:
        if self.python is not None:
            return self.python
        return self.version if self.dist == "triton" else self.requirement


@dataclass
class Env:
    """An interpreter with a Triton, and how it came to be."""

    release: Release
    python: str
    triton: str  # the installed version (the distribution's metadata)
    how: str = "found"  # "running" | "found" | "given" | "made with uv" | "made with pip"
    seconds: float = 0.0  # what making it took (0 unless made now)


def parse(text: str, flag: str = "--triton") -> Release:
    """'3.6.0', 'triton==3.6.0', 'fbtriton==3.7.4', or a path to a Python interpreter."""
    t = text.strip()
    if not t:
        raise BadInput(f"{flag}: give a Triton release (3.6.0, fbtriton==3.7.4) or a Python interpreter's path")
    if not t.isprintable():  # a newline or another control character: said on one line, as Python writes it
        raise BadInput(f"{flag} {t!r}: holds a control character; give a Triton release or an interpreter's path")
    if os.sep in t or t.startswith(("~", ".")):
        path = Path(t).expanduser()
        if not path.is_file() or not os.access(path, os.X_OK):
            raise BadInput(f"{flag} {text}: no such Python interpreter")
        return Release(text, python=str(path.absolute()))
    dist, sep, version = t.partition("==")
    if not sep:
        dist, version = "triton", t
    dist = dist.strip().lower()
    version = version.strip()
    if dist not in DISTS:
        raise BadInput(f"{flag} {text}: not a Triton distribution ({', '.join(DISTS)}) or an interpreter's path")
    if not _VERSION.match(version):
        raise BadInput(f"{flag} {text}: not a release number (e.g. 3.6.0, fbtriton==3.7.4)")
    return Release(text, dist, version)


def envs_dir() -> Path:
    return knobs.cache_dir() / "envs"


def running(release: Release) -> Env | None:
    """The running interpreter, when it has that very distribution and version."""
    if release.python is not None:
        return None
    have = installed_version(release.dist)
    return Env(release, sys.executable, have, "running") if have == release.version else None


def installed_version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def find(release: Release) -> Env | None:
    """The env made earlier (its marker written), or None."""
    folder = envs_dir() / release.name
    try:
        doc = json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return None
    python = folder / "bin" / "python"
    if not python.exists():
        return None
    with contextlib.suppress(OSError):
        (folder / LAST_USE).touch()
    return Env(release, str(python), doc.get("triton", release.version), "found")


ENV_SECONDS, ENV_GB = 60, 0.9  # what making one takes, as measured (docs/guides/envs.md): said before it starts


def ensure(release: Release, flag: str = "--triton", note=None, progress=None) -> Env:
    """An interpreter with the release's Triton: the running one, a given one, one made earlier, or
    one made now (note(text) hears that it is being made, where and what it costs; progress(what) is the
    terminal's spinner while it is made: views/progress.Reporter). BadInput when it cannot be had."""
    if release.python is not None:
        return _given(release, flag)
    env = running(release) or find(release)
    if env is not None:
        return env
    check_on_index(release, flag)
    folder = envs_dir()
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f".{release.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another run making it: wait, then find it made
        env = find(release)
        if env is None:
            if note is not None:
                note(
                    f"making an environment with {release.requirement} in {folder / release.name} (once: about "
                    f"{ENV_SECONDS} s and {ENV_GB} GB; irscope envs lists them, irscope envs remove {release} removes it)"
                )
            waiting = (
                progress(f"making the {release.requirement} environment") if progress else contextlib.nullcontext()
            )
            with waiting as step:
                env = _make(release, folder, flag, step)
    return env


def _given(release: Release, flag: str) -> Env:
    python = release.python or ""
    for dist in DISTS[::-1]:  # the fork first: it provides the module `triton` too
        version = _installed(python, dist)
        if version:
            return Env(Release(release.text, dist, version, python), python, version, "given")
    raise BadInput(f"{flag} {release.text}: that interpreter has no Triton (neither triton nor fbtriton is installed)")


def _installed(python: str, dist: str) -> str | None:
    code = (
        "import importlib.metadata as m, sys\n"
        f"try: sys.stdout.write(m.version({dist!r}))\nexcept m.PackageNotFoundError: pass\n"
    )
    try:
        out = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


# ---------------------------------------------------------------- the index


def index_versions(dist: str = "triton") -> list[str]:
    """The releases of `dist` on the package index, oldest first (pip's own configuration and
    PIP_* variables decide which index). BadInput (one line) when the index cannot be read."""
    cmd = [sys.executable, "-m", "pip", "index", "versions", dist, "--disable-pip-version-check"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise BadInput(f"cannot list the releases of {dist} on the package index: {e}") from None
    found = re.search(r"Available versions:\s*(.+)", out.stdout)
    if out.returncode != 0 or not found:
        why = _last_line(out.stderr) or _last_line(out.stdout) or f"pip exit status {out.returncode}"
        raise BadInput(
            f"cannot list the releases of {dist} on the package index (offline, or no index configured for pip): {why}"
        )
    versions = [v.strip() for v in found.group(1).split(",") if v.strip()]
    return sorted(versions, key=version_key)


def version_key(version: str) -> tuple:
    parts = re.findall(r"\d+|[a-z]+", version.lower())
    return tuple((0, int(p)) if p.isdigit() else (-1, p) for p in parts)


def check_on_index(release: Release, flag: str = "--triton") -> None:
    versions = index_versions(release.dist)
    if release.version not in versions:
        near = ", ".join(versions[-6:])
        raise BadInput(
            f"{flag} {release.text}: {release.dist} {release.version} is not a release on the package "
            f"index (newest there: {near})"
        )


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip() and not ln.startswith("WARNING")]
    return lines[-1][:300] if lines else ""


# ---------------------------------------------------------------- making one


def _make(release: Release, folder: Path, flag: str, step=None) -> Env:
    """The env made in a .tmp- folder and renamed into place whole; step(text, 0) hears each phase."""
    started = time.perf_counter()
    say = step or (lambda *a: None)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{release.name}-", dir=folder))
    try:
        uv = shutil.which("uv")
        if uv:
            how = "made with uv"
            say("a venv (uv)", 0)
            _run([uv, "venv", "--quiet", "--python", _base_python(), str(tmp / "venv")], release, flag)
            say(f"installing {release.requirement} (uv)", 0)
            _run(
                [
                    uv,
                    "pip",
                    "install",
                    "--quiet",
                    "--python",
                    str(tmp / "venv" / "bin" / "python"),
                    release.requirement,
                ],
                release,
                flag,
                env=_uv_index_env(),
            )
        else:
            how = "made with pip"
            say("a venv", 0)
            _run([_base_python(), "-m", "venv", "--without-pip", str(tmp / "venv")], release, flag)
            say(f"installing {release.requirement} (pip)", 0)
            _run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "--python",
                    str(tmp / "venv" / "bin" / "python"),
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                    release.requirement,
                ],
                release,
                flag,
            )
        venv = tmp / "venv"
        version = _installed(str(venv / "bin" / "python"), release.dist)
        if version != release.version:
            raise BadInput(
                f"{flag} {release.text}: the new environment has {release.dist} {version}, not {release.version}"
            )
        seconds = time.perf_counter() - started
        (venv / MARKER).write_text(
            json.dumps(
                {
                    "irscope_env": 1,
                    "dist": release.dist,
                    "version": release.version,
                    "triton": version,
                    "how": how,
                    "seconds": round(seconds, 1),
                    "made": round(time.time(), 1),
                    "python": sys.version.split()[0],
                },
                indent=1,
            )
            + "\n"
        )
        final = folder / release.name
        if final.exists():  # a leftover without a marker (made by hand, or an older irscope)
            shutil.rmtree(final)
        os.rename(venv, final)
        with contextlib.suppress(OSError):
            (final / LAST_USE).touch()  # the run that made it uses it
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return Env(release, str(final / "bin" / "python"), version, how, seconds)


def _base_python() -> str:
    """The interpreter new envs are made from: the one under this one's venv, if any."""
    return getattr(sys, "_base_executable", None) or sys.executable


def _run(cmd: list[str], release: Release, flag: str, env: dict[str, str] | None = None) -> None:
    try:
        out = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
            env=None if env is None else {**os.environ, **env},
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise BadInput(f"{flag} {release.text}: could not make its environment: {e}") from None
    if out.returncode != 0:
        why = _last_line(out.stderr) or _last_line(out.stdout) or f"exit status {out.returncode}"
        raise BadInput(f"{flag} {release.text}: could not install {release.requirement}: {why}")


def _uv_index_env() -> dict[str, str]:
    """uv does not read pip's configuration: the same index, extra indexes and find-links, as UV_*."""
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        out = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=60
        )
        conf: dict[str, str] = {}
        for line in out.stdout.splitlines():  # global.find-links='/opt/wheels'; :env:. entries last (they win)
            key, _, value = line.partition("=")
            conf[key.rpartition(".")[2]] = value.strip().strip("'\"")
        env = {"UV_INDEX_STRATEGY": "unsafe-best-match"}  # as pip: every index's releases, merged
        if conf.get("index-url"):
            env["UV_INDEX_URL"] = conf["index-url"]
        if conf.get("extra-index-url"):
            env["UV_EXTRA_INDEX_URL"] = conf["extra-index-url"]
        if conf.get("find-links"):
            env["UV_FIND_LINKS"] = conf["find-links"].replace(" ", ",")
        if conf.get("no-index", "").lower() in ("1", "true", "yes"):
            env["UV_NO_INDEX"] = "1"
        return env
    return {}
