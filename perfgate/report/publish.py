"""Where a gate's results go: the Markdown summary, the job summary, JSON, charts, the
github-action-benchmark files and Bencher's format. Everything published is scrubbed first (scrub.py);
Markdown is cut at its section boundaries to GitHub's 1 MiB job-summary limit (markdown_fit.py)."""

from __future__ import annotations

import os
from pathlib import Path

from perfgate.atomic import atomic_write_text
from perfgate.baseline import Baseline
from perfgate.config.settings import Settings
from perfgate.errors import PerfgateError
from perfgate.model import GateResult, Run
from perfgate.report.markdown import ChartLink, render_markdown
from perfgate.report.markdown_fit import STEP_SUMMARY_LIMIT, fit_markdown, utf8_bytes
from perfgate.report.scrub import export_scrubber
from perfgate.store import HistoryPoint

STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


def publish(gate: GateResult, run: Run, settings: Settings, baseline: Baseline | None) -> list[str]:
    """Write every requested output; returns lines for the terminal."""
    messages: list[str] = []
    scrubber = export_scrubber(settings.rootdir, settings.publish_host, os.environ)
    g, r = scrubber.gate(gate), scrubber.run(run)
    charts = _charts(gate, run, settings, baseline, messages)
    site = _site_links(gate, settings.site_url)
    if settings.summary_path is not None:
        base = settings.summary_path.parent.resolve()
        links = [ChartLink(p.name, os.path.relpath(p.resolve(), base)) for p in charts]
        write_text(settings.summary_path, fit_markdown(render_markdown(g, links + site, run=r), STEP_SUMMARY_LIMIT,
                                                       where="every case is in the JSON results"))
    step_summary = os.environ.get(STEP_SUMMARY_ENV, "")
    if step_summary:
        # a job summary is shown on github.com, where a relative link leads nowhere: absolute URLs only
        url = settings.chart_url.rstrip("/")
        links = [ChartLink(p.name, f"{url}/{p.name}" if url else "") for p in charts]
        _append_summary(Path(step_summary), render_markdown(g, links + site, run=r), messages)
    if settings.json_path is not None:
        from perfgate.report.json_out import render_json

        write_text(settings.json_path, render_json(g, r, settings.json_samples))
    if settings.benchmark_json_path is not None:
        from perfgate.report.benchmark_action import render_benchmark_action

        write_text(settings.benchmark_json_path, render_benchmark_action(r))
    if settings.benchmark_speedup_json_path is not None:
        from perfgate.report.benchmark_action import render_benchmark_action_speedups

        write_text(settings.benchmark_speedup_json_path, render_benchmark_action_speedups(g, r))
    if settings.bencher_json_path is not None:
        from perfgate.report.bencher import render_bencher

        write_text(settings.bencher_json_path, render_bencher(g, r))
    return messages


def _site_links(gate: GateResult, site_url: str) -> list[ChartLink]:
    if not site_url:
        return []
    from perfgate.report.site.links import summary_links

    return summary_links(gate, site_url)


def write_text(path: Path, text: str) -> None:
    try:
        atomic_write_text(path, text)
    except OSError as err:
        raise PerfgateError(f"perfgate: cannot write {path}: {err.strerror or err}") from err


def _append_summary(path: Path, text: str, messages: list[str]) -> None:
    """Append within what is left of the step's 1 MiB (another step's text may already be there)."""
    try:
        used = path.stat().st_size
    except OSError:
        used = 0
    fitted = fit_markdown(text, STEP_SUMMARY_LIMIT - used, utf8_bytes,
                          where="the full summary is in the results artifact")
    if not fitted.strip():
        messages.append(f"perfgate: ${STEP_SUMMARY_ENV} is full ({used:,} of {STEP_SUMMARY_LIMIT:,} bytes); "
                        f"no job summary written")
        return
    _append(path, fitted)


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
