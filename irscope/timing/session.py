"""The timing process seen from the parent: started first, fed variants as they compile, asked to measure.

Importing torch and creating a CUDA context take seconds (4-6 s on the H200 machine), so the
child (python -m irscope.timing.gpu_process, a workers.Worker) starts before anything compiles
and comes up while the parent compiles; each variant is sent as soon as it compiles, and the
child loads its binary from Triton's cache and launches it once (the preflight) while the parent
compiles the next. finish() asks for the measurement and waits for it, each wait with its own
limit (the start, a preflight, the measuring). A subprocess, not a fork: the parent may hold a
CUDA context already (a script run for capture), and a forked child cannot use CUDA then. The
parent never launches.

The child's messages (workers protocol): UP (torch and the CUDA context are ready), OK i (variant
i passed its preflight), FAIL (where, why) where is -1 (starting, the inputs), i (variant i
faulted: an illegal address poisons a CUDA context), "measure" or "ref" (the --ref does not fit
the inputs: BadInput), RESULT (the measurement).
A variant that faults is marked faulted and a new child carries on with the others.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # typing.Self is 3.11's; irscope runs on 3.10
    from typing_extensions import Self

from irscope import workers
from irscope.errors import BadInput, IrscopeError
from irscope.timing.launch import Launch
from irscope.timing.reference import Reference
from irscope.timing.variant import Variant

CHILD = ("-m", "irscope.timing.gpu_process")


class TimingSession:
    """The process that holds the GPU, started before anything is compiled (see the module's docstring)."""

    STARTUP_SECONDS = 300.0  # torch + a CUDA context (seconds normally; a cold machine takes longer)
    PREFLIGHT_SECONDS = 300.0  # one variant's load + first launch; past it, the variant is reported hung

    def __init__(self) -> None:
        self.launch: Launch | None = None
        self.ref: Reference | None = None
        self.measure_kwargs: dict[str, Any] = {}
        self._spawn()

    def _spawn(self) -> None:
        self.worker = workers.Worker(CHILD, ready="UP")
        self.ok = 0  # preflights passed in the current child
        self.sent: list[Variant] = []  # what the current child was given, in order
        if self.launch is not None:
            self.worker.send({"op": "launch", "launch": self.launch, "measure": self.measure_kwargs, "ref": self.ref})

    @property
    def up(self) -> bool:
        """The current child said UP: torch and the CUDA context are ready."""
        return self.worker.ready

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.worker.stop()

    def start(self, launch: Launch, ref: Reference | None = None, **measure_kwargs: Any) -> None:
        """The launch every variant runs, a reference to time with them (--ref: reference.parse), and how
        to measure (measure.measure's keywords, and seed). The timing process checks the reference's
        shapes before it makes any input; one that does not fit is a BadInput from finish()."""
        self.launch, self.ref, self.measure_kwargs = launch, ref, measure_kwargs
        self.worker.send({"op": "launch", "launch": launch, "measure": measure_kwargs, "ref": ref})

    def add(self, v: Variant) -> None:
        """Hand over a compiled variant: the child preflights it while the parent goes on."""
        self.sent.append(v)
        self.worker.send(
            {
                "op": "variant",
                "i": len(self.sent) - 1,
                "name": v.name,
                "file": v.spec.file,
                "kernel": v.spec.kernel,
                "args": v.spec.args,
                "settings": v.settings,
            }
        )

    def finish(self, order: list[Variant], budget: float) -> tuple[str, dict[str, Any]]:
        """Measure the live variants of `order` (the first is the baseline); (device, measurement)."""
        while True:
            live = [v for v in order if v.status == "ok"]
            if not live:
                return "", {}
            self.worker.send({"op": "measure", "order": [v.name for v in live]})
            result, failure, culprit = self._wait(budget)
            code = self.worker.stop()  # after RESULT too: its CUDA teardown is no business of ours
            if result is not None:
                return result["device"], result
            died = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
            why = failure or (self.worker.tail[-1].strip() if self.worker.tail else "") or died
            if culprit == "ref":  # the reference does not fit the inputs: the user's input, exit 2
                raise BadInput(why)
            if culprit == -1 or not self.up:  # no variant to blame: torch, the GPU, the inputs, the machine
                raise IrscopeError(f"the timing process could not start: {why}")
            if culprit == "measure":  # not a launch that faulted, but the measuring itself
                raise IrscopeError(f"the timing process failed while measuring: {why}")
            if self.ok < len(self.sent):
                faulted = self.sent[self.ok]
                faulted.status, faulted.reason = "faulted", why[:300]
                again = [v for v in self.sent if v.status == "ok"]
                self._spawn()
                for v in again:
                    self.add(v)
                continue
            for v in live:  # every preflight passed, and then the measuring process died
                v.status, v.reason = "faulted", f"the timing process failed: {why[:300]}"
            return "", {}

    def _wait(self, budget: float) -> tuple[dict[str, Any] | None, str | None, Any]:
        """The child's messages until RESULT, a FAIL and its end, its end, or a wait past its limit:
        (result, failure, culprit)."""
        result, failure, culprit = None, None, None
        waited = time.perf_counter()
        while True:
            if not self.up:
                limit, what = self.STARTUP_SECONDS, "start torch and a CUDA context"
            elif self.ok < len(self.sent):
                limit, what = self.PREFLIGHT_SECONDS, "launch it once"
            else:
                limit, what = budget, "measure"
            message = self.worker.receive(max(0.1, limit - (time.perf_counter() - waited)))
            if message is None:
                return result, f"did not {what} in {limit:.0f} s", culprit
            if message.tag is None:  # the child is gone
                return result, failure, culprit
            waited = time.perf_counter()
            if message.tag == "OK":
                self.ok += 1
            elif message.tag == "FAIL":
                culprit, failure = message.body
            elif message.tag == "RESULT":
                return message.body, failure, culprit
