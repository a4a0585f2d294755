"""The regressions page: every slowdown the history shows, with its state and its commit range.

Two sources, both already in the site: the change points of each case's series (a step slower, between the
last run before it and the first run after it), and the latest run's verdict against the committed
baseline (regressed now, with or without a step the change-point search could name). A slower step's
state:
- open: the latest run still fails the gate on this case (or has no verdict that passes it: not gated,
  inconclusive);
- fixed: a later step made the case faster again (its commit range is shown too);
- accepted: the latest run passes against today's baseline (the baseline was re-calibrated with it, or
  the step is within what the case detects).
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from perfgate.report.site.history_data import CaseSeries, RunMeta
from perfgate.trends.history import CaseChanges, HistoryChange

FAILING = ("regressed", "below target")
PASSING = ("unchanged", "improved")  # a latest run judged and passing: the step is accepted
STATES = ("open", "fixed", "accepted")


def regressions_of(
    row: Mapping[str, Any], s: CaseSeries, runs: Mapping[int, RunMeta], changes: CaseChanges
) -> tuple[dict[str, Any], ...]:
    """The entries of one (case, device model) series, from its overview row and its change points."""
    failing = row["verdict"] in FAILING
    steps = list(changes.changes)
    out = []
    for i, c in enumerate(steps):
        if not c.slower:
            continue
        fix = next((later for later in steps[i + 1 :] if not later.slower), None)
        state = "fixed" if fix is not None else ("accepted" if row["verdict"] in PASSING else "open")
        out.append(_entry(row, state, c.change_pct, _range(c), _range(fix) if fix else None, "change point"))
    if failing and not any(e["state"] == "open" for e in out) and len(s.points) > 0:
        last = s.points[-1].run_id
        before = s.points[-2].run_id if len(s.points) > 1 else None
        span = {
            "before": _end(before, runs) if before is not None else None,
            "after": _end(last, runs),
        }
        out.append(_entry(row, "open", row["change"], span, None, "latest run vs baseline"))
    return tuple(out)


def _entry(
    row: Mapping[str, Any],
    state: str,
    pct: float | None,
    span: dict[str, Any],
    fixed: dict[str, Any] | None,
    source: str,
) -> dict[str, Any]:
    return {
        "case": row["case"],
        "device": row["device"],
        "href": row["href"],
        "state": state,
        "pct": None if pct is None else round(pct, 2),
        "range": span,
        "fixed": fixed,
        "source": source,
        "verdict": row["verdict"],
    }


def _range(c: HistoryChange) -> dict[str, Any]:
    return {
        "before": {"run": c.last_before.run_id, "commit": c.last_before.git_commit[:12]},
        "after": {"run": c.first_after.run_id, "commit": c.first_after.git_commit[:12]},
    }


def _end(run_id: int, runs: Mapping[int, RunMeta]) -> dict[str, Any]:
    return {"run": run_id, "commit": runs[run_id].git_commit[:12]}


def ordered(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Open first, then fixed, then accepted; the largest slowdown first within each."""
    return sorted(entries, key=lambda e: (STATES.index(e["state"]), -(e["pct"] or 0.0), e["case"], e["device"]))


def body(nav_html: str, entries: list[dict[str, Any]], repo_url: str) -> str:
    """The page's main part, rendered here (every value escaped): it needs no script."""
    counts = {s: sum(e["state"] == s for e in entries) for s in STATES}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items())
    rows = "".join(_row(e, repo_url) for e in ordered(entries))
    empty = '<p class="note" id="none">No regression in the history.</p>' if not entries else ""
    return (
        f'{nav_html}<main><h1>Regressions</h1><p class="note" id="counts">{escape(summary)}.</p>'
        '<p class="note">A slower step in a case\'s history (a change point), or a latest run that fails against '
        "the committed baseline. <b>open</b>: the latest run still fails; <b>fixed</b>: a later step made it "
        "faster again; <b>accepted</b>: the latest run passes against today's baseline. The commit range runs "
        "from the last run before the step to the first run after it.</p>"
        f"{empty}"
        '<div class="wide"><table id="regressions" class="cases"><thead><tr><th>case</th><th>device</th>'
        '<th>state</th><th class="num">change</th><th>commit range</th><th>fixed in</th><th>found by</th>'
        f"</tr></thead><tbody>{rows}</tbody></table></div></main>"
    )


def _row(e: Mapping[str, Any], repo_url: str) -> str:
    change = "-" if e["pct"] is None else f"{e['pct']:+.1f}%"
    fixed = _span(e["fixed"], repo_url) if e["fixed"] else "-"
    return (
        f'<tr class="state-{escape(e["state"])}"><td><a class="case-link" href="{escape(e["href"])}">'
        f"{escape(e['case'])}</a></td><td>{escape(e['device'] or '-')}</td>"
        f'<td class="state"><span class="mark dot {_DOT[e["state"]]}"></span> {escape(e["state"])}</td>'
        f'<td class="num">{escape(change)}</td><td>{_span(e["range"], repo_url)}</td><td>{fixed}</td>'
        f"<td>{escape(e['source'])}</td></tr>"
    )


_DOT = {"open": "bad", "fixed": "good", "accepted": "plain"}


def _span(span: Mapping[str, Any], repo_url: str) -> str:
    ends = [span.get("before"), span.get("after")]
    return " .. ".join(_end_html(end, repo_url) if end else "-" for end in ends)


def _end_html(end: Mapping[str, Any], repo_url: str) -> str:
    from perfgate.report.site.links import run_page
    from perfgate.report.site.project import commit_url

    run = f'<a href="{escape(run_page(int(end["run"])))}">#{int(end["run"])}</a>'
    commit = str(end["commit"] or "")
    url = commit_url(repo_url, commit)
    if url:
        return f'{run} <a class="commit" href="{escape(url)}" rel="noopener">{escape(commit[:8])}</a>'
    return f"{run} {escape(commit[:8])}" if commit else run
