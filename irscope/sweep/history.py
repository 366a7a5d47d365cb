"""Sweep results that persist: every timed config in an embedded SQLite database.

A measurement is reused only under the same conditions: the same compiled kernel (Triton's own
key of the compile, from the dump's manifest: source and what it calls, specialization, options,
target, the env Triton hashes, an IR pin's edited file), the same device name, the same Triton version and the same method (the launch: arguments and grid, and
how it was timed: --graph, --duty, --max-seconds). The database lives beside irscope's cache
(compile/cache.cache_dir()/sweeps.sqlite) unless --db names another. Several sweeps may write one
database at once: WAL journaling, a busy timeout, and each sweep's rows in one transaction.

    sweeps        one row per sweep: when, kernel, file, target, device, strategy, the winner
    measurements  one row per timed config: its sweep, cache key, label, device, Triton, method,
                  median and samples (ms), status, dropped
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from irscope.compile.cache import cache_dir
from irscope.errors import BadInput
from irscope.kernel.inputs import check_output_file

BUSY_MS = 30_000
SCHEMA = """
CREATE TABLE IF NOT EXISTS sweeps (
    id INTEGER PRIMARY KEY, started REAL, kernel TEXT, file TEXT, target TEXT, device TEXT, triton TEXT,
    strategy TEXT, configs INTEGER, timed INTEGER, reused INTEGER, winner TEXT, winner_ms REAL);
CREATE TABLE IF NOT EXISTS measurements (
    id INTEGER PRIMARY KEY, sweep INTEGER REFERENCES sweeps(id), cache_key TEXT, kernel TEXT, label TEXT,
    device TEXT, triton TEXT, method TEXT, median_ms REAL, samples TEXT, status TEXT, dropped TEXT, created REAL);
CREATE INDEX IF NOT EXISTS by_conditions ON measurements (cache_key, device, triton, method);
CREATE INDEX IF NOT EXISTS by_kernel ON sweeps (kernel, started);
"""


OWN_TABLES = {"sweeps", "measurements"}


def default_path() -> Path:
    return cache_dir() / "sweeps.sqlite"


def check_db_path(path: Path | None) -> Path:
    """--db PATH, refused before anything compiles: a file (or a new file) in an existing folder."""
    if path is None:
        return default_path()
    return check_output_file(path, "--db", "sweeps.sqlite")


def method_key(**how: Any) -> str:
    """The conditions of a measurement besides kernel, device and Triton: the launch and how it was timed."""
    text = json.dumps({k: repr(v) for k, v in how.items()}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass
class Stored:
    """A measurement found in the database (a config not timed again)."""

    sweep: int
    median_ms: float
    samples: list[float]
    status: str
    dropped: str


class History:
    """The database: open (created on first use), look up, record, list."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = check_db_path(path)
        try:
            self._check_own()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with closing(self._connect()) as db:
                db.executescript(SCHEMA)
        except OSError as e:
            raise BadInput(f"--db {self.path}: cannot create it ({e.strerror or e}); give a writable path") from None
        except sqlite3.DatabaseError as e:
            raise BadInput(
                f"--db {self.path}: not a usable SQLite database ({e}); give another file, or remove this one"
            ) from None

    def _check_own(self) -> None:
        """An existing database must be irscope's (or empty): BadInput, before anything is written to it (not
        even the WAL journal mode), for one holding another application's tables."""
        if not self.path.is_file() or self.path.stat().st_size == 0:
            return
        with closing(sqlite3.connect(f"file:{quote(str(self.path.resolve()))}?mode=ro", uri=True)) as db:
            names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        foreign = sorted(n for n in names - OWN_TABLES if not n.startswith("sqlite_"))
        if foreign:
            shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
            raise BadInput(
                f"--db {self.path}: holds tables that are not irscope's ({shown}); irscope keeps its "
                f"measurements in a database of its own: give a new file"
            )

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=BUSY_MS / 1000)
        db.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
        db.execute("PRAGMA journal_mode = WAL")
        return db

    def lookup(self, cache_key: str, device: str, triton: str, method: str) -> Stored | None:
        """The latest measurement of this compiled kernel under the same conditions, or None."""
        with closing(self._connect()) as db:
            r = db.execute(
                "SELECT sweep, median_ms, samples, status, dropped FROM measurements WHERE cache_key = ? "
                "AND device = ? AND triton = ? AND method = ? AND status = 'ok' ORDER BY id DESC LIMIT 1",
                (cache_key, device, triton, method),
            ).fetchone()
        return Stored(r[0], r[1], json.loads(r[2]), r[3], r[4] or "") if r else None

    def record(self, sweep: dict[str, Any], rows: list[dict[str, Any]]) -> int:
        """One sweep and its measurements, in one transaction; the sweep's id."""
        with closing(self._connect()) as db, db:
            cur = db.execute(
                "INSERT INTO sweeps (started, kernel, file, target, device, triton, strategy, configs, "
                "timed, reused, winner, winner_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                [
                    sweep.get(k)
                    for k in (
                        "started",
                        "kernel",
                        "file",
                        "target",
                        "device",
                        "triton",
                        "strategy",
                        "configs",
                        "timed",
                        "reused",
                        "winner",
                        "winner_ms",
                    )
                ],
            )
            sid = cur.lastrowid
            assert sid is not None  # an INSERT's row
            db.executemany(
                "INSERT INTO measurements (sweep, cache_key, kernel, label, device, triton, method, "
                "median_ms, samples, status, dropped, created) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                [
                    (
                        sid,
                        r["cache_key"],
                        sweep.get("kernel"),
                        r["label"],
                        r["device"],
                        r["triton"],
                        r["method"],
                        r["median_ms"],
                        json.dumps(r["samples"]),
                        r["status"],
                        r.get("dropped", ""),
                        time.time(),
                    )
                    for r in rows
                ],
            )
        return sid

    def sweeps(
        self, kernels: list[str] | None = None, file: str | None = None, limit: int = 50
    ) -> list[dict[str, Any]]:
        """Past sweeps, newest first: of these kernels, or of this kernel file, or all."""
        with closing(self._connect()) as db:
            db.row_factory = sqlite3.Row
            if kernels:
                where, args = f"WHERE kernel IN ({','.join('?' * len(kernels))})", list(kernels)
            elif file:
                where, args = "WHERE file = ?", [file]
            else:
                where, args = "", []
            return [
                dict(r)
                for r in db.execute(
                    f"SELECT * FROM sweeps {where} ORDER BY started DESC, id DESC LIMIT ?", [*args, limit]
                )
            ]

    def measurements(self, sweep: int) -> Iterator[dict[str, Any]]:
        with closing(self._connect()) as db:
            db.row_factory = sqlite3.Row
            yield from (
                dict(r)
                for r in db.execute(
                    "SELECT * FROM measurements WHERE sweep = ? ORDER BY median_ms", (sweep,)
                ).fetchall()
            )
