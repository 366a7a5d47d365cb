"""The process that holds the GPU while irscope times kernels, and what runs in it.

    TimingSession  the parent's side: starts the process before anything compiles, hands it each
                   variant as it is ready, asks for the measurement, restarts it past a fault
    _child         the process (python -m irscope.timing.gpu_process): torch and a CUDA context,
                   the inputs, a preflight launch of each variant, then measure
    Runner         inputs, preflights and outputs of the variants, in that process
    measure        warm-up, then interleaved rounds (CUDA events, or on request CUDA graphs) at
                   a duty cycle, a sweep's early drops, until the ratios are precise enough
"""

from __future__ import annotations

import base64
import pickle
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from irscope.core import adapter, compiler
from irscope.core.settings import Settings
from irscope.core.spec import KernelSpec
from irscope.errors import BadInput, IrscopeError
from irscope.timing import inputs
from irscope.timing import statistics as timing
from irscope.timing.launch import Launch


@dataclass
class Variant:
    name: str
    spec: KernelSpec
    settings: Settings
    art: Any = None             # the dump (compile_spec), in the parent
    binary: Any = None          # Triton's CompiledKernel, in the timing process
    status: str = "ok"          # ok | compile failed | faulted | wrong result
    reason: str = ""
    samples_ms: list[float] = field(default_factory=list)
    dropped: str = ""           # a sweep stopped timing it: clearly slower than the leader (why)


def _positional(v: Variant, args: dict[str, Any]) -> list[Any]:
    values = []
    for p in v.spec.params:
        if p.name in args:
            values.append(args[p.name])
        elif p.name in v.spec.args and v.spec.args[p.name].kind == "constexpr":
            values.append(v.spec.args[p.name].value)
        elif p.has_default:
            values.append(p.default)
        else:
            raise BadInput(f"{v.spec.kernel}: no launch value for {p.name}; give it in --args")
    return values


def grid_for(v: Variant, launch: Launch) -> tuple[int, int, int]:
    """The launch grid of this variant: a grid expression sees the variant's own constexprs."""
    if not launch.grid_expr:
        return launch.grid
    from irscope.timing.launch import parse_grid

    env = dict(launch.args)
    env.update({name: a.value for name, a in v.spec.args.items() if a.kind == "constexpr"})
    return parse_grid(launch.grid_expr, env)


def launcher(v: Variant, args: dict[str, Any], launch: Launch) -> Callable[[], None]:
    """A ready-bound launch: the runner and its arguments resolved once, outside the timed loop."""
    runner = (v.binary or v.art.compiled)[grid_for(v, launch)]
    values = _positional(v, args)
    return lambda: runner(*values)


# ---------------------------------------------------------------- the timing process, seen from the parent


def _encode(obj: Any) -> str:
    return base64.b64encode(pickle.dumps(obj)).decode() + "\n"


def _decode(line: str) -> Any:
    return pickle.loads(base64.b64decode(line))


class TimingSession:
    """The process that holds the GPU, started before anything is compiled.

    Importing torch and creating a CUDA context take seconds (4-6 s on the H200 machine), so the
    child (python -m irscope.timing.gpu_process) starts first and the parent compiles meanwhile; each
    variant is sent as soon as it compiles, and the child loads its binary from Triton's cache and
    launches it once (the preflight) while the parent compiles the next. finish() asks for the
    measurement. If the child dies or reports an error while preflighting variant i (an illegal
    address poisons a CUDA context), that variant is marked faulted and a new child carries on
    with the others. A subprocess, not a fork: the parent may hold a CUDA context already (a
    script run for capture), and a forked child cannot use CUDA then. The parent never launches.
    """

    STARTUP_SECONDS = 300.0     # torch + a CUDA context (seconds normally; a cold machine takes longer)
    PREFLIGHT_SECONDS = 300.0   # one variant's load + first launch; past it, the variant is reported hung

    def __init__(self) -> None:
        self.launch: Launch | None = None
        self.measure_kwargs: dict[str, Any] = {}
        self._spawn()

    def _spawn(self) -> None:
        import queue
        import subprocess
        import sys
        import tempfile
        import threading

        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([sys.executable, "-m", "irscope.timing.gpu_process"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr, text=True, bufsize=1)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.outbox: queue.Queue[str | None] = queue.Queue()
        self.ok = 0                         # preflights passed in the current child
        self.up = False                     # it said UP: torch and the CUDA context are ready
        self.sent: list[Variant] = []       # what the current child was given, in order

        def drain(stream, sink):            # never let a full pipe block the child
            for line in stream:
                sink.put(line.rstrip("\n"))
            sink.put(None)

        def pump(stream, box):              # nor the parent: the child reads little while torch imports
            while (text := box.get()) is not None:
                try:
                    stream.write(text)
                    stream.flush()
                except (BrokenPipeError, OSError):
                    return                  # the child died: finish() finds out why and starts another

        threading.Thread(target=drain, args=(self.proc.stdout, self.lines), daemon=True).start()
        threading.Thread(target=pump, args=(self.proc.stdin, self.outbox), daemon=True).start()
        if self.launch is not None:
            self._send({"op": "launch", "launch": self.launch, "measure": self.measure_kwargs})

    def __enter__(self) -> TimingSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.outbox.put(None)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.stderr.close()

    def _send(self, message: dict[str, Any]) -> None:
        self.outbox.put(_encode(message))

    def start(self, launch: Launch, **measure_kwargs: Any) -> None:
        self.launch, self.measure_kwargs = launch, measure_kwargs
        self._send({"op": "launch", "launch": launch, "measure": measure_kwargs})

    def add(self, v: Variant) -> None:
        """Hand over a compiled variant: the child preflights it while the parent goes on."""
        self.sent.append(v)
        self._send({"op": "variant", "i": len(self.sent) - 1, "name": v.name, "file": v.spec.file,
                    "kernel": v.spec.kernel, "args": v.spec.args, "settings": v.settings})

    def finish(self, order: list[Variant], budget: float) -> tuple[str, dict[str, Any]]:
        """Measure the live variants of `order` (the first is the baseline); (device, measurement)."""
        import queue

        while True:
            live = [v for v in order if v.status == "ok"]
            if not live:
                return "", {}
            self._send({"op": "measure", "order": [v.name for v in live]})
            result, failure, culprit = None, None, None
            waited = time.perf_counter()
            while True:
                if not self.up:
                    limit, what = self.STARTUP_SECONDS, "start torch and a CUDA context"
                elif self.ok < len(self.sent):
                    limit, what = self.PREFLIGHT_SECONDS, "launch it once"
                else:
                    limit, what = budget, "measure"
                try:
                    line = self.lines.get(timeout=max(0.1, limit - (time.perf_counter() - waited)))
                except queue.Empty:
                    failure = f"did not {what} in {limit:.0f} s"
                    break
                if line is None:
                    break
                waited = time.perf_counter()
                if line == "UP":
                    self.up = True
                elif line.startswith("OK "):
                    self.ok += 1
                elif line.startswith("FAIL "):
                    culprit, _, failure = line[len("FAIL "):].partition(": ")
                elif line.startswith("RESULT "):
                    result = _decode(line[len("RESULT "):])
                    break  # its CUDA teardown is no business of ours: killed below
            self.outbox.put(None)
            if self.proc.poll() is None:
                self.proc.kill()
            code = self.proc.wait()
            if result is not None:
                return result["device"], result
            died = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
            why = failure or self._stderr_tail() or died
            if culprit == "-1" or not self.up:  # no variant to blame: torch, the GPU, the inputs, the machine
                raise IrscopeError(f"the timing process could not start: {why}")
            if culprit == "measure":  # not a launch that faulted, but the measuring itself
                raise IrscopeError(f"the timing process failed while measuring: {why}")
            if self.ok < len(self.sent):
                culprit = self.sent[self.ok]
                culprit.status, culprit.reason = "faulted", why[:300]
                again = [v for v in self.sent if v.status == "ok"]
                self.stderr.close()
                self._spawn()
                for v in again:
                    self.add(v)
                continue
            for v in live:  # every preflight passed, and then the measuring process died
                v.status, v.reason = "faulted", f"the timing process failed: {why[:300]}"
            return "", {}

    def _stderr_tail(self) -> str:
        self.stderr.seek(0)
        lines = [line.strip() for line in self.stderr.read().splitlines() if line.strip()]
        return lines[-1] if lines else ""


# ---------------------------------------------------------------- the timing process


class Runner:
    """Inputs, preflights and outputs of the variants, in the process that holds the GPU.

    Inputs are made once from the seed (the pristine copy). A preflight runs a variant on a
    scratch copy restored from it, which also tells which tensors the variant writes and what it
    wrote (kept for the correctness check, then freed). For timing, all variants run on that
    same scratch copy, the tensors any variant wrote restored before each run.
    """

    def __init__(self, launch: Launch, seed: int = 0):
        self.launch = launch
        self.pristine = inputs.materialize(launch, "cuda", seed)
        self.scratch = inputs.clone(self.pristine)
        self.variants: dict[str, Variant] = {}
        self.written: dict[str, set[str]] = {}
        self.outputs: dict[str, dict[str, Any]] = {}

    def preflight(self, v: Variant) -> None:
        import torch

        inputs.restore(self.scratch, self.pristine)
        launcher(v, self.scratch, self.launch)()
        torch.cuda.synchronize()
        written = inputs.written(self.scratch, self.pristine)
        self.written[v.name] = written
        self.outputs[v.name] = {k: self.scratch[k].clone() for k in written}
        self.variants[v.name] = v

    def output(self, name: str) -> dict[str, Any]:
        return {k: self.outputs[name].get(k, t) for k, t in self.pristine.items()}

    def check(self, live: list[Variant]) -> list[Variant]:
        """Flag the variants whose outputs differ from the baseline's (the first); the rest stay live."""
        base = self.output(live[0].name)
        for v in live[1:]:
            if why := inputs.check_outputs(base, self.output(v.name), self.launch):
                v.status, v.reason = "wrong result", why
        self.outputs.clear()  # checked: their memory goes to the working copies
        return [v for v in live if v.status == "ok"]

    def work(self, live: list[Variant]) -> tuple[dict[str, Any], set[str]]:
        """The buffers every variant runs on, and the tensors restored before each run.

        One set for all variants: runs are sequential on one stream and each is preceded by the
        restore, so no variant sees another's writes; and every variant works on the same
        addresses, one difference fewer between them (and no copy per variant to hold).
        """
        written = set().union(*(self.written[v.name] for v in live))
        inputs.restore(self.scratch, self.pristine)
        return self.scratch, written


def _child() -> int:
    """python -m irscope.timing.gpu_process: read messages on stdin, say OK i / FAIL i: why, then RESULT.

    Two threads work while torch imports and the CUDA context comes up (the main thread, for
    seconds): one reads stdin from the start, the other builds Triton's C helpers (a compiler
    run, which releases the GIL). The launcher Triton 3.6 builds at a kernel's first launch is
    built by the parent or a sweep worker meanwhile (adapter.prebuild_launcher).
    """
    import queue
    import sys
    import threading
    import warnings

    from irscope.core import loader

    born = time.perf_counter()
    inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
    kernels: dict[tuple[str, str], Any] = {}

    def read() -> None:
        for line in sys.stdin:
            inbox.put(_decode(line))
        inbox.put(None)

    def kernel_of(msg: dict[str, Any]):
        key = (msg["file"], msg["kernel"])
        if key not in kernels:
            kernels[key] = loader.select_kernels(msg["file"], [msg["kernel"]])[0].fn
        return kernels[key]

    def prepare() -> None:
        adapter.prebuild_driver_utils()
        prepared["utils"] = time.perf_counter() - born

    prepared: dict[str, float] = {}  # seconds from birth: the C helpers built
    threading.Thread(target=read, daemon=True).start()
    helper = threading.Thread(target=prepare, daemon=True)
    helper.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import torch
        torch.cuda.init()
        torch.cuda.synchronize()
    except BaseException as e:  # noqa: BLE001 - one line, whatever it was
        print(f"FAIL -1: {_one_line(e)}", flush=True)
        return 1
    print("UP", flush=True)
    # seconds: torch + CUDA up; all loads + first launches; the first alone (Triton's driver comes up then)
    phases = {"start": time.perf_counter() - born, "preflight": 0.0, "first_preflight": 0.0,
              "at_born": time.time() - (time.perf_counter() - born), "at_ready": time.time()}  # wall clock
    runner: Runner | None = None
    measure_kwargs: dict[str, Any] = {}
    while (msg := inbox.get()) is not None:
        if msg["op"] == "launch":
            try:
                runner = Runner(msg["launch"], msg["measure"].get("seed", 0))
            except BaseException as e:  # noqa: BLE001
                print(f"FAIL -1: making the inputs: {_one_line(e)}", flush=True)
                return 1
            measure_kwargs = {k: v for k, v in msg["measure"].items() if k != "seed"}
        elif msg["op"] == "variant":
            began = time.perf_counter()
            try:
                helper.join()  # the driver's helpers are ready before the first launch needs them
                spec = KernelSpec(msg["kernel"], msg["file"], kernel_of(msg), msg["args"])
                v = Variant(msg["name"], spec, msg["settings"])
                v.binary = compiler.load_binary(spec, v.settings)
                runner.preflight(v)
            except BaseException as e:  # noqa: BLE001
                print(f"FAIL {msg['i']}: {_one_line(e)}", flush=True)
                return 1
            phases["preflight"] += time.perf_counter() - began
            phases["first_preflight"] = phases["first_preflight"] or time.perf_counter() - began
            phases["at_last_preflight"] = time.time()
            print(f"OK {msg['i']}", flush=True)
        elif msg["op"] == "measure":
            live = [runner.variants[name] for name in msg["order"]]
            phases["at_measure"] = time.time()
            try:
                result = measure(runner, live, **measure_kwargs)
            except BaseException as e:  # noqa: BLE001 - e.g. out of memory: said, not blamed on a kernel
                print(f"FAIL measure: {_one_line(e)}", flush=True)
                return 1
            result["phases"] = dict(phases, measure=result["seconds"], at_result=time.time(),
                                    **{f"prepared_{k}": v for k, v in prepared.items()})
            result["device"] = torch.cuda.get_device_name()
            result["variants"] = {v.name: (v.status, v.reason, v.samples_ms, v.dropped) for v in live}
            print("RESULT " + _encode(result), end="", flush=True)
            return 0
    return 0


def _one_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0]}" if text else type(e).__name__


# ---------------------------------------------------------------- timing

DUTY = 0.5               # the fraction of the rounds' wall time the GPU is kept busy (_rest)
GRAPH_BELOW_MS = 0.1     # auto: kernels shorter than this are timed inside CUDA graphs
GRAPH_RUNS = 10          # runs captured in one graph (each with its restore, flush and events)
PRUNE_AFTER = 4          # rounds before a sweep drops a variant by the confidence interval of its ratio
PRUNE_EARLY = (2, 0.25)  # ... and before that: after 2 rounds, one 25 % behind the leader in both


def measure(runner: Runner, live: list[Variant], *, warmup: int = 2, min_rounds: int = 20, max_rounds: int = 2000,
            max_seconds: float = 20.0, precision: float = 0.005, graph: str = "off",
            prune: float | None = None, duty: float = DUTY) -> dict[str, Any]:
    """Fill each live variant's samples_ms: warm-up, then interleaved rounds until precise enough.

    Each run is preceded by a restore of the written tensors and an L2 flush (a 256 MiB memset)
    and bracketed by CUDA events; each round is followed by idle time so that the GPU is busy
    `duty` of the time (_rest). With graph="on" (or "auto" and a kernel under GRAPH_BELOW_MS),
    each variant's GRAPH_RUNS runs (restore, flush, events and all) are captured in one CUDA
    graph that is replayed once a round: no CPU launch path and no launch jitter in what the
    events see. Events are the default: the launch is queued behind the flush, so the CPU's
    launch path stays out of them anyway, and on the H200 graphs showed A/A offsets of 1-3 %
    on a 4 us kernel that events did not (docs/benchmarks.md). With `prune` (sweeps), after
    PRUNE_AFTER rounds a variant is dropped once the CI of its paired ratio to the current
    leader lies wholly above 1 + prune (before that, from PRUNE_EARLY rounds, once each of its
    paired ratios is 25 % above: several times slower configs stop costing rounds at once); the
    rest go on, so the contenders get the rounds.
    """
    import torch

    live = runner.check(live)
    if not live:
        return {"rounds": 0, "seconds": 0.0, "method": ""}
    work, written = runner.work(live)
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda")
    pristine = runner.pristine

    def run_one(v: Variant, go, events=None):
        inputs.restore(work, pristine, written)
        flush.zero_()
        if events:
            events[0].record()
        go()
        if events:
            events[1].record()

    go = {v.name: launcher(v, work, runner.launch) for v in live}
    warm: dict[str, list[float]] = {v.name: [] for v in live}
    for _ in range(max(1, warmup)):
        pending, round_start = [], time.perf_counter()
        for v in live:
            pending.append((v, _events()))
            run_one(v, go[v.name], pending[-1][1])
        torch.cuda.synchronize()
        _rest(time.perf_counter() - round_start, duty)
        for v, (start, end) in pending:
            warm[v.name].append(start.elapsed_time(end))
    fastest = min(timing.median(t) for t in warm.values())
    use_graph = graph == "on" or (graph == "auto" and fastest < GRAPH_BELOW_MS)

    method = f"CUDA events around each launch, rounds at {duty:.0%} duty"
    if use_graph:
        try:
            graphs, graph_events = {}, {}
            for v in live:
                evs = [_events(external=True) for _ in range(GRAPH_RUNS)]
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    for pair in evs:
                        run_one(v, go[v.name], pair)
                graphs[v.name], graph_events[v.name] = g, evs
                g.replay()  # the first replay uploads the graph: not a sample
            torch.cuda.synchronize()
            method = (f"CUDA graphs: {GRAPH_RUNS} runs a replay, events inside the graph, "
                      f"the median of each replay one sample, rounds at {duty:.0%} duty")
        except Exception as e:  # noqa: BLE001 - e.g. timing events in graphs unsupported (older ROCm, torch)
            use_graph = False
            torch.cuda.synchronize()
            method += f" (CUDA graph capture failed: {str(e).strip().splitlines()[0][:120] if str(e).strip() else e!r})"

    start_time = time.perf_counter()
    rounds = 0
    while rounds < max_rounds:
        round_start = time.perf_counter()
        order = live[rounds % len(live):] + live[:rounds % len(live)]
        pending = []
        for v in order:
            if use_graph:
                graphs[v.name].replay()
                pending.append((v, graph_events[v.name]))
            else:
                events = _events()
                run_one(v, go[v.name], events)
                pending.append((v, [events]))
        torch.cuda.synchronize()
        _rest(time.perf_counter() - round_start, duty)
        for v, pairs in pending:
            # one sample per variant and round: the runs of one replay share its conditions, so
            # counting them as independent samples would narrow every interval about threefold
            v.samples_ms.append(timing.median([s.elapsed_time(e) for s, e in pairs]))
        rounds += 1
        if prune is not None and rounds >= PRUNE_EARLY[0] and len(live) > 1:
            live = _prune(live, prune if rounds >= PRUNE_AFTER else max(prune, PRUNE_EARLY[1]), rounds)
        if rounds >= min_rounds or (prune is not None and len(live) == 1 and rounds >= PRUNE_AFTER * 2):
            spent = time.perf_counter() - start_time
            if spent > max_seconds or _precise(live, precision, leader=prune is not None):
                break
        elif time.perf_counter() - start_time > max_seconds:
            break
    return {"rounds": rounds, "seconds": time.perf_counter() - start_time, "method": method}


def _rest(busy_seconds: float, duty: float) -> None:
    """Leave the GPU idle so that it is busy `duty` of the time (by default 50 %: as long as the round).

    Back-to-back rounds of large kernels hold a GPU at its power limit, where clocks drop and
    the differences between variants shrink: on the H200, the leading bf16 8192^3 GEMM configs
    of a sweep timed back to back came within ~1 % of each other, while Triton's do_bench
    (short bursts, what an autotuner sees) put them up to 8 % apart. Idle time between rounds
    keeps the average power down, closer to the clocks a launch in a burst sees.
    """
    if duty < 1:
        time.sleep(busy_seconds * (1 - duty) / duty)


def _events(external: bool = False):
    import torch

    kwargs = {"external": True} if external else {}
    return torch.cuda.Event(enable_timing=True, **kwargs), torch.cuda.Event(enable_timing=True, **kwargs)


def _prune(live: list[Variant], margin: float, rounds: int) -> list[Variant]:
    """Drop the variants whose paired ratio to the leader is, with 95 % confidence, above 1 + margin."""
    leader = min(live, key=lambda v: timing.median(v.samples_ms))
    keep = []
    for v in live:
        if v is not leader:
            c = timing.compare(leader.samples_ms, v.samples_ms)
            if c.ci_low > 1 + margin:
                v.dropped = (f"dropped after {rounds} rounds: {c.delta_percent:+.1f}% "
                             f"[{(c.ci_low - 1) * 100:+.1f}, {(c.ci_high - 1) * 100:+.1f}] against {leader.name}")
                continue
        keep.append(v)
    return keep


def _precise(live: list[Variant], precision: float, leader: bool = False) -> bool:
    """Every ratio's CI within the target: against the baseline, or (sweeps) against the leader."""
    ref = min(live, key=lambda v: timing.median(v.samples_ms)) if leader else live[0]
    if len(live) == 1:
        s = timing.summarize(ref.samples_ms)
        return (s.ci_high - s.ci_low) / 2 <= precision * s.median
    return all(timing.precise_enough(ref.samples_ms, v.samples_ms, precision) for v in live if v is not ref)


if __name__ == "__main__":
    import sys

    sys.exit(_child())
