"""What the machine was doing while a case was sampled: load, CPU frequency, stolen time, threads.

Read from the kernel's own counters (os.getloadavg, /proc/stat, cpufreq in sysfs), twice per case; a
field the machine does not expose is None, never a guess. The measuring thread's CPU time over the wall
time between the two readings (through measure/clock.py, so a test's clock can say it was preempted) tells
how much of the case's wall time the thread actually ran. On the host clock these are part of what a
sample measures: a rise in load between calibration and gate explains "regressions" that are not the
code's (gate/findings.py names it).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from perfgate.measure import clock
from perfgate.model import HostState

PROC_STAT = Path("/proc/stat")
CPUFREQ = Path("/sys/devices/system/cpu")


class HostSampler:
    """`start()` before a case's samples, `stop()` after: the host state over that span."""

    def __init__(self) -> None:
        self._start: tuple[int, int] | None = None
        self._thread_start: tuple[int, int] = (0, 0)

    def start(self) -> HostSampler:
        self._start = _cpu_times()
        clk = clock.current()
        self._thread_start = (clk.perf_counter_ns(), clk.thread_time_ns())
        return self

    def stop(self) -> HostState:
        clk = clock.current()
        wall_ns = clk.perf_counter_ns() - self._thread_start[0]
        cpu_ns = clk.thread_time_ns() - self._thread_start[1]
        end = _cpu_times()
        steal = None
        if self._start is not None and end is not None and end[0] > self._start[0]:
            steal = 100.0 * (end[1] - self._start[1]) / (end[0] - self._start[0])
        cpus = _cpus()
        return HostState(
            load_avg_1m=_load(),
            cpus=len(cpus),
            threads=threading.active_count(),
            cpu_mhz=_mean_mhz(cpus),
            steal_pct=steal,
            cpu_share_pct=round(min(100.0, 100.0 * cpu_ns / wall_ns), 2) if wall_ns > 0 and cpu_ns >= 0 else None,
        )


def _cpus() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return list(range(os.cpu_count() or 1))


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0


def _cpu_times() -> tuple[int, int] | None:
    """(all jiffies, steal jiffies) from the aggregate `cpu` line of /proc/stat."""
    try:
        first = PROC_STAT.read_text(encoding="ascii").splitlines()[0].split()
    except (OSError, UnicodeDecodeError, IndexError):
        return None
    if len(first) < 9 or first[0] != "cpu" or not all(f.isdigit() for f in first[1:9]):
        return None
    values = [int(f) for f in first[1:9]]  # user nice system idle iowait irq softirq steal
    return sum(values), values[7]


def _mean_mhz(cpus: list[int]) -> float | None:
    readings = []
    for cpu in cpus[:256]:
        try:
            khz = (CPUFREQ / f"cpu{cpu}" / "cpufreq" / "scaling_cur_freq").read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            continue
        if khz.isdigit():
            readings.append(int(khz) / 1000.0)
    return sum(readings) / len(readings) if readings else None
