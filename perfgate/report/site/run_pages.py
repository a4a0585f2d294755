"""A page per run: what was measured where, and the gate's summary exactly as the PR comment shows it
(render_markdown on the scrubbed gate, as Markdown rendered to HTML) with links to the case pages."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from perfgate.baseline import Baseline, BaselineCase
from perfgate.model import Environment, GateResult, Run
from perfgate.report.site import pages
from perfgate.report.site.history_data import RunMeta
from perfgate.report.site.links import case_page, run_page
from perfgate.report.site.verdicts import GatedRun, case_verdict, gate_runs
from perfgate.settings import Settings
from perfgate.store import Store

MAX_CASE_LINKS = 50


class RunPageBuilder:
    """Re-gates the runs the site needs once each, and resolves each device model's baseline once."""

    def __init__(self, store: Store, runs: dict[int, RunMeta], settings: Settings, summaries: int) -> None:
        self.store, self.runs, self.settings = store, runs, settings
        self.summarized = set(sorted(runs)[-summaries:]) if summaries > 0 else set()
        self._gated: dict[int, GatedRun] = {}
        self._baselines: dict[tuple[str, str], Baseline | None] = {}

    def gated(self, run_ids: Iterable[int]) -> dict[int, GatedRun]:
        todo = [r for r in run_ids if r not in self._gated]
        self._gated.update(gate_runs(self.store, todo, self.settings))
        return self._gated

    def baseline_case(self, device_name: str, case_id: str) -> BaselineCase | None:
        meta = next((m for m in self.runs.values() if m.device_name == device_name), None)
        if meta is None:
            return None
        key = (meta.device_kind, device_name)
        if key not in self._baselines:
            from perfgate.gate import resolve_baseline

            _, self._baselines[key], _ = resolve_baseline(
                self.settings, Environment(device_kind=meta.device_kind or "cuda", device_name=device_name))
        baseline = self._baselines[key]
        return baseline.cases.get(case_id) if baseline is not None else None

    def write(self, build: Path, run_id: int) -> None:
        meta = self.runs[run_id]
        summary, note = "", ""
        if run_id in self.summarized:
            g = self.gated([run_id])[run_id]
            summary = summary_html(g.gate, g.run)
        else:
            note = (f"The gate summary is on the pages of the latest {len(self.summarized)} runs; for this one run "
                    f"`perfgate compare --run {run_id}`.")
        kind = "calibration process" if meta.calibration else "gate run"
        facts = [("commit", meta.git_commit or "-"), ("branch", meta.git_branch or "-"),
                 ("uncommitted changes", "yes" if meta.git_dirty else "no"), ("started", meta.started_at or "-"),
                 ("device", meta.device_name or "-"), ("kind", kind), ("cases", str(meta.cases)),
                 *((name.replace("_", " "), value) for name, value in meta.versions)]
        body = pages.run_body(f"Run {run_id}", facts, summary, note)
        (build / run_page(run_id)).write_text(pages.page(f"run {run_id}: perfgate", "../", body), encoding="utf-8")


def summary_html(gate: GateResult, run: Run) -> str:
    """The PR comment's Markdown for this run, scrubbed as published, rendered to HTML; its chart links
    lead to the case pages of the cases that changed."""
    from perfgate.report.markdown import CHANGED, ChartLink, render_markdown
    from perfgate.scrub import Scrubber

    scrubber = Scrubber(None, publish_host=False)
    changed = sorted({c.case_id for c in gate.comparisons if c.verdict in CHANGED})
    links = [ChartLink(f"{cid}: charts", f"../{case_page(cid)}") for cid in changed[:MAX_CASE_LINKS]]
    if not links:
        worst = sorted({c.case_id for c in gate.comparisons if case_verdict([c]) is not None})
        links = [ChartLink(f"{cid}: charts", f"../{case_page(cid)}") for cid in worst[:MAX_CASE_LINKS]
                 if any(r.case_id == cid for r in run.results)]
    return markdown_to_html(render_markdown(scrubber.gate(gate), links, run=scrubber.run(run)))


def markdown_to_html(text: str) -> str:
    """CommonMark with tables. Raw HTML stays on: the summary's own <details> blocks are perfgate's, and
    every value in it is escaped by render_markdown; the page's Content-Security-Policy backs that up."""
    from perfgate.errors import require

    markdown_it: Any = require("markdown_it", "report", "perfgate report --html")
    html = str(markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table").render(text))
    # column alignment comes as style attributes, which the Content-Security-Policy refuses: classes instead
    return html.replace(' style="text-align:right"', ' class="num"').replace(' style="text-align:center"', "") \
        .replace(' style="text-align:left"', "")
