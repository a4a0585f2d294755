"""Old vs new baseline, per changed case: the body of a baseline-update pull request."""

from __future__ import annotations

from perfgate.baseline import Baseline
from perfgate.report.format import fmt_value
from perfgate.stats import percent_change

CHANGE_SHOWN_PCT = 0.5  # smaller moves of a case's time are re-measurement, not news


def render_baseline_diff(old: Baseline | None, new: Baseline, markdown: bool = True) -> str:
    old_cases = old.cases if old else {}
    rows = []
    for cid in sorted(set(old_cases) | set(new.cases)):
        a, b = old_cases.get(cid), new.cases.get(cid)
        if a is None or b is None:
            rows.append(
                (
                    cid,
                    fmt_value(a.time_ms if a else None, "ms"),
                    fmt_value(b.time_ms if b else None, "ms"),
                    "added" if a is None else "removed",
                    _detects(b.threshold_pct if b else None),
                )
            )
            continue
        change = percent_change(a.time_ms, b.time_ms)
        if change is not None and abs(change) < CHANGE_SHOWN_PCT and a.threshold_pct == b.threshold_pct:
            continue
        rows.append(
            (
                cid,
                fmt_value(a.time_ms, "ms"),
                fmt_value(b.time_ms, "ms"),
                f"{change:+.1f}%" if change is not None else "-",
                _detects(b.threshold_pct),
            )
        )
    head = f"{len(rows)} of {len(new.cases)} case(s) changed in {new.path.name}"
    reason = new.updates[-1].reason if new.updates else ""
    if not markdown:
        lines = [head + (f": {reason}" if reason else "")]
        lines += [f"  {cid}: {a} -> {b} ({what}; detects {d})" for cid, a, b, what, d in rows]
        return "\n".join(lines) + "\n"
    out = [f"**{head}**" + (f": {_escape(reason)}" if reason else ""), ""]
    if rows:
        out += ["| case | old time | new time | change | detects |", "|---|---:|---:|---:|---:|"]
        out += [f"| `{_escape(cid)}` | {a} | {b} | {what} | {d} |" for cid, a, b, what, d in rows]
    return "\n".join(out) + "\n"


def _detects(pct: float | None) -> str:
    return "-" if pct is None else f"≥ {pct:.2g}%"


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
