"""A sweep's compile workers: the compile pool (workers.Pool), each result or failure one config's.

Starting Python and importing Triton costs more than compiling a small config, so `jobs` workers
(python -m irscope.workers, the pool a capture's dumps also use) each compile config after config:

    parent -> worker   one job a message: this module's compile_config, the kernel, the spec's args,
                       the settings, where to dump
    worker -> parent   READY once Triton is imported, then RESULT {status, folder | reason} a job

A crash (a signal), a hang (past `timeout`) or a compile error is that config's result: the
worker that died or hung is replaced and the sweep goes on. Workers that die before READY three
times in a row, with none ready, fail the configs still queued with the reason ("the compile
worker could not start: ...") instead of being restarted forever. Workers run niced below the
timing process, which waits on nothing but the CPU.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from irscope import adapter, errors, workers
from irscope.compile import compiler, dump
from irscope.errors import BadInput, CompileFailure
from irscope.kernel import loader
from irscope.kernel.settings import Settings
from irscope.kernel.spec import KernelSpec
from irscope.sweep.configs import Config

WORKER = workers.COMPILE_WORKER  # a worker's Python arguments (read at each hire: tests replace it)
NICENESS = 5
HANDLER = "irscope.sweep.pool:compile_config"


def compile_all(  # noqa: PLR0913
    configs: list[Config],
    out_dir: Path,
    jobs: int,
    timeout: float,
    done: Callable[[Config], None] | None = None,
    *,
    use_cache: bool = True,
    with_sass: bool = False,
    for_launch: bool = False,
    pool: Pool | None = None,
) -> None:
    """Compile every config in `jobs` reused worker processes; `done` sees each result as it comes.

    use_cache: the workers store what they compile in irscope's cache. for_launch: the configs
    will be launched (--time); the first worker to get a config also builds the launcher a first
    launch would build, so the timing process finds it in the cache. pool: workers kept from an
    earlier call (a search's generations), used and left running; else started and stopped here.
    """
    job = {"handler": HANDLER, "out_dir": str(out_dir), "use_cache": use_cache, "with_sass": with_sass}
    own = pool is None
    pool = pool or Pool(max(1, jobs), timeout)
    launcher = [for_launch]
    done = done or (lambda cfg: None)

    def message(cfg: Config) -> dict[str, Any]:
        wanted, launcher[0] = launcher[0], False
        return dict(
            job, file=cfg.spec.file, kernel=cfg.spec.kernel, args=cfg.spec.args, settings=cfg.settings, launcher=wanted
        )

    def finished(cfg: Config, outcome: dict[str, Any], seconds: float) -> None:
        cfg.seconds = seconds
        _read_result(cfg, outcome)
        done(cfg)

    try:
        pool.run(list(configs), message, finished)
    finally:
        if own:
            pool.close()


class Pool(workers.Pool[Config]):
    """The compile pool, niced below the timing process, hiring `WORKER` (this module's, at each hire)."""

    def __init__(self, size: int, timeout: float) -> None:
        super().__init__(size, timeout, niceness=NICENESS)

    def argv(self) -> tuple[str, ...]:
        return WORKER


def _read_result(cfg: Config, result: dict[str, Any]) -> None:
    if result["status"] == "ok":
        cfg.status, cfg.folder = "ok", result["folder"]
        cfg.stats = json.loads((Path(result["folder"]) / "manifest.json").read_text())["stats"]
    else:
        cfg.status, cfg.reason = result["status"], result["reason"]


# ---------------------------------------------------------------- the worker


_kernels: dict[tuple[str, str], Any] = {}  # in a worker: each kernel file is run once, not once per config


def compile_config(job: dict[str, Any]) -> tuple[dict[str, Any], Callable[[], None] | None]:
    """In a worker (workers.main): compile one config; its RESULT document, and the launcher's
    prebuild to run after saying it (the first config of a --time sweep)."""
    try:
        key = (job["file"], job["kernel"])
        if key not in _kernels:
            _kernels[key] = loader.select_kernels(job["file"], [job["kernel"]])[0].fn
        spec = KernelSpec(job["kernel"], job["file"], _kernels[key], job["args"])
        result = dump.dump(
            spec, job["settings"], Path(job["out_dir"]), use_cache=job["use_cache"], with_sass=job["with_sass"]
        )
        doc = {"status": "ok", "folder": str(result.folder)}
    except CompileFailure as e:
        status = "does not fit" if e.stage == "resources" else "compile failed"
        doc = {"status": status, "reason": f"stage {e.stage}: {e.reason}"[:500]}
    except BadInput as e:
        doc = {"status": "bad input", "reason": str(e)[:500]}  # e.g. a layout pin the TTGIR cannot take
    except OSError as e:
        if e.errno not in errors.WRITE_ERRNOS:
            raise
        doc = {"status": "not written", "reason": errors.not_written(e, job["out_dir"])[:500]}  # a full disk
    after = None
    if job["launcher"] and doc["status"] == "ok":
        after = lambda: _prebuild_launcher(spec, job["settings"])  # noqa: E731
    return doc, after


def _prebuild_launcher(spec: KernelSpec, settings: Settings) -> None:
    """Build the C launcher the timing process would build at the first launch (Triton 3.6); best effort."""
    with contextlib.suppress(Exception):  # the first launch builds it then, or reports why not
        adapter.prebuild_launcher(compiler.load_binary(spec, settings))
