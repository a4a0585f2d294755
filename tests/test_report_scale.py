"""Reports at 10,000 cases: what fails is shown first and whole, every other list is capped, GitHub's
limits are never passed, the Markdown stays valid, and every report step is linear in cases (counted in
function calls, never timed)."""

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.baseline import Baseline, BaselineCase
from perfgate.ci.github import MAX_BODY, comment_body
from perfgate.config.settings import Settings
from perfgate.gate.findings import GateFacts, findings_for
from perfgate.model import TestOutcome, Timer, UnmeasuredTest
from perfgate.report.markdown import render_markdown
from perfgate.report.markdown_fit import COMMENT_LIMIT, STEP_SUMMARY_LIMIT, fit_markdown, utf8_bytes, utf16_units
from perfgate.report.publish import publish
from perfgate.report.terminal import render_terminal
from tests.scale import case_id, scale_gate


def failing_rows(text, tag="h100"):
    """The case numbers of the failing table's rows."""
    section = text.split("### ❌ Failing", 1)[1].split("\n### ", 1)[0]
    return [
        int(line.split("-case", 1)[1][:5])
        for line in section.splitlines()
        if line.startswith("| `") and f"[{tag}-" in line
    ]


def check_valid(markdown, render=True):
    """Every table row whole and every <details> block closed; what GitHub's renderer makes of it (not for
    a 1 MiB text, which takes the CommonMark renderer seconds)."""
    assert markdown.count("<details>") == markdown.count("</details>")
    for line in markdown.splitlines():
        if line.startswith("|"):
            assert line.endswith("|"), f"a table row was cut: {line[-40:]}"
    if render:
        markdown_it = pytest.importorskip("markdown_it")
        html = markdown_it.MarkdownIt("commonmark").enable("table").render(markdown)
        assert html.count("<table>") == html.count("</table>") and "<td>… and" not in html.split("</table>")[-1]


def test_the_comment_with_40_regressed_and_2500_inconclusive_shows_every_regression_under_the_limit():
    gate, run = scale_gate(10_000, 40, 2_500)
    body = comment_body(render_markdown(gate, run=run), "perfgate")
    assert utf16_units(body) <= MAX_BODY < COMMENT_LIMIT
    assert sorted(failing_rows(body)) == list(range(40))
    assert failing_rows(body) == sorted(range(40), reverse=True)  # the largest regression first
    assert "… and 2,450 more (2,450 inconclusive)" in body  # the rest of the findings, counted
    check_valid(body)


def test_two_gpus_each_keep_their_regressions_in_one_comment():
    h100 = render_markdown(*scale_gate(10_000, 40, 2_500, tag="h100")[:1])
    # the second GPU's summary lists everything (no caps): far over the limit on its own
    big_gate, big_run = scale_gate(3_000, 40, 2_500, tag="a100")
    a100 = render_markdown(big_gate, run=big_run, top_n=100_000)
    assert utf16_units(a100) > 4 * COMMENT_LIMIT
    body = comment_body([h100, a100], "perfgate")
    assert utf16_units(body) <= MAX_BODY
    first, second = body.split("\n\n---\n\n")
    assert sorted(failing_rows(first, "h100")) == list(range(40))
    assert sorted(failing_rows(second, "a100")) == list(range(40))
    assert "section(s) left out" in second and "the full summary is in the job summary" in second
    check_valid(body)


def test_when_the_regressions_alone_overflow_each_gpu_keeps_its_largest_ones():
    summaries = [render_markdown(scale_gate(2_000, 600, 0, tag=tag)[0]) for tag in ("h100", "a100")]
    body = comment_body(summaries, "perfgate")
    assert utf16_units(body) <= MAX_BODY
    for text, tag in zip(body.split("\n\n---\n\n"), ("h100", "a100")):
        rows = failing_rows(text, tag)
        assert len(rows) > 100 and rows == sorted(range(600), reverse=True)[: len(rows)]
        assert f"| … and {600 - len(rows):,} more | | | | | | |" in text  # a table row of the table's width
    check_valid(body)


def test_the_step_summary_stays_under_1_mib_with_6000_inconclusive_cases(tmp_path, monkeypatch):
    gate, run = scale_gate(6_100, 40, 6_000)
    summary = tmp_path / "step_summary.md"
    summary.write_text("x" * 1_000_000)  # earlier steps of the job wrote most of the 1 MiB already
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    publish(gate, run, Settings(rootdir=tmp_path, summary_path=tmp_path / "s.md"), None)
    assert summary.stat().st_size <= STEP_SUMMARY_LIMIT
    appended = summary.read_text()[1_000_000:]
    assert sorted(failing_rows(appended)) == list(range(40))
    check_valid(appended)
    assert utf8_bytes((tmp_path / "s.md").read_text()) <= STEP_SUMMARY_LIMIT


def test_an_uncapped_summary_of_6000_inconclusive_cases_is_cut_to_1_mib_at_section_boundaries():
    gate, run = scale_gate(6_100, 40, 6_000)
    text = render_markdown(gate, run=run, top_n=100_000)
    assert utf8_bytes(text) > STEP_SUMMARY_LIMIT
    fitted = fit_markdown(text, STEP_SUMMARY_LIMIT)
    assert utf8_bytes(fitted) <= STEP_SUMMARY_LIMIT and sorted(failing_rows(fitted)) == list(range(40))
    check_valid(fitted, render=False)


def test_the_terminal_lists_failing_and_changed_rows_then_counts():
    gate, _ = scale_gate(10_000, 40, 2_500)
    lines = render_terminal(gate)
    assert sum("REGRESSED" in line for line in lines) == 40
    assert sum("inconclusive (2 processes)" in line for line in lines) == 30
    assert "not listed: 2,470 more changed, 7,460 unchanged row(s) (--perfgate-full-table lists every row)" in lines
    assert len(lines) < 200 and lines[-1].startswith("perfgate: gate FAILED")
    assert len(render_terminal(gate, full=True)) > 10_000


def calls(fn, *args, **kwargs):
    """Python and C function calls made by fn(*args): an operation count that no busy machine changes."""
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        count += event in ("call", "c_call")

    sys.setprofile(profile)
    try:
        fn(*args, **kwargs)
    finally:
        sys.setprofile(None)
    return count


def unmeasured_inputs(n):
    """A run whose quarter of the baseline's tests were skipped, for findings' strict checks."""
    gate, run = scale_gate(n, n // 100, n // 4)
    baseline = Baseline(
        Path("b.json"),
        run.environment,
        {case_id(i): BaselineCase(case_id(i), Timer.CUDA_EVENT, 1.0, (1.0, 1.0)) for i in range(n)},
    )
    skipped = tuple(UnmeasuredTest(case_id(i), TestOutcome.SKIPPED, "no GPU") for i in range(0, n, 4))
    kept = tuple(r for i, r in enumerate(run.results) if i % 4)
    return replace(run, results=kept, info=replace(run.info, unmeasured=skipped)), baseline, gate


@pytest.mark.parametrize("step", ["summary", "comment", "terminal", "findings", "fit"])
def test_every_report_step_is_linear_in_cases(step):
    def work(n):
        gate, run = scale_gate(n, n // 100, n // 4)
        if step == "summary":
            return calls(render_markdown, gate, run=run)
        if step == "comment":
            text = render_markdown(gate, run=run, top_n=n)
            return calls(comment_body, [text, text], "perfgate")
        if step == "terminal":
            return calls(render_terminal, gate)
        if step == "findings":
            run, baseline, gate = unmeasured_inputs(n)
            return calls(findings_for, run, baseline, gate, GateFacts())
        text = render_markdown(gate, run=run, top_n=n)
        return calls(fit_markdown, text, len(text) // 3)

    small, large = work(1_000), work(4_000)
    assert large <= 4.6 * small, f"{step}: {small:,} calls at 1,000 cases, {large:,} at 4,000"
