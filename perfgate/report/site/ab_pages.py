"""The stored A/B comparisons as such (runs of kind ab-base / ab-head sharing an `ab_pair`, read back by
store/ab_pairs.py): a list (`ab.html`) and a page per comparison (`ab/<pair hash>.html`) with, per case, the
base and head medians, their ratio, and the verdict the A/B gate gave the head. Rendered here with every
value escaped; the pages need no script.

A comparison is written once: its two runs never change, so a later build keeps its page (incremental.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import replace
from html import escape

from perfgate.metrics import TIME_METRIC
from perfgate.report.scrub import Scrubber
from perfgate.report.site.links import case_page, run_page
from perfgate.report.site.project import Project, commit_url
from perfgate.store import Store
from perfgate.store.ab_pairs import AbComparisonRecord, AbPairRow
from perfgate.store.verdicts import MetricVerdict, most_severe

MAX_LISTED = 500  # the latest comparisons on ab.html (each page stays once written)


def ab_page(pair: str) -> str:
    """ab/<hash>.html: the pair id is stored text; its hash is safe in any URL and on any file system."""
    return f"ab/{hashlib.sha256(pair.encode('utf-8', errors='surrogatepass')).hexdigest()[:16]}.html"


def list_body(nav_html: str, pairs: Iterable[AbPairRow], project: Project) -> str:
    rows = "".join(
        f'<tr class="gate-{escape(p.gate or "unknown")}"><td><a href="{escape(ab_page(p.pair))}">'
        f"{escape(p.started_at[:16].replace('T', ' ') or '-')}</a></td><td>{escape(p.device_name or '-')}</td>"
        f"<td>{_commit(project, p.base_commit)}</td><td>{_commit(project, p.head_commit)}</td>"
        f'<td class="num">{p.cases}</td><td>{_gate(p.gate)}</td></tr>'
        for p in reversed(list(pairs))
    )
    empty = (
        ""
        if rows
        else '<p class="note">No A/B comparison in the history (perfgate ab, or the action on a pull request).</p>'
    )
    return (
        f'{nav_html}<main><h1>A/B comparisons</h1><p class="note">Base and head measured side by side '
        "(pull requests); newest first. Each opens the comparison: head vs base per case.</p>"
        f'{empty}<div class="wide"><table id="ab-pairs" class="cases"><thead><tr><th>started</th><th>device</th>'
        '<th>base commit</th><th>head commit</th><th class="num">cases</th><th>gate</th></tr></thead>'
        f"<tbody>{rows}</tbody></table></div></main>"
    )


def pair_body(
    nav_html: str, row: AbPairRow, record: AbComparisonRecord, project: Project, paged: frozenset[str]
) -> str:
    """`paged`: the cases with a page of their own (a case only ever measured in A/B has none)."""
    head, base = record.head, record.base
    base_medians = {r.case_id: r.timing.median_ms for r in base.results}
    verdicts: dict[str, list[MetricVerdict]] = {}
    for m in record.verdicts.metrics if record.verdicts else ():
        verdicts.setdefault(m.case_id, []).append(m)
    cases = sorted({r.case_id for r in head.results} | set(base_medians) | set(verdicts))
    head_medians = {r.case_id: r.timing.median_ms for r in head.results}
    rows = "".join(
        _case_row(c, base_medians.get(c), head_medians.get(c), verdicts.get(c, []), c in paged) for c in cases
    )
    failed = record.verdicts.gate_failed if record.verdicts else None
    gate = "" if failed is None else ("failed" if failed else "passed")
    return (
        f"{nav_html}<main><h1>A/B comparison: head vs base</h1>"
        f'<table class="facts"><tr><th>base</th><td>{_commit(project, base.info.git_commit)} '
        f'<a href="../{run_page(row.base_run_id)}">run #{row.base_run_id}</a></td></tr>'
        f"<tr><th>head</th><td>{_commit(project, head.info.git_commit)} "
        f'<a href="../{run_page(row.head_run_id)}">run #{row.head_run_id}</a></td></tr>'
        f"<tr><th>device</th><td>{escape(head.environment.device_name or '-')}</td></tr>"
        f"<tr><th>started</th><td>{escape(head.info.started_at or '-')}</td></tr>"
        f"<tr><th>gate</th><td>{_gate(gate)}</td></tr></table>"
        "<p class=\"note\">ratio: the head's run median over the base's (below 1: the head is faster). verdict and "
        "change: the A/B gate's decision for the head (its paired processes), the most severe over the case's "
        "metrics.</p>"
        '<div class="wide"><table id="ab-cases" class="cases"><thead><tr><th>case</th><th class="num">base</th>'
        '<th class="num">head</th><th class="num">ratio</th><th>verdict</th><th class="num">change</th>'
        f'<th class="num">detects</th></tr></thead><tbody>{rows}</tbody></table></div></main>'
    )


def _case_row(
    case_id: str, base_ms: float | None, head_ms: float | None, metrics: list[MetricVerdict], paged: bool
) -> str:
    ratio = head_ms / base_ms if head_ms and base_ms else None
    verdict = most_severe(m.verdict for m in metrics)
    time = next((m for m in metrics if m.metric == TIME_METRIC and not m.kernel), None)
    word = verdict.value if verdict else "-"
    change = "-" if time is None or time.change_pct is None else f"{time.change_pct:+.1f}%"
    detects = "-" if time is None or time.threshold_pct is None else f"\u2265 {time.threshold_pct:.1f}%"
    name = (
        f'<a class="case-link" href="../{escape(case_page(case_id))}">{escape(case_id)}</a>'
        if paged
        else f'<span class="case-link">{escape(case_id)}</span>'
    )
    return (
        f'<tr class="verdict-{escape(word.replace(" ", "-"))}"><td>{name}</td><td class="num">{_ms(base_ms)}</td>'
        f'<td class="num">{_ms(head_ms)}</td><td class="num">{"-" if ratio is None else f"{ratio:.3f}x"}</td>'
        f'<td class="verdict">{escape(word)}</td><td class="num">{change}</td><td class="num">{detects}</td></tr>'
    )


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1000:.4g} us" if value < 1 else f"{value:.4g} ms"


def _gate(gate: str) -> str:
    if not gate:
        return "-"
    cls = "bad" if gate == "failed" else "good"
    return f'<span class="mark badge {cls}">{"FAIL" if gate == "failed" else "PASS"}</span> {escape(gate)}'


def _commit(project: Project, commit: str) -> str:
    url = commit_url(project.repo_url, commit)
    shown = escape(commit[:12] or "-")
    return f'<a class="commit" href="{escape(url)}" rel="noopener">{shown}</a>' if url else shown


def scrubbed(record: AbComparisonRecord, scrubber: Scrubber) -> AbComparisonRecord:
    """The comparison as published: both sides and the verdicts' case ids through the site's scrubber."""
    verdicts = record.verdicts
    if verdicts is not None:
        metrics = tuple(replace(m, case_id=scrubber.case_id(m.case_id)) for m in verdicts.metrics)
        verdicts = replace(verdicts, metrics=metrics)
    return AbComparisonRecord(scrubber.run(record.head), scrubber.run(record.base), verdicts)


def load_pair(store: Store, pair: str) -> AbComparisonRecord | None:
    from perfgate.store.ab_pairs import ab_comparison

    return ab_comparison(store, pair)
