"""The pull request's comment, rendered by trusted code from results files (perfgate.json).

The job that posts the comment runs the default branch's code with a write token; the results come from a
job that ran the pull request's code, so everything in them is data. Nothing from a file is posted as
Markdown: every string (case ids, metrics, kernels, finding messages, the device) is shown as inline code,
where GitHub renders no link, image, mention, issue reference, emoji or HTML, with line breaks and control
characters removed, pipes escaped in tables, and its length capped. Verdicts and finding kinds must be
perfgate's own words; numbers are formatted here; the headline is worked out from the rows (fail closed:
any failing row or strict finding makes it FAILED, whatever `gate.failed` says). The size is capped by
ci/github.py's comment_body (markdown_fit.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfgate.errors import ReportFileError
from perfgate.inputs import load_json_file
from perfgate.model import FindingKind, Verdict

MAX_TEXT = 160  # characters of one string from a file
# rows per table of what does not fail before "… and N more"; the failing rows are all given, and the comment's
# size limit (ci/github.py, markdown_fit.py) keeps as many as fit, saying how many it left out
MAX_ROWS = 50
FAILING = (Verdict.REGRESSED.value, Verdict.BELOW_TARGET.value)
CHANGED = (
    Verdict.IMPROVED.value,
    Verdict.INCONCLUSIVE.value,
    Verdict.NOT_COMPARABLE.value,
    Verdict.PROFILE_FAILED.value,
)
_VERDICTS = {v.value for v in Verdict}
_KINDS = {k.value for k in FindingKind}


def code(text: str, in_table: bool = False, limit: int = MAX_TEXT) -> str:
    """`text` as one inline code span that nothing in it can end early or turn into markup."""
    text = "".join(ch if ch.isprintable() else " " for ch in str(text)).strip()
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    if not text:
        return "-"
    if in_table:  # GFM splits table cells at `|` even inside code; `\|` is a literal pipe there
        text = text.replace("|", "\\|")
    ticks = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


@dataclass(frozen=True)
class Row:
    case_id: str
    metric: str
    verdict: str
    change_pct: float | None
    threshold_pct: float | None
    gated: bool


@dataclass(frozen=True)
class Note:
    kind: str
    message: str
    fails_strict: bool


@dataclass(frozen=True)
class Results:
    """What the comment shows of one results file, checked."""

    device: str
    strict: bool
    failed: bool
    rows: tuple[Row, ...]
    findings: tuple[Note, ...]


def read_results(path: Path) -> Results:
    """One results file, every field the comment uses checked (ReportFileError naming the file otherwise)."""
    return results_from_doc(path, load_json_file(path, ReportFileError))


def results_from_doc(path: Path, doc: Any) -> Results:
    """The comment's view of a results document already loaded from `path` (named in errors)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("gate"), dict):
        raise ReportFileError(path, 'not a perfgate results file (--perfgate-json): no "gate" object')
    gate = doc["gate"]
    rows = tuple(_row(path, i, c) for i, c in enumerate(_list(path, doc, "comparisons")))
    notes = tuple(_note(path, i, f) for i, f in enumerate(_list(path, doc, "findings")))
    env = doc.get("environment")
    device = env.get("device_name") if isinstance(env, dict) else None
    strict = gate.get("strict") is True
    failing = any(r.verdict in FAILING and r.gated for r in rows) or (strict and any(n.fails_strict for n in notes))
    return Results(
        device=device if isinstance(device, str) else "",
        strict=strict,
        failed=gate.get("failed") is not False or failing,
        rows=rows,
        findings=notes,
    )


def _list(path: Path, doc: dict[str, Any], key: str) -> list[Any]:
    value = doc.get(key, [])
    if not isinstance(value, list):
        raise ReportFileError(path, f'"{key}" must be a list')
    return value


def _row(path: Path, i: int, c: Any) -> Row:
    if not isinstance(c, dict) or not isinstance(c.get("case_id"), str) or not isinstance(c.get("metric"), str):
        raise ReportFileError(path, f"comparisons[{i}] must be an object with a case_id and a metric")
    if c.get("verdict") not in _VERDICTS:
        raise ReportFileError(path, f"comparisons[{i}]: verdict {str(c.get('verdict'))[:40]!r} is not perfgate's")
    return Row(
        c["case_id"],
        c["metric"],
        c["verdict"],
        _number(path, i, c, "change_pct"),
        _number(path, i, c, "threshold_pct"),
        c.get("gated") is not False,
    )


def _number(path: Path, i: int, c: dict[str, Any], key: str) -> float | None:
    value = c.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or abs(value) > 1e9:
        raise ReportFileError(path, f'comparisons[{i}]: "{key}" must be a finite number or null')
    return float(value)


def _note(path: Path, i: int, f: Any) -> Note:
    if not isinstance(f, dict) or f.get("kind") not in _KINDS or not isinstance(f.get("message"), str):
        raise ReportFileError(path, f"findings[{i}] must be an object with one of perfgate's kinds and a message")
    return Note(f["kind"], f["message"], f.get("fails_strict") is True)


def render_comment(results: Results, commit: str = "") -> str:
    """One GPU's section of the comment: the headline, what fails, what needs attention, other changes."""
    icon, word = ("❌", "FAILED") if results.failed else ("✅", "passed")
    counts: dict[str, int] = {}
    for r in results.rows:
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
    tally = ", ".join(f"{n} {v}" for v, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    out = [f"## {icon} perfgate: gate {word}", ""]
    where = [
        f"device {code(results.device)}" if results.device else "",
        f"commit {code(commit)}" if commit else "",
        "strict" if results.strict else "",
    ]
    cases = len({r.case_id for r in results.rows})  # rows are case x metric: the tally counts rows
    out += [
        " · ".join(w for w in where if w),
        "",
        f"{cases} case(s), {len(results.rows)} comparison(s): {tally or '-'}",
    ]
    failing = [r for r in results.rows if r.verdict in FAILING and r.gated]
    if failing:
        out += ["", "### Fails the gate", "", *_table(failing, limit=None)]
    attention = [n for n in results.findings if n.fails_strict]
    if attention:
        mark = "❌" if results.strict else "⚠️"
        out += ["", "### Needs attention", ""]
        out += [f"- {mark} **{n.kind}**: {code(n.message, limit=400)}" for n in attention[:MAX_ROWS]]
        if len(attention) > MAX_ROWS:
            out.append(f"- … and {len(attention) - MAX_ROWS} more")
    changed = [r for r in results.rows if r.verdict in CHANGED and r.gated]
    if changed:
        out += ["", "### Other changes", "", *_table(changed)]
    return "\n".join(out) + "\n"


def _table(rows: Sequence[Row], limit: int | None = MAX_ROWS) -> list[str]:
    lines = ["| case | metric | change | threshold | verdict |", "|---|---|---:|---:|---|"]
    shown = rows if limit is None else rows[:limit]
    for r in shown:
        change = f"{r.change_pct:+.1f}%" if r.change_pct is not None else "-"
        threshold = f"{r.threshold_pct:.2g}%" if r.threshold_pct is not None else "-"
        lines.append(
            f"| {code(r.case_id, in_table=True)} | {code(r.metric, in_table=True)} | {change} | "
            f"{threshold} | {r.verdict} |"
        )
    if len(rows) > len(shown):
        lines.append(f"| … and {len(rows) - len(shown)} more | | | | |")
    return lines


def missing_results(name: str) -> str:
    """The section for a gate job that wrote no results file: it never decided."""
    return f"## ❌ perfgate: no results\n\n{code(name)} wrote no perfgate.json: the gate never decided\n"
