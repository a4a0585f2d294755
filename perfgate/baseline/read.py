"""Reading a committed baseline file: every value checked for what it means (a finite positive median within
its own processes' range, known timers, bounded sample counts), or one BaselineError naming the file and the
field (perfgate/baseline/__init__.py says why)."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

from perfgate.baseline.records import (
    _ENV_FIELDS,
    FORMAT,
    MAX_MCYCLES,
    MAX_SAMPLE_COUNT,
    MIN_CALIBRATION_PROCESSES,
    READABLE_VERSIONS,
    Baseline,
    BaselineCase,
    Update,
    expand_quantiles,
)
from perfgate.compiled.records import CompiledCase
from perfgate.errors import BaselineError
from perfgate.inputs import load_json_file
from perfgate.model import Environment, GpuState, HostState, Metric, Timer
from perfgate.parse.invariants import INT64_MAX, MAX_TIME_MS, has_control


def load_baseline(path: Path) -> Baseline | None:
    """The baseline at path, None if there is no file; BaselineError naming the file if malformed."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return None
    data = load_json_file(path, BaselineError, checked_floats=True)  # every float read goes through _finite
    return parse_baseline(path, data)


def parse_baseline(path: Path, data: Any) -> Baseline:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BaselineError(path, f'not a perfgate baseline (expected "format": "{FORMAT}")')
    version = data.get("version")
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        raise BaselineError(
            path,
            f"format version {version!r} is not supported (this perfgate reads "
            f"{', '.join(map(str, READABLE_VERSIONS))})",
        )
    env = _environment(path, _field(path, data, "environment", dict))
    cases_raw = _field(path, data, "cases", dict)
    cases = {cid: _case(path, cid, c) for cid, c in cases_raw.items()}
    updates_raw = data.get("updates", [])
    if not isinstance(updates_raw, list):
        raise BaselineError(path, '"updates" must be a list')
    updates = tuple(_update(path, i, u) for i, u in enumerate(updates_raw))
    return Baseline(path=path, environment=env, cases=cases, updates=updates)


def _field(path: Path, obj: dict[str, Any], key: str, kind: type, where: str = "") -> Any:
    prefix = f"{where}: " if where else ""
    if key not in obj:
        raise BaselineError(path, f'{prefix}missing "{key}"')
    value = obj[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise BaselineError(path, f'{prefix}"{key}" must be {_kind_name(kind)}')
    return value


def _kind_name(kind: type) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "true or false"}.get(kind, kind.__name__)


def _environment(path: Path, raw: dict[str, Any]) -> Environment:
    for key in ("device_kind", "device_name"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise BaselineError(path, f'environment: "{key}" must be a non-empty string')
    if raw["device_kind"] not in ("cuda", "host"):
        raise BaselineError(path, f'environment: device_kind must be "cuda" or "host", got {raw["device_kind"]!r}')
    values = {}
    for key in _ENV_FIELDS:
        if key in raw:
            if not isinstance(raw[key], str):
                raise BaselineError(path, f'environment: "{key}" must be a string')
            values[key] = raw[key]
    return Environment(**values)


def _finite(path: Path, where: str, key: str, value: Any, positive: bool, high: float | None = None) -> float:
    if isinstance(value, float) and math.isinf(value):  # an overflowing literal (1e400): read without a hook
        raise BaselineError(path, f'{where}: "{key}" is outside the range of a double (it reads as {value})')
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or (positive and value <= 0) or (not positive and value < 0):
        need = "a finite number > 0" if positive else "a finite number >= 0"
        raise BaselineError(path, f'{where}: "{key}" must be {need}, got {value!r}')
    if high is not None and value > high:
        raise BaselineError(path, f'{where}: "{key}" = {value:g} is above {high:g}: not a measured time')
    return float(value)


_PLAIN_NUMBERS = {float, int}


def _numbers(
    path: Path, where: str, key: str, raw: Any, min_len: int, positive: bool, high: float | None = None
) -> tuple[float, ...]:
    if not isinstance(raw, list) or len(raw) < min_len:
        raise BaselineError(path, f'{where}: "{key}" must be a list of at least {min_len} numbers')
    # the common case checked in one pass of built-ins (a 10,000-case baseline holds millions of samples);
    # any doubt goes through the per-value check, which names the bad value
    if raw and set(map(type, raw)) <= _PLAIN_NUMBERS:  # bool is a type of its own here: it falls through
        values = tuple(map(float, raw))
        low, top = min(values), max(values)
        if all(map(math.isfinite, values)) and (low > 0 if positive else low >= 0) and (high is None or top <= high):
            return values
    return tuple(_finite(path, where, f"{key}[{i}]", v, positive, high) for i, v in enumerate(raw))


def _case(path: Path, case_id: str, c: Any) -> BaselineCase:
    where = _case_where(path, case_id, c)
    timer_raw = c.get("timer", "cuda_event")
    if not isinstance(timer_raw, str) or timer_raw not in {t.value for t in Timer}:
        raise BaselineError(path, f"{where}: unknown timer {timer_raw!r}")
    if "median_ms" not in c:
        raise BaselineError(path, f'{where}: missing "median_ms"')
    median = _finite(path, where, "median_ms", c["median_ms"], positive=True, high=MAX_TIME_MS)
    raw_samples = _field(path, c, "samples_ms", list, where)
    samples = _numbers(path, where, "samples_ms", raw_samples, 2, positive=False, high=MAX_TIME_MS)
    points: tuple[float, ...] = ()
    if c.get("sample_count") is not None:
        points, samples = samples, _expanded(path, where, samples, c["sample_count"])
    procs = _processes(path, where, c, "process_medians_ms", MAX_TIME_MS)
    speedups = _processes(path, where, c, "process_speedups", None)
    mcycles = _processes(path, where, c, "process_mcycles", MAX_MCYCLES)
    _median_within(path, where, median, procs, samples)
    optional = _scalars(path, where, c)
    return BaselineCase(
        case_id,
        Timer(timer_raw),
        median,
        samples,
        _metrics(path, where, c.get("metrics", [])),
        procs,
        optional.get("noise_pct"),
        optional.get("threshold_pct"),
        _autotune(path, where, c.get("autotune", {})),
        _gpu_state(path, where, c.get("gpu_state")),
        speedups,
        optional.get("speedup_noise_pct"),
        optional.get("speedup_threshold_pct"),
        optional.get("autotune_process_median_ms"),
        optional.get("autotune_process_speedup"),
        _host_state(path, where, c.get("host_state")),
        points,
        _compiled(path, where, c.get("compiled")),
        mcycles,
        optional.get("mcycles_noise_pct"),
        optional.get("mcycles_threshold_pct"),
        _imported_from(path, where, c.get("imported_from", "")),
    )


def _case_where(path: Path, case_id: str, c: Any) -> str:
    """How errors name the case, once its id is one line of text and its value an object."""
    where = f"case {case_id!r}"
    if not case_id.strip():
        raise BaselineError(path, "a case id must not be empty")
    if has_control(case_id):
        raise BaselineError(path, f"{where}: the case id holds a control character (a newline, an escape...)")
    if not isinstance(c, dict):
        raise BaselineError(path, f"{where} must be an object")
    return where


_REVIEW_PCTS = (  # written for review, recomputed when gating: finite, may be 0
    "noise_pct",
    "threshold_pct",
    "speedup_noise_pct",
    "speedup_threshold_pct",
    "mcycles_noise_pct",
    "mcycles_threshold_pct",
)
_AUTOTUNE_PROCESS = ("autotune_process_median_ms", "autotune_process_speedup")  # positive


def _scalars(path: Path, where: str, c: dict[str, Any]) -> dict[str, float]:
    """The case's optional single numbers that are present, each checked for what it means."""
    found = {k: _finite(path, where, k, c[k], positive=False) for k in _REVIEW_PCTS if c.get(k) is not None}
    for k in _AUTOTUNE_PROCESS:
        if c.get(k) is not None:
            found[k] = _finite(path, where, k, c[k], positive=True, high=MAX_TIME_MS if k.endswith("_ms") else None)
    return found


def _processes(path: Path, where: str, c: dict[str, Any], key: str, high: float | None) -> tuple[float, ...]:
    """One positive number per calibration process (at least MIN_CALIBRATION_PROCESSES), or () when absent."""
    if c.get(key) in (None, []):
        return ()
    return _numbers(path, where, key, c[key], MIN_CALIBRATION_PROCESSES, True, high)


def _median_within(path: Path, where: str, median: float, procs: tuple[float, ...], samples: tuple[float, ...]) -> None:
    """The median is one of its own numbers: of the calibration processes' medians, else of the samples."""
    spread = procs or samples
    if not min(spread) * (1 - 1e-9) <= median <= max(spread) * (1 + 1e-9):
        source = "process_medians_ms" if procs else "samples_ms"
        raise BaselineError(
            path,
            f'{where}: "median_ms" {median:g} lies outside the range of its {source} '
            f"[{min(spread):g}, {max(spread):g}]",
        )


def _imported_from(path: Path, where: str, raw: Any) -> str:
    if not isinstance(raw, str) or has_control(raw) or len(raw) > 1000:
        raise BaselineError(path, f'{where}: "imported_from" must be a file name (text of one line)')
    return raw


def _compiled(path: Path, where: str, raw: Any) -> CompiledCase | None:
    if raw is None:
        return None
    from perfgate.compiled.codec import from_dict

    try:
        return from_dict(raw, "compiled")
    except ValueError as err:
        raise BaselineError(path, f"{where}: {err}") from err


def _expanded(path: Path, where: str, points: tuple[float, ...], count: Any) -> tuple[float, ...]:
    if isinstance(count, bool) or not isinstance(count, int) or not len(points) <= count <= MAX_SAMPLE_COUNT:
        raise BaselineError(
            path,
            f'{where}: "sample_count" must be an integer from {len(points)} (the points '
            f"in samples_ms) to {MAX_SAMPLE_COUNT:,}, got {count!r}",
        )
    if any(b < a for a, b in itertools.pairwise(points)):
        raise BaselineError(path, f'{where}: "samples_ms" with a "sample_count" are quantiles: they must not decrease')
    return expand_quantiles(points, count)


def _metrics(path: Path, where: str, raw: Any) -> tuple[Metric, ...]:
    if not isinstance(raw, list):
        raise BaselineError(path, f'{where}: "metrics" must be a list')
    out = []
    for i, m in enumerate(raw):
        here = f"{where} metrics[{i}]"
        if not isinstance(m, dict) or not isinstance(m.get("name"), str) or not m["name"]:
            raise BaselineError(path, f'{here}: needs a "name" string and a numeric "value"')
        # every catalogue metric is a count, size, time, rate, ratio or percentage: never negative
        value = _finite(path, here, "value", m.get("value"), positive=False)
        for key in ("unit", "source", "kernel"):
            if not isinstance(m.get(key, ""), str):
                raise BaselineError(path, f'{here}: "{key}" must be a string')
        out.append(
            Metric(
                name=m["name"],
                value=value,
                unit=m.get("unit", ""),
                source=m.get("source", ""),
                kernel=m.get("kernel", ""),
            )
        )
    return tuple(out)


def _autotune(path: Path, where: str, raw: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise BaselineError(path, f'{where}: "autotune" must map kernel names to config strings')
    return tuple(sorted(raw.items()))


_GPU_NUMBERS = (
    "sm_clock_mhz",
    "sm_clock_min_mhz",
    "mem_clock_mhz",
    "temperature_max_c",
    "power_median_w",
    "power_limit_w",
    "throttled_fraction",
    "cooldown_ms",
)


def _gpu_state(path: Path, where: str, raw: Any) -> GpuState | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise BaselineError(path, f'{where}: "gpu_state" must be an object')
    here = f"{where} gpu_state"
    values: dict[str, Any] = {
        k: _finite(path, here, k, raw[k], positive=False) for k in _GPU_NUMBERS if raw.get(k) is not None
    }
    for key in ("polls", "throttle_reasons", "excluded_samples"):
        v = raw.get(key, 0)
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= INT64_MAX:
            raise BaselineError(path, f'{here}: "{key}" must be an integer in [0, 2**63)')
        values[key] = v
    if not isinstance(raw.get("clocks_locked", False), bool):
        raise BaselineError(path, f'{here}: "clocks_locked" must be true or false')
    return GpuState(clocks_locked=raw.get("clocks_locked", False), **values)


def _host_state(path: Path, where: str, raw: Any) -> HostState | None:
    if raw is None:
        return None
    here = f"{where} host_state"
    if not isinstance(raw, dict):
        raise BaselineError(path, f'{where}: "host_state" must be an object')
    cpus, threads = raw.get("cpus"), raw.get("threads")
    for key, v in (("cpus", cpus), ("threads", threads)):
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 1_000_000:
            raise BaselineError(path, f'{here}: "{key}" must be an integer >= 0')
    assert isinstance(cpus, int) and isinstance(threads, int)
    steal = raw.get("steal_pct")
    return HostState(
        load_avg_1m=_finite(path, here, "load_avg_1m", raw.get("load_avg_1m"), positive=False),
        cpus=cpus,
        threads=threads,
        cpu_mhz=_finite(path, here, "cpu_mhz", raw["cpu_mhz"], True) if raw.get("cpu_mhz") else None,
        steal_pct=_finite(path, here, "steal_pct", steal, False) if steal is not None else None,
    )


def _update(path: Path, i: int, u: Any) -> Update:
    where = f"updates[{i}]"
    if not isinstance(u, dict):
        raise BaselineError(path, f"{where} must be an object")
    for key in ("at", "by", "commit", "reason"):
        if not isinstance(u.get(key, ""), str):
            raise BaselineError(path, f'{where}: "{key}" must be a string')
    counts = {}
    for key in ("cases", "calibrated_runs"):
        v = u.get(key, 0)
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= INT64_MAX:
            raise BaselineError(path, f'{where}: "{key}" must be an integer in [0, 2**63)')
        counts[key] = v
    if not isinstance(u.get("dirty", False), bool):
        raise BaselineError(path, f'{where}: "dirty" must be true or false')
    return Update(
        at=u.get("at", ""),
        by=u.get("by", ""),
        commit=u.get("commit", ""),
        reason=u.get("reason", ""),
        dirty=u.get("dirty", False),
        **counts,
    )
