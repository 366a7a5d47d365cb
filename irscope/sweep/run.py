"""Sweep: compile a grid of settings in parallel, rank them statically, optionally time the survivors.

The flow:
  configs   the cartesian product of --grid axes; an axis is a backend option (anything --set
            takes) or a constexpr parameter of the kernel
  cache     each config's dump key is computed here (cheap: a bind, no compile); configs already in
            irscope's cache are served from it, so an unchanged sweep re-runs near instantly
  compile   the rest in `jobs` worker processes, reused from config to config (Python and Triton
            start once per worker, not per config); a crash (a signal), a hang (past `timeout`) or
            a compile error is that config's result, its worker is replaced, the sweep goes on.
            No SASS unless asked (nvdisasm costs 0.3-0.5 s a config and ranks nothing)
  rank      a table of static stats (registers, spills, shared memory, occupancy, MMA and
            128-bit load counts); configs that spill or cannot fit are marked
  time      (GPU) the survivors through bench.run: each is handed to the timing process as soon
            as it compiles (torch comes up meanwhile); interleaved, CI, checked against the first
            survivor's outputs, clearly slower configs dropped early; the winner is named with its
            margin
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from irscope.core import dump
from irscope.core.settings import Settings, convert, settable_options  # noqa: F401
from irscope.core.spec import KernelSpec, parse_value
from irscope.errors import BadInput, CompileFailure, did_you_mean
from irscope.jobs import Job, vary


@dataclass
class Config:
    index: int
    label: str                       # "num_warps=4, num_stages=3, BLOCK_M=64"
    values: dict[str, Any]
    spec: KernelSpec
    settings: Settings
    status: str = "pending"          # ok | cached | compile failed | crashed | timed out | does not fit
    reason: str = ""
    folder: str = ""
    stats: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def usable(self) -> bool:
        return self.status in ("ok", "cached")

    @property
    def spills(self) -> bool:
        return bool(self.stats.get("spills"))


def parse_axes(items: list[str], base: Job) -> list[tuple[str, list[Any]]]:
    """['num_warps=4,8', 'BLOCK_M=64,128'] -> [(key, [typed values])]; options and constexprs only."""
    spec = base.spec
    options = settable_options(base.settings.target)
    constexprs = {p.name for p in spec.params if p.is_constexpr}
    axes = []
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not raw.strip():
            raise BadInput(f"--grid {item!r}: expected KEY=V1,V2,..., e.g. num_warps=4,8")
        values = [v.strip() for v in raw.split(",") if v.strip()]
        if len(set(values)) != len(values):
            twice = next(v for v in values if values.count(v) > 1)
            raise BadInput(f"--grid {key}: {twice} is listed twice; give each value once, "
                           f"e.g. {key}={','.join(dict.fromkeys(values))}")
        if key in options:
            typed = [convert(key, v, options[key].type, "--grid") for v in values]
        elif key in constexprs:
            typed = [parse_value(v, f"--grid {key}") for v in values]
        else:
            raise BadInput(f"--grid {key}: neither an option of the {base.settings.target.backend} backend nor a constexpr of "
                           f"{spec.kernel}{did_you_mean(key, list(options) + sorted(constexprs))}; constexprs: "
                           f"{', '.join(sorted(constexprs)) or 'none'}")
        axes.append((key, typed))
    return axes


def expand(base: Job, axes: list[tuple[str, list[Any]]]) -> list[Config]:
    """Every combination of the axes, each a job on top of the base (jobs.vary: options and constexprs)."""
    options = settable_options(base.settings.target)
    configs = []
    keys = [k for k, _ in axes]
    for i, combo in enumerate(itertools.product(*[vals for _, vals in axes])):
        values = dict(zip(keys, combo))
        job = vary(base, values, "--grid")
        label = ", ".join(f"{k}={job.spec.args[k].text() if k in job.spec.args and k not in options else v}"
                          for k, v in values.items())
        configs.append(Config(i, label, values, job.spec, job.settings))
    return configs


def _from_cache(cfg: Config, out_dir: Path, with_sass: bool) -> bool:
    try:
        hit = dump.cached(cfg.spec, cfg.settings, out_dir, with_sass=with_sass)
    except BadInput as e:
        cfg.status, cfg.reason = "compile failed", str(e)
        return True
    if hit is None:
        return False
    cfg.status, cfg.folder, cfg.stats = "cached", str(hit.folder), hit.manifest["stats"]
    return True


WORKER_NICENESS = 5


class _Worker:
    """One compile process, kept for config after config (python -m irscope.sweep.run).

    Starting Python and importing Triton costs more than compiling a small config, so a
    worker is reused; it is replaced when it dies (the config it held is reported crashed)
    or is killed for running past the timeout (that config timed out).
    """

    COMMAND = ("-m", "irscope.sweep.run")

    def __init__(self) -> None:
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([sys.executable, *self.COMMAND], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr)
        with contextlib.suppress(OSError):  # below the timing process, which waits on nothing but the CPU
            os.setpriority(os.PRIO_PROCESS, self.proc.pid, WORKER_NICENESS)
        self.ready = False
        self.cfg: Config | None = None
        self.started = 0.0
        self.pending = b""

    def give(self, cfg: Config, job: dict[str, Any]) -> None:
        self.cfg, self.started = cfg, time.perf_counter()
        self.proc.stdin.write(base64.b64encode(pickle.dumps(job)) + b"\n")
        self.proc.stdin.flush()

    def read_lines(self) -> list[str] | None:
        """The complete lines that arrived (raw reads: a buffered readline could hide one from select);
        None once the worker has closed its output (it died)."""
        data = os.read(self.proc.stdout.fileno(), 65536)
        if not data:
            return None
        lines = (self.pending + data).split(b"\n")
        self.pending = lines.pop()
        return [line.decode(errors="replace") for line in lines]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.stderr.seek(0)
        self.tail = [line for line in self.stderr.read().splitlines() if line.strip()]
        self.stderr.close()


def compile_all(configs: list[Config], out_dir: Path, jobs: int, timeout: float,
                done: Callable[[Config], None] | None = None, use_cache: bool = True,
                with_sass: bool = False, for_launch: bool = False) -> None:
    """Serve cached configs, compile the rest in `jobs` reused worker processes; `done` sees each result.

    for_launch: the configs will be launched (--time); the first worker to get a config also
    builds the launcher a first launch would build, so the timing process finds it in the cache.
    """
    import selectors

    queue = []
    for cfg in configs:
        if use_cache and _from_cache(cfg, out_dir, with_sass):
            if done:
                done(cfg)
        else:
            queue.append(cfg)
    sel = selectors.DefaultSelector()
    workers: list[_Worker] = []

    def hire() -> None:
        w = _Worker()
        workers.append(w)
        sel.register(w.proc.stdout, selectors.EVENT_READ, w)

    def fire(w: _Worker) -> None:
        sel.unregister(w.proc.stdout)
        workers.remove(w)
        w.stop()

    def finish(cfg: Config, w: _Worker) -> None:
        cfg.seconds = time.perf_counter() - w.started
        w.cfg = None
        if done:
            done(cfg)

    for _ in range(min(max(1, jobs), len(queue))):
        hire()
    launcher_asked = False
    ever_ready = False       # a worker that never gets ready fails the sweep only if none ever did
    failed_starts = 0        # deaths before READY in a row
    try:
        while queue or any(w.cfg for w in workers):
            for w in list(workers):
                if w.ready and w.cfg is None and queue:
                    cfg = queue.pop(0)
                    job = {"file": cfg.spec.file, "kernel": cfg.spec.kernel, "args": cfg.spec.args,
                           "settings": cfg.settings, "out_dir": str(out_dir), "use_cache": use_cache,
                           "with_sass": with_sass, "launcher": for_launch and not launcher_asked}
                    try:
                        w.give(cfg, job)
                    except OSError:  # it died while idle: the config goes back, the death is read below
                        queue.insert(0, cfg)
                        w.cfg = None
                        continue
                    launcher_asked = True
            for key, _ in sel.select(timeout=0.05):
                w = key.data
                lines = w.read_lines()
                if lines is None:  # the worker died
                    cfg = w.cfg
                    fire(w)
                    if cfg is not None:
                        code = w.proc.returncode
                        cfg.status, cfg.reason = "crashed", (
                            f"the compiler process died (signal {-code})" if code < 0
                            else (w.tail[-1:] or [f"exit status {code}"])[0][:300])
                        finish(cfg, w)
                    failed_starts = 0 if w.ready else failed_starts + 1
                    if failed_starts >= 3 and not any(x.ready for x in workers):
                        # no worker can start (a broken environment): say why, once per config
                        why = (w.tail[-1:] or [f"exit status {w.proc.returncode}"])[0][:300]
                        word = "could not start" if not ever_ready else "stopped starting"
                        while queue:
                            cfg = queue.pop(0)
                            cfg.status, cfg.reason = "crashed", f"the compile worker {word}: {why}"
                            if done:
                                done(cfg)
                    if queue and len(workers) < max(1, jobs):
                        hire()
                    continue
                for line in lines:  # anything else is the kernel file's own printing
                    if line.startswith("READY"):
                        w.ready = ever_ready = True
                    elif line.startswith("RESULT ") and w.cfg is not None:
                        cfg = w.cfg
                        _read_result(cfg, json.loads(line[len("RESULT "):]))
                        finish(cfg, w)
            for w in list(workers):
                if w.cfg is not None and time.perf_counter() - w.started > timeout:
                    cfg = w.cfg
                    fire(w)
                    cfg.status, cfg.reason = "timed out", f"no result after {timeout:g} s"
                    finish(cfg, w)
                    if queue:
                        hire()
    finally:
        for w in list(workers):
            fire(w)


def _read_result(cfg: Config, result: dict[str, Any]) -> None:
    if result["status"] == "ok":
        cfg.status, cfg.folder = "ok", result["folder"]
        cfg.stats = json.loads((Path(result["folder"]) / "manifest.json").read_text())["stats"]
    else:
        cfg.status, cfg.reason = result["status"], result["reason"]


def _serve() -> int:
    """A worker: say READY once Triton is imported, then compile one job per stdin line."""
    import triton.compiler  # noqa: F401 - what every compile needs, loaded before the first job

    from irscope.core import loader

    kernels: dict[tuple[str, str], Any] = {}
    print("READY", flush=True)
    for line in sys.stdin:
        job = pickle.loads(base64.b64decode(line))
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
            doc = {"status": "compile failed", "reason": str(e)[:500]}
        sys.stdout.write("\nRESULT " + json.dumps(doc) + "\n")  # on a line of its own, whatever the kernel printed
        sys.stdout.flush()
        if job["launcher"] and doc["status"] == "ok":  # after the result: the parent goes on meanwhile
            _prebuild_launcher(spec, job["settings"])
    return 0


def _prebuild_launcher(spec: KernelSpec, settings: Settings) -> None:
    """Build the C launcher the timing process would build at the first launch (Triton 3.6); best effort."""
    from irscope.core import adapter, compiler

    try:
        adapter.prebuild_launcher(compiler.load_binary(spec, settings))
    except Exception:  # noqa: BLE001 - the first launch builds it then, or reports why not
        pass


# ---------------------------------------------------------------- compile, then time what compiled

PRUNE_MARGIN = 0.01  # --time: stop timing a config once it is, with 95 % confidence, 1 % behind the leader


@dataclass
class SweepRun:
    compile_seconds: float          # the parallel compile phase, wall clock
    compile_end: float              # when it ended (epoch seconds), to line it up with the timing process
    timed: Any = None               # bench.BenchReport with --time


def compile_and_time(configs: list[Config], out_dir: Path, jobs: int, timeout: float,
                     progress: Callable[[Config], None], *, use_cache: bool, with_sass: bool,
                     session=None, launch=None, max_seconds: float = 20.0, graph: str = "off",
                     duty: float = 0.5) -> SweepRun:
    """Compile every config; with a timing session (started by the caller as early as it could),
    each config that compiles, fits and does not spill is handed to it at once, then all are timed."""
    from irscope.timing import bench

    variants: dict[int, bench.Variant] = {}
    if session is not None:
        # one warm-up round: each config has run once already (its preflight)
        session.start(launch, max_seconds=max_seconds, prune=PRUNE_MARGIN, warmup=1, graph=graph, duty=duty)

    def done(cfg: Config) -> None:
        progress(cfg)
        if session is not None and survivors([cfg]):
            variants[cfg.index] = bench.Variant(cfg.label, cfg.spec, cfg.settings)
            session.add(variants[cfg.index])

    start = time.perf_counter()
    compile_all(configs, out_dir, jobs, timeout, done, use_cache, with_sass, for_launch=session is not None)
    run = SweepRun(time.perf_counter() - start, time.time())
    if session is not None:
        if not variants:
            raise BadInput("no config survived the static checks (all failed, spilled or did not fit): "
                           "nothing to time")
        run.timed = bench.run([variants[i] for i in sorted(variants)], launch, max_seconds=max_seconds,
                              session=session, compiled=True)
    return run


# ---------------------------------------------------------------- ranking

COLUMNS = {
    "registers": lambda s: s.get("registers"),
    "spills": lambda s: s.get("spills"),
    "shared": lambda s: s.get("shared_bytes"),
    "occupancy": lambda s: (s.get("occupancy") or {}).get("occupancy"),
    "mma": lambda s: (s.get("ptx") or {}).get("wgmma", 0) + (s.get("ptx") or {}).get("mma.sync", 0)
    + (s.get("ptx") or {}).get("tcgen05.mma", 0) + (s.get("amdgcn") or {}).get("mfma", 0),
    "ld128": lambda s: (s.get("ptx") or {}).get("global_load", {}).get("128", 0)
    + (s.get("amdgcn") or {}).get("global_load", {}).get("128", 0),
}


def row(cfg: Config) -> dict[str, Any]:
    return {name: fn(cfg.stats) if cfg.stats else None for name, fn in COLUMNS.items()}


def sort_configs(configs: list[Config], key: str) -> list[Config]:
    if key not in COLUMNS and key != "config":
        raise BadInput(f"--sort {key!r}: sort by one of config, {', '.join(COLUMNS)}")
    if key == "config":
        return sorted(configs, key=lambda c: c.index)
    descending = key in ("occupancy", "mma", "ld128")

    def k(c: Config):
        v = row(c).get(key)
        missing = v is None
        return (missing, -(v or 0) if descending else (v or 0), c.index)

    return sorted(configs, key=k)


def survivors(configs: list[Config]) -> list[Config]:
    """What --time measures: compiled, fits, does not spill."""
    return [c for c in configs if c.usable and not c.spills]


def to_json(configs: list[Config]) -> list[dict[str, Any]]:
    return [{"index": c.index, "config": c.values and {k: _jsonable(v) for k, v in c.values.items()},
             "label": c.label, "status": c.status, "reason": c.reason, "folder": c.folder,
             "compile_seconds": round(c.seconds, 3), "stats": row(c), "spills": c.spills} for c in configs]


def _jsonable(v: Any) -> Any:
    return v if isinstance(v, (int, float, str, bool)) or v is None else str(v)


# ---------------------------------------------------------------- the winner, as a recipe


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    text = str(v)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def recipe_text(kernel: str, target: str, ranked: list[Config], how: str, base_options: dict[str, Any],
                timings: dict[str, float] | None = None) -> str:
    """A recipe whose variants are the ranked configs (best first), as `irscope recipes check` accepts."""
    options_keys = set()
    lines = [f"# Written by irscope sweep: {len(ranked)} best configs of {kernel} on {target}, {how}.",
             "# Each variant holds the swept values; the [kernel] section the settings shared by all.",
             "[recipe]", f"target = {_toml_value(target)}",
             f"purpose = {_toml_value(f'sweep winners for {kernel} ({how})')}", ""]
    shared = {k: v for k, v in base_options.items() if v is not None}
    if shared:
        lines += [f"[kernel.{_toml_value(kernel)}]",
                  "options = { " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in shared.items()) + " }", ""]
    for rank, cfg in enumerate(ranked, 1):
        name = "sweep-best" if rank == 1 else f"sweep-{rank}"
        note = cfg.label + (f"; {timings[cfg.label] * 1e3:.1f} us" if timings and cfg.label in timings else "")
        lines += [f"[variant.{name}]", f"purpose = {_toml_value(f'#{rank}: {note}')}",
                  f"[variant.{name}.kernel.{_toml_value(kernel)}]"]
        opts = {k: v for k, v in cfg.values.items() if k in cfg.settings.options}
        consts = {k: cfg.spec.args[k].text() for k in cfg.values if k not in opts}
        if opts:
            options_keys.update(opts)
            lines.append("options = { " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in opts.items()) + " }")
        if consts:
            lines.append("constexprs = { " + ", ".join(f"{k} = {_constexpr_toml(v)}" for k, v in consts.items())
                         + " }")
        lines.append("")
    return "\n".join(lines)


def _constexpr_toml(text: str) -> str:
    """A constexpr's spec text as a TOML value: numbers and booleans as such, anything else as text."""
    import ast

    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return _toml_value(text)
    return _toml_value(value) if isinstance(value, (bool, int, float)) else _toml_value(text)


def write_winners(path: Path, base: Job, configs: list[Config], ordered: list[Config], timed, sort_key: str,
                  top: int) -> None:
    """--write-recipe: timed winners first when timed, else the static order asked for with --sort."""
    by_label = {c.label: c for c in configs}
    timings = None
    if timed is not None:
        # the configs timed to the end first, then those dropped early as clearly slower
        ok = sorted((v for v in timed.variants if v.status == "ok" and v.summary),
                    key=lambda v: (bool(v.dropped), v.summary.median))
        ranked = [by_label[v.name] for v in ok if v.name in by_label]
        timings = {v.name: v.summary.median for v in ok}
        how = f"timed on {timed.device}"
    else:
        ranked = [c for c in ordered if c.usable and not c.spills]
        how = f"ranked by {sort_key} (static, not timed)"
    if not ranked:
        raise BadInput("--write-recipe: no config compiled without spilling; nothing to write")
    shared = {k: v for k, v in base.settings.options.items() if k not in ranked[0].values}
    text = recipe_text(base.spec.kernel, base.settings.target.name, ranked[:top], how, shared, timings)
    write_recipe(Path(path), text)


def write_recipe(path: Path, text: str) -> None:
    """Write atomically, and only a recipe `recipes check` accepts."""
    from irscope.steer import recipes

    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    try:
        problems = recipes.check(tmp)
        if problems:
            raise BadInput(f"--write-recipe: the recipe irscope wrote does not pass its own check: {problems[0]}")
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


if __name__ == "__main__":
    sys.exit(_serve())
