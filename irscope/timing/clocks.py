"""Clocks, power and temperature during the rounds: read in a thread, so slow rounds can be dropped.

A GPU at its power or thermal limit lowers its SM clock, and a round timed then says more about
the cooling than about the kernels. The timing process starts a ClockWatch around the rounds; it
reads the SM clock (MHz), the board power (W) and the temperature (C) every few milliseconds
through NVML (nvidia-ml-py, module pynvml; optional) or, on AMD, amdsmi where it is importable.
Each round's clock is the median of the readings taken while it ran; rounds whose clock is below
CLOCK_FLOOR of the rounds' median are dropped (with their mirrored partner: measure.py pairs
rounds) and counted. Without NVML/amdsmi nothing is watched, and the report says so once.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from irscope.timing.statistics import median

CLOCK_FLOOR = 0.95  # a round whose SM clock is below this fraction of the rounds' median is dropped
INTERVAL = 0.002  # seconds between readings (an NVML query takes tens of microseconds)


@dataclass
class Reading:
    at: float  # time.perf_counter()
    sm_mhz: float
    power_w: float | None = None
    temp_c: float | None = None


def nvml_reader(device_index: int = 0, uuid: str | None = None) -> tuple[Callable[[], Reading] | None, str]:
    """(a function that reads the device now, the source's name) or (None, why not)."""
    try:
        import pynvml
    except ImportError:
        return None, "clocks not watched: nvidia-ml-py (pynvml) is not installed (pip install 'irscope[nvml]')"
    try:
        pynvml.nvmlInit()
        handle = None
        if uuid:
            with contextlib.suppress(Exception):  # else by index: right unless CUDA_VISIBLE_DEVICES renumbers
                handle = pynvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else f"GPU-{uuid}")
        handle = handle or pynvml.nvmlDeviceGetHandleByIndex(device_index)
        pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)  # fails here rather than in the thread
    except Exception as e:  # noqa: BLE001 - NVML errors come in many classes; one line says it
        return None, f"clocks not watched: NVML failed ({str(e).strip() or type(e).__name__})"

    def read() -> Reading:
        clock = pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
        try:
            power = pynvml.nvmlDeviceGetPowerUsage(handle) / 1000
        except pynvml.NVMLError:
            power = None
        try:
            temp = pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU)
        except pynvml.NVMLError:
            temp = None
        return Reading(time.perf_counter(), float(clock), power, temp)

    return read, "NVML"


def amdsmi_reader(device_index: int = 0) -> tuple[Callable[[], Reading] | None, str]:
    """The AMD equivalent through amdsmi (ROCm's Python bindings), where importable."""
    try:  # optional like pynvml; imported by name until tests/test_architecture.py's HEAVY lists it
        amdsmi = importlib.import_module("amdsmi")
    except ImportError:
        return None, "clocks not watched: amdsmi is not importable"
    try:
        amdsmi.amdsmi_init()
        handle = amdsmi.amdsmi_get_processor_handles()[device_index]
        amdsmi.amdsmi_get_clock_info(handle, amdsmi.AmdSmiClkType.GFX)
    except Exception as e:  # noqa: BLE001
        return None, f"clocks not watched: amdsmi failed ({str(e).strip() or type(e).__name__})"

    def read() -> Reading:
        clock = amdsmi.amdsmi_get_clock_info(handle, amdsmi.AmdSmiClkType.GFX)
        mhz = clock.get("clk", clock.get("cur_clk", 0)) if isinstance(clock, dict) else clock
        power = temp = None
        with contextlib.suppress(Exception):
            p = amdsmi.amdsmi_get_power_info(handle)
            power = p.get("current_socket_power") or p.get("average_socket_power")
        with contextlib.suppress(Exception):
            temp = amdsmi.amdsmi_get_temp_metric(
                handle, amdsmi.AmdSmiTemperatureType.HOTSPOT, amdsmi.AmdSmiTemperatureMetric.CURRENT
            )
        if mhz is None:  # no clock in the answer: a missing reading
            raise LookupError("amdsmi gave no clock")
        return Reading(time.perf_counter(), float(mhz), power, temp)

    return read, "amdsmi"


class ClockWatch:
    """Readings every INTERVAL seconds in a daemon thread, between start() and stop()."""

    def __init__(self, read: Callable[[], Reading] | None, source: str, interval: float = INTERVAL):
        self.read, self.source, self.interval = read, source, interval
        self.readings: list[Reading] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def for_device(cls, hip: bool = False, device_index: int = 0, uuid: str | None = None) -> ClockWatch:
        read, source = amdsmi_reader(device_index) if hip else nvml_reader(device_index, uuid)
        return cls(read, source)

    @classmethod
    def for_current_device(cls) -> ClockWatch:
        """The watch of the device torch uses (found by UUID: CUDA_VISIBLE_DEVICES renumbers devices)."""
        import torch

        index, uuid = 0, None
        with contextlib.suppress(Exception):  # no CUDA device: NVML answers (or not) for index 0
            index = torch.cuda.current_device()
            uuid = str(torch.cuda.get_device_properties(index).uuid)
        return cls.for_device(hip=bool(getattr(torch.version, "hip", None)), device_index=index, uuid=uuid)

    @property
    def watching(self) -> bool:
        return self.read is not None

    def start(self) -> None:
        if self.read is None or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        read = self.read
        assert read is not None  # start() runs the loop only with a reader
        while not self._stop.is_set():
            with contextlib.suppress(Exception):  # a failed reading is a missing one
                self.readings.append(read())
            self._stop.wait(self.interval)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1)

    def clock_between(self, t0: float, t1: float) -> float | None:
        """The round's SM clock: the median of the readings while [t0, t1] ran, else the last before t1."""
        return round_clock(self.readings, t0, t1)


def round_clock(readings: list[Reading], t0: float, t1: float) -> float | None:
    """The median, not the lowest: one reading at the start of a round may still see the clock ramp up
    from the idle gap, which every round has; a throttled round is low throughout."""
    inside = [r.sm_mhz for r in readings if t0 <= r.at <= t1]
    if inside:
        return median(inside)
    before = [r for r in readings if r.at <= t1]
    return before[-1].sm_mhz if before else None


def slow_rounds(clocks: list[float | None], floor: float = CLOCK_FLOOR) -> set[int]:
    """Rounds whose clock is below `floor` of the rounds' median, each with its mirrored partner
    (rounds 2k and 2k+1 form a block in statistics.paired_blocks: both go, or neither)."""
    known = [c for c in clocks if c is not None]
    if not known:
        return set()
    limit = floor * median(known)
    slow = {i for i, c in enumerate(clocks) if c is not None and c < limit}
    return {j for i in slow for j in (i, i ^ 1) if j < len(clocks)}


@dataclass
class ClockReport:
    """What the report shows: the source (or why none), ranges, and the rounds dropped."""

    source: str = ""  # "NVML", "amdsmi", or "" (not watched)
    why_not: str = ""  # one line when not watched
    sm_mhz: tuple[float, float, float] | None = None  # min, median, max over the rounds
    power_w: tuple[float, float] | None = None
    temp_c: tuple[float, float] | None = None
    dropped_rounds: int = 0
    floor: float = CLOCK_FLOOR
    extra: dict[str, Any] = field(default_factory=dict)


def summarize_clocks(
    watch: ClockWatch, clocks: list[float | None], dropped: int, t0: float, t1: float, floor: float = CLOCK_FLOOR
) -> ClockReport:
    if not watch.watching:
        return ClockReport(why_not=watch.source)
    known = [c for c in clocks if c is not None]
    during = [r for r in watch.readings if t0 <= r.at <= t1]
    power = [r.power_w for r in during if r.power_w is not None]
    temp = [r.temp_c for r in during if r.temp_c is not None]
    return ClockReport(
        watch.source,
        "",
        (min(known), median(known), max(known)) if known else None,
        (min(power), max(power)) if power else None,
        (min(temp), max(temp)) if temp else None,
        dropped,
        floor,
    )
