"""What an Nsight Compute launch must hold before perfgate reads it: one policy for `.ncu-rep` (through
the isolated ncu_report child) and `ncu --csv --page raw` exports.

Refused, with one line naming the file, the launch and the metric: a launch without a kernel name (a
damaged or truncated report: every later step labels by name), and a count, size, duration or rate that
is negative or past int64 (bytes, ns, byte/s, cycles, ... cannot be), and a rate in byte/s past 100 TB/s (no
memory moves that fast: the recorded H100 reports peak at 3 TB/s). ncu measures each launch as a
whole, so one impossible value means the launch, and the file, cannot be trusted; refusing is the only
way not to fold it into a diagnosis or a stored metric.

Left out as absent, not refused: non-finite values. ncu itself writes NaN for a metric it could not
compute (the recorded H100 reports have some), and absent is what that means; it is never 0. Except the
duration (`gpu__time_duration.sum`): ncu times every launch it profiles (every recorded report has a finite
one), so a NaN, an infinity or an unreadable cell there is a damaged file, refused in both readers; read as
absent it left the kernel without a time and without a word (issue 32, finding 07).

Not range-checked here: percentages and unitless ratios. ncu's raw percentages legitimately leave
[0, 100] (a per-block-size occupancy table at 5706 %, a hit rate at 100.3 %, a min over units below 0
in the recorded reports); the diagnosis checks the ones it interprets (analyze/ncu_diagnosis.py).
Refused too: a unit that is not the kind the metric is (`gpu__time_duration.sum` in `furlongs` would be
read as ns). Checked for the metrics whose unit perfgate relies on, the catalogue's times, sizes, rates
and percentages and every `*.pct_of_peak_sustained_*` share, once per column (CSV) or units tuple
(report); ncu's many count units (inst, warp, sector, a new noun in a new version) are left as they are.
Budget: at most MAX_METRIC_VALUES values per file held whole (a .ncu-rep, `read_ncu_csv`), one line
otherwise; `analyze` streams a CSV by launch and needs none (parse/ncu_csv.py).
"""

from __future__ import annotations

import math
from pathlib import Path

from perfgate.errors import ReportFileError
from perfgate.metrics import CATALOGUE
from perfgate.parse.invariants import INT64_MAX, MAX_BYTES_PER_NS, printable
from perfgate.parse.units import unit_scale

# 100 TB/s (parse/invariants.py): 33x the fastest rate in the recorded H100 reports (3 TB/s of DRAM)
MAX_BYTES_PER_S = MAX_BYTES_PER_NS * 1e9
MAX_METRIC_VALUES = 20_000_000  # ~30 bytes each in memory: 6,000 launches x 759 metrics is 4.6M


def is_count_unit(unit: str) -> bool:
    """ns, byte, byte/s, cycle, inst, warp, sector/s, register/thread...: quantities that cannot be
    negative. Percentages (% and %/x) and unitless values can be anything ncu computes."""
    return bool(unit) and not unit.startswith("%")


def usable(value: float) -> bool:
    """A number to keep (NaN and inf are absent: ncu could not compute the metric)."""
    return math.isfinite(value)


DURATION = "gpu__time_duration.sum"


def unreadable_duration(path: Path, launch: int, shown: str) -> ReportFileError:
    """The one line for a duration that is written but no number (`n/a`, `nan`, `inf`, `15 648`)."""
    return ReportFileError(path, f"launch {launch}: {DURATION} = {shown[:40]!r} is not a duration")


def check_value(path: Path, launch: int, name: str, value: float, unit: str) -> None:
    if not 0 <= value <= INT64_MAX and is_count_unit(unit):
        raise ReportFileError(
            path,
            f"launch {launch}: {name} = {value:g} {unit} cannot be "
            f"{'negative' if value < 0 else 'that large'} (the file is damaged)",
        )
    if unit == "byte/s" and value > MAX_BYTES_PER_S:
        raise ReportFileError(
            path,
            f"launch {launch}: {name} = {value:g} byte/s is faster than any memory moves "
            f"(at most {MAX_BYTES_PER_S:.0e}): the file is damaged",
        )


def implausible(value: float, unit: str) -> bool:
    """A value check_value refuses (a fast test: most values pass)."""
    return (not 0 <= value <= INT64_MAX and is_count_unit(unit)) or (unit == "byte/s" and value > MAX_BYTES_PER_S)


def check_name(path: Path, launch: int, name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ReportFileError(path, f"launch {launch} has no kernel name (the report is damaged or truncated)")
    return printable(name)


# base unit -> what the metric must be measured in
_KINDS = {
    "ns": "a time (ns, us, ms, s)",
    "byte": "a size (byte, Kbyte, Mbyte, ...)",
    "byte/block": "a size per block (byte/block, Kbyte/block, ...)",
    "byte/s": "a rate (byte/s, Gbyte/s, Tbyte/s, ...)",
    "%": "a percentage (%)",
}


def expected_unit(name: str) -> str | None:
    """The base unit a metric perfgate reads must come in, or None where the unit is not relied on."""
    spec = CATALOGUE.get(name)
    if spec is not None and spec.unit in _KINDS:
        return spec.unit
    return "%" if ".pct_of_peak_sustained_" in name else None


def check_unit(path: Path, name: str, unit: str) -> None:
    """Refuse a metric whose unit is not of the kind perfgate reads it as (one line: metric and unit)."""
    expected = expected_unit(name)
    if expected is not None and unit_scale(unit)[1] != expected:
        raise ReportFileError(
            path,
            f"metric {name} is in unit {printable(unit[:40])!r}, not "
            f"{_KINDS[expected]}: perfgate cannot tell what its values mean",
        )


class Budget:
    """Metric values read so far against MAX_METRIC_VALUES."""

    def __init__(self, path: Path, limit: int | None = None) -> None:
        self.path, self.used = path, 0
        self.limit = MAX_METRIC_VALUES if limit is None else limit

    def take(self, count: int) -> None:
        self.used += count
        if self.used > self.limit:
            raise ReportFileError(
                self.path,
                f"more than {self.limit:,} metric values; export fewer launches "
                "or metrics (ncu --kernel-name / --section)",
            )
