"""The progress display: plain lines in a log (bounded, with elapsed times from the injected clock), a live
rich display on a terminal, nothing when quiet."""

from __future__ import annotations

import io

import pytest

from perfgate.measure import clock
from perfgate.report.progress import LOG_INTERVAL_S, elapsed_text, open_progress
from tests.manual_clock import ManualClock


@pytest.fixture
def manual() -> ManualClock:
    c = ManualClock()
    previous = clock.install(c)
    yield c
    clock.install(previous)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_gets_a_start_line_a_line_per_interval_and_an_end_line_with_elapsed_times(manual, monkeypatch):
    monkeypatch.delenv("PERFGATE_PROGRESS", raising=False)
    out = io.StringIO()
    with open_progress(out) as progress, progress.task("calibrate: fresh processes", total=6) as task:
        for i in range(6):
            manual.sleep(LOG_INTERVAL_S / 2)
            task.advance(f"process {i + 1}")
    lines = out.getvalue().splitlines()
    assert lines[0] == "perfgate: calibrate: fresh processes (6 step(s)): started"
    assert lines[-1] == "perfgate: calibrate: fresh processes: 6/6 in 1 min 30 s"
    assert lines[1:-1] == [
        "perfgate: calibrate: fresh processes: 2/6, process 2 (30.0 s)",
        "perfgate: calibrate: fresh processes: 4/6, process 4 (1 min 00 s)",
        "perfgate: calibrate: fresh processes: 6/6, process 6 (1 min 30 s)",
    ]
    assert "\r" not in out.getvalue()


def test_a_quick_task_in_a_log_is_two_lines_whatever_its_steps(manual, monkeypatch):
    monkeypatch.delenv("PERFGATE_PROGRESS", raising=False)
    out = io.StringIO()
    with open_progress(out) as progress, progress.task("A/B rounds") as task:
        for _ in range(1000):
            task.update("case x: rounds")
            task.advance()
    assert out.getvalue().splitlines() == ["perfgate: A/B rounds: started", "perfgate: A/B rounds: 1000 done in 0.0 s"]


def test_ci_gets_plain_lines_even_on_a_terminal(manual, monkeypatch):
    monkeypatch.setenv("CI", "true")
    monkeypatch.delenv("PERFGATE_PROGRESS", raising=False)
    out = _Tty()
    with open_progress(out) as progress, progress.task("bisect", total=4) as task:
        task.advance("step 1")
    assert out.getvalue().startswith("perfgate: bisect (4 step(s)): started\n")
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()


@pytest.mark.parametrize("how", ["switch", "argument"])
def test_quiet_prints_no_progress_but_keeps_notes_on_their_stream(manual, monkeypatch, how):
    monkeypatch.setenv("PERFGATE_PROGRESS", "0" if how == "switch" else "")
    out = io.StringIO()
    with open_progress(out, quiet=how == "argument") as progress, progress.task("x", total=2) as task:
        task.advance()
    assert out.getvalue() == ""
    with open_progress(out, quiet=how == "argument") as progress:
        progress.note("step 1: bad")
    assert out.getvalue() == "step 1: bad\n"


def test_a_terminal_gets_the_live_display_with_case_ids_shown_literally(manual, monkeypatch):
    pytest.importorskip("rich")
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("PERFGATE_PROGRESS", raising=False)
    out = _Tty()
    with open_progress(out) as progress, progress.task("test_perf.py::test_softmax[bf16]", total=2) as task:
        task.advance("base")
        progress.note("perfgate: a note")
        task.advance("head")
    text = out.getvalue()
    assert "test_softmax[bf16]" in text and "perfgate: a note" in text and "2/2" in text


@pytest.mark.parametrize(
    ("seconds", "text"), [(0.04, "0.0 s"), (59.94, "59.9 s"), (65, "1 min 05 s"), (3725, "1 h 02 min")]
)
def test_elapsed_times_read_as_people_write_them(seconds, text):
    assert elapsed_text(seconds) == text
