"""Options, `[tool.perfgate]` and marker arguments -> one frozen, validated Settings.

Precedence for a value: default < `[tool.perfgate]` < environment (PERFGATE_DB) < command-line option.
Relative paths in the table are relative to the project root; on the command line, to the current
directory (as the user typed them).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from perfgate import config_schema as cs
from perfgate.errors import ConfigError
from perfgate.metrics import CATALOGUE

PROFILERS = ("nsys", "ncu")
DB_ENV = "PERFGATE_DB"  # a runner-local history outside the checkout (CI deletes the checkout)


@dataclass(frozen=True)
class MeasureOptions:
    """How one case is timed; the marker may change any of these."""

    warmup_ms: float = 25.0
    min_samples: int = 20
    max_samples: int = 200
    budget_ms: float = 400.0
    flush_l2: bool = True
    cooldown_max_ms: float = 3000.0  # the bounded wait for the GPU's power state to settle (0: never wait)
    exclude_throttled: bool = True  # drop samples NVML saw under a power/thermal cap, when enough remain
    memory: bool = True  # measure peak memory per call

    def __post_init__(self) -> None:
        if self.max_samples < self.min_samples:
            raise ConfigError(f"perfgate: need min_samples <= max_samples, got {self.min_samples} > {self.max_samples}")


MEASURE_PARSERS: dict[str, cs.Parser] = {
    "warmup_ms": cs.number(0.0, 60_000.0), "min_samples": cs.integer(2, 1_000_000),
    "max_samples": cs.integer(2, 1_000_000), "budget_ms": cs.number(0.0, 3_600_000.0, low_open=True),
    "flush_l2": cs.boolean, "cooldown_max_ms": cs.number(0.0, 600_000.0), "exclude_throttled": cs.boolean,
    "memory": cs.boolean,
}


@dataclass(frozen=True)
class Override:
    """Per-case overrides selected by a shell-style pattern on the case id."""

    pattern: str
    threshold_pct: float | None = None
    metrics: tuple[tuple[str, float], ...] = ()
    min_speedup: float | None = None


@dataclass(frozen=True)
class MarkerOptions:
    """Arguments of `@pytest.mark.perfgate(...)`, validated."""

    threshold_pct: float | None = None
    metrics: tuple[tuple[str, float], ...] = ()
    min_speedup: float | None = None
    measure: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class Settings:
    enabled: bool = False
    strict: bool = False
    threshold_pct: float = 3.0
    min_effect_pct: float = 1.0
    alpha: float = 0.01
    confirm_alpha: float = 0.001
    confirm_runs: int = 2
    noise_floor_pct: float | None = None  # None: 0.1% for CUDA events, 0.5% for the host clock
    measure: MeasureOptions = MeasureOptions()
    metric_thresholds: tuple[tuple[str, float], ...] = ()
    overrides: tuple[Override, ...] = ()
    min_speedup: float | None = None
    db_path: Path = Path(".perfgate/history.db")
    baseline_dir: Path = Path("baselines")
    baseline_file: Path | None = None
    update_baseline: bool = False
    reason: str = ""
    summary_path: Path | None = None
    json_path: Path | None = None
    report_dir: Path | None = None
    benchmark_json_path: Path | None = None  # github-action-benchmark's customSmallerIsBetter
    benchmark_speedup_json_path: Path | None = None  # github-action-benchmark's customBiggerIsBetter (speedups)
    bencher_json_path: Path | None = None  # Bencher Metric Format
    json_samples: bool = False  # every timed sample in the JSON results (large)
    full_table: bool = False  # the terminal lists every row, not failing + changed + counts
    profile: frozenset[str] = frozenset()
    allow_env_mismatch: bool = False
    fail_on_profile_error: bool = False
    ncu_sections: tuple[str, ...] = ()
    ncu_metrics: tuple[str, ...] = ()
    ncu_set: str = ""
    profile_timeout_s: float = 1800.0
    store: bool = True
    peak_tflops: float | None = None  # roofline ceilings; None = the device's spec, else best measured
    peak_gbps: float | None = None
    pin_autotune: bool = False
    publish_host: bool = False  # hostname and absolute paths in published outputs (opt-in)
    chart_url: str = ""  # where the charts are published (links in a job summary need absolute URLs)
    rootdir: Path = Path(".")
    pyproject: Path | None = None  # where the table came from, for messages


_SCALAR_PARSERS: dict[str, cs.Parser] = {
    "strict": cs.boolean, "threshold_pct": cs.THRESHOLD, "min_effect_pct": cs.THRESHOLD,
    "alpha": cs.number(0.0, 1.0, low_open=True, high_open=True),
    "confirm_alpha": cs.number(0.0, 1.0, low_open=True, high_open=True),
    "confirm_runs": cs.integer(0, 20), "noise_floor_pct": cs.number(0.0, 100.0),
    "min_speedup": cs.POSITIVE, "fail_on_profile_error": cs.boolean,
    "ncu_set": cs.text, "profile_timeout_s": cs.number(1.0, 86_400.0),
    "peak_tflops": cs.POSITIVE, "peak_gbps": cs.POSITIVE, "pin_autotune": cs.boolean,
    "publish_host": cs.boolean, "chart_url": cs.text,
}
_LIST_KEYS = {"ncu_sections", "ncu_metrics"}
_PATH_KEYS = {"baseline_dir": "baseline_dir", "db": "db_path"}
TOP_KEYS = set(_SCALAR_PARSERS) | _LIST_KEYS | set(_PATH_KEYS) | set(MEASURE_PARSERS) | {"metrics", "overrides"}


def metric_known(ncu_metrics: tuple[str, ...]) -> Any:
    return lambda name: name in CATALOGUE or name in ncu_metrics


def settings_from_config(table: dict[str, Any], where: str = "[tool.perfgate]", rootdir: Path | None = None,
                         **options: Any) -> Settings:
    """Validate the pyproject table, then apply command-line options (which win when not None)."""
    if not isinstance(table, dict):
        raise ConfigError(f"perfgate: {where}: must be a table")
    cs.check_keys(table, TOP_KEYS, where)
    values: dict[str, Any] = {k: p(table[k], f"{where} {k}") for k, p in _SCALAR_PARSERS.items() if k in table}
    values.update({k: cs.text_list(table[k], f"{where} {k}") for k in _LIST_KEYS if k in table})
    values.update({attr: cs.path(table[k], f"{where} {k}") for k, attr in _PATH_KEYS.items() if k in table})
    known = metric_known(values.get("ncu_metrics", ()))
    values["measure"] = measure_options({k: table[k] for k in MEASURE_PARSERS if k in table}, where)
    if "metrics" in table:
        values["metric_thresholds"] = cs.metric_table(known)(table["metrics"], f"{where} metrics")
    if "overrides" in table:
        values["overrides"] = _overrides(table["overrides"], where, known)
    root = rootdir or Path(".")
    for attr in ("db_path", "baseline_dir"):  # relative to the project root, not the current directory
        if attr in values and not values[attr].is_absolute():
            values[attr] = root / values[attr]
    if "db_path" not in values:
        values["db_path"] = root / Settings.db_path
    if "baseline_dir" not in values:
        values["baseline_dir"] = root / Settings.baseline_dir
    env_db = os.environ.get(DB_ENV, "").strip()
    if env_db:
        values["db_path"] = Path(env_db)
    settings = Settings(rootdir=root, **values)
    return apply_options(settings, options)


def measure_options(raw: dict[str, Any], where: str, base: MeasureOptions | None = None) -> MeasureOptions:
    parsed = {k: MEASURE_PARSERS[k](v, f"{where} {k}") for k, v in raw.items()}
    return replace(base or MeasureOptions(), **parsed)


def _overrides(raw: Any, where: str, known: Any) -> tuple[Override, ...]:
    if not isinstance(raw, list):
        raise ConfigError(f"perfgate: {where} overrides: must be an array of tables ([[tool.perfgate.overrides]])")
    out = []
    for i, ov in enumerate(raw):
        here = f"{where} overrides[{i}]"
        if not isinstance(ov, dict):
            raise ConfigError(f"perfgate: {here}: must be a table")
        cs.check_keys(ov, {"pattern", "threshold_pct", "metrics", "min_speedup"}, here)
        if "pattern" not in ov:
            raise ConfigError(f"perfgate: {here}: needs a 'pattern'")
        out.append(Override(
            pattern=cs.nonempty_text(ov["pattern"], f"{here} pattern"),
            threshold_pct=cs.THRESHOLD(ov["threshold_pct"], f"{here} threshold_pct") if "threshold_pct" in ov else None,
            metrics=cs.metric_table(known)(ov["metrics"], f"{here} metrics") if "metrics" in ov else (),
            min_speedup=cs.POSITIVE(ov["min_speedup"], f"{here} min_speedup") if "min_speedup" in ov else None,
        ))
    return tuple(out)


_OPTION_PARSERS: dict[str, cs.Parser] = {
    "enabled": cs.boolean, "strict": cs.boolean, "db_path": cs.path, "baseline_dir": cs.path,
    "baseline_file": cs.path, "update_baseline": cs.boolean, "reason": cs.text, "summary_path": cs.path,
    "json_path": cs.path, "report_dir": cs.path, "benchmark_json_path": cs.path, "allow_env_mismatch": cs.boolean,
    "store": cs.boolean, "pin_autotune": cs.boolean, "publish_host": cs.boolean, "chart_url": cs.text,
    "confirm_runs": cs.integer(0, 20), "benchmark_speedup_json_path": cs.path, "bencher_json_path": cs.path,
    "json_samples": cs.boolean, "full_table": cs.boolean,
}


def apply_options(settings: Settings, options: dict[str, Any]) -> Settings:
    """Command-line values (None = not given) over the configured ones."""
    given: dict[str, Any] = {}
    for key, value in options.items():
        if value is None:
            continue
        if key == "profile":
            given["profile"] = parse_profile_list(value)
        elif key in _OPTION_PARSERS:
            given[key] = _OPTION_PARSERS[key](value, f"option {key}")
        else:
            raise ConfigError(f"perfgate: unknown setting {key!r}")
    return replace(settings, **given)


def parse_profile_list(value: str | frozenset[str]) -> frozenset[str]:
    if isinstance(value, frozenset):
        return value
    tools = frozenset(t.strip() for t in str(value).split(",") if t.strip())
    bad = tools - set(PROFILERS)
    if bad or not tools:
        raise ConfigError(f"perfgate: --perfgate-profile: unknown profiler(s) {sorted(bad)}; use nsys, ncu or nsys,ncu")
    return tools


_MARKER_KEYS = {"threshold_pct", "metrics", "min_speedup"} | set(MEASURE_PARSERS)


def marker_options(kwargs: dict[str, Any], where: str, ncu_metrics: tuple[str, ...] = ()) -> MarkerOptions:
    """Validate marker keyword arguments; unknown ones are an error, not silently ignored."""
    unknown = set(kwargs) - _MARKER_KEYS
    if unknown:
        raise ConfigError(f"perfgate: {where}: unknown perfgate marker argument(s) {sorted(unknown)}; "
                          f"known: {sorted(_MARKER_KEYS)}")
    here = f"{where}: perfgate marker"
    measure = {k: MEASURE_PARSERS[k](v, f"{here} {k}") for k, v in kwargs.items() if k in MEASURE_PARSERS}
    if measure.get("max_samples", 10**9) < measure.get("min_samples", 0):
        raise ConfigError(f"perfgate: {here}: min_samples > max_samples")
    return MarkerOptions(
        threshold_pct=cs.THRESHOLD(kwargs["threshold_pct"],
                                   f"{here} threshold_pct") if "threshold_pct" in kwargs else None,
        metrics=cs.metric_table(metric_known(ncu_metrics))(kwargs["metrics"],
                                                           f"{here} metrics") if "metrics" in kwargs else (),
        min_speedup=cs.POSITIVE(kwargs["min_speedup"], f"{here} min_speedup") if "min_speedup" in kwargs else None,
        measure=tuple(sorted(measure.items())),
    )


def measure_for(settings: Settings, marker: MarkerOptions | None) -> MeasureOptions:
    """The case's timing options: the marker's over the configured ones (checked together)."""
    if marker is None or not marker.measure:
        return settings.measure
    try:
        return replace(settings.measure, **dict(marker.measure))
    except ConfigError as err:
        raise ConfigError(f"{err} (marker and [tool.perfgate] together)") from err

