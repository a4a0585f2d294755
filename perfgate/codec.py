"""Records <-> plain JSON-able dicts, for what crosses a process boundary: measurement children
(calibration, confirmation), pytest-xdist workers, and the JSON results file.

Strict on the way in: a child or worker that wrote something else is an error naming it, never a
half-read result.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from itertools import pairwise
from typing import Any

from perfgate.compiled import codec as compiled_codec
from perfgate.model import (
    CaseResult,
    CaseThresholds,
    CodeRole,
    CodeSource,
    CycleStats,
    Environment,
    GatedMeasure,
    GpuState,
    HostState,
    Metric,
    NoiseEstimate,
    Speedup,
    TestOutcome,
    Timer,
    TimingStats,
    UnmeasuredTest,
)
from perfgate.parse.invariants import INT64_MAX, has_control


class CodecError(ValueError):
    pass


def finite_or_none(value: object) -> Any:
    """JSON has no NaN/inf: they become null (a change from 0 has no finite percentage)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite_or_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_none(v) for v in value]
    return value


def case_to_dict(r: CaseResult) -> dict[str, Any]:
    out = asdict(r)
    out["timing"]["timer"] = r.timing.timer.value
    out["location"] = list(r.location) if r.location else None
    out["autotune"] = [list(p) for p in r.autotune]
    out["thresholds"]["metrics"] = [list(p) for p in r.thresholds.metrics]
    out["extra_info"] = dict(r.extra_info)
    out["params"] = dict(r.params)
    out["phases_s"] = [list(p) for p in r.phases_s]
    out["compiled"] = compiled_codec.to_dict(r.compiled) if r.compiled is not None else None
    out["code"] = [{**asdict(c), "role": c.role.value} for c in r.code]
    cleaned: dict[str, Any] = finite_or_none(out)
    return cleaned


def case_from_dict(d: Any) -> CaseResult:
    try:
        timing = dict(d["timing"])
        timing["timer"] = Timer(timing["timer"])
        speedup = d.get("speedup")
        result = CaseResult(
            case_id=str(d["case_id"]),
            timing=TimingStats(**timing),
            samples_ms=tuple(float(v) for v in d["samples_ms"]),
            metrics=tuple(Metric(**m) for m in d.get("metrics", ())),
            bytes_moved=d.get("bytes_moved"),
            flops=d.get("flops"),
            profile_errors=tuple(d.get("profile_errors", ())),
            profile_notes=tuple(d.get("profile_notes", ())),
            thresholds=thresholds_from_dict(d.get("thresholds") or {}),
            gpu_state=GpuState(**d["gpu_state"]) if d.get("gpu_state") else None,
            host_state=HostState(**d["host_state"]) if d.get("host_state") else None,
            autotune=tuple((str(k), str(v)) for k, v in d.get("autotune", ())),
            speedup=Speedup(**{**speedup, "reference_samples_ms": tuple(speedup["reference_samples_ms"])})
            if speedup
            else None,
            confirmation_medians_ms=tuple(float(v) for v in d.get("confirmation_medians_ms", ())),
            confirmation_speedups=tuple(float(v) for v in d.get("confirmation_speedups", ())),
            confirmation_memory=tuple(float(v) for v in d.get("confirmation_memory", ())),
            nodeid=str(d.get("nodeid", "")),
            location=(str(d["location"][0]), int(d["location"][1])) if d.get("location") else None,
            device_uuid=str(d.get("device_uuid", "")),
            calls_per_sample=int(d.get("calls_per_sample", 1)),
            group=str(d.get("group") or ""),
            extra_info=tuple((str(k), v) for k, v in dict(d.get("extra_info") or {}).items()),
            params=tuple((str(k), v) for k, v in dict(d.get("params") or {}).items()),
            compiled=compiled_codec.from_dict(d["compiled"], "compiled") if d.get("compiled") is not None else None,
            phases_s=tuple((str(k), float(v)) for k, v in d.get("phases_s", ())),
            code=code_from_list(d.get("code") or ()),
            cycles=CycleStats(**d["cycles"]) if d.get("cycles") else None,
            confirmation_mcycles=tuple(float(v) for v in d.get("confirmation_mcycles", ())),
        )
    except (KeyError, TypeError, ValueError, IndexError, OverflowError) as err:
        raise CodecError(f"not a perfgate case result ({type(err).__name__}: {err})") from err
    problem = case_problem(result)
    if problem:
        raise CodecError(f"case {result.case_id[:120]!r}: {problem}")
    return result


def code_from_list(items: Any) -> tuple[CodeSource, ...]:
    """A case's provenance (CodeSource records) from JSON; ValueError/TypeError/KeyError when it is not one."""
    out = []
    for item in items:
        fields = {k: item[k] for k in ("name", "path", "tree", "loader") if k in item}
        if not all(isinstance(v, str) for v in fields.values()) or not fields.get("name"):
            raise TypeError("a code source needs a name and string fields")
        out.append(CodeSource(role=CodeRole(item["role"]), **fields))
    return tuple(out)


_ROUNDING = 1e-9  # numpy's mean and interpolated quantiles may sit a few ulps outside [min, max]


def _count(value: object) -> bool:
    """An integer a history column can hold (SQLite integers are int64)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= INT64_MAX


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def case_problem(r: CaseResult) -> str | None:
    """What makes a case result impossible (None if nothing): times and samples finite and >= 0, the
    order statistics in order, a speedup inside its interval. A measurement child or an xdist worker
    wrote it; anything else wrote something perfgate must not gate."""
    if has_control(r.case_id):
        return "the case id holds a control character (a newline, an escape...)"
    return (
        _timing_problem(r.timing)
        or _values_problem(r)
        or _speedup_problem(r.speedup)
        or _samples_problem(r.timing, r.samples_ms)
        or _cycles_problem(r.cycles)
    )


def _samples_problem(t: TimingStats, samples: tuple[float, ...]) -> str | None:
    """Statistics that are not their samples': perfgate computes them from the samples it keeps (stats.summarize),
    so a median or mean its samples do not give was edited or damaged."""
    if not samples or len(samples) != t.n_samples:
        return None
    from perfgate.stats import summarize

    ref = summarize(samples, t.timer)
    for key in ("median_ms", "mean_ms", "min_ms", "max_ms", "q1_ms", "q3_ms"):
        got, want = getattr(t, key), getattr(ref, key)
        if abs(got - want) > _ROUNDING * max(abs(got), abs(want), 1e-300):
            return f"timing.{key} ({got:g}) is not what its {len(samples)} samples give ({want:g})"
    return None


def _timing_problem(t: TimingStats) -> str | None:
    times = {
        "median_ms": t.median_ms,
        "mean_ms": t.mean_ms,
        "stdev_ms": t.stdev_ms,
        "min_ms": t.min_ms,
        "max_ms": t.max_ms,
        "q1_ms": t.q1_ms,
        "q3_ms": t.q3_ms,
    }
    bad = next((k for k, v in times.items() if not _number(v) or v < 0), None)
    if bad:
        return f"timing.{bad} must be a finite number >= 0, got {times[bad]!r}"
    if not _count(t.n_samples):
        return "timing.n_samples must be an integer in [0, 2**63)"
    if any(not _number(v) or v < 0 for v in (t.gbps, t.tflops) if v is not None):
        return "timing.gbps and timing.tflops must be finite numbers >= 0"
    slack = _ROUNDING * t.max_ms
    order = ("min_ms", "q1_ms", "median_ms", "q3_ms", "max_ms")
    out_of_order = [(a, b) for a, b in pairwise(order) if times[a] > times[b] + slack]
    if out_of_order:
        a, b = out_of_order[0]
        return f"timing.{a} ({times[a]:g}) is above timing.{b} ({times[b]:g})"
    if not t.min_ms - slack <= t.mean_ms <= t.max_ms + slack:
        return f"timing.mean_ms ({t.mean_ms:g}) lies outside [min_ms, max_ms]"
    return None


def _values_problem(r: CaseResult) -> str | None:
    for name, values in (
        ("samples_ms", r.samples_ms),
        ("confirmation_medians_ms", r.confirmation_medians_ms),
        ("confirmation_speedups", r.confirmation_speedups),
        ("confirmation_memory", r.confirmation_memory),
        ("confirmation_mcycles", r.confirmation_mcycles),
    ):
        if any(not _number(v) or v < 0 for v in values):
            return f"{name} must hold finite numbers >= 0"
    if any(not isinstance(m.name, str) or not _number(m.value) for m in r.metrics):
        return "every metric needs a name and a finite value"
    if any(v is not None and not _count(v) for v in (r.bytes_moved, r.flops)):
        return "bytes_moved and flops must be integers in [0, 2**63)"
    if not _count(r.calls_per_sample) or r.calls_per_sample < 1:
        return "calls_per_sample must be an integer >= 1"
    return None


def _speedup_problem(sp: Speedup | None) -> str | None:
    if sp is None:
        return None
    if not all(_number(v) and v > 0 for v in (sp.median, sp.ci_low, sp.ci_high)) or not (
        sp.ci_low * (1 - _ROUNDING) <= sp.median <= sp.ci_high * (1 + _ROUNDING)
    ):
        return "speedup median and interval must be finite, > 0 and ci_low <= median <= ci_high"
    if any(not _number(v) or v < 0 for v in sp.reference_samples_ms):
        return "speedup.reference_samples_ms must hold finite numbers >= 0"
    return None


def _cycles_problem(c: CycleStats | None) -> str | None:
    if c is None:
        return None
    if not all(_number(v) and v > 0 for v in (c.median_mcycles, c.clock_min_mhz, c.clock_median_mhz, c.clock_max_mhz)):
        return "cycles: median_mcycles and the clocks must be finite numbers > 0"
    if not c.clock_min_mhz <= c.clock_median_mhz <= c.clock_max_mhz:
        return "cycles: the clocks must be in order (min <= median <= max)"
    if not _count(c.probed_samples) or c.probed_samples < 1:
        return "cycles.probed_samples must be an integer >= 1"
    return None


_THRESHOLD_FIELDS = frozenset(CaseThresholds.__dataclass_fields__)
_NOISE_FIELDS = frozenset(NoiseEstimate.__dataclass_fields__)


def thresholds_from_dict(raw: object) -> CaseThresholds:
    """A case's stored thresholds. Keys an earlier version wrote and this one no longer has (`alpha`, before
    the run-wide false-alarm budget) are dropped: the run is re-gated under today's rule."""
    if not isinstance(raw, dict):
        raise CodecError("thresholds must be an object")
    values = {k: v for k, v in raw.items() if k in _THRESHOLD_FIELDS}
    values["metrics"] = tuple((str(k), float(v)) for k, v in values.get("metrics", ()))
    if "gated_measure" in values:
        values["gated_measure"] = GatedMeasure(values["gated_measure"])
    for key in ("time_noise", "speedup_noise", "cycles_noise"):
        noise = values.get(key)
        if noise is not None:
            if not isinstance(noise, dict):
                raise CodecError(f"thresholds: {key} must be an object")
            fields = {k: v for k, v in noise.items() if k in _NOISE_FIELDS}
            for side in ("upper_pct", "lower_pct", "window_upper_pct", "window_lower_pct"):
                fields[side] = tuple(float(v) for v in fields.get(side, ()))
            values[key] = NoiseEstimate(**fields)
    return CaseThresholds(**values)


def environment_from_dict(d: Any) -> Environment:
    try:
        return Environment(**{k: str(v) for k, v in d.items()})
    except (TypeError, AttributeError) as err:
        raise CodecError(f"not a perfgate environment ({err})") from err


def unmeasured_to_dict(u: UnmeasuredTest) -> dict[str, str]:
    return {"nodeid": u.nodeid, "outcome": u.outcome.value, "reason": u.reason}


def unmeasured_from_dict(d: Any) -> UnmeasuredTest:
    try:
        return UnmeasuredTest(str(d["nodeid"]), TestOutcome(d["outcome"]), str(d.get("reason", "")))
    except (KeyError, TypeError, ValueError) as err:
        raise CodecError(f"not a test outcome ({err})") from err
