"""Which thresholds apply to a case: catalogue < `[tool.perfgate]` < matching overrides (in order) < marker.

Resolved once, when the case is measured, and stored with it (CaseResult.thresholds): the plugin and
`perfgate compare` then gate a stored run on the same numbers, whatever the current directory or
pyproject says later.
"""

from __future__ import annotations

import fnmatch

from perfgate.config.settings import MarkerOptions, Settings
from perfgate.metrics import default_threshold_pct
from perfgate.model import CaseThresholds


def resolve_thresholds(settings: Settings, case_id: str, marker: MarkerOptions | None) -> CaseThresholds:
    time_pct, explicit = settings.threshold_pct, False
    metrics = dict(settings.metric_thresholds)
    min_speedup = settings.min_speedup
    gated = settings.gated_measure
    for ov in settings.overrides:
        if fnmatch.fnmatchcase(case_id, ov.pattern):
            if ov.threshold_pct is not None:
                time_pct, explicit = ov.threshold_pct, True
            metrics.update(ov.metrics)
            if ov.min_speedup is not None:
                min_speedup = ov.min_speedup
            if ov.gated_measure is not None:
                gated = ov.gated_measure
    if marker is not None:
        if marker.threshold_pct is not None:
            time_pct, explicit = marker.threshold_pct, True
        metrics.update(marker.metrics)
        if marker.min_speedup is not None:
            min_speedup = marker.min_speedup
        if marker.gated_measure is not None:
            gated = marker.gated_measure
    return CaseThresholds(
        time_pct=time_pct,
        time_pct_explicit=explicit,
        min_effect_pct=settings.min_effect_pct,
        metrics=tuple(sorted(metrics.items())),
        min_speedup=min_speedup,
        false_alarm_pct=settings.false_alarm_pct,
        gated_measure=gated,
    )


def metric_threshold_pct(thresholds: CaseThresholds, metric: str) -> float:
    """The case's explicit threshold for a metric, else the catalogue default."""
    explicit = thresholds.metric_pct(metric)
    return explicit if explicit is not None else default_threshold_pct(metric)
