"""The timing process (python -m irscope.timing.gpu_process): the one place irscope launches kernels.

It holds torch and a CUDA context; TimingSession (session.py) starts it and talks to it over the
workers protocol. Messages in: launch (the launch and how to measure), variant (one compiled
variant: load its binary from Triton's cache, launch it once: the preflight), measure (the
order). Messages out: UP once the CUDA context is up, OK i / FAIL (i, why) per preflight,
then RESULT (the measurement) or FAIL ("measure", why), and the process ends; a FAIL (-1, why)
says it could not start. The Runner keeps the inputs, the preflights and the outputs of the
variants; measure.py times them.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
import warnings
from typing import Any

from irscope import adapter, workers
from irscope.compile import compiler
from irscope.errors import BadInput
from irscope.kernel import loader
from irscope.kernel.spec import KernelSpec
from irscope.timing import inputs, reference
from irscope.timing.launch import Launch
from irscope.timing.measure import Workbench, measure
from irscope.timing.variant import Variant, launcher


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
        """Launch the variant once on the scratch copy; keep what it wrote."""
        import torch

        inputs.restore(self.scratch, self.pristine)
        launcher(v, self.scratch, self.launch)()
        torch.cuda.synchronize()
        written = inputs.written(self.scratch, self.pristine)
        self.written[v.name] = written
        self.outputs[v.name] = {k: self.scratch[k].clone() for k in written}
        self.variants[v.name] = v

    def preflight_ref(self, v: Variant, baseline: str | None) -> None:
        """Run the reference once; where the baseline wrote one tensor of the reference's shape, say
        in v.reason if the two differ (a note: the user's call may mean another layout)."""
        import torch

        inputs.restore(self.scratch, self.pristine)
        result = launcher(v, self.scratch, self.launch)()
        torch.cuda.synchronize()
        result = result[0] if isinstance(result, (tuple, list)) else result
        self.variants[v.name] = v
        wrote = self.outputs.get(baseline, {}) if baseline else {}
        if len(wrote) == 1 and isinstance(result, torch.Tensor):
            ((name, out),) = wrote.items()
            if tuple(out.shape) == tuple(result.shape):
                rtol, atol = inputs.TOLERANCE.get(self._dtype(name), (1e-2, 1e-2))
                if not torch.allclose(out.float(), result.float(), rtol=rtol, atol=atol, equal_nan=True):
                    diff = (out.float() - result.float()).abs().max().item()
                    v.reason = f"computes something else than the baseline's {name} (max abs difference {diff:.3g})"

    def _dtype(self, name: str) -> str:
        spec = self.launch.args.get(name)
        return getattr(spec, "dtype", "")

    def output(self, name: str) -> dict[str, Any]:
        """The variant's launch arguments after its preflight: what it wrote, the pristine inputs elsewhere."""
        return {k: self.outputs[name].get(k, t) for k, t in self.pristine.items()}

    def check(self, live: list[Variant]) -> list[Variant]:
        """Flag the variants whose outputs differ from the baseline's (the first); the rest stay live."""
        base = self.output(live[0].name)
        for v in live[1:]:
            if why := inputs.check_outputs(base, self.output(v.name), self.launch):
                v.status, v.reason = "wrong result", why
        self.outputs.clear()  # checked: their memory goes to the working copies
        return [v for v in live if v.status == "ok"]

    def workbench(self, live: list[Variant]) -> Workbench:
        """The buffers every variant runs on, and the tensors restored before each run.

        One set for all variants: runs are sequential on one stream and each is preceded by the
        restore, so no variant sees another's writes; and every variant works on the same
        addresses, one difference fewer between them (and no copy per variant to hold).
        """
        written = set().union(*(self.written[v.name] for v in live))
        inputs.restore(self.scratch, self.pristine)
        return Workbench(self.scratch, self.pristine, written, self.launch)


def _scratch_from_torch(torch) -> None:
    """Kernels that build TMA descriptors on the device (tl.make_tensor_descriptor, Gluon's
    tma.make_tensor_descriptor) need global scratch memory at launch, which Triton asks of the allocator
    a script sets with triton.set_allocator; the timing process is that script here."""
    import triton

    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, device="cuda", dtype=torch.int8))


def main() -> int:  # noqa: C901, PLR0915
    """Read messages, say UP, OK i / FAIL (i, why) per variant, then RESULT.

    Two threads work while torch imports and the CUDA context comes up (the main thread, for
    seconds): one reads stdin from the start, the other builds Triton's C helpers (a compiler
    run, which releases the GIL). The launcher Triton 3.6 builds at a kernel's first launch is
    built by the parent or a sweep worker meanwhile (adapter.prebuild_launcher).
    """
    born = time.perf_counter()
    inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
    kernels: dict[tuple[str, str], Any] = {}

    def read() -> None:
        for message in workers.messages():
            inbox.put(message)
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
    # triton's package is imported here, before the helper thread reaches for triton.backends.*: a
    # package import that fails in that thread (torch half-imported in this one) leaves its submodules in
    # sys.modules and the package out; the package imported again later then lacks those attributes
    # (`triton.backends`), and torch._inductor's import fails on it — a kernel file importing
    # torch._dynamo (liger-kernel's) faulted so on the H200
    import triton  # noqa: F401

    threading.Thread(target=read, daemon=True).start()
    helper = threading.Thread(target=prepare, daemon=True)
    helper.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import torch
        torch.cuda.init()
        torch.cuda.synchronize()
        _scratch_from_torch(torch)
    except BaseException as e:  # noqa: BLE001 - one line, whatever it was
        workers.say("FAIL", (-1, _one_line(e)))
        return 1
    workers.say("UP")
    # seconds: torch + CUDA up; all loads + first launches; the first alone (Triton's driver comes up then)
    phases = {
        "start": time.perf_counter() - born,
        "preflight": 0.0,
        "first_preflight": 0.0,
        "at_born": time.time() - (time.perf_counter() - born),
        "at_ready": time.time(),
    }  # wall clock
    runner: Runner | None = None
    ref: reference.Reference | None = None
    measure_kwargs: dict[str, Any] = {}
    while (msg := inbox.get()) is not None:
        if msg["op"] == "launch":
            ref = msg.get("ref")
            if ref is not None:
                try:  # before the inputs: a reference that does not fit runs nothing on the GPU
                    reference.check(ref, msg["launch"])
                except BadInput as e:
                    workers.say("FAIL", ("ref", str(e)))
                    return 1
            try:
                runner = Runner(msg["launch"], msg["measure"].get("seed", 0))
            except BaseException as e:  # noqa: BLE001
                workers.say("FAIL", (-1, f"making the inputs: {_one_line(e)}"))
                return 1
            measure_kwargs = {k: v for k, v in msg["measure"].items() if k != "seed"}
        elif msg["op"] == "variant":
            began = time.perf_counter()
            try:
                helper.join()  # the driver's helpers are ready before the first launch needs them
                assert runner is not None, "the launch message comes first"
                spec = KernelSpec(msg["kernel"], msg["file"], kernel_of(msg), msg["args"])
                v = Variant(msg["name"], spec, msg["settings"])
                v.binary = compiler.load_binary(spec, v.settings)
                runner.preflight(v)
            except BaseException as e:  # noqa: BLE001
                workers.say("FAIL", (msg["i"], _one_line(e)))
                return 1
            phases["preflight"] += time.perf_counter() - began
            phases["first_preflight"] = phases["first_preflight"] or time.perf_counter() - began
            phases["at_last_preflight"] = time.time()
            workers.say("OK", msg["i"])
        elif msg["op"] == "measure":
            assert runner is not None, "the launch message comes first"
            order = [runner.variants[name] for name in msg["order"]]
            phases["at_measure"] = time.time()
            ref_variant = Variant.of_reference(ref) if ref is not None else None
            if ref_variant is not None:
                try:
                    runner.preflight_ref(ref_variant, order[0].name if order else None)
                except BaseException as e:  # noqa: BLE001 - passed the meta check, failed on the GPU
                    workers.say("FAIL", ("ref", f"--ref {ref_variant.ref.text!r}: failed on the GPU: {_one_line(e)}"))
                    return 1
            try:
                live = runner.check(order)
                timed = live + ([ref_variant] if ref_variant is not None and live else [])
                result = measure(runner.workbench(live), timed, **measure_kwargs)
            except BaseException as e:  # noqa: BLE001 - e.g. out of memory: said, not blamed on a kernel
                workers.say("FAIL", ("measure", _one_line(e)))
                return 1
            result["phases"] = dict(
                phases,
                measure=result["seconds"],
                at_result=time.time(),
                **{f"prepared_{k}": v for k, v in prepared.items()},
            )
            result["device"] = torch.cuda.get_device_name()
            result["variants"] = {v.name: (v.status, v.reason, v.samples_ms, v.dropped) for v in order}
            if ref_variant is not None:
                result["ref"] = (ref_variant.name, ref_variant.reason, ref_variant.samples_ms)
            workers.say("RESULT", result)
            return 0
    return 0


def _one_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0]}" if text else type(e).__name__


if __name__ == "__main__":
    sys.exit(main())
