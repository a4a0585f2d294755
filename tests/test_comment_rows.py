"""The PR comment keeps every failing row GitHub's size limit allows (not the first 50), and says how many
it left out."""

from __future__ import annotations

import re

from perfgate.ci.github import MAX_BODY, comment_body
from perfgate.report.comment import Results, Row, render_comment
from perfgate.report.markdown_fit import utf16_units

LONG = "bf16-" * 20  # ids of ~150 characters: 400 failing rows do not all fit


def _results(regressed: int, inconclusive: int = 0) -> Results:
    rows = tuple(
        Row(
            f"kernels/tests/test_perf.py::test_softmax[case{i:04d}-{'bf16-' * 20}]",
            "median_ms",
            "regressed",
            5.0,
            1.2,
            True,
        )
        for i in range(regressed)
    ) + tuple(Row(f"t.py::flat{i}", "median_ms", "inconclusive", 0.5, 1.0, True) for i in range(inconclusive))
    return Results(device="NVIDIA H100 80GB HBM3", strict=False, failed=True, rows=rows, findings=())


def _shown(body: str) -> tuple[int, int]:
    """Failing rows shown, and the count the "… and N more" row after them gives."""
    failing = body.split("### Fails the gate", 1)[1].split("###", 1)[0]
    shown = len(re.findall(r"test_softmax\[case\d{4}-", failing))
    more = re.search(r"\| … and ([\d,]+) more \|", failing)
    return shown, int(more.group(1).replace(",", "")) if more else 0


def test_four_hundred_regressions_show_all_that_fit_and_count_the_rest():
    body = comment_body([render_comment(_results(400, inconclusive=300), "a" * 40)], "perfgate")
    shown, left_out = _shown(body)
    assert utf16_units(body) <= MAX_BODY
    assert shown > 50 and shown + left_out == 400  # before: 50 shown at 12 KB of the 65 KB
    row = next(line for line in body.splitlines() if "case0000" in line)
    assert MAX_BODY - utf16_units(body) < 2 * (utf16_units(row) + 1) + 200  # no room left for another row


def test_failing_rows_that_fit_are_all_shown_without_a_note():
    body = comment_body([render_comment(_results(120), "a" * 40)], "perfgate")
    assert _shown(body) == (120, 0) and "left out" not in body
