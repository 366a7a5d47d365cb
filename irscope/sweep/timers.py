"""Where a sweep's configs are timed on this machine: its GPU, one TimingSession a batch.

The same interface as ray_engine.Timers (start a batch, add configs as they compile, finish into
timed.Batch, retime the finalists, close), so run.py drives either. The first batch uses the
session the command started before anything compiled (torch comes up meanwhile); each later batch
(a search's next generation, the finalists' re-time) gets a session spawned as soon as the
previous batch ended, so its start-up overlaps the next generation's compiles.
"""

from __future__ import annotations

from typing import Any

from irscope.sweep.configs import Config
from irscope.sweep.timed import Batch, local_device
from irscope.timing import bench
from irscope.timing.launch import Launch
from irscope.timing.session import TimingSession
from irscope.timing.variant import Variant

PRUNE_MARGIN = 0.01  # stop timing a config once it is, with 95 % confidence, 1 % behind the leader


class LocalTimers:
    """This machine's GPU: one batch at a time, each in its own timing process."""

    def __init__(self, session: TimingSession, launch: Launch, measure: dict[str, Any]) -> None:
        self.launch, self.measure = launch, measure
        self.first: TimingSession | None = session
        self.session: TimingSession | None = None
        self.spare: TimingSession | None = None
        self.variants: list[Variant] = []
        self.reference: Config | None = None
        self.notes: list[str] = []
        self.where = "this machine's GPU"
        self.more = False  # more batches follow (a search): spawn the next session as one ends

    def device(self) -> str | None:
        return local_device()

    def start(self) -> None:
        """A new batch: the next session (the command's own first), told the launch; one started and
        still unused serves as it is."""
        if self.session is not None and not self.variants:
            return
        if self.first is not None:
            self.session, self.first = self.first, None
        else:
            self.session, self.spare = self.spare or TimingSession(), None
        self.variants, self.reference = [], None
        self.session.start(
            self.launch,
            ref=self.measure.get("ref"),
            max_seconds=self.measure["max_seconds"],
            prune=self.measure["prune"],
            warmup=1,
            graph=self.measure["graph"],
            duty=self.measure["duty"],
        )

    def add(self, cfg: Config) -> None:
        """A compiled config: the timing process preflights it while the sweep goes on."""
        if self.session is None:
            self.start()
        self.reference = self.reference or cfg
        v = Variant(cfg.label, cfg.spec, cfg.settings)
        self.variants.append(v)
        assert self.session is not None  # start() made it
        self.session.add(v)

    def finish(self) -> list[Batch]:
        """Time the batch (bench's method); the next batch's session starts at once."""
        if not self.variants:
            return []
        session, self.session = self.session, None
        assert session is not None and self.reference is not None  # add() set both with the first variant
        try:
            report = bench.run(
                self.variants, self.launch, max_seconds=self.measure["max_seconds"], session=session, compiled=True
            )
        finally:
            session.close()
        if self.more and self.spare is None:
            self.spare = TimingSession()
        return [Batch(report, self.where, self.reference.label)]

    def retime(self, configs: list[Config]) -> Batch:
        """The finalists together in one batch: the winner and its margin from paired rounds."""
        self.start()
        for cfg in configs:
            self.add(cfg)
        return self.finish()[0]

    def close(self) -> None:
        for s in (self.session, self.spare):
            if s is not None:
                s.close()
