"""Results in Bencher Metric Format (BMF) JSON, for `bencher run --adapter json --file ...`:
`{case id: {measure: {"value", "lower_value", "upper_value"}}}` (https://bencher.dev/docs/reference/bencher-metric-format).

`latency` is Bencher's built-in measure, in nanoseconds: the case's median time, its quartiles as the
bounds. A case timed against a reference adds `speedup` (x, bigger is better; its 95% interval as the
bounds), a measure Bencher creates on first use. Values are the floats perfgate holds, never rounded.
"""

from __future__ import annotations

import json
import math
from typing import Any

from perfgate.model import GateResult, Run

NS_PER_MS = 1e6


def render_bencher(gate: GateResult, run: Run) -> str:
    doc: dict[str, dict[str, Any]] = {}
    for r in run.results:
        t = r.timing
        measures: dict[str, Any] = {
            "latency": _metric(t.median_ms * NS_PER_MS, t.q1_ms * NS_PER_MS, t.q3_ms * NS_PER_MS)
        }
        if r.speedup is not None:
            measures["speedup"] = _metric(r.speedup.median, r.speedup.ci_low, r.speedup.ci_high)
        kept = {k: v for k, v in measures.items() if v is not None}
        if kept:
            doc[r.case_id] = kept
    return json.dumps(doc, indent=2, sort_keys=True, allow_nan=False) + "\n"


def _metric(value: float, lower: float, upper: float) -> dict[str, float] | None:
    """A BMF metric; bounds only when they are finite and around the value."""
    if not math.isfinite(value):
        return None
    out = {"value": value}
    if math.isfinite(lower) and math.isfinite(upper) and lower <= value <= upper:
        out.update(lower_value=lower, upper_value=upper)
    return out
