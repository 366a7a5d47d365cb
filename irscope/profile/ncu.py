"""Nsight Compute: the command lines irscope runs and the CSV pages it reads back.

Recorded against ncu 2025.3.1 on an H200 (tests/data/ncu/). The source page (`--page source --csv
--print-source sass`) has a "Kernel Name" row, a header row, then one row per SASS instruction:
its absolute address, its text, warp-stall samples (all, and by reason: the `stall_*` columns
without "(Not Issued)"), instructions executed (warp level) and memory counters. The raw page
(`--page raw --csv`) is a header row, a units row and one row of values per profiled launch.
Anything else is a damaged export: BadInput, one line.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field

from irscope.errors import BadInput

SECTOR_BYTES = 32  # an L2 sector
SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"
SECTORS = "L2 Theoretical Sectors Global"
# samples ncu counts on an instruction but exports under no stall_* column (on the H200: HGMMA rows
# only, a warpgroup wait the CSV has no column for); kept, so the reasons add up to the samples
UNLISTED = "unlisted"
_ADDRESS = re.compile(r"^0x[0-9a-fA-F]+$")
# what ncu prints when the profiler may not read the counters, and other refusals worth naming
_REASONS = (
    (
        "ERR_NVGPUCTRPERM",
        "no permission to read the GPU's performance counters (ERR_NVGPUCTRPERM): "
        "run as root or set NVreg_RestrictProfilingToAdminUsers=0",
    ),
    ("No kernels were profiled", "no kernel matched the -k filter (no kernels were profiled)"),
    ("==ERROR==", None),
)
_UNITS = {
    "": 1.0,
    "byte": 1.0,
    "Kbyte": 1e3,
    "Mbyte": 1e6,
    "Gbyte": 1e9,
    "Tbyte": 1e12,
    "ns": 1.0,
    "us": 1e3,
    "usecond": 1e3,
    "ms": 1e6,
    "msecond": 1e6,
    "s": 1e9,
    "second": 1e9,
    "nsecond": 1.0,
}


@dataclass
class Instruction:
    address: int
    sass: str
    samples: float
    stalls: dict[str, float] = field(default_factory=dict)
    executed: float = 0.0
    bytes: float = 0.0  # global memory requested: L2 theoretical sectors x 32


@dataclass
class SourcePage:
    kernel: str
    instructions: list[Instruction]

    @property
    def start(self) -> int:
        """The function's first address: ncu's addresses minus it are the SASS listing's offsets."""
        return min(i.address for i in self.instructions)


def _number(text: str, where: str) -> float:
    text = text.strip().replace(",", "")
    if text in ("", "-", "n/a"):
        return 0.0
    try:
        return float(text)
    except ValueError:
        raise BadInput(f"{where}: {text!r} is not a number; export the report again") from None


def parse_source(text: str, what: str = "ncu source page") -> SourcePage:
    """One kernel's SASS rows from `ncu -i REPORT --page source --csv --print-source sass`."""
    rows = [r for r in csv.reader(io.StringIO(text)) if r]
    head = next((i for i, r in enumerate(rows) if r[0] == "Kernel Name"), None)
    if head is None or head + 1 >= len(rows):
        raise BadInput(f'{what}: no "Kernel Name" row (not `ncu --page source --csv --print-source sass` output)')
    kernel = rows[head][1] if len(rows[head]) > 1 else ""
    header = rows[head + 1]
    need = ("Address", "Source", SAMPLES, EXECUTED)
    if missing := [n for n in need if n not in header]:
        raise BadInput(f"{what}: the header lacks {', '.join(missing)}; export with --print-source sass")
    col = {n: header.index(n) for n in (*need, SECTORS) if n in header}
    stall_cols = {
        n.removeprefix("stall_"): i for i, n in enumerate(header) if n.startswith("stall_") and "(Not Issued)" not in n
    }
    out = []
    for k, r in enumerate(rows[head + 2 :], start=head + 3):
        if r[0] == "Kernel Name":  # a second kernel: -c 1 profiles one; read the first
            break
        if len(r) < len(header):
            raise BadInput(f"{what}: row {k} has {len(r)} fields, the header {len(header)}; export the report again")
        address = r[col["Address"]].strip()
        if not _ADDRESS.match(address):
            raise BadInput(
                f"{what}: row {k}: {address!r} is not an instruction address; export with "
                "--print-source sass (not cuda,sass)"
            )
        where = f"{what} row {k}"
        stalls = {name: v for name, i in stall_cols.items() if (v := _number(r[i], where))}
        samples = _number(r[col[SAMPLES]], where)
        if (rest := samples - sum(stalls.values())) > 0:
            stalls[UNLISTED] = rest
        out.append(
            Instruction(
                int(address, 16),
                " ".join(r[col["Source"]].split()),
                samples,
                stalls,
                _number(r[col[EXECUTED]], where),
                _number(r[col[SECTORS]], where) * SECTOR_BYTES if SECTORS in col else 0.0,
            )
        )
    if not out:
        raise BadInput(f"{what}: kernel {kernel!r} has no SASS rows")
    return SourcePage(kernel, out)


def parse_raw(text: str, what: str = "ncu raw page") -> dict[str, float]:
    """The first profiled launch's metrics from `ncu -i REPORT --page raw --csv`, in base units (bytes,
    nanoseconds, counts); text-valued metrics (the device's name) under the same key as a string."""
    rows = [r for r in csv.reader(io.StringIO(text)) if r]
    if len(rows) < 3 or "Kernel Name" not in rows[0] or len(rows[1]) != len(rows[0]) or len(rows[2]) != len(rows[0]):
        raise BadInput(f"{what}: not `ncu --page raw --csv` output (a header, a units row and a row of values)")
    out: dict[str, float] = {}
    for name, unit, value in zip(*rows[:3]):
        v = value.strip().replace(",", "")
        try:
            number = float(v)
        except ValueError:
            out[name] = value  # a text metric: the device's name, the kernel's
            continue
        if unit in _UNITS:
            out[name] = number * _UNITS[unit]
        elif unit in ("%", "cycle", "inst", "warp", "sector", "request", "thread", "block", "register/thread"):
            out[name] = number
        # any other unit (a rate: Gbyte/s, Ghz) is left out rather than misread: irscope derives rates itself
    return out


def version(text: str) -> str:
    """'2025.3.1.0' from `ncu --version` output ('' when it says none)."""
    m = re.search(r"Version (\d[\w.]*)", text)
    return m.group(1) if m else ""


def failure(output: str, returncode: int) -> str:
    """Why ncu failed, in one line, from what it printed."""
    for needle, reason in _REASONS:
        if needle in output:
            if reason:
                return reason
            line = next(x for x in output.splitlines() if needle in x)
            return line.replace("==ERROR==", "").strip()
    tail = [x for x in output.strip().splitlines() if x.strip()]
    return f"exit status {returncode}" + (f": {tail[-1].strip()}" if tail else "")


def profile_argv(ncu: str, kernel: str, report: str, child: list[str]) -> list[str]:
    """Record one launch of `kernel` with every source counter, clocks left as the card is set."""
    return [
        ncu,
        "--clock-control",
        "none",
        "--set",
        "full",
        "--import-source",
        "yes",
        "-k",
        f"regex:^{re.escape(kernel)}$",
        "-c",
        "1",
        "-f",
        "-o",
        report,
        *child,
    ]


def export_argv(ncu: str, report: str, page: str) -> list[str]:
    """One CSV page of a recorded report: 'source' (SASS rows) or 'raw' (every metric)."""
    extra = ["--print-source", "sass"] if page == "source" else []
    return [ncu, "-i", report, "--page", page, "--csv", *extra]
