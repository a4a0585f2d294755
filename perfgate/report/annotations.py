"""GitHub Actions workflow commands for a results document: one `::error` per regressed case, pointing at
the test's file and line, and `::warning` for inconclusive cases and strict-mode findings (`::error` when
strict mode made them fail the job)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from perfgate.errors import ReportFileError
from perfgate.metrics import WINDOW_MODE

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


def _gross(c: dict[str, Any]) -> str:
    """A regression failed by the gross rule (no between-process noise: gate/decision.py) asks for calibration,
    as the terminal and the summary do."""
    if c["verdict"] != "regressed" or c.get("noise_pct") is not None or not c.get("stages"):
        return ""
    return (
        ": slower beyond the gross threshold in every process, with no between-process noise: run perfgate "
        "calibrate for thresholds from the noise (smaller changes cannot fail until then)"
    )


def _window_modes(doc: dict[str, Any]) -> dict[str, str]:
    """Per regressed case whose noise window shows a mode the calibration did not see, its "why" words
    (gate/unseen.py): a red build's annotation then tells a mode from a code change."""
    found = doc.get("explanations")
    if not isinstance(found, dict):
        return {}
    return {
        str(cid): str(row["note"])
        for cid, rows in found.items()
        if isinstance(rows, list)
        for row in rows
        if isinstance(row, dict) and row.get("metric") == WINDOW_MODE and isinstance(row.get("note"), str)
    }


def check_results(path: Path, doc: Any) -> dict[str, Any]:
    """The parts of a `--perfgate-json` document the annotations read, checked: one line per problem."""
    if not isinstance(doc, dict):
        raise ReportFileError(path, "not a perfgate results file (--perfgate-json): not an object")
    gate = doc.get("gate", {})
    if not isinstance(gate, dict) or not isinstance(gate.get("strict", False), bool):
        raise ReportFileError(path, '"gate" must be an object with a boolean "strict"')
    for key, fields in (
        ("comparisons", {"case_id": str, "metric": str, "verdict": str}),
        ("findings", {"kind": str, "message": str}),
        ("cases", {"case_id": str}),
    ):
        rows = doc.get(key, [])
        if not isinstance(rows, list):
            raise ReportFileError(path, f'"{key}" must be a list')
        for i, row in enumerate(rows):
            if not isinstance(row, dict):
                raise ReportFileError(path, f"{key}[{i}] must be an object")
            for field, kind in fields.items():
                if not isinstance(row.get(field), kind):
                    raise ReportFileError(path, f'{key}[{i}]: "{field}" must be a string')
            for number in ("change_pct", "threshold_pct"):
                value = row.get(number)
                if value is not None and (
                    isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
                ):
                    raise ReportFileError(path, f'{key}[{i}]: "{number}" must be a finite number or null')
            loc = row.get("location")
            if loc is not None and not (
                isinstance(loc, list)
                and len(loc) == 2
                and isinstance(loc[0], str)
                and isinstance(loc[1], int)
                and not isinstance(loc[1], bool)
            ):
                raise ReportFileError(path, f'{key}[{i}]: "location" must be [file, line]')
    return doc


def workflow_commands(doc: dict[str, Any]) -> list[str]:
    """The workflow command lines for a checked `--perfgate-json` document (check_results)."""
    where: dict[str, tuple[str, int | None]] = {}
    for case in doc.get("cases", []):
        loc = case.get("location")
        if loc:
            where[case["case_id"]] = (loc[0], loc[1])
    lines = []
    modes = _window_modes(doc)
    for c in doc.get("comparisons", []):
        file, line = where.get(c["case_id"], ("", None))
        if c["verdict"] in FAILING:  # a row the gate does not gate on warns: it did not fail the job
            text = _describe(c) + (f": {modes[c['case_id']]}" if c["case_id"] in modes else "") + _gross(c)
            lines.append(command("error" if c.get("gated") is not False else "warning", text, file, line))
        elif c["verdict"] == "inconclusive":
            lines.append(command("warning", _describe(c) + " inconclusive", file, line))
    strict = bool(doc.get("gate", {}).get("strict"))
    for f in doc.get("findings", []):
        if not f.get("fails_strict"):
            continue
        file, line = where.get(str(f.get("case_id", "")), ("", None))
        level = "error" if strict else "warning"
        lines.append(command(level, f"{f['kind']}: {f['message']}", file, line, title="perfgate strict"))
    return lines
