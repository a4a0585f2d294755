"""Every file a gate writes, as one registry: an `Output` names the option that asks for it (a Settings
attribute from config/options.py, or for GitHub's job summary the environment variable) and a writer taking
what was published and the path. `publish.publish` loops over `OUTPUTS`; a new output is one writer and one
entry here (and its option row), never a branch in the orchestration.

Every output is written in both ways of measuring (baseline mode and A/B mode): writers receive the scrubbed
verdicts and run (scrub.py: what leaves the machine) and the way of measuring's `View` (views.py), which says
how its comparisons read in a summary, a JSON document and a terminal, and why it draws no charts when it
draws none. Charts come first: the summaries link to the files they wrote.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from perfgate.atomic import atomic_write_text
from perfgate.errors import PerfgateError

if TYPE_CHECKING:  # the registry is read when a command's flags are made: it imports no renderer, no store
    from perfgate.baseline import Baseline
    from perfgate.config.settings import Settings
    from perfgate.model import GateResult, Run
    from perfgate.report.markdown import ChartLink
    from perfgate.report.views import View
    from perfgate.store import HistoryPoint

STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


@dataclass(frozen=True)
class Published:
    """What every writer reads."""

    gate: GateResult  # scrubbed
    run: Run  # scrubbed
    settings: Settings
    baseline: Baseline | None
    stored_run: Run  # as stored: the charts look its cases' history up by their real ids
    stored_gate: GateResult
    view: View  # how this way of measuring reads (scrubbed)
    charts: tuple[Path, ...] = ()  # written by the charts output, linked by the summaries


@dataclass(frozen=True)
class Written:
    """What a writer tells the caller: chart files later outputs link to, lines for the terminal."""

    charts: tuple[Path, ...] = ()
    messages: tuple[str, ...] = ()


Writer = Callable[[Published, Path], Written]


@dataclass(frozen=True)
class Output:
    name: str
    option: str  # the Settings attribute holding its path; "" when `env` names it
    write: Writer
    env: str = ""  # the environment variable holding its path (GitHub's job summary)

    def destination(self, settings: Settings, environ: Mapping[str, str]) -> Path | None:
        """Where this run writes it, or None when nobody asked for it."""
        if self.env:
            value = environ.get(self.env, "")
            return Path(value) if value else None
        path = getattr(settings, self.option)
        return path if isinstance(path, Path) else None


def write_text(path: Path, text: str) -> None:
    try:
        atomic_write_text(path, text)
    except OSError as err:
        raise PerfgateError(f"perfgate: cannot write {path}: {err.strerror or err}") from err


def _charts(p: Published, out_dir: Path) -> Written:
    """Drawn from what is published (a chart's title names its case): the history and the baseline, looked
    up by the stored ids, are handed over under the published ones."""
    from dataclasses import replace

    from perfgate.report.gate_charts import charted_cases, write_gate_charts

    s = p.settings
    if p.view.no_charts:
        return Written(messages=(f"perfgate: no charts written to {out_dir}: {p.view.no_charts}",))
    published = {r.case_id: q.case_id for r, q in zip(p.stored_run.results, p.run.results)}
    published.update({c.case_id: q.case_id for c, q in zip(p.stored_gate.comparisons, p.gate.comparisons)})
    try:
        history = _trend_points(s, p.stored_run, [c.case_id for c in charted_cases(p.stored_gate)])
        baseline = (
            replace(p.baseline, cases={published.get(k, k): v for k, v in p.baseline.cases.items()})
            if p.baseline is not None
            else None
        )
        return Written(
            charts=tuple(
                write_gate_charts(
                    p.gate,
                    p.run,
                    out_dir,
                    baseline,
                    {published.get(k, k): v for k, v in history.items()},
                    s.peak_tflops,
                    s.peak_gbps,
                )
            )
        )
    except PerfgateError:
        raise
    except Exception as err:  # noqa: BLE001 (a drawing bug must not turn a stored, gated run into a traceback)
        return Written(
            messages=(f"perfgate: could not draw the charts ({type(err).__name__}: {err}); results are stored",)
        )


def _trend_points(settings: Settings, run: Run, case_ids: list[str]) -> dict[str, list[HistoryPoint]]:
    """The stored history of the charted cases, up to this run (none when the run was not stored)."""
    from perfgate.store import history_exists, open_store

    if run.run_id is None or not case_ids or not history_exists(settings.db_path):
        return {}

    with open_store(settings.db_path, readonly=True) as store:
        return {cid: list(store.history(cid, run.environment.device_name, up_to_run=run.run_id)) for cid in case_ids}


def _summary(p: Published, path: Path) -> Written:
    from perfgate.report.markdown import ChartLink
    from perfgate.report.markdown_fit import STEP_SUMMARY_LIMIT, fit_markdown

    base = path.parent.resolve()
    links = [ChartLink(c.name, os.path.relpath(c.resolve(), base)) for c in p.charts]
    write_text(
        path,
        fit_markdown(
            p.view.markdown(p.gate, p.run, links + _site_links(p)),
            STEP_SUMMARY_LIMIT,
            where="every case is in the JSON results",
        ),
    )
    return Written()


def _step_summary(p: Published, path: Path) -> Written:
    """Appended within what is left of the step's 1 MiB (another step's text may already be there); a job
    summary is shown on github.com, where a relative link leads nowhere: absolute URLs only."""
    from perfgate.report.markdown import ChartLink
    from perfgate.report.markdown_fit import STEP_SUMMARY_LIMIT, fit_markdown, utf8_bytes

    url = p.settings.chart_url.rstrip("/")
    links = [ChartLink(c.name, f"{url}/{c.name}" if url else "") for c in p.charts]
    try:
        used = path.stat().st_size
    except OSError:
        used = 0
    fitted = fit_markdown(
        p.view.markdown(p.gate, p.run, links + _site_links(p)),
        STEP_SUMMARY_LIMIT - used,
        utf8_bytes,
        where="the full summary is in the results artifact",
    )
    if not fitted.strip():
        return Written(
            messages=(
                f"perfgate: ${STEP_SUMMARY_ENV} is full ({used:,} of {STEP_SUMMARY_LIMIT:,} bytes); "
                f"no job summary written",
            )
        )
    append_step_summary(path, fitted)
    return Written()


def append_step_summary(path: Path, text: str) -> None:
    try:
        with open(path, "a", encoding="utf-8") as fh:  # GitHub appends every step's summary
            fh.write(text)
    except OSError as err:
        raise PerfgateError(f"perfgate: cannot append to {path} ({STEP_SUMMARY_ENV}): {err.strerror or err}") from err


def _site_links(p: Published) -> list[ChartLink]:
    if not p.settings.site_url:
        return []
    from perfgate.report.site.links import summary_links

    return summary_links(p.gate, p.settings.site_url)


def _json(p: Published, path: Path) -> Written:
    write_text(path, p.view.json(p.gate, p.run, p.settings.json_samples))
    return Written()


def _benchmark_json(p: Published, path: Path) -> Written:
    from perfgate.report.benchmark_action import render_benchmark_action

    write_text(path, render_benchmark_action(p.run))
    return Written()


def _benchmark_speedup_json(p: Published, path: Path) -> Written:
    from perfgate.report.benchmark_action import render_benchmark_action_speedups

    write_text(path, render_benchmark_action_speedups(p.gate, p.run))
    return Written()


def _bencher_json(p: Published, path: Path) -> Written:
    from perfgate.report.bencher import render_bencher

    write_text(path, render_bencher(p.gate, p.run))
    return Written()


def _pytest_benchmark_json(p: Published, path: Path) -> Written:
    from perfgate.report.pytest_benchmark_json import render_pytest_benchmark_json

    write_text(path, render_pytest_benchmark_json(p.run, include_data=True, project=p.settings.rootdir.name))
    return Written()


def _pytest_benchmark_save(p: Published, path: Path) -> Written:
    """pytest-benchmark's storage: `.benchmarks/<machine>/NNNN_<name>.json`, its samples only when asked."""
    from perfgate.report.pytest_benchmark_json import render_pytest_benchmark_json

    path.parent.mkdir(parents=True, exist_ok=True)
    data = p.settings.pytest_benchmark_save_data
    write_text(path, render_pytest_benchmark_json(p.run, include_data=data, project=p.settings.rootdir.name))
    return Written(messages=(f"perfgate: saved the run for pytest-benchmark in {path}",))


def _junit_xml(p: Published, path: Path) -> Written:
    from perfgate.report.junit import render_junit

    write_text(path, render_junit(p.gate, p.run))
    return Written()


OUTPUTS: tuple[Output, ...] = (
    Output("charts", "report_dir", _charts),  # first: the summaries link to them
    Output("Markdown summary", "summary_path", _summary),
    Output("job summary", "", _step_summary, env=STEP_SUMMARY_ENV),
    Output("JSON results", "json_path", _json),
    Output("github-action-benchmark JSON", "benchmark_json_path", _benchmark_json),
    Output("github-action-benchmark speedup JSON", "benchmark_speedup_json_path", _benchmark_speedup_json),
    Output("Bencher Metric Format JSON", "bencher_json_path", _bencher_json),
    Output("pytest-benchmark JSON", "pytest_benchmark_json_path", _pytest_benchmark_json),
    Output("pytest-benchmark saved run", "pytest_benchmark_save_path", _pytest_benchmark_save),
    Output("JUnit XML", "junit_xml_path", _junit_xml),
)


def output_options() -> tuple[str, ...]:
    """The Settings attributes that ask for an output (a command that writes outputs takes each one)."""
    return tuple(o.option for o in OUTPUTS if o.option)
