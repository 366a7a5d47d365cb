"""A sweep's compile workers: processes reused from config to config, each result or failure one config's.

Starting Python and importing Triton costs more than compiling a small config, so `jobs` workers
(python -m irscope.sweep.pool, over the workers protocol) each compile config after config:

    parent -> worker   one job a message: the kernel, the spec's args, the settings, where to dump
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
import queue
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from irscope import adapter, workers
from irscope.compile import compiler, dump
from irscope.errors import BadInput, CompileFailure
from irscope.kernel import loader
from irscope.kernel.settings import Settings
from irscope.kernel.spec import KernelSpec
from irscope.sweep.configs import Config

WORKER = ("-m", "irscope.sweep.pool")   # a worker's Python arguments
READY = "READY"
NICENESS = 5
FAILED_STARTS = 3        # deaths before READY in a row, none ready: the workers cannot start
EXIT_GRACE = 5.0         # seconds a worker whose output ended gets to exit before it is killed


def compile_all(configs: list[Config], out_dir: Path, jobs: int, timeout: float,
                done: Callable[[Config], None] | None = None, *, use_cache: bool = True, with_sass: bool = False,
                for_launch: bool = False, pool: Pool | None = None) -> None:
    """Compile every config in `jobs` reused worker processes; `done` sees each result as it comes.

    use_cache: the workers store what they compile in irscope's cache. for_launch: the configs
    will be launched (--time); the first worker to get a config also builds the launcher a first
    launch would build, so the timing process finds it in the cache. pool: workers kept from an
    earlier call (a search's generations), used and left running; else started and stopped here.
    """
    job = {"out_dir": str(out_dir), "use_cache": use_cache, "with_sass": with_sass}
    own = pool is None
    pool = pool or Pool(max(1, jobs), timeout)
    try:
        pool.run(list(configs), done or (lambda cfg: None), job, for_launch)
    finally:
        if own:
            pool.close()


class Pool:
    """The compile workers: hired as configs need them, kept across run() calls until close()."""

    def __init__(self, size: int, timeout: float) -> None:
        self.size, self.timeout = size, timeout
        self.queued: list[Config] = []
        self.done: Callable[[Config], None] = lambda cfg: None
        self.job: dict[str, Any] = {}
        self.launcher_wanted = False
        self.inbox: queue.Queue[workers.Message] = queue.Queue()   # every worker's messages
        self.workers: list[workers.Worker] = []
        self.held: dict[workers.Worker, tuple[Config, float]] = {}  # a worker's config, since when
        self.ever_ready = False     # a worker that never gets ready fails the sweep only if none ever did
        self.failed_starts = 0      # deaths before READY in a row

    def run(self, queued: list[Config], done: Callable[[Config], None], job: dict[str, Any],
            for_launch: bool) -> None:
        self.queued, self.done, self.job = queued, done, job
        self.launcher_wanted = for_launch
        for _ in range(min(self.size, len(self.queued)) - len(self.workers)):
            self.hire()
        try:
            while self.queued or self.held:
                self.hand_out()
                message = workers.receive(self.inbox, 0.05)
                if message is not None and message.worker in self.workers:  # else one fired already
                    if message.tag is None:
                        self.died(message.worker)
                    elif message.tag == READY:
                        self.ever_ready = True
                    elif message.tag == "RESULT" and message.worker in self.held:
                        cfg = self.release(message.worker)
                        _read_result(cfg, message.body)
                        self.done(cfg)
                self.time_out()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        for w in list(self.workers):
            self.fire(w)

    def hire(self) -> None:
        self.workers.append(workers.Worker(WORKER, ready=READY, inbox=self.inbox, niceness=NICENESS))

    def fire(self, w: workers.Worker, grace: float = 0.0) -> None:
        self.workers.remove(w)
        w.stop(grace)

    def hand_out(self) -> None:
        for w in self.workers:
            if w.ready and w not in self.held and self.queued and w.alive:  # dead while idle: its end comes
                cfg = self.queued.pop(0)
                w.send(dict(self.job, file=cfg.spec.file, kernel=cfg.spec.kernel, args=cfg.spec.args,
                            settings=cfg.settings, launcher=self.launcher_wanted))
                self.held[w] = (cfg, time.perf_counter())
                self.launcher_wanted = False

    def release(self, w: workers.Worker) -> Config:
        cfg, started = self.held.pop(w)
        cfg.seconds = time.perf_counter() - started
        return cfg

    def died(self, w: workers.Worker) -> None:
        """Its output ended: the config it held crashed; replaced, unless workers cannot start at all."""
        self.fire(w, grace=EXIT_GRACE)
        code = w.returncode
        if w in self.held:
            cfg = self.release(w)
            cfg.status, cfg.reason = "crashed", (
                f"the compiler process died (signal {-code})" if code < 0
                else (w.tail[-1:] or [f"exit status {code}"])[0][:300])
            self.done(cfg)
        self.failed_starts = 0 if w.ready else self.failed_starts + 1
        if self.failed_starts >= FAILED_STARTS and not any(x.ready for x in self.workers):
            # no worker can start (a broken environment): say why, once per config
            why = (w.tail[-1:] or [f"exit status {code}"])[0][:300]
            word = "could not start" if not self.ever_ready else "stopped starting"
            while self.queued:
                cfg = self.queued.pop(0)
                cfg.status, cfg.reason = "crashed", f"the compile worker {word}: {why}"
                self.done(cfg)
        if self.queued and len(self.workers) < self.size:
            self.hire()

    def time_out(self) -> None:
        for w, (cfg, started) in list(self.held.items()):
            if time.perf_counter() - started > self.timeout:
                self.fire(w)
                self.release(w)
                cfg.status, cfg.reason = "timed out", f"no result after {self.timeout:g} s"
                self.done(cfg)
                if self.queued:
                    self.hire()


def _read_result(cfg: Config, result: dict[str, Any]) -> None:
    if result["status"] == "ok":
        cfg.status, cfg.folder = "ok", result["folder"]
        cfg.stats = json.loads((Path(result["folder"]) / "manifest.json").read_text())["stats"]
    else:
        cfg.status, cfg.reason = result["status"], result["reason"]


# ---------------------------------------------------------------- the worker


def main() -> int:
    """A worker: READY once Triton is imported, then compile one job per message, RESULT after each."""
    import triton.compiler  # noqa: F401 - what every compile needs, loaded before the first job

    kernels: dict[tuple[str, str], Any] = {}

    def compile_one(job: dict[str, Any]) -> None:
        try:
            key = (job["file"], job["kernel"])
            if key not in kernels:  # the kernel file is run once per worker, not once per config
                kernels[key] = loader.select_kernels(job["file"], [job["kernel"]])[0].fn
            spec = KernelSpec(job["kernel"], job["file"], kernels[key], job["args"])
            result = dump.dump(spec, job["settings"], Path(job["out_dir"]), use_cache=job["use_cache"],
                               with_sass=job["with_sass"])
            doc = {"status": "ok", "folder": str(result.folder)}
        except CompileFailure as e:
            status = "does not fit" if e.stage == "resources" else "compile failed"
            doc = {"status": status, "reason": f"stage {e.stage}: {e.reason}"[:500]}
        except BadInput as e:
            doc = {"status": "bad input", "reason": str(e)[:500]}   # e.g. a layout pin the TTGIR cannot take
        workers.say("RESULT", doc)
        if job["launcher"] and doc["status"] == "ok":  # after the result: the parent goes on meanwhile
            _prebuild_launcher(spec, job["settings"])

    return workers.serve(READY, compile_one)


def _prebuild_launcher(spec: KernelSpec, settings: Settings) -> None:
    """Build the C launcher the timing process would build at the first launch (Triton 3.6); best effort."""
    with contextlib.suppress(Exception):  # the first launch builds it then, or reports why not
        adapter.prebuild_launcher(compiler.load_binary(spec, settings))


if __name__ == "__main__":
    sys.exit(main())
