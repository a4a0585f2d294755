"""GitHub Actions workflow commands for a results document: one `::error` per regressed case, pointing at
the test's file and line, and `::warning` for inconclusive cases and strict-mode findings (`::error` when
strict mode made them fail the job)."""

from __future__ import annotations

from typing import Any

FAILING = ("regressed", "below target")


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(level: str, message: str, file: str = "", line: int | None = None, title: str = "perfgate") -> str:
    props = []
    if file:
        props.append(f"file={_escape_property(file)}")
        if line:
            props.append(f"line={int(line)}")
    props.append(f"title={_escape_property(title)}")
    return f"::{level} {','.join(props)}::{_escape_data(message)}"


def _describe(c: dict[str, Any]) -> str:
    metric = "time" if c["metric"] == "median_ms" else c["metric"]
    if c.get("kernel") and c["metric"] not in ("min_speedup",):
        metric += f" [{c['kernel']}]"
    if c["verdict"] == "below target":
        return f"{c['case_id']} {c.get('note') or 'speedup below its target'}"
    change = f"{c['change_pct']:+.1f}%" if isinstance(c.get("change_pct"), (int, float)) else "changed"
    threshold = f" (threshold {c['threshold_pct']:.2g}%)" if isinstance(c.get("threshold_pct"), (int, float)) else ""
    return f"{c['case_id']} {metric} {change}{threshold}"


def workflow_commands(doc: dict[str, Any]) -> list[str]:
    """The workflow command lines for a `--perfgate-json` document."""
    where: dict[str, tuple[str, int | None]] = {}
    for case in doc.get("cases", []):
        loc = case.get("location")
        if loc:
            where[case["case_id"]] = (str(loc[0]), int(loc[1]))
    lines = []
    for c in doc.get("comparisons", []):
        file, line = where.get(c["case_id"], ("", None))
        if c["verdict"] in FAILING:
            lines.append(command("error", _describe(c), file, line))
        elif c["verdict"] == "inconclusive":
            lines.append(command("warning", _describe(c) + " inconclusive", file, line))
    strict = bool(doc.get("gate", {}).get("strict"))
    for f in doc.get("findings", []):
        if not f.get("fails_strict"):
            continue
        file, line = where.get(f.get("case_id", ""), ("", None))
        level = "error" if strict else "warning"
        lines.append(command(level, f"{f['kind']}: {f['message']}", file, line, title="perfgate strict"))
    return lines
