"""A mode the calibration did not see is said once (issue 31, requirement 1): unchanged code whose noise window
holds a +3% mode the calibration missed passes strict mode with one note naming the case, the mode's size and
the remedy; a steady case gets none; a regressed case with such a window says so in its "why"; the note
survives the JSON file and `perfgate ci annotate`."""

from __future__ import annotations

import json
from dataclasses import replace

from perfgate.config.settings import Settings
from perfgate.model import FindingKind, Verdict
from perfgate.report.format import why_line
from perfgate.report.json_out import render_json
from perfgate.report.terminal import render_terminal
from tests.window_runs import FAST, MODED, gate_with_windows


def _gate(tmp_path, window, factors):
    return gate_with_windows(tmp_path, window, factors, 9, Settings(strict=True))


def test_unchanged_code_whose_window_holds_an_unseen_slower_mode_passes_strict_with_one_note(tmp_path):
    g = _gate(tmp_path, {"k.py::test_a": MODED, "k.py::test_b": MODED}, {"k.py::test_a": 1.0, "k.py::test_b": 1.0})
    assert not g.failed
    (note,) = [f for f in g.findings if f.kind is FindingKind.UNSEEN_MODE]  # once for the run, not per case
    assert not note.fails_strict
    assert note.message.startswith("2 case(s) have noise-window runs in a slower mode")
    assert "k.py::test_a +3.0%, 2.7% past the calibration's slowest process, 3 of 9 window runs" in note.message
    assert "perfgate calibrate" in note.message
    assert any("a mode the calibration did not see" in line for line in render_terminal(g))


def test_a_steady_case_gets_no_note(tmp_path):
    g = _gate(tmp_path, {"k.py::test_a": FAST + FAST[:3]}, {"k.py::test_a": 1.0})
    assert not any(f.kind is FindingKind.UNSEEN_MODE for f in g.findings)


def test_a_case_regressed_well_past_the_mode_its_window_shows_is_told_it_is_not_the_mode(tmp_path):
    # +10% against a +3% mode: the why line names the mode and says the change is not it (an outside review:
    # it said "may be the mode" on a real regression three times the mode's size)
    g = _gate(tmp_path, {"k.py::test_a": MODED, "k.py::test_b": FAST}, {"k.py::test_a": 1.10, "k.py::test_b": 1.10})
    verdicts = {c.case_id: c.verdict for c in g.comparisons}
    assert verdicts == {"k.py::test_a": Verdict.REGRESSED, "k.py::test_b": Verdict.REGRESSED} and g.failed
    why = why_line(g.explanations["k.py::test_a"])
    assert "a slower mode the calibration did not see" in why
    assert "lies past that mode by more than 2 process noises" in why and why.endswith("not the mode")
    assert "may be the mode" not in why
    assert "k.py::test_b" not in g.explanations  # its window saw nothing the calibration did not
    assert any(line.startswith("why k.py::test_a: its noise window shows a slower mode") for line in render_terminal(g))


def test_a_faster_mode_is_named_too():
    from perfgate.gate.unseen import UnseenMode, finding

    found = finding([UnseenMode("k.py::test_c", False, -2.9, 2.6, 4, 10)], calibrated_runs=10)
    assert found is not None and found.kind is FindingKind.UNSEEN_MODE
    assert "1 case(s) have window runs in a faster mode (k.py::test_c -2.9%" in found.message
    assert "(10 fresh processes of the suite" in found.message


def test_the_note_and_the_why_survive_the_json_file_the_summary_and_ci_annotate(tmp_path):
    from perfgate.ci.results import read_checked_results
    from perfgate.report.annotations import check_results, workflow_commands
    from perfgate.report.markdown import render_markdown

    g = _gate(tmp_path, {"k.py::test_a": MODED, "k.py::test_b": MODED}, {"k.py::test_a": 1.10, "k.py::test_b": 1.0})
    path = tmp_path / "perfgate.json"
    path.write_text(render_json(g, None))
    read_checked_results(path)  # the CI reader accepts the new kind
    doc = check_results(path, json.loads(path.read_text()))
    assert [f["fails_strict"] for f in doc["findings"] if f["kind"] == FindingKind.UNSEEN_MODE.value] == [False]
    (error,) = [line for line in workflow_commands(doc) if line.startswith("::error")]
    assert "k.py::test_a" in error and "a slower mode the calibration did not see" in error
    assert "a mode the calibration did not see" in render_markdown(g)


def test_the_note_holds_its_remedy_back_while_another_case_shows_a_possible_change(tmp_path):
    # a recalibration on a run that names a code change would learn the change as noise (a +3% step recalibrated
    # away at its onset in a replay): the note names what is pending and offers the command for a later run
    g = _gate(tmp_path, {"k.py::test_a": MODED, "k.py::test_b": FAST}, {"k.py::test_a": 1.0, "k.py::test_b": 1.10})
    (note,) = [f for f in g.findings if f.kind is FindingKind.UNSEEN_MODE]
    assert "do not recalibrate on this run: it names a possible change (k.py::test_b)" in note.message
    assert "on a run that names none" in note.message


def test_a_moded_case_that_is_inconclusive_does_not_hold_the_remedy_back(tmp_path):
    from perfgate.gate.unseen import changes_named

    g = _gate(tmp_path, {"k.py::test_a": MODED, "k.py::test_b": FAST}, {"k.py::test_a": 1.10, "k.py::test_b": 1.0})
    assert changes_named(g) == ("k.py::test_a",)
    assert changes_named(g, {"k.py::test_a"}) == ()  # its mode may be all it shows


def test_a_regressed_change_of_about_the_modes_size_may_be_the_mode():
    from perfgate.gate.unseen import UnseenMode, why_row
    from perfgate.metrics import TIME_METRIC
    from perfgate.verdicts import Comparison, Direction

    mode = UnseenMode("k.py::test_a", True, 3.0, 2.7, 3, 9)
    row = Comparison(
        "k.py::test_a", TIME_METRIC, "ms", Direction.LOWER, Verdict.REGRESSED, change_pct=3.3, noise_pct=0.3
    )
    assert "may be the mode, not the code" in why_row(mode, row).note
    past = replace(row, change_pct=4.0)  # 3.3 noises past the mode's centre
    assert why_row(mode, past).note.endswith(
        "(+4.0%) lies past that mode by more than 2 process noises (0.3% each): not the mode"
    )
