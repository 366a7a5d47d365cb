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


def launch_once(v: Variant, args: dict[str, Any], grid) -> None:
    v.art.compiled[grid](*_positional(v, args))


def _launcher(v: Variant, args: dict[str, Any], grid):
    """A ready-bound launch: the runner and its arguments resolved once, outside the timed loop."""
    runner = v.art.compiled[grid]
    values = _positional(v, args)
    return lambda: runner(*values)


def preflight(variants: list[Variant], launch: Launch, seed: int) -> None:
    """Launch every variant once in a child process; a fault there cannot poison this process's context.

    One child (python -m irscope.bench JOB) re-loads the kernel file, compiles each variant's spec
    under its settings, makes the same seeded inputs, launches once and synchronizes, saying
    'OK <i>' after each. If it dies or reports an error at variant i, that variant is marked and a
    new child carries on from i+1. A subprocess, not a fork: the parent may already hold a CUDA
    context (a script run for capture), and a forked child cannot use CUDA then.
    """
    import pickle
    import subprocess
    import sys
    import tempfile

    todo = [v for v in variants if v.status == "ok"]
    while todo:
        job = {"launch": launch, "seed": seed,
               "variants": [{"file": v.spec.file, "kernel": v.spec.kernel, "args": v.spec.args,
                             "settings": v.settings} for v in todo]}
        with tempfile.NamedTemporaryFile(suffix=".pkl", delete=False) as f:
            pickle.dump(job, f)
        try:
            p = subprocess.run([sys.executable, "-m", "irscope.bench", f.name], capture_output=True, text=True,
                               timeout=600 + 60 * len(todo))
            out, code = p.stdout, p.returncode
        except subprocess.TimeoutExpired as e:
            out, code = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), -1
        finally:
            os.unlink(f.name)
        done = sum(1 for line in out.splitlines() if line.startswith("OK "))
        if code == 0 and done == len(todo):
            return
        bad = todo[done]
        marked = [line[len("FAIL: "):] for line in out.splitlines() if line.startswith("FAIL: ")]
        if marked:
            bad.status, bad.reason = "faulted", marked[0][:300]
        elif code == -1:
            bad.status, bad.reason = "faulted", "the preflight launch did not finish in time"
        else:
            lines = [line for line in (out + (p.stderr or "")).splitlines() if line.strip()]
            bad.status, bad.reason = "faulted", (lines[-1:] or [f"exit status {code}"])[0][:300]
        todo = todo[done + 1:]


def _preflight_child(job_path: str) -> int:
    import pickle

    import torch

    from . import loader
    from .spec import KernelSpec

    with open(job_path, "rb") as f:
        job = pickle.load(f)
    for i, item in enumerate(job["variants"]):
        try:
            ref = loader.select_kernels(item["file"], [item["kernel"]])[0]
            spec = KernelSpec(item["kernel"], item["file"], ref.fn, item["args"])
            v = Variant(f"preflight {i}", spec, item["settings"])
            v.art = compiler.compile_spec(spec, v.settings)
            args = materialize(job["launch"], "cuda", job["seed"])
            launch_once(v, args, job["launch"].grid)
            torch.cuda.synchronize()
        except BaseException as e:  # noqa: BLE001 - report anything, in one line
            text = str(e).strip().splitlines()[0] if str(e).strip() else ""
            print(f"FAIL: {type(e).__name__}: {text}", flush=True)
            return 1
        print(f"OK {i}", flush=True)
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
        launch_once(v, work[v.name], launch.grid)
        torch.cuda.synchronize()
        outputs[v.name] = _clone(work[v.name])
    base = live[0]
    for v in live[1:]:
        if why := check_outputs(outputs[base.name], outputs[v.name], launch):
            v.status, v.reason = "wrong result", why
    live = [v for v in live if v.status == "ok"]
    written = set().union(*(_written(outputs[v.name], pristine) for v in live)) if live else set()

    flush = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda")
    go = {v.name: _launcher(v, work[v.name], launch.grid) for v in live}
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
           flops_expr: str | None, bytes_expr: str | None) -> BenchReport:
    import torch
    import triton

    device = torch.cuda.get_device_name()
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
        min_rounds: int = 20, isolate: bool = True) -> BenchReport:
    require_gpu()
    compile_variants(variants)
    if isolate:
        preflight(variants, launch, seed)
    rounds, seconds = measure(variants, launch, seed=seed, precision=precision, max_seconds=max_seconds,
                              min_rounds=min_rounds)
    return report(variants, launch, rounds, seconds, precision, flops, nbytes)


if __name__ == "__main__":
    import sys

    sys.exit(_preflight_child(sys.argv[1]))
