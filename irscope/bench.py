"""Timing on a real GPU: variants of one kernel, identical inputs, interleaved rounds, honest statistics.

The method, in order:
  1. compile   every variant with irscope's own compile path (the code that was dumped is the code
               that runs); a compile failure is reported for that variant and the others go on
  2. preflight each variant launched once in a forked child (before the parent touches the GPU), so
               an illegal address or launch failure, which poisons a CUDA context, is reported for
               that variant and the others are still measured
  3. inputs    made once from a seed; each variant works on its own copy, restored from the pristine
               inputs before every run (so a kernel that writes its inputs sees the same data each time)
  4. check     each variant's outputs against the baseline's (tolerance by dtype); a variant that
               computes something else is flagged and never reported as a win
  5. time      warm-up, then rounds: in each round every variant runs once, in rotated order, each run
               preceded by an L2 flush (a 256 MiB write) and bracketed by CUDA events; rounds continue
               until the confidence interval of every ratio to the baseline is within the requested
               precision, or the time budget is spent
  6. report    per variant: median, IQR, 95 % CI; against the baseline: the paired ratio with its CI
               and a verdict (timing.py); optional TFLOP/s, GB/s and fraction of the device's peak
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from . import compiler, timing
from .errors import BadInput
from .launch import Launch, TensorSpec, evaluate
from .settings import Settings
from .spec import KernelSpec

# Dense peaks by device name fragment: (TFLOP/s for 16-bit tensor ops, TFLOP/s tf32, TFLOP/s fp8, TB/s HBM).
PEAKS = {
    "H200": (989.0, 494.0, 1979.0, 4.8),
    "H100": (989.0, 494.0, 1979.0, 3.35),
    "A100": (312.0, 156.0, None, 2.04),
    "B200": (2250.0, 1100.0, 4500.0, 8.0),
    "MI300X": (1307.0, 653.0, 2615.0, 5.3),
    "MI355X": (2500.0, 1250.0, 5000.0, 8.0),
}

TOLERANCE = {"fp16": (1e-2, 1e-2), "bf16": (2e-2, 2e-2), "fp32": (1e-3, 1e-3), "fp64": (1e-8, 1e-8),
             "fp8e4nv": (1.25e-1, 1.25e-1), "fp8e5": (2.5e-1, 2.5e-1)}


@dataclass
class Variant:
    name: str
    spec: KernelSpec
    settings: Settings
    art: Any = None
    status: str = "ok"          # ok | compile failed | faulted | wrong result
    reason: str = ""
    samples_ms: list[float] = field(default_factory=list)


@dataclass
class VariantReport:
    name: str
    options: dict[str, Any]
    status: str
    reason: str
    summary: timing.Summary | None
    versus_baseline: timing.Comparison | None
    tflops: float | None = None
    gbps: float | None = None
    peak_fraction: float | None = None


@dataclass
class BenchReport:
    device: str
    triton_version: str
    rounds: int
    seconds: float
    precision_target: float
    variants: list[VariantReport]
    samples: dict[str, list[float]] = field(default_factory=dict)   # per variant, ms, one per round


def require_gpu() -> None:
    """Timings need a real GPU: say so in one line (exit 2) rather than simulate anything."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. torch's "Failed to initialize NumPy" on a bare machine
            import torch
    except ImportError:
        raise BadInput("timing needs a GPU and torch: torch is not installed here") from None
    if not torch.cuda.is_available():
        raise BadInput("timing needs a GPU: no CUDA/ROCm device is visible on this machine "
                       "(irscope dump and diff work without one; bench and diff --time do not)")


# ---------------------------------------------------------------- inputs


def _torch_dtype(short: str):
    import torch

    from .launch import DTYPES

    return getattr(torch, DTYPES[short])


def make_tensor(t: TensorSpec, device, gen):
    import torch

    dtype = _torch_dtype(t.dtype)
    if t.strides is not None:
        extent = 1 + sum((d - 1) * s for d, s in zip(t.shape, t.strides)) + t.offset
        base = _fill(t.maker, (extent,), dtype, device, gen)
        return torch.as_strided(base, t.shape, t.strides, t.offset)
    total = t.numel() + t.offset
    base = _fill(t.maker, (total,), dtype, device, gen)
    view = base[t.offset:].view(t.shape)
    return view.t() if t.transpose else view


def _fill(maker: str, shape, dtype, device, gen):
    import torch

    if maker == "arange":
        return torch.arange(shape[0], device=device).to(dtype)
    if maker in ("zeros", "empty"):  # empty is zero-filled too: never time or compare garbage
        return torch.zeros(shape, dtype=dtype, device=device)
    if maker == "ones":
        return torch.ones(shape, dtype=dtype, device=device)
    if dtype.is_floating_point:
        work = torch.float32 if dtype.itemsize < 2 else dtype
        fn = torch.randn if maker == "randn" else torch.rand
        return fn(shape, dtype=work, device=device, generator=gen).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, device=device, generator=gen).bool()
    return torch.randint(-64, 64, shape, dtype=dtype, device=device, generator=gen)


def materialize(launch: Launch, device, seed: int = 0) -> dict[str, Any]:
    import torch

    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return {name: make_tensor(v, device, gen) if isinstance(v, TensorSpec) else v for name, v in launch.args.items()}


def _clone(args: dict[str, Any]) -> dict[str, Any]:
    import torch

    out = {}
    for k, v in args.items():
        if isinstance(v, torch.Tensor):
            base = v._base if v._base is not None else v
            copy = base.clone()
            out[k] = torch.as_strided(copy, v.shape, v.stride(), v.storage_offset())
        else:
            out[k] = v
    return out


def _restore(work: dict[str, Any], pristine: dict[str, Any], only: set[str] | None = None) -> None:
    """Copy the pristine inputs back; `only` limits it to the tensors a kernel was seen to write."""
    import torch

    for k, v in work.items():
        if isinstance(v, torch.Tensor) and (only is None or k in only):
            v.copy_(pristine[k])


def _written(after: dict[str, Any], pristine: dict[str, Any]) -> set[str]:
    """Tensors a run changed. Restoring only these keeps large read-only inputs out of every round."""
    import torch

    return {k for k, v in after.items() if isinstance(v, torch.Tensor) and not torch.equal(v, pristine[k])}


# ---------------------------------------------------------------- compile, preflight, check


def compile_variants(variants: list[Variant]) -> None:
    from .errors import CompileFailure

    for v in variants:
        try:
            v.art = compiler.compile_spec(v.spec, v.settings)
        except (CompileFailure, BadInput) as e:
            v.status, v.reason = "compile failed", str(e)


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
    from .launch import parse_grid

    env = dict(launch.args)
    env.update({name: a.value for name, a in v.spec.args.items() if a.kind == "constexpr"})
    return parse_grid(launch.grid_expr, env)


def launch_once(v: Variant, args: dict[str, Any], launch: Launch) -> None:
    v.art.compiled[grid_for(v, launch)](*_positional(v, args))


def _launcher(v: Variant, args: dict[str, Any], launch: Launch):
    """A ready-bound launch: the runner and its arguments resolved once, outside the timed loop."""
    runner = v.art.compiled[grid_for(v, launch)]
    values = _positional(v, args)
    return lambda: runner(*values)


def _job_variants(variants: list[Variant]) -> list[dict[str, Any]]:
    return [{"name": v.name, "file": v.spec.file, "kernel": v.spec.kernel, "args": v.spec.args,
             "settings": v.settings} for v in variants]


def run_isolated(variants: list[Variant], launch: Launch, measure_kwargs: dict[str, Any]) -> str:
    """Preflight and time all variants in one child process; returns the device name.

    The child (python -m irscope.bench JOB) loads the kernel file, takes each variant's binary from
    Triton's cache (the parent compiled it), launches each once on fresh inputs and synchronizes,
    saying 'OK <i>' after each, then times them all (measure) and writes the samples back. If it
    dies or reports an error at variant i, that variant is marked faulted and a new child carries
    on without it. A subprocess, not a fork: the parent may hold a CUDA context already (a script
    run for capture), and a forked child cannot use CUDA then. The parent never launches anything.
    """
    import pickle
    import subprocess
    import sys
    import tempfile

    todo = [v for v in variants if v.status == "ok"]
    device = ""
    while todo:
        with tempfile.TemporaryDirectory(prefix="irscope-bench-") as tmp:
            job_path, result_path = os.path.join(tmp, "job.pkl"), os.path.join(tmp, "result.pkl")
            with open(job_path, "wb") as f:
                pickle.dump({"launch": launch, "variants": _job_variants(todo), "measure": measure_kwargs,
                             "result": result_path}, f)
            budget = 900 + 10 * len(todo) + measure_kwargs.get("max_seconds", 20)
            try:
                p = subprocess.run([sys.executable, "-m", "irscope.bench", job_path], capture_output=True,
                                   text=True, timeout=budget)
                out, err, code = p.stdout, p.stderr, p.returncode
            except subprocess.TimeoutExpired as e:
                out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
                err, code = "", None
            if code == 0 and os.path.exists(result_path):
                with open(result_path, "rb") as f:
                    result = pickle.load(f)
                device = result["device"]
                for v in todo:
                    v.status, v.reason, v.samples_ms = result["variants"][v.name]
                return device
        done = sum(1 for line in out.splitlines() if line.startswith("OK "))
        marked = [line[len("FAIL: "):] for line in out.splitlines() if line.startswith("FAIL: ")]
        tail = [line for line in (out + err).splitlines() if line.strip() and not line.startswith("OK ")]
        why = (marked or tail[-1:] or [f"exit status {code}"])[0][:300]
        if code is None:
            why = "did not finish in time"
        if done < len(todo):
            todo[done].status, todo[done].reason = "faulted", why
            todo = [v for v in todo if v.status == "ok"]  # the others preflight again in a new child
            continue
        for v in todo:  # every preflight passed, and then the timing process died
            v.status, v.reason = "faulted", f"the timing process failed: {why}"
        return device
    return device


def _child(job_path: str) -> int:
    import pickle

    import torch

    from . import loader
    from .spec import KernelSpec

    with open(job_path, "rb") as f:
        job = pickle.load(f)
    launch: Launch = job["launch"]
    variants = []
    pristine = None
    for i, item in enumerate(job["variants"]):
        try:
            ref = loader.select_kernels(item["file"], [item["kernel"]])[0]
            spec = KernelSpec(item["kernel"], item["file"], ref.fn, item["args"])
            v = Variant(item["name"], spec, item["settings"])
            v.art = compiler.compile_spec(spec, v.settings, fresh=False)
            if pristine is None:
                pristine = materialize(launch, "cuda", job["measure"].get("seed", 0))
            launch_once(v, _clone(pristine), launch)
            torch.cuda.synchronize()
        except BaseException as e:  # noqa: BLE001 - report anything, in one line
            text = str(e).strip().splitlines()[0] if str(e).strip() else ""
            print(f"FAIL: {type(e).__name__}: {text}", flush=True)
            return 1
        variants.append(v)
        print(f"OK {i}", flush=True)
    del pristine
    measure(variants, launch, **job["measure"])
    with open(job["result"], "wb") as f:
        pickle.dump({"device": torch.cuda.get_device_name(),
                     "variants": {v.name: (v.status, v.reason, v.samples_ms) for v in variants}}, f)
    return 0


def check_outputs(baseline: dict[str, Any], other: dict[str, Any], launch: Launch) -> str:
    """'' when every tensor matches the baseline's within the dtype's tolerance, else why not."""
    import torch

    for name, spec in launch.args.items():
        if not isinstance(spec, TensorSpec):
            continue
        a, b = baseline[name], other[name]
        if spec.dtype in TOLERANCE:
            rtol, atol = TOLERANCE[spec.dtype]
            ok = torch.allclose(a.float(), b.float(), rtol=rtol, atol=atol, equal_nan=True)
        else:
            ok = torch.equal(a, b)
        if not ok:
            diff = (a.float() - b.float()).abs()
            return f"{name} differs from the baseline (max abs difference {diff.max().item():.3g})"
    return ""


# ---------------------------------------------------------------- timing


def measure(variants: list[Variant], launch: Launch, *, seed: int = 0, warmup: int = 5, min_rounds: int = 20,
            max_rounds: int = 2000, max_seconds: float = 20.0, precision: float = 0.005) -> tuple[int, float]:
    """Fill each live variant's samples_ms; returns (rounds, seconds spent)."""
    import torch

    live = [v for v in variants if v.status == "ok"]
    if not live:
        return 0, 0.0
    pristine = materialize(launch, "cuda", seed)
    work = {v.name: _clone(pristine) for v in live}
    outputs = {}
    for v in live:
        _restore(work[v.name], pristine)
        launch_once(v, work[v.name], launch)
        torch.cuda.synchronize()
        outputs[v.name] = _clone(work[v.name])
    base = live[0]
    for v in live[1:]:
        if why := check_outputs(outputs[base.name], outputs[v.name], launch):
            v.status, v.reason = "wrong result", why
    live = [v for v in live if v.status == "ok"]
    written = set().union(*(_written(outputs[v.name], pristine) for v in live)) if live else set()

    flush = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda")
    go = {v.name: _launcher(v, work[v.name], launch) for v in live}
    for v in live:
        for _ in range(warmup):
            _restore(work[v.name], pristine, written)
            go[v.name]()
    torch.cuda.synchronize()

    start_time = time.perf_counter()
    rounds = 0
    while rounds < max_rounds:
        order = live[rounds % len(live):] + live[:rounds % len(live)]
        events = []
        for v in order:
            _restore(work[v.name], pristine, written)
            flush.zero_()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            go[v.name]()
            end.record()
            events.append((v, start, end))
        torch.cuda.synchronize()
        for v, start, end in events:
            v.samples_ms.append(start.elapsed_time(end))
        rounds += 1
        if rounds >= min_rounds and (rounds % 10 == 0):
            spent = time.perf_counter() - start_time
            if spent > max_seconds or _precise(live, precision):
                break
    return rounds, time.perf_counter() - start_time


def _precise(live: list[Variant], precision: float) -> bool:
    base = live[0]
    if len(live) == 1:
        s = timing.summarize(base.samples_ms)
        return (s.ci_high - s.ci_low) / 2 <= precision * s.median
    return all(timing.precise_enough(base.samples_ms, v.samples_ms, precision) for v in live[1:])


# ---------------------------------------------------------------- report


def device_peaks(name: str):
    for key, peaks in PEAKS.items():
        if key in name.upper().replace(" ", ""):
            return key, peaks
    return None, None


def report(variants: list[Variant], launch: Launch, rounds: int, seconds: float, precision: float,
           flops_expr: str | None, bytes_expr: str | None, device: str) -> BenchReport:
    import triton

    _, peaks = device_peaks(device)
    env = dict(launch.args)
    flops = evaluate(flops_expr, env, "--flops") if flops_expr else None
    nbytes = evaluate(bytes_expr, env, "--bytes") if bytes_expr else None
    dtype = next((a.dtype for a in launch.args.values() if isinstance(a, TensorSpec)), "fp32")
    rows = []
    base = next((v for v in variants if v.status == "ok" and v.samples_ms), None)
    for v in variants:
        summary = timing.summarize(v.samples_ms) if v.samples_ms else None
        vs = None
        if summary and base is not None and v is not base:
            vs = timing.compare(base.samples_ms, v.samples_ms)
        row = VariantReport(v.name, dict(v.settings.options), v.status, v.reason, summary, vs)
        if summary:
            secs = summary.median / 1e3
            if flops:
                row.tflops = flops / secs / 1e12
                if peaks:
                    peak = {"fp16": peaks[0], "bf16": peaks[0], "fp32": peaks[1], "fp8e4nv": peaks[2],
                            "fp8e5": peaks[2]}.get(dtype)
                    row.peak_fraction = row.tflops / peak if peak else None
            if nbytes:
                row.gbps = nbytes / secs / 1e9
                if peaks and not flops:
                    row.peak_fraction = row.gbps / (peaks[3] * 1e3)
        rows.append(row)
    return BenchReport(device, triton.__version__, rounds, seconds, precision, rows,
                       {v.name: list(v.samples_ms) for v in variants if v.samples_ms})


def run(variants: list[Variant], launch: Launch, *, seed: int = 0, flops: str | None = None,
        nbytes: str | None = None, precision: float = 0.005, max_seconds: float = 20.0,
        min_rounds: int = 20, isolate: bool = True, compiled: bool = False) -> BenchReport:
    """compiled=True: the variants' binaries are already in Triton's cache (a sweep compiled them)."""
    require_gpu()
    if not compiled:
        compile_variants(variants)
    kwargs = {"seed": seed, "precision": precision, "max_seconds": max_seconds, "min_rounds": min_rounds}
    start = time.perf_counter()
    if isolate:
        device = run_isolated(variants, launch, kwargs)
    else:
        import torch

        for v in variants:
            if v.status == "ok" and v.art is None:
                v.art = compiler.compile_spec(v.spec, v.settings, fresh=False)
        measure(variants, launch, **kwargs)
        device = torch.cuda.get_device_name()
    rounds = max((len(v.samples_ms) for v in variants), default=0)
    return report(variants, launch, rounds, time.perf_counter() - start, precision, flops, nbytes, device)


if __name__ == "__main__":
    import sys

    sys.exit(_child(sys.argv[1]))
