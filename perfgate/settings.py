"""Options, `[tool.perfgate]` and marker arguments -> one frozen Settings, and threshold lookup."""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from perfgate.errors import ConfigError
from perfgate.metrics import TIME_METRIC, spec_for
from perfgate.model import Threshold

PROFILERS = frozenset({"nsys", "ncu"})


@dataclass(frozen=True)
class Override:
    """Per-case overrides selected by a shell-style pattern on the case id."""

    pattern: str
    threshold_pct: float | None = None
    metrics: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class MeasureOptions:
    """How one case is timed; the marker may change any of these."""

    warmup_ms: float = 25.0
    min_samples: int = 20
    max_samples: int = 200
    budget_ms: float = 400.0
    flush_l2: bool = True

    def __post_init__(self) -> None:
        if self.min_samples < 2 or self.max_samples < self.min_samples:
            raise ConfigError(f"perfgate: need 2 <= min_samples <= max_samples, got "
                              f"{self.min_samples}, {self.max_samples}")
        if self.warmup_ms < 0 or self.budget_ms <= 0:
            raise ConfigError("perfgate: warmup_ms must be >= 0 and budget_ms > 0")


@dataclass(frozen=True)
class Settings:
    enabled: bool = False
    threshold_pct: float = 3.0
    alpha: float = 0.01
    measure: MeasureOptions = MeasureOptions()
    metric_thresholds: tuple[tuple[str, float], ...] = ()
    overrides: tuple[Override, ...] = ()
    db_path: Path = Path(".perfgate/history.db")
    baseline_dir: Path = Path("baselines")
    baseline_file: Path | None = None
    update_baseline: bool = False
    reason: str = ""
    summary_path: Path | None = None
    json_path: Path | None = None
    report_dir: Path | None = None
    profile: frozenset[str] = frozenset()
    allow_env_mismatch: bool = False
    fail_on_profile_error: bool = False
    ncu_sections: tuple[str, ...] = ()
    ncu_metrics: tuple[str, ...] = ()
    ncu_set: str = ""
    profile_timeout_s: float = 1800.0
    store: bool = True
    peak_tflops: float | None = None  # roofline ceilings; None = best measured in the run
    peak_gbps: float | None = None

    def threshold_for(self, case_id: str, metric: str, marker: "MarkerOptions | None" = None) -> Threshold:
        """Most specific wins: catalogue < [tool.perfgate] < matching overrides (in order) < marker."""
        spec = spec_for(metric)
        pct = spec.threshold_pct if spec else 10.0
        if metric == TIME_METRIC:
            pct = self.threshold_pct
        pct = dict(self.metric_thresholds).get(metric, pct)
        for ov in self.overrides:
            if fnmatch.fnmatchcase(case_id, ov.pattern):
                if metric == TIME_METRIC and ov.threshold_pct is not None:
                    pct = ov.threshold_pct
                pct = dict(ov.metrics).get(metric, pct)
        if marker is not None:
            if metric == TIME_METRIC and marker.threshold_pct is not None:
                pct = marker.threshold_pct
            pct = dict(marker.metrics).get(metric, pct)
        return Threshold(pct=pct, alpha=self.alpha)


@dataclass(frozen=True)
class MarkerOptions:
    """Arguments of `@pytest.mark.perfgate(...)`."""

    threshold_pct: float | None = None
    metrics: tuple[tuple[str, float], ...] = ()
    measure: dict[str, Any] = field(default_factory=dict)


_MEASURE_KEYS = {f.name for f in fields(MeasureOptions)}


def marker_options(kwargs: dict[str, Any], where: str) -> MarkerOptions:
    """Validate marker keyword arguments; unknown ones are an error, not silently ignored."""
    known = {"threshold_pct", "metrics"} | _MEASURE_KEYS
    unknown = set(kwargs) - known
    if unknown:
        raise ConfigError(f"perfgate: {where}: unknown perfgate marker argument(s) {sorted(unknown)}; "
                          f"known: {sorted(known)}")
    metrics = kwargs.get("metrics", {})
    if not isinstance(metrics, dict):
        raise ConfigError(f"perfgate: {where}: marker 'metrics' must be a dict of metric -> threshold_pct")
    return MarkerOptions(
        threshold_pct=_number(kwargs["threshold_pct"], "threshold_pct", where) if "threshold_pct" in kwargs else None,
        metrics=tuple(sorted((str(k), _number(v, k, where)) for k, v in metrics.items())),
        measure={k: v for k, v in kwargs.items() if k in _MEASURE_KEYS},
    )


def _number(value: Any, key: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"perfgate: {where}: '{key}' must be a number, got {value!r}")
    return float(value)


def read_pyproject(rootdir: Path) -> dict[str, Any]:
    """The `[tool.perfgate]` table of rootdir/pyproject.toml, or {} when there is none."""
    path = rootdir / "pyproject.toml"
    if not path.is_file():
        return {}
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise ConfigError(f"perfgate: cannot read {path}: {err}") from err
    table = data.get("tool", {}).get("perfgate", {})
    if not isinstance(table, dict):
        raise ConfigError(f"perfgate: {path}: [tool.perfgate] must be a table")
    return table


_TOP_KEYS = {"threshold_pct", "alpha", "metrics", "overrides", "fail_on_profile_error", "ncu_sections",
             "ncu_metrics", "ncu_set", "profile_timeout_s", "baseline_dir", "db", "peak_tflops",
             "peak_gbps"} | _MEASURE_KEYS


def settings_from_config(table: dict[str, Any], where: str = "[tool.perfgate]", **options: Any) -> Settings:
    """Build Settings from the pyproject table, then command-line options (which win when given)."""
    unknown = set(table) - _TOP_KEYS
    if unknown:
        raise ConfigError(f"perfgate: {where}: unknown key(s) {sorted(unknown)}")
    measure = MeasureOptions(**{k: table[k] for k in _MEASURE_KEYS if k in table})
    overrides = []
    for i, ov in enumerate(table.get("overrides", [])):
        if not isinstance(ov, dict) or "pattern" not in ov:
            raise ConfigError(f"perfgate: {where}: overrides[{i}] needs a 'pattern'")
        extra = set(ov) - {"pattern", "threshold_pct", "metrics"}
        if extra:
            raise ConfigError(f"perfgate: {where}: overrides[{i}]: unknown key(s) {sorted(extra)}")
        overrides.append(Override(
            pattern=str(ov["pattern"]),
            threshold_pct=_number(ov["threshold_pct"], "threshold_pct", where) if "threshold_pct" in ov else None,
            metrics=tuple(sorted((k, _number(v, k, where)) for k, v in ov.get("metrics", {}).items())),
        ))
    base = Settings(
        threshold_pct=_number(table.get("threshold_pct", 3.0), "threshold_pct", where),
        alpha=_number(table.get("alpha", 0.01), "alpha", where),
        measure=measure,
        metric_thresholds=tuple(sorted((k, _number(v, k, where)) for k, v in table.get("metrics", {}).items())),
        overrides=tuple(overrides),
        fail_on_profile_error=bool(table.get("fail_on_profile_error", False)),
        ncu_sections=tuple(table.get("ncu_sections", ())),
        ncu_metrics=tuple(table.get("ncu_metrics", ())),
        ncu_set=str(table.get("ncu_set", "")),
        profile_timeout_s=_number(table.get("profile_timeout_s", 1800.0), "profile_timeout_s", where),
        baseline_dir=Path(table.get("baseline_dir", "baselines")),
        db_path=Path(table.get("db", ".perfgate/history.db")),
        peak_tflops=_number(table["peak_tflops"], "peak_tflops", where) if "peak_tflops" in table else None,
        peak_gbps=_number(table["peak_gbps"], "peak_gbps", where) if "peak_gbps" in table else None,
    )
    given = {k: v for k, v in options.items() if v is not None}
    if "profile" in given:
        given["profile"] = parse_profile_list(given["profile"])
    return replace(base, **given)


def parse_profile_list(value: str | frozenset[str]) -> frozenset[str]:
    if isinstance(value, frozenset):
        return value
    tools = frozenset(t.strip() for t in value.split(",") if t.strip())
    bad = tools - PROFILERS
    if bad:
        raise ConfigError(f"perfgate: --perfgate-profile: unknown profiler(s) {sorted(bad)}; use nsys, ncu or nsys,ncu")
    return tools
