"""Where a gate's results go: the Markdown summary, the job summary, JSON, charts and the
github-action-benchmark file. Everything published is scrubbed first (scrub.py)."""

from __future__ import annotations

import os
from pathlib import Path

from perfgate.atomic import atomic_write_text
from perfgate.baseline import Baseline
from perfgate.config.settings import Settings
from perfgate.errors import PerfgateError
from perfgate.model import GateResult, Run
from perfgate.report.markdown import ChartLink, render_markdown
from perfgate.report.scrub import Scrubber
from perfgate.store import HistoryPoint

STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


def publish(gate: GateResult, run: Run, settings: Settings, baseline: Baseline | None) -> list[str]:
    """Write every requested output; returns lines for the terminal."""
    messages: list[str] = []
    scrubber = Scrubber(settings.rootdir, settings.publish_host)
    g, r = scrubber.gate(gate), scrubber.run(run)
    charts = _charts(gate, run, settings, baseline, messages)
    if settings.summary_path is not None:
        base = settings.summary_path.parent.resolve()
        links = [ChartLink(p.name, os.path.relpath(p.resolve(), base)) for p in charts]
        write_text(settings.summary_path, render_markdown(g, links, run=r))
    step_summary = os.environ.get(STEP_SUMMARY_ENV, "")
    if step_summary:
        # a job summary is shown on github.com, where a relative link leads nowhere: absolute URLs only
        url = settings.chart_url.rstrip("/")
        links = [ChartLink(p.name, f"{url}/{p.name}" if url else "") for p in charts]
        _append(Path(step_summary), render_markdown(g, links, run=r))
    if settings.json_path is not None:
        from perfgate.report.json_out import render_json

        write_text(settings.json_path, render_json(g, r))
    if settings.benchmark_json_path is not None:
        from perfgate.report.benchmark_action import render_benchmark_action

        write_text(settings.benchmark_json_path, render_benchmark_action(r))
    return messages


def write_text(path: Path, text: str) -> None:
    try:
        atomic_write_text(path, text)
    except OSError as err:
        raise PerfgateError(f"perfgate: cannot write {path}: {err.strerror or err}") from err


def _append(path: Path, text: str) -> None:
    try:
        with open(path, "a", encoding="utf-8") as fh:  # GitHub appends every step's summary
            fh.write(text)
    except OSError as err:
        raise PerfgateError(f"perfgate: cannot append to {path} ({STEP_SUMMARY_ENV}): {err.strerror or err}") from err


def _charts(gate: GateResult, run: Run, settings: Settings, baseline: Baseline | None,
            messages: list[str]) -> list[Path]:
    if settings.report_dir is None:
        return []
    from perfgate.report.gate_charts import charted_cases, write_gate_charts

    try:
        history = _trend_points(settings, run, [c.case_id for c in charted_cases(gate)])
        return write_gate_charts(gate, run, settings.report_dir, baseline, history, settings.peak_tflops,
                                 settings.peak_gbps)
    except PerfgateError:
        raise
    except Exception as err:  # noqa: BLE001 (a drawing bug must not turn a stored, gated run into a traceback)
        messages.append(f"perfgate: could not draw the charts ({type(err).__name__}: {err}); results are stored")
        return []


def _trend_points(settings: Settings, run: Run, case_ids: list[str]) -> dict[str, list[HistoryPoint]]:
    """The stored history of the charted cases, up to this run (none when the run was not stored)."""
    if run.run_id is None or not settings.db_path.exists() or not case_ids:
        return {}
    from perfgate.store import open_store

    with open_store(settings.db_path, readonly=True) as store:
        return {cid: store.history(cid, run.environment.device_name, up_to_run=run.run_id) for cid in case_ids}
