"""Every perfgate option, declared once.

One row per setting: the Settings (or MeasureOptions) attribute it fills, how a value is checked, its help,
and where a user may set it: the `[tool.perfgate]` key, the pytest flag, the `perfgate` command-line flag,
the `@pytest.mark.perfgate(...)` marker. `pytest_addoption`, the settings loader, the commands' argparse
parsers and the README's options table are all made from this table (tests/test_options.py checks the
README), so a new option is one row here and one field in Settings.

Precedence for a value: default < `[tool.perfgate]` < environment (PERFGATE_DB) < command line.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfgate.compiled.records import StaticPolicy
from perfgate.config import validate as v
from perfgate.errors import ConfigError
from perfgate.model import AbProcess, GatedMeasure, HostTimer
from perfgate.store.target import HistoryTarget, history_target


class Arg(enum.Enum):
    """How a command-line value is read before `parse` checks it."""

    FLAG = "flag"  # --x: True when given
    NO_FLAG = "no flag"  # --no-x: False when given
    PATH = "path"
    HISTORY = "history"  # a SQLite path or a postgresql:// URL
    INT = "int"
    NUMBER = "number"
    TEXT = "text"


def parse_profile_list(value: object, where: str) -> frozenset[str]:
    """ "nsys", "ncu", "nsys,ncu" or any registered profiler's name (or an already parsed set) -> the profilers
    to run (measure/profiler_registry.py knows which exist)."""
    if isinstance(value, frozenset):
        return value
    from perfgate.measure.profiler_registry import profilers_named

    tools = frozenset(t.strip() for t in v.text(value, where).split(",") if t.strip())
    if not tools:
        raise ConfigError(f"perfgate: {where}: name at least one profiler")
    try:
        profilers_named(tools)
    except ConfigError as err:
        raise ConfigError(f"{err} ({where})") from err
    return tools


@dataclass(frozen=True)
class Option:
    attr: str  # the Settings attribute (MeasureOptions when `measure`)
    help: str
    parse: v.Parser
    key: str | None = None  # [tool.perfgate] key
    flag: str | None = None  # pytest flag
    cli: str | None = None  # `perfgate` command flag (a command names the attributes it takes)
    arg: Arg = Arg.TEXT
    marker: bool = False  # may be set per test with @pytest.mark.perfgate(...)
    measure: bool = False  # a MeasureOptions field (how one case is timed)
    metavar: str | None = None
    # only from pytest's own command line, never from addopts or PYTEST_ADDOPTS: a project's files (which a
    # pull request edits) must not switch a gate into writing its baseline or out of its checks
    command_line_only: bool = False

    @property
    def where(self) -> str:
        """How a user spells it, for messages."""
        return self.flag or self.cli or f"[tool.perfgate] {self.key}"

    def help_as(self, spelling: str) -> str:
        """The help where options are spelt as `spelling` ("flag": pytest, "cli": a perfgate command, "key":
        pyproject): `{json_samples}` in a help names that option as this interface spells it, so a
        command's --help never names a pytest-only flag."""

        def spelt(m: re.Match[str]) -> str:
            other = by_attr()[m.group(1)]
            return str(getattr(other, spelling) or other.where)

        return re.sub(r"\{([a-z_]+)\}", spelt, self.help)


_P = v.path
OPTIONS: tuple[Option, ...] = (
    # --- what a run does ------------------------------------------------------------------------------
    Option(
        "enabled", "measure perf cases, store the run, gate on baselines", v.boolean, flag="--perfgate", arg=Arg.FLAG
    ),
    Option(
        "strict",
        "fail closed: no case measured, a baseline case not measured (skipped, deselected, renamed), "
        "not comparable, a profiler failure, the host clock against a CUDA baseline, a process beyond ceiling_pct, "
        "a baseline changed since the base ref each fail the gate",
        v.boolean,
        key="strict",
        flag="--perfgate-strict",
        cli="--strict",
        arg=Arg.FLAG,
    ),
    Option(
        "update_baseline",
        "write the baseline from this run (uncalibrated; prefer perfgate calibrate); only on pytest's own command line",
        v.boolean,
        flag="--perfgate-update-baseline",
        arg=Arg.FLAG,
        command_line_only=True,
    ),
    Option(
        "reason",
        "why the baseline changes (required with --perfgate-update-baseline)",
        v.text,
        flag="--perfgate-reason",
        metavar="TEXT",
    ),
    Option(
        "store",
        "write nothing: no history, no initial baseline (outputs named by an option still are)",
        v.boolean,
        flag="--perfgate-no-store",
        cli="--no-store",
        arg=Arg.NO_FLAG,
    ),
    Option(
        "baseline_ref",
        "the git ref a pull request is gated against (default: origin/$GITHUB_BASE_REF): a "
        "baseline or [tool.perfgate] that differs from it fails strict mode unless the change is stated; only on "
        "pytest's own command line",
        v.text,
        flag="--perfgate-baseline-ref",
        metavar="REF",
        command_line_only=True,
    ),
    Option(
        "accept_baseline_change",
        "the pull request states that its baseline or [tool.perfgate] change is "
        "intended (the workflow passes it for a labelled PR); only on pytest's own command line",
        v.boolean,
        flag="--perfgate-accept-baseline-change",
        arg=Arg.FLAG,
        command_line_only=True,
    ),
    Option(
        "allow_missing",
        'baseline cases a strict gate may miss, each with its reason: [{pattern = "shell '
        'pattern on case ids", reason = "why"}]',
        v.allowed_missing,
        key="allow_missing",
    ),
    Option(
        "allow_env_mismatch",
        "compare even when the baseline was measured on another device model",
        v.boolean,
        flag="--perfgate-allow-env-mismatch",
        cli="--allow-env-mismatch",
        arg=Arg.FLAG,
    ),
    # --- where things are -------------------------------------------------------------------------------
    Option(
        "db_path",
        "history: a SQLite file (default .perfgate/history.db) or a postgresql:// URL (a fleet's server; "
        "give it in $PERFGATE_DB from a secret, its password is never shown)",
        v.history,
        key="db",
        flag="--perfgate-db",
        cli="--db",
        arg=Arg.HISTORY,
        metavar="PATH_OR_URL",
    ),
    Option(
        "baseline_dir",
        "directory of committed baselines, one file per GPU model (default baselines/)",
        _P,
        key="baseline_dir",
        flag="--perfgate-baseline-dir",
        cli="--baseline-dir",
        arg=Arg.PATH,
        metavar="DIR",
    ),
    Option(
        "baseline_file",
        "use this baseline file instead (it must exist)",
        _P,
        flag="--perfgate-baseline-file",
        cli="--baseline-file",
        arg=Arg.PATH,
        metavar="PATH",
    ),
    # --- outputs ----------------------------------------------------------------------------------------
    Option(
        "summary_path",
        "write the Markdown summary here (also appended to $GITHUB_STEP_SUMMARY)",
        _P,
        flag="--perfgate-summary",
        cli="--summary",
        arg=Arg.PATH,
        metavar="PATH",
    ),
    Option(
        "json_path",
        "write the JSON results here (perfgate_json_version 3; every timed sample too with {json_samples})",
        _P,
        flag="--perfgate-json",
        cli="--json",
        arg=Arg.PATH,
        metavar="PATH",
    ),
    Option(
        "report_dir",
        "write the charts (PNG) here",
        _P,
        flag="--perfgate-report-dir",
        cli="--report-dir",
        arg=Arg.PATH,
        metavar="DIR",
    ),
    Option(
        "benchmark_json_path",
        "write github-action-benchmark customSmallerIsBetter JSON here",
        _P,
        flag="--perfgate-benchmark-json",
        arg=Arg.PATH,
        metavar="PATH",
    ),
    Option(
        "benchmark_speedup_json_path",
        "write the speedups as github-action-benchmark customBiggerIsBetter JSON here",
        _P,
        flag="--perfgate-benchmark-speedup-json",
        arg=Arg.PATH,
        metavar="PATH",
    ),
    Option(
        "bencher_json_path",
        "write Bencher Metric Format (BMF) JSON here",
        _P,
        flag="--perfgate-bencher-json",
        arg=Arg.PATH,
        metavar="PATH",
    ),
    # pytest-benchmark's own flags set these (pytest_plugin/benchmark_cli.py): no perfgate spelling
    Option(
        "pytest_benchmark_json_path",
        "write pytest-benchmark's own JSON here (pytest-benchmark's --benchmark-json)",
        _P,
        arg=Arg.PATH,
    ),
    Option(
        "pytest_benchmark_save_path",
        "save the run in pytest-benchmark's storage here (--benchmark-save NAME, --benchmark-autosave)",
        _P,
        arg=Arg.PATH,
    ),
    Option(
        "pytest_benchmark_save_data",
        "the saved run keeps every sample (--benchmark-save-data)",
        v.boolean,
        arg=Arg.FLAG,
    ),
    Option(
        "junit_xml_path",
        "write the verdicts as JUnit XML here (one testcase per case: regressed cases fail, "
        "undecided ones are skipped)",
        _P,
        key="junit_xml",
        flag="--perfgate-junit-xml",
        cli="--junit-xml",
        arg=Arg.PATH,
        metavar="PATH",
    ),
    Option(
        "json_samples",
        "include every timed sample in the JSON results (large at many cases)",
        v.boolean,
        flag="--perfgate-json-samples",
        cli="--json-samples",
        arg=Arg.FLAG,
    ),
    Option(
        "full_table",
        "list every row in the terminal, not only failing and changed rows and the counts",
        v.boolean,
        flag="--perfgate-full-table",
        cli="--full-table",
        arg=Arg.FLAG,
    ),
    Option(
        "publish_host",
        "keep the hostname and absolute paths in published outputs and exported histories",
        v.boolean,
        key="publish_host",
        flag="--perfgate-publish-host",
        cli="--publish-host",
        arg=Arg.FLAG,
    ),
    Option(
        "chart_url",
        "base URL the charts are published at (links in a job summary)",
        v.text,
        key="chart_url",
        flag="--perfgate-chart-url",
        metavar="URL",
    ),
    Option(
        "site_url",
        "base URL of the published dashboard (perfgate report --html): the summary links to the changed cases' pages",
        v.text,
        key="site_url",
        flag="--perfgate-site-url",
        metavar="URL",
    ),
    Option(
        "repo_url",
        "the repository's web address (https://github.com/OWNER/REPO): the dashboard links commits to it "
        "(default: GITHUB_SERVER_URL/GITHUB_REPOSITORY in Actions, else the git remote `origin`)",
        v.text,
        key="repo_url",
        cli="--repo-url",
        metavar="URL",
    ),
    # --- the decision -----------------------------------------------------------------------------------
    Option(
        "threshold_pct",
        "time threshold (%) for cases of an uncalibrated baseline; set per case (marker, "
        "override) it also floors a calibrated case",
        v.THRESHOLD,
        key="threshold_pct",
        marker=True,
    ),
    Option(
        "min_effect_pct",
        "a change smaller than this (%) never regresses, however certain",
        v.MIN_EFFECT,
        key="min_effect_pct",
    ),
    Option(
        "false_alarm_pct",
        "the false-alarm budget of a whole run (%), divided over its gated tests (baseline and A/B "
        "mode alike); for noise of any shape it holds only with enough reference processes, which "
        "perfgate calibrate names (docs/decision-rule.md)",
        v.FALSE_ALARM,
        key="false_alarm_pct",
    ),
    Option(
        "confirm_runs",
        "fresh processes a suspect case must also fail in before the gate fails (0: decide on "
        "one process, at a stricter threshold)",
        v.integer(0, 5),
        key="confirm_runs",
        flag="--perfgate-confirm-runs",
        arg=Arg.INT,
        metavar="N",
    ),
    Option(
        "noise_window",
        "recent passing runs on noise_branch whose process values join the calibration's in "
        "the noise (0: the calibration alone)",
        v.integer(0, 1000),
        key="noise_window",
    ),
    Option(
        "noise_branch",
        "the branch whose passing runs feed the noise window (default: the repository's default branch, "
        'origin\'s HEAD, else the one of main/master that exists; "*": any branch)',
        v.nonempty_text,
        key="noise_branch",
    ),
    Option(
        "gate_time_with_reference",
        "gate a case's time as well as its speedup when it has a reference",
        v.boolean,
        key="gate_time_with_reference",
    ),
    Option(
        "gated_measure",
        "what a case without a reference is gated on: 'time', 'cycles' (time x the SM clock each sample ran at: "
        "steady under the power cap for compute-bound kernels) or 'auto' (cycles when the declared flops and "
        "bytes_moved put the case above the GPU's ridge point, or ncu finds it compute-bound; time otherwise)",
        v.choice(GatedMeasure),
        key="gated_measure",
        marker=True,
    ),
    Option(
        "noise_floor_pct",
        "the smallest between-process noise (%) a case is credited with (default 0.1 for "
        "CUDA events, 0.5 for the host clock)",
        v.number(0.0, 50.0),
        key="noise_floor_pct",
    ),
    Option(
        "ceiling_pct",
        "strict mode fails a case when any of its processes is this much slower (%) than the "
        "baseline, whatever its noise or its other processes say",
        v.CEILING,
        key="ceiling_pct",
    ),
    Option(
        "min_speedup",
        "fail a case with a reference when its speedup's upper bound is below this",
        v.SPEEDUP,
        key="min_speedup",
        marker=True,
    ),
    Option(
        "pin_autotune",
        "hold Triton autotuners to the configs the baseline recorded",
        v.boolean,
        key="pin_autotune",
        flag="--perfgate-pin-autotune",
        arg=Arg.FLAG,
    ),
    # --- the compiled kernels and the static gate (gate/static.py, docs/compiled-kernels.md) -------------------
    Option(
        "compiled_kernels",
        "record each case's compiled kernels (registers, spills, shared memory, launch, theoretical occupancy, "
        "SASS hash) and gate on them (--perfgate-no-compiled-kernels: neither)",
        v.boolean,
        key="compiled_kernels",
        flag="--perfgate-no-compiled-kernels",
        arg=Arg.NO_FLAG,
    ),
    Option(
        "static_registers",
        "static gate: a kernel's registers per thread up by more than static_registers_margin: 'fail', 'warn' or 'off'",
        v.choice(StaticPolicy),
        key="static_registers",
    ),
    Option(
        "static_registers_margin",
        "static gate: registers per thread a kernel may gain before static_registers applies",
        v.integer(0, 255),
        key="static_registers_margin",
    ),
    Option(
        "static_spills",
        "static gate: a kernel that spills where it did not, or more: 'fail', 'warn' or 'off'",
        v.choice(StaticPolicy),
        key="static_spills",
    ),
    Option(
        "static_occupancy",
        "static gate: a kernel's theoretical occupancy down a step: 'fail', 'warn' or 'off'",
        v.choice(StaticPolicy),
        key="static_occupancy",
    ),
    Option(
        "static_shared_memory",
        "static gate: a kernel's shared memory per block up: 'fail', 'warn' or 'off'",
        v.choice(StaticPolicy),
        key="static_shared_memory",
    ),
    # --- how a case is timed (MeasureOptions; the marker may change each) ----------------------------------
    Option(
        "warmup_ms", "warm-up before sampling (ms)", v.number(0.0, 60_000.0), key="warmup_ms", marker=True, measure=True
    ),
    Option(
        "min_samples", "fewest samples per case", v.integer(2, 1_000_000), key="min_samples", marker=True, measure=True
    ),
    Option(
        "max_samples", "most samples per case", v.integer(2, 1_000_000), key="max_samples", marker=True, measure=True
    ),
    Option(
        "budget_ms",
        "time budget for one case's samples (ms)",
        v.number(0.0, 3_600_000.0, low_open=True),
        key="budget_ms",
        marker=True,
        measure=True,
    ),
    Option("flush_l2", "flush the L2 cache between samples", v.boolean, key="flush_l2", marker=True, measure=True),
    Option(
        "cooldown_max_ms",
        "wait at most this long (ms) for the GPU to leave its power cap before a case",
        v.number(0.0, 600_000.0),
        key="cooldown_max_ms",
        marker=True,
        measure=True,
    ),
    Option(
        "exclude_throttled",
        "drop samples taken under a power/thermal cap",
        v.boolean,
        key="exclude_throttled",
        marker=True,
        measure=True,
    ),
    Option("memory", "measure and gate peak memory per call", v.boolean, key="memory", marker=True, measure=True),
    Option(
        "host_timer",
        "the clock of a case timed on the host: 'wall' (time.perf_counter), 'thread_cpu' (the measuring thread's "
        "CPU time: a preempted call reads what it ran, not what it waited; single-threaded code only) or "
        "'process_cpu' (every thread's CPU time); a baseline in one is never compared with another",
        v.choice(HostTimer),
        key="host_timer",
        marker=True,
        measure=True,
    ),
    # --- A/B mode: base and head side by side on one GPU (docs/ab.md) ------------------------------------
    Option(
        "base",
        "A/B mode: measure the head against this git ref (branch, tag, commit), checked out in a "
        "cached worktree and alternated with the head in rounds on the same GPU; no baseline file needed",
        v.text,
        flag="--perfgate-base",
        metavar="REF",
    ),
    Option(
        "ab_rounds",
        "A/B mode: rounds per case (each side measured once per round, in random order)",
        v.integer(3, 1000),
        key="ab_rounds",
        flag="--perfgate-ab-rounds",
        cli="--rounds",
        arg=Arg.INT,
        metavar="N",
    ),
    Option(
        "ab_fresh_pair",
        "A/B mode: a case called regressed or improved is measured again by a fresh base, head and "
        "A/A process, and judged on both pairs (an offset between two processes is not the code)",
        v.boolean,
        key="ab_fresh_pair",
    ),
    Option(
        "ab_process",
        "A/B mode: 'shared' runs base and head in one process, each tree's modules imported side by side "
        "(what differs between two processes cancels); 'separate' a process per tree (any code: CUDA "
        "extensions, C++); 'auto' shares unless a tree holds native code (.so, .cu, .cpp, ...)",
        v.choice(AbProcess),
        key="ab_process",
        flag="--perfgate-ab-process",
        cli="--process",
        metavar="auto|shared|separate",
    ),
    Option(
        "move_inputs",
        "A/B mode: copy the case's CUDA tensor arguments to a fresh place in memory every round, so "
        "where they sit averages out instead of being a fixed offset of one process",
        v.boolean,
        key="move_inputs",
        marker=True,
        measure=True,
    ),
    Option(
        "worktree_dir",
        "A/B mode: where base checkouts and their build caches are kept (default $XDG_CACHE_HOME/perfgate/worktrees)",
        _P,
        key="worktree_dir",
        flag="--perfgate-worktree-dir",
        cli="--worktree-dir",
        arg=Arg.PATH,
        metavar="DIR",
    ),
    Option(
        "ab_skip_same_code",
        "A/B mode: a case whose sides launch the same compiled code (same SASS, launches, inputs and library "
        "versions) is reported 'unchanged (same code)' without measuring it (--perfgate-ab-measure-same-code: "
        "measure it anyway)",
        v.boolean,
        key="ab_skip_same_code",
        flag="--perfgate-ab-measure-same-code",
        cli="--measure-same-code",
        arg=Arg.NO_FLAG,
    ),
    Option(
        "ab_timeout_s",
        "A/B mode: the longest a worker may take for one step (collecting, a test, compiling "
        "a case, a round) before it is called hung (s)",
        v.number(1.0, 86_400.0),
        key="ab_timeout_s",
    ),
    # --- profilers ---------------------------------------------------------------------------------------
    Option(
        "profile",
        "also run the cases under profilers, comma-separated: nsys, ncu, nsys,ncu, or a profiler "
        "installed under the perfgate.profilers entry-point group",
        parse_profile_list,
        flag="--perfgate-profile",
        metavar="TOOLS",
    ),
    Option("fail_on_profile_error", "a profiler failure fails the gate", v.boolean, key="fail_on_profile_error"),
    Option("ncu_sections", "Nsight Compute sections to collect", v.text_list, key="ncu_sections"),
    Option(
        "ncu_metrics",
        "extra Nsight Compute metrics to collect (and allow in metric thresholds)",
        v.text_list,
        key="ncu_metrics",
    ),
    Option("ncu_set", "an Nsight Compute section set (e.g. full) instead of ncu_sections", v.text, key="ncu_set"),
    Option(
        "profile_timeout_s", "time limit for one profiler run (s)", v.number(1.0, 86_400.0), key="profile_timeout_s"
    ),
    # --- charts ------------------------------------------------------------------------------------------
    Option(
        "peak_tflops",
        "roofline compute ceiling (TFLOP/s; default: the device's spec sheet)",
        v.POSITIVE,
        key="peak_tflops",
    ),
    Option(
        "peak_gbps", "roofline memory ceiling (GB/s; default: the device's spec sheet)", v.POSITIVE, key="peak_gbps"
    ),
)
TABLE_KEYS = ("metrics", "overrides")  # [tool.perfgate] sub-tables, read by settings.py
MARKER_TABLE_KEYS = ("metrics",)


def command_line_only_flags() -> dict[str, str]:
    """Settings attribute -> flag, for the options only pytest's own command line may give."""
    return {o.attr: o.flag for o in OPTIONS if o.command_line_only and o.flag}


def path_flags() -> tuple[str, ...]:
    """Every pytest flag that takes a path (a value pytest may mistake for a test path: pytest_plugin/rootdir.py)."""
    return tuple(o.flag for o in OPTIONS if o.flag and o.arg in (Arg.PATH, Arg.HISTORY))


def by_attr() -> dict[str, Option]:
    return {o.attr: o for o in OPTIONS}


def pyproject_keys() -> set[str]:
    return {o.key for o in OPTIONS if o.key} | set(TABLE_KEYS)


def marker_keys() -> set[str]:
    return {o.attr for o in OPTIONS if o.marker} | set(MARKER_TABLE_KEYS)


def history_arg(text: str) -> HistoryTarget:
    """argparse's type for a history: its error names the problem, never the password of a URL."""
    import argparse

    try:
        return history_target(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def argparse_kwargs(opt: Option, spelling: str = "flag") -> dict[str, Any]:
    """What argparse (and pytest's parser, which mirrors it) needs for this option's flag. Every default is
    None: "not given" must not override the configured value."""
    kwargs: dict[str, Any] = {"help": opt.help_as(spelling), "default": None}
    if opt.arg is Arg.FLAG:
        kwargs["action"] = "store_true"
    elif opt.arg is Arg.NO_FLAG:
        kwargs["action"] = "store_false"
    else:
        kwargs["type"] = {Arg.PATH: Path, Arg.HISTORY: history_arg, Arg.INT: int, Arg.NUMBER: float, Arg.TEXT: str}[
            opt.arg
        ]
        if opt.metavar:
            kwargs["metavar"] = opt.metavar
    return kwargs


def add_pytest_options(addoption: Callable[..., Any]) -> None:
    """pytest_addoption: every option that has a pytest flag."""
    for opt in OPTIONS:
        if opt.flag:
            addoption(opt.flag, **argparse_kwargs(opt))


def pytest_values(getoption: Callable[[str], Any]) -> dict[str, Any]:
    """The pytest flags the user gave, by Settings attribute."""
    values = {o.attr: getoption(o.flag) for o in OPTIONS if o.flag}
    return {k: value for k, value in values.items() if value is not None}


def add_cli_options(parser: Any, attrs: Iterable[str]) -> None:
    """A command's flags for the named settings (a misspelt attribute is a KeyError when the parser is built:
    every CLI test fails on it)."""
    table = by_attr()
    for attr in attrs:
        opt = table[attr]
        if opt.cli is None:
            raise KeyError(f"option {attr!r} has no command-line flag")
        parser.add_argument(opt.cli, dest=attr, **argparse_kwargs(opt, "cli"))


def cli_values(args: Any, attrs: Iterable[str]) -> dict[str, Any]:
    """The command-line flags the user gave, by Settings attribute."""
    values = {attr: getattr(args, attr) for attr in attrs}
    return {k: value for k, value in values.items() if value is not None}


def check_overrides(values: Mapping[str, Any]) -> dict[str, Any]:
    """Command-line values checked by their option's parser; an attribute the table does not know is an error."""
    table = by_attr()
    out = {}
    for attr, value in values.items():
        opt = table.get(attr)
        if opt is None or opt.measure:
            raise ConfigError(f"perfgate: unknown setting {attr!r}")
        out[attr] = opt.parse(value, opt.where)
    return out
