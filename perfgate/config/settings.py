"""Options, `[tool.perfgate]` and marker arguments -> one frozen, validated Settings.

Which options exist, how each is checked and where it may be set is the table in options.py; this module
applies it. Precedence for a value: default < `[tool.perfgate]` < environment (PERFGATE_DB) < command-line
option. Relative paths in the table are relative to the project root; on the command line, to the current
directory (as the user typed them).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from perfgate.compiled.records import StaticPolicy
from perfgate.config import options as opts
from perfgate.config import validate as cs
from perfgate.errors import ConfigError, one_line
from perfgate.metrics import CATALOGUE
from perfgate.model import AbProcess, AllowedMissing, GatedMeasure, HostTimer
from perfgate.store.target import HistoryTarget

DB_ENV = "PERFGATE_DB"
# keys of earlier versions whose meaning changed: one line naming the replacement, not a silent reinterpretation
REPLACED_KEYS = {
    "alpha": "false_alarm_pct (the false-alarm budget of a whole run, 1% by default)",
    "confirm_alpha": "false_alarm_pct (a confirmation is charged to the run's budget)",
}  # a runner-local history outside the checkout (CI deletes the checkout)


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
    move_inputs: bool = True  # A/B mode: the case's CUDA inputs copied to a fresh place every round
    host_timer: HostTimer = HostTimer.WALL  # a host case's clock: wall time, or the thread's / process's CPU time

    def __post_init__(self) -> None:
        if self.max_samples < self.min_samples:
            raise ConfigError(f"perfgate: need min_samples <= max_samples, got {self.min_samples} > {self.max_samples}")


@dataclass(frozen=True)
class Override:
    """Per-case overrides selected by a shell-style pattern on the case id."""

    pattern: str
    threshold_pct: float | None = None
    metrics: tuple[tuple[str, float], ...] = ()
    min_speedup: float | None = None
    gated_measure: GatedMeasure | None = None


@dataclass(frozen=True)
class MarkerOptions:
    """Arguments of `@pytest.mark.perfgate(...)`, validated."""

    threshold_pct: float | None = None
    metrics: tuple[tuple[str, float], ...] = ()
    min_speedup: float | None = None
    gated_measure: GatedMeasure | None = None
    measure: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class Settings:
    enabled: bool = False
    strict: bool = False
    threshold_pct: float = 3.0
    min_effect_pct: float = 1.0
    false_alarm_pct: float = 1.0  # per run, divided over its gated tests (gate/decision.py)
    confirm_runs: int = 2  # fresh processes a suspect must also fail in
    noise_window: int = 30  # recent passing runs on noise_branch whose process values join the noise
    noise_branch: str = ""  # "": the repository's default branch (gate/run.py); "*": every branch
    gate_time_with_reference: bool = False  # a case with a reference is gated on its speedup only
    gated_measure: GatedMeasure = GatedMeasure.AUTO  # time or SM cycles per case (gate/bottleneck.py)
    noise_floor_pct: float | None = None  # None: 0.1% for CUDA events, 0.5% for the host clock
    measure: MeasureOptions = MeasureOptions()
    metric_thresholds: tuple[tuple[str, float], ...] = ()
    overrides: tuple[Override, ...] = ()
    min_speedup: float | None = None
    db_path: HistoryTarget = Path(".perfgate/history.db")  # a SQLite file, or a server's URL (store/target.py)
    baseline_dir: Path = Path("baselines")
    baseline_file: Path | None = None
    update_baseline: bool = False
    reason: str = ""
    baseline_ref: str = ""  # "" : origin/$GITHUB_BASE_REF when that is set (baseline/base_ref.py)
    accept_baseline_change: bool = False
    allow_missing: tuple[AllowedMissing, ...] = ()
    ceiling_pct: float = 100.0  # strict: a process this much slower fails, whatever the noise
    summary_path: Path | None = None
    json_path: Path | None = None
    report_dir: Path | None = None
    benchmark_json_path: Path | None = None  # github-action-benchmark's customSmallerIsBetter
    benchmark_speedup_json_path: Path | None = None  # github-action-benchmark's customBiggerIsBetter (speedups)
    bencher_json_path: Path | None = None  # Bencher Metric Format
    # pytest-benchmark's own format: --benchmark-json, and --benchmark-save/-autosave's file in its storage
    pytest_benchmark_json_path: Path | None = None
    pytest_benchmark_save_path: Path | None = None
    pytest_benchmark_save_data: bool = False  # --benchmark-save-data: the saved file keeps every sample
    junit_xml_path: Path | None = None  # the verdicts as JUnit XML
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
    compiled_kernels: bool = True  # record each case's compiled kernels (perfgate/compiled/)
    static_registers: StaticPolicy = StaticPolicy.FAIL  # the static gate (gate/static.py), per metric
    static_registers_margin: int = 16
    static_spills: StaticPolicy = StaticPolicy.FAIL
    static_occupancy: StaticPolicy = StaticPolicy.FAIL
    static_shared_memory: StaticPolicy = StaticPolicy.WARN
    publish_host: bool = False  # hostname and absolute paths in published outputs (opt-in)
    chart_url: str = ""  # where the charts are published (links in a job summary need absolute URLs)
    site_url: str = ""  # where `perfgate report --html` is published: the summary links to the case pages
    repo_url: str = ""  # the repository's web address: the dashboard's commit links ("" = detected)
    base: str = ""  # A/B mode: the git ref measured side by side with the head ("" = baseline mode)
    ab_fresh_pair: bool = True  # A/B mode: a call must be repeated by a fresh pair of processes
    ab_process: AbProcess = AbProcess.AUTO  # A/B mode: both trees in one process, or one each
    ab_rounds: int = 20  # A/B mode: rounds per case and stage (budget_ms / ab_rounds per side and round)
    worktree_dir: Path | None = None  # A/B mode: cached base worktrees (None: $XDG_CACHE_HOME/perfgate/worktrees)
    ab_timeout_s: float = 900.0  # A/B mode: the longest one worker step may take before it is called hung
    ab_skip_same_code: bool = True  # A/B mode: a case with the same compiled code on both sides is not measured
    rootdir: Path = Path(".")
    pyproject: Path | None = None  # where the table came from, for messages


def metric_known(ncu_metrics: tuple[str, ...]) -> Any:
    return lambda name: name in CATALOGUE or name in ncu_metrics


def settings_from_config(
    table: dict[str, Any],
    where: str = "[tool.perfgate]",
    rootdir: Path | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Validate the pyproject table, then apply command-line values (by Settings attribute; options.py)."""
    if not isinstance(table, dict):
        raise ConfigError(f"perfgate: {where}: must be a table")
    _check_keys(table, where)
    values: dict[str, Any] = {}
    measure: dict[str, Any] = {}
    for opt in opts.OPTIONS:
        if opt.key is not None and opt.key in table:
            (measure if opt.measure else values)[opt.attr] = opt.parse(table[opt.key], f"{where} {opt.key}")
    known = metric_known(values.get("ncu_metrics", ()))
    values["measure"] = MeasureOptions(**measure) if measure else MeasureOptions()
    if "metrics" in table:
        values["metric_thresholds"] = cs.metric_table(known)(table["metrics"], f"{where} metrics")
    if "overrides" in table:
        values["overrides"] = _overrides(table["overrides"], where, known)
    root = rootdir or Path(".")
    for attr in _table_paths():  # relative to the project root, not the current directory
        if attr in values and isinstance(values[attr], Path) and not values[attr].is_absolute():
            values[attr] = root / values[attr]
    if "db_path" not in values:
        values["db_path"] = root / Path(".perfgate/history.db")
    if "baseline_dir" not in values:
        values["baseline_dir"] = root / Settings.baseline_dir
    env_db = os.environ.get(DB_ENV, "").strip()
    if env_db:
        values["db_path"] = cs.history(env_db, DB_ENV)
    try:
        settings = Settings(rootdir=root, **values)
    except ConfigError as err:
        raise ConfigError(f"{err} ({where})") from err
    return replace(settings, **opts.check_overrides(overrides or {}))


def _table_paths() -> tuple[str, ...]:
    """The path options a `[tool.perfgate]` key may set."""
    return tuple(o.attr for o in opts.OPTIONS if o.key is not None and o.arg in (opts.Arg.PATH, opts.Arg.HISTORY))


def _check_keys(table: dict[str, Any], where: str) -> None:
    for old, new in REPLACED_KEYS.items():
        if old in table:
            raise ConfigError(f"perfgate: {where}: {old!r} was replaced by {new}: remove it")
    cs.check_keys(table, opts.pyproject_keys(), where)


def _overrides(raw: object, where: str, known: Any) -> tuple[Override, ...]:
    if not isinstance(raw, list):
        raise ConfigError(f"perfgate: {where} overrides: must be an array of tables ([[tool.perfgate.overrides]])")
    out = []
    for i, ov in enumerate(raw):
        here = f"{where} overrides[{i}]"
        if not isinstance(ov, dict):
            raise ConfigError(f"perfgate: {here}: must be a table")
        cs.check_keys(ov, {"pattern", "threshold_pct", "metrics", "min_speedup", "gated_measure"}, here)
        if "pattern" not in ov:
            raise ConfigError(f"perfgate: {here}: needs a 'pattern'")
        out.append(
            Override(
                pattern=cs.nonempty_text(ov["pattern"], f"{here} pattern"),
                threshold_pct=cs.THRESHOLD(ov["threshold_pct"], f"{here} threshold_pct")
                if "threshold_pct" in ov
                else None,
                metrics=cs.metric_table(known)(ov["metrics"], f"{here} metrics") if "metrics" in ov else (),
                min_speedup=cs.SPEEDUP(ov["min_speedup"], f"{here} min_speedup") if "min_speedup" in ov else None,
                gated_measure=cs.choice(GatedMeasure)(ov["gated_measure"], f"{here} gated_measure")
                if "gated_measure" in ov
                else None,
            )
        )
    return tuple(out)


def marker_options(kwargs: dict[str, Any], where: str, ncu_metrics: tuple[str, ...] = ()) -> MarkerOptions:
    """Validate marker keyword arguments; unknown ones are an error, not silently ignored."""
    known_keys = opts.marker_keys()
    unknown = set(kwargs) - known_keys
    if unknown:
        raise ConfigError(
            f"perfgate: {where}: unknown perfgate marker argument(s) {sorted(unknown)}; known: {sorted(known_keys)}"
        )
    here = f"{where}: perfgate marker"
    table = opts.by_attr()
    parsed = {k: table[k].parse(value, f"{here} {k}") for k, value in kwargs.items() if k in table}
    measure = {k: value for k, value in parsed.items() if table[k].measure}
    if measure.get("max_samples", 10**9) < measure.get("min_samples", 0):
        raise ConfigError(f"perfgate: {here}: min_samples > max_samples")
    metrics = (
        cs.metric_table(metric_known(ncu_metrics))(kwargs["metrics"], f"{here} metrics") if "metrics" in kwargs else ()
    )
    return MarkerOptions(
        threshold_pct=parsed.get("threshold_pct"),
        metrics=metrics,
        min_speedup=parsed.get("min_speedup"),
        gated_measure=parsed.get("gated_measure"),
        measure=tuple(sorted(measure.items())),
    )


def bad_markers_line(bad: Sequence[tuple[str, Sequence[str]]]) -> str:
    """One line for a run's bad perfgate markers, each (its problem naming its first test, the tests that carry
    it): the first one's problem, the other tests with it, and how many other bad markers there are."""
    (problem, nodeids), others = bad[0], len(bad) - 1
    more = ""
    if len(nodeids) > 1:
        rest = list(nodeids[1:])
        shown = ", ".join(rest[:3]) + (", ..." if len(rest) > 3 else "")
        more = f" (and {len(rest)} more test{'s' if len(rest) > 1 else ''} with the same problem: {shown})"
    also = f"; {others} other perfgate marker(s) are bad too" if others else ""
    return one_line(problem + more + also, 600)


def measure_for(settings: Settings, marker: MarkerOptions | None) -> MeasureOptions:
    """The case's timing options: the marker's over the configured ones (checked together)."""
    if marker is None or not marker.measure:
        return settings.measure
    try:
        return replace(settings.measure, **dict(marker.measure))
    except ConfigError as err:
        raise ConfigError(f"{err} (marker and [tool.perfgate] together)") from err
