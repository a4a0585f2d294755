"""The options of how a case is timed (MeasureOptions; the marker may change each): rows of the one option
table (options.py).
"""

from __future__ import annotations

from perfgate.config import validate as v
from perfgate.config.option import Option
from perfgate.model import HostTimer

TIMING: tuple[Option, ...] = (
    # --- how a case is timed (MeasureOptions; the marker may change each) ----------------------------------
    Option(
        "warmup_ms", "warm-up before sampling (ms)", v.number(0.0, 60_000.0), key="warmup_ms", marker=True, measure=True
    ),
    Option(
        "min_samples", "fewest samples per case", v.integer(2, 1_000_000), key="min_samples", marker=True, measure=True
    ),
    Option(
        "max_samples", "most samples per case", v.integer(2, 1_000_000), key="max_samples", marker=True, measure=True
    ),
    Option(
        "budget_ms",
        "time budget for one case's samples (ms)",
        v.number(0.0, 3_600_000.0, low_open=True),
        key="budget_ms",
        marker=True,
        measure=True,
    ),
    Option("flush_l2", "flush the L2 cache between samples", v.boolean, key="flush_l2", marker=True, measure=True),
    Option(
        "cooldown_max_ms",
        "wait at most this long (ms) for the GPU to leave its power cap before a case",
        v.number(0.0, 600_000.0),
        key="cooldown_max_ms",
        marker=True,
        measure=True,
    ),
    Option(
        "exclude_throttled",
        "drop samples taken under a power/thermal cap",
        v.boolean,
        key="exclude_throttled",
        marker=True,
        measure=True,
    ),
    Option("memory", "measure and gate peak memory per call", v.boolean, key="memory", marker=True, measure=True),
    Option(
        "host_timer",
        "the clock of a case timed on the host: 'wall' (time.perf_counter), 'thread_cpu' (the measuring thread's "
        "CPU time: a preempted call reads what it ran, not what it waited; single-threaded code only) or "
        "'process_cpu' (every thread's CPU time); a baseline in one is never compared with another",
        v.choice(HostTimer),
        key="host_timer",
        marker=True,
        measure=True,
    ),
)
