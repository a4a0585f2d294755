"""Results for github-action-benchmark: times in its `customSmallerIsBetter` format (one entry per case,
median time in milliseconds) and speedups against a reference in `customBiggerIsBetter` (one entry per
case timed against one). The action takes one tool per file, so the two are two files. Values are
written at full precision (a float's shortest round-trip form), never rounded."""

from __future__ import annotations

import json

from perfgate.model import GateResult, Run


def render_benchmark_action(run: Run) -> str:
    entries = []
    for r in run.results:
        t = r.timing
        extra = [f"timer: {t.timer.value}", f"samples: {t.n_samples}", f"q1-q3: {t.q1_ms!r}-{t.q3_ms!r} ms"]
        if r.speedup is not None:
            extra.append(f"speedup: {r.speedup.median!r}x vs {r.speedup.reference}")
        entries.append(
            {
                "name": r.case_id,
                "unit": "ms",
                "value": t.median_ms,
                "range": f"± {t.iqr_ms / 2!r}",
                "extra": "\n".join(extra),
            }
        )
    return json.dumps(entries, indent=2, allow_nan=False) + "\n"


def render_benchmark_action_speedups(gate: GateResult, run: Run) -> str:
    """`customBiggerIsBetter`: the speedup of each case over its reference (x), its 95% interval as range."""
    entries = []
    for r in run.results:
        s = r.speedup
        if s is None:
            continue
        extra = [f"reference: {s.reference}", f"95% CI: {s.ci_low!r}-{s.ci_high!r}"]
        if r.thresholds.min_speedup is not None:
            extra.append(f"target: >= {r.thresholds.min_speedup!r}x")
        entries.append(
            {
                "name": f"{r.case_id} speedup vs {s.reference}",
                "unit": "x",
                "value": s.median,
                "range": f"± {(s.ci_high - s.ci_low) / 2!r}",
                "extra": "\n".join(extra),
            }
        )
    return json.dumps(entries, indent=2, allow_nan=False) + "\n"
