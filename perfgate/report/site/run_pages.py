"""A page per run: what was measured where, and the gate's summary exactly as the PR comment shows it
(render_markdown on the scrubbed gate, as Markdown rendered to HTML) with links to the case pages."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perfgate.baseline import BaselineCase
from perfgate.config.settings import Settings
from perfgate.model import Comparison, Environment, GateResult, Run
from perfgate.report.site import pages
from perfgate.report.site.history_data import RunMeta
from perfgate.report.site.links import case_page, run_page
from perfgate.report.site.project import Project, commit_url
from perfgate.report.site.verdicts import GatedRun, RunVerdicts
from perfgate.store import Store

MAX_CASE_LINKS = 50
_KINDS = {"ab-base": "A/B comparison, base side", "ab-head": "A/B comparison, head side"}


class RunPageBuilder:
    """Run pages and the verdicts the overview needs, from one RunVerdicts (each baseline read once)."""

    def __init__(
        self, store: Store, runs: dict[int, RunMeta], settings: Settings, summaries: int, project: Project
    ) -> None:
        self.runs, self.project = runs, project
        self.verdicts = RunVerdicts(store, settings)
        self.summarized = set(sorted(runs)[-summaries:]) if summaries > 0 else set()
        self._kinds = {m.device_name: m.device_kind for m in runs.values()}
        self._kept: dict[int, GatedRun] = {}  # gated for the overview and summarized later: gated once

    def latest_rows(self, latest: Mapping[tuple[str, str], int]) -> dict[tuple[str, str], list[Comparison]]:
        """Per (case, device model): the comparisons of the latest run that measured the case."""
        wanted: dict[int, set[str]] = {}
        for (case_id, _), run_id in latest.items():
            wanted.setdefault(run_id, set()).add(case_id)
        rows: dict[tuple[str, str], list[Comparison]] = {}
        for run_id, cases in sorted(wanted.items()):
            device = self.runs[run_id].device_name
            gated = self.verdicts.gated(run_id)
            if run_id in self.summarized:
                self._kept[run_id] = gated
            for c in gated.gate.comparisons:
                if c.case_id in cases:
                    rows.setdefault((c.case_id, device), []).append(c)
        return rows

    def baseline_case(self, device_name: str, case_id: str) -> BaselineCase | None:
        if device_name not in self._kinds:
            return None
        env = Environment(device_kind=self._kinds[device_name] or "cuda", device_name=device_name)
        baseline, _ = self.verdicts.baseline(env)
        return baseline.cases.get(case_id) if baseline is not None else None

    def write(self, build: Path, run_id: int) -> None:
        meta = self.runs[run_id]
        summary, note = "", ""
        if run_id in self.summarized:
            g = self._kept.pop(run_id, None) or self.verdicts.gated(run_id)
            summary = summary_html(g.gate, g.run)
        else:
            note = (
                f"The gate summary is on the pages of the latest {len(self.summarized)} runs when they were "
                f"written; for this one run "
                f"`perfgate compare --run {run_id}`."
            )
        kind = "calibration process" if meta.calibration else _KINDS.get(meta.kind, "gate run")
        from perfgate.report.scrub import scrub_rendered

        facts = [
            ("commit", meta.git_commit or "-"),
            ("branch", scrub_rendered(meta.git_branch, os.environ) or "-"),
            ("uncommitted changes", "yes" if meta.git_dirty else "no"),
            ("started", meta.started_at or "-"),
            ("device", meta.device_name or "-"),
            ("kind", kind),
            ("cases", str(meta.cases)),
            *((name.replace("_", " "), value) for name, value in meta.versions),
        ]
        links = {"commit": commit_url(self.project.repo_url, meta.git_commit)}
        body = pages.run_body(f"Run {run_id}", facts, summary, note, self.project.name, links)
        page = pages.page(self.project.title(f"run {run_id}"), "../", body)
        pages.write_page(build / run_page(run_id), page)


def summary_html(gate: GateResult, run: Run) -> str:
    """The PR comment's Markdown for this run, scrubbed as published, rendered to HTML; its chart links
    lead to the case pages of the cases that changed (named by their published ids, as the site names them)."""
    from perfgate.report.markdown import CHANGED, ChartLink, render_markdown
    from perfgate.report.scrub import export_scrubber

    scrubber = export_scrubber(None, False, os.environ)
    gate, run = scrubber.gate(gate), scrubber.run(run)
    changed = sorted({c.case_id for c in gate.comparisons if c.verdict in CHANGED})
    links = [ChartLink(f"{cid}: charts", f"../{case_page(cid)}") for cid in changed[:MAX_CASE_LINKS]]
    if not links:  # nothing changed: the first cases it measured
        measured = sorted(r.case_id for r in run.results)
        links = [ChartLink(f"{cid}: charts", f"../{case_page(cid)}") for cid in measured[:MAX_CASE_LINKS]]
    return markdown_to_html(render_markdown(gate, links, run=run))


def markdown_to_html(text: str) -> str:
    """CommonMark with tables. Raw HTML stays on: the summary's own <details> blocks are perfgate's, and
    every value in it is escaped by render_markdown; the page's Content-Security-Policy backs that up."""
    from perfgate.errors import require

    markdown_it: Any = require("markdown_it", "report", "perfgate report --html")
    html = str(markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table").render(text))
    # column alignment comes as style attributes, which the Content-Security-Policy refuses: classes instead
    from perfgate.report.site.marks import css_marks

    return css_marks(
        html.replace(' style="text-align:right"', ' class="num"')
        .replace(' style="text-align:center"', "")
        .replace(' style="text-align:left"', "")
    )
