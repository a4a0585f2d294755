"""ncu's "why" for a regressed case that was profiled: each of its kernels' diagnosis (analyze/ncu_diagnosis.py:
the bound, the occupancy limiter, the first recommendation), from the ncu metrics stored with the case."""

from __future__ import annotations

from perfgate.metrics import NCU_WHY
from perfgate.model import CaseResult, Comparison

MAX_KERNELS = 3  # the case's kernels with the longest duration


def ncu_reasons(res: CaseResult) -> tuple[Comparison, ...]:
    from perfgate.analyze.ncu_diagnosis import diagnose
    from perfgate.parse.invariants import OutOfRange
    from perfgate.parse.records import NcuLaunch, NcuMetric

    by_kernel: dict[str, dict[str, NcuMetric]] = {}
    for m in res.metrics:
        if m.source == "ncu" and m.kernel:
            by_kernel.setdefault(m.kernel, {})[m.name] = NcuMetric(m.value, m.unit)
    rows = []
    for i, (kernel, metrics) in enumerate(by_kernel.items()):
        try:
            d = diagnose(NcuLaunch(i, kernel, metrics))
        except OutOfRange:  # values no GPU produces: no diagnosis rather than a wrong one
            continue
        if d.bottleneck == "unknown":
            continue
        words = f"ncu: {d.bottleneck}" + (f" ({d.reasons[0]})" if d.reasons else "")
        if d.theoretical_occupancy_pct is not None and d.occupancy_limiter:
            words += f", theoretical occupancy {d.theoretical_occupancy_pct:.4g} % limited by {d.occupancy_limiter}"
        if d.recommendations:
            words += f"; {d.recommendations[0]}"
        rows.append((d.duration_ns or 0.0, _row(res.case_id, kernel, words)))
    rows.sort(key=lambda r: -r[0])
    return tuple(row for _, row in rows[:MAX_KERNELS])


def _row(case_id: str, kernel: str, words: str) -> Comparison:
    return Comparison.words(case_id, NCU_WHY, words, kernel=kernel)
