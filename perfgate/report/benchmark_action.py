"""Results in github-action-benchmark's `customSmallerIsBetter` format: a JSON list of
{name, unit, value, range, extra}, one entry per case (median time, milliseconds)."""

from __future__ import annotations

import json

from perfgate.model import Run


def render_benchmark_action(run: Run) -> str:
    entries = []
    for r in run.results:
        t = r.timing
        extra = [f"timer: {t.timer.value}", f"samples: {t.n_samples}", f"q1-q3: {t.q1_ms:.6g}-{t.q3_ms:.6g} ms"]
        if r.speedup is not None:
            extra.append(f"speedup: {r.speedup.median:.3f}x vs {r.speedup.reference}")
        entries.append({"name": r.case_id, "unit": "ms", "value": round(t.median_ms, 6),
                        "range": f"± {t.iqr_ms / 2:.6g}", "extra": "\n".join(extra)})
    return json.dumps(entries, indent=2, allow_nan=False) + "\n"
