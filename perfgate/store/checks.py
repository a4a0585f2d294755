"""Stored rows are re-validated on read: a history is a file anyone can edit, and the gate trusts what it
reads. A stored threshold of 1e12 or a median of -1 must not turn a +5,000 % run into a green gate, so
each value read is checked for type, finiteness and range (the bounds a measurement or a configuration
could produce) and a bad one is one line naming the run, the case and the column (ValueError; the store
adds the file).
"""

from __future__ import annotations

import functools
import itertools
import json
import math
from datetime import datetime
from typing import Any

from perfgate.model import CaseThresholds, CodeSource, CycleStats, GatedMeasure, HostState, NoiseEstimate
from perfgate.parse.invariants import MAX_TIME_MS, has_control, printable

# What a stored threshold may be: percentages up to a 10x change, alpha a real significance level.
MAX_THRESHOLD_PCT = 1000.0
ALPHA_RANGE = (1e-9, 0.5)  # `alpha`, stored by versions before the run-wide false-alarm budget
FALSE_ALARM_RANGE = (0.01, 5.0)
RETIRED_THRESHOLD_KEYS = frozenset({"alpha"})
MAX_NOISE_PCT = 1000.0
MAX_DEVIATION_PCT = 1e6  # a reference process's deviation from the centre: a preempted 2 ms call read 27 ms (+1300%)
MAX_NOISE_PROCESSES = 1_000_000
MAX_EXTREMES = 64
MAX_SPEEDUP = 1e6
MAX_MHZ = 10_000.0  # measure/sm_clock.py's bound on a clock reading
MAX_MCYCLES = 1e12  # MAX_TIME_MS at MAX_MHZ
# Relative slack when checking that stored quantiles are ordered (they are computed in floating point).
ORDER_SLACK = 1e-9


class StoredValueError(ValueError):
    """A stored value that no measurement or configuration could have produced."""


def number(
    value: object, where: str, low: float | None = 0.0, high: float | None = None, low_open: bool = False
) -> float:
    """A finite number within bounds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise StoredValueError(f"{where}: {_shown(value)} is not a finite number")
    v = float(value)
    if low is not None and (v < low or (low_open and v == low)):
        raise StoredValueError(f"{where}: {v!r} is below {low:g}")
    if high is not None and v > high:
        raise StoredValueError(f"{where}: {v!r} is above {high:g}")
    return v


def optional_number(
    value: object, where: str, low: float | None = 0.0, high: float | None = None, low_open: bool = False
) -> float | None:
    return None if value is None else number(value, where, low, high, low_open)


def count(value: object, where: str, optional: bool = False) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise StoredValueError(f"{where}: {_shown(value)} is not a count")
    return value


def text(value: object, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise StoredValueError(f"{where}: {_shown(value)} is not text")
    return value


MAX_RUN_TEXT = 4096  # a branch, a commit, an argv: longer is no run perfgate wrote


def run_text(value: object, where: str) -> str:
    """A run's text (branch, commit, argv, host, device, versions): text, at most MAX_RUN_TEXT characters,
    its control characters replaced (U+FFFD). A history from elsewhere is read, not trusted: a branch
    holding an escape sequence or a newline and `::error::` would print them into a terminal or a CI log."""
    out = text(value, where)
    if len(out) > MAX_RUN_TEXT:
        raise StoredValueError(f"{where}: {len(out):,} characters of text (at most {MAX_RUN_TEXT:,})")
    return printable(out)


def run_time(value: object, where: str) -> str:
    """started_at / finished_at: an ISO 8601 time as perfgate writes one ("" when the run has none). Runs
    are ordered, pruned (`--older-than`) and shown by it: anything else is not a run perfgate stored."""
    out = text(value, where)
    if not out:
        return out
    try:
        ok = not has_control(out) and len(out) <= 64 and datetime.fromisoformat(out) is not None
    except ValueError:
        ok = False
    if not ok:
        raise StoredValueError(f"{where}: {_shown(out)} is not an ISO 8601 time")
    return out


def case_id(value: object, where: str) -> str:
    """A case id: text without control characters (a newline in one would print a line of its own)."""
    out = text(value, where)
    if has_control(out):
        raise StoredValueError(f"{where}: the case id holds a control character (a newline, an escape...)")
    return out


def json_value(raw: object, where: str, kind: type) -> Any:
    """A JSON column: NULL or empty is the kind's empty value; anything but the kind is refused."""
    if raw is None or raw == "" or (raw == "[]" and kind is list):  # most lists stored are empty: no parse
        return kind()
    if not isinstance(raw, str):
        raise StoredValueError(f"{where}: {_shown(raw)} is not JSON text")
    try:
        value = json.loads(raw)
    except ValueError as err:  # JSONDecodeError, and integers past the conversion limit
        raise StoredValueError(f"{where}: not JSON ({err})") from None
    if not isinstance(value, kind):
        raise StoredValueError(f"{where}: JSON {type(value).__name__} where a {kind.__name__} belongs")
    return value


def text_list(raw: object, where: str) -> tuple[str, ...]:
    values = json_value(raw, where, list)
    if not all(isinstance(v, str) for v in values):
        raise StoredValueError(f"{where}: a list holding something other than text")
    return tuple(values)


def positive_list(raw: object, where: str, high: float | None = MAX_TIME_MS) -> tuple[float, ...]:
    return tuple(number(v, where, low=0.0, high=high, low_open=True) for v in json_value(raw, where, list))


def time_ms(value: object, where: str, positive: bool = False) -> float:
    """A stored time: finite, >= 0 (> 0 when `positive`) and at most MAX_TIME_MS."""
    return number(value, where, high=MAX_TIME_MS, low_open=positive)


def samples(values: tuple[float, ...], where: str) -> tuple[float, ...]:
    # built-ins over the whole array (a merge checks millions of samples); the slow look only names the bad one
    if not values or (all(map(math.isfinite, values)) and min(values) >= 0 and max(values) <= MAX_TIME_MS):
        return values
    if not all(math.isfinite(v) and 0 <= v <= MAX_TIME_MS for v in values):
        bad = next(v for v in values if not (math.isfinite(v) and 0 <= v <= MAX_TIME_MS))
        raise StoredValueError(f"{where}: sample {bad!r} is not a finite time in [0, {MAX_TIME_MS:g}] ms")
    return values


def thresholds(raw: object, where: str) -> CaseThresholds:
    """The thresholds a case was gated with; a run stored before version 2 had none: today's defaults."""
    if raw is None or raw == "":
        return CaseThresholds()
    if isinstance(raw, str):  # the cases of a suite share a few threshold texts: each is checked once
        known = _checked_thresholds(raw)
        if known is not None:
            return known
    return _thresholds(raw, where)


@functools.lru_cache(maxsize=1024)
def _checked_thresholds(raw: str) -> CaseThresholds | None:
    try:
        return _thresholds(raw, "")
    except StoredValueError:
        return None  # checked again with its place, for the message


def _thresholds(raw: object, where: str) -> CaseThresholds:
    doc = json_value(raw, where, dict)
    known = set(CaseThresholds.__dataclass_fields__) | RETIRED_THRESHOLD_KEYS
    unknown = sorted(set(doc) - known)
    if unknown:
        raise StoredValueError(f"{where}: unknown key(s) {unknown}")
    out: dict[str, Any] = {}
    for key in ("time_pct", "min_effect_pct"):
        if key in doc:
            out[key] = number(doc[key], f"{where}.{key}", high=MAX_THRESHOLD_PCT)
    if "alpha" in doc:  # stored before the run-wide budget: checked, then the run is re-gated under today's rule
        number(doc["alpha"], f"{where}.alpha", low=ALPHA_RANGE[0], high=ALPHA_RANGE[1])
    if "false_alarm_pct" in doc:
        out["false_alarm_pct"] = number(
            doc["false_alarm_pct"], f"{where}.false_alarm_pct", low=FALSE_ALARM_RANGE[0], high=FALSE_ALARM_RANGE[1]
        )
    out.update(_noises_and_measure(doc, where))
    if "time_pct_explicit" in doc:
        if not isinstance(doc["time_pct_explicit"], bool):
            raise StoredValueError(f"{where}.time_pct_explicit: {_shown(doc['time_pct_explicit'])} is not true/false")
        out["time_pct_explicit"] = doc["time_pct_explicit"]
    if "min_speedup" in doc:
        out["min_speedup"] = optional_number(
            doc["min_speedup"], f"{where}.min_speedup", low=0.0, high=MAX_SPEEDUP, low_open=True
        )
    metrics = doc.get("metrics", [])
    if not isinstance(metrics, list) or not all(
        isinstance(m, list) and len(m) == 2 and isinstance(m[0], str) for m in metrics
    ):
        raise StoredValueError(f"{where}.metrics: not a list of [metric, threshold_pct] pairs")
    out["metrics"] = tuple((m[0], number(m[1], f"{where}.metrics.{m[0]}", high=MAX_THRESHOLD_PCT)) for m in metrics)
    return CaseThresholds(**out)


def _noises_and_measure(doc: dict[str, Any], where: str) -> dict[str, Any]:
    """The noise estimates a case was gated with, and the measure it was set to gate (schema 9)."""
    out: dict[str, Any] = {
        key: noise(doc[key], f"{where}.{key}")
        for key in ("time_noise", "speedup_noise", "cycles_noise")
        if doc.get(key) is not None
    }
    if "gated_measure" in doc:
        try:
            out["gated_measure"] = GatedMeasure(doc["gated_measure"])
        except ValueError:
            raise StoredValueError(f"{where}.gated_measure: {_shown(doc['gated_measure'])} is not a measure") from None
    return out


def noise(raw: object, where: str) -> NoiseEstimate:
    """A case's resolved between-process noise: a percentage and whole counts."""
    if not isinstance(raw, dict) or set(raw) - set(NoiseEstimate.__dataclass_fields__) or "noise_pct" not in raw:
        raise StoredValueError(f"{where}: not a noise estimate")
    counts = {}
    for key in ("df", "window_runs", "excluded", "processes"):
        value = raw.get(key, 1 if key == "df" else 0)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_NOISE_PROCESSES:
            raise StoredValueError(f"{where}.{key}: {_shown(value)} is not a count")
        counts[key] = value
    if counts["df"] < 1:
        raise StoredValueError(f"{where}.df: must be >= 1")
    sides = ("upper_pct", "lower_pct", "window_upper_pct", "window_lower_pct")
    upper, lower, win_upper, win_lower = (_percentages(raw.get(side, []), f"{where}.{side}") for side in sides)
    return NoiseEstimate(
        number(raw["noise_pct"], f"{where}.noise_pct", high=MAX_NOISE_PCT),
        counts["df"],
        counts["window_runs"],
        counts["excluded"],
        upper,
        lower,
        counts["processes"],
        win_upper,
        win_lower,
    )


def _percentages(values: object, where: str) -> tuple[float, ...]:
    if not isinstance(values, list) or len(values) > MAX_EXTREMES:
        raise StoredValueError(f"{where}: not a short list of percentages")
    return tuple(number(v, where, low=-100.0, high=MAX_DEVIATION_PCT) for v in values)


def cycles(row: dict[str, Any], where: str) -> CycleStats | None:
    """A case's samples in SM cycles (schema 9); None when the run had no clock probe (or was stored before)."""
    if row.get("median_mcycles") is None:
        return None
    low, median, high = (
        number(row[c], f"{where} {c}", high=MAX_MHZ, low_open=True)
        for c in ("sm_clock_min_mhz", "sm_clock_mhz", "sm_clock_max_mhz")
    )
    if not low <= median <= high:
        raise StoredValueError(f"{where}: SM clocks out of order ({low:g} <= {median:g} <= {high:g} MHz)")
    probed = count(row["probed_samples"], f"{where} probed_samples")
    if not probed:
        raise StoredValueError(f"{where} probed_samples: cycles from no probed sample")
    mcycles = number(row["median_mcycles"], f"{where} median_mcycles", high=MAX_MCYCLES, low_open=True)
    return CycleStats(mcycles, median, low, high, probed)


def host_state(raw: object, where: str) -> HostState | None:
    """The machine around a case: a load, counts, and an optional clock and steal share."""
    if raw is None or raw == "":
        return None
    doc = json_value(raw, where, dict)
    if set(doc) - set(HostState.__dataclass_fields__):
        raise StoredValueError(f"{where}: not a host state")
    counts = {}
    for key in ("cpus", "threads"):
        value = doc.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_NOISE_PROCESSES:
            raise StoredValueError(f"{where}.{key}: {_shown(value)} is not a count")
        counts[key] = value
    return HostState(
        load_avg_1m=number(doc.get("load_avg_1m"), f"{where}.load_avg_1m", high=1e6),
        cpu_mhz=optional_number(doc.get("cpu_mhz"), f"{where}.cpu_mhz", high=1e6),
        steal_pct=optional_number(doc.get("steal_pct"), f"{where}.steal_pct", high=100.0),
        cpu_share_pct=optional_number(doc.get("cpu_share_pct"), f"{where}.cpu_share_pct", high=100.0),
        **counts,
    )


def ordered(stats: dict[str, float], where: str) -> None:
    """min <= q1 <= median <= q3 <= max, and the mean within [min, max]."""
    chain = ("min_ms", "q1_ms", "median_ms", "q3_ms", "max_ms")
    for low, high in itertools.pairwise(chain):
        if stats[low] > stats[high] * (1 + ORDER_SLACK):
            raise StoredValueError(f"{where}: {low} {stats[low]!r} above {high} {stats[high]!r}")
    if not stats["min_ms"] * (1 - ORDER_SLACK) <= stats["mean_ms"] <= stats["max_ms"] * (1 + ORDER_SLACK):
        raise StoredValueError(f"{where}: mean_ms {stats['mean_ms']!r} outside [min_ms, max_ms]")


def _shown(value: object) -> str:
    shown = repr(value)
    return shown if len(shown) <= 40 else shown[:37] + "..."


def code(raw: object, where: str) -> tuple[CodeSource, ...]:
    """A case's provenance: a JSON list of code sources (role, name, path, tree, loader), or nothing."""
    from perfgate.codec import code_from_list

    items = json_value(raw, where, list)
    try:
        sources = code_from_list(items)
    except (KeyError, TypeError, ValueError) as err:
        raise StoredValueError(f"{where}: not a list of code sources ({type(err).__name__}: {err})") from None
    if any(has_control(c.name) or has_control(c.path) for c in sources):
        raise StoredValueError(f"{where}: a code source holds a control character")
    return sources
