"""Where a gate's results go: every output of the registry in outputs.py that this run asks for (the Markdown
summary, the job summary, JSON, charts, the github-action-benchmark files, Bencher's format, JUnit XML), in
baseline mode and A/B mode alike (the run's View says how its comparisons read). Everything published is
scrubbed first (scrub.py: secret-looking text and the values of secret-named environment variables);
Markdown is cut at its section boundaries to GitHub's 1 MiB job-summary limit (markdown_fit.py)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace

from perfgate.baseline import Baseline
from perfgate.config.settings import Settings
from perfgate.model import GateResult, Run
from perfgate.report.outputs import OUTPUTS, STEP_SUMMARY_ENV, Published, write_text
from perfgate.report.scrub import export_scrubber, gate_ids, run_ids
from perfgate.report.views import GateView, View

__all__ = ["STEP_SUMMARY_ENV", "publish", "write_text"]


def publish(
    gate: GateResult,
    run: Run,
    settings: Settings,
    baseline: Baseline | None,
    environ: Mapping[str, str] | None = None,
    view: View | None = None,
) -> list[str]:
    """Write every requested output, in the registry's order; returns lines for the terminal. `view`: how
    the comparisons read (baseline mode's GateView by default)."""
    env = os.environ if environ is None else environ
    wanted = [(output, path) for output in OUTPUTS if (path := output.destination(settings, env)) is not None]
    if not wanted:  # nothing asked for (`perfgate compare` without outputs): nothing to scrub either
        return []
    scrubber = export_scrubber(settings.rootdir, settings.publish_host, env)
    scrubber.reserve([*run_ids(run), *gate_ids(gate)])  # one naming for the gate and the run's cases
    published = Published(
        gate=scrubber.gate(gate),
        run=scrubber.run(run),
        settings=settings,
        baseline=baseline,
        stored_run=run,
        stored_gate=gate,
        view=(view or GateView()).scrubbed(scrubber),
    )
    messages: list[str] = []
    for output, path in wanted:
        written = output.write(published, path)
        messages += written.messages
        published = replace(published, charts=published.charts + written.charts)
    return messages
