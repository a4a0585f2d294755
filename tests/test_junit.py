"""The verdicts as JUnit XML: one testcase per case, regressed ones fail with their change and threshold,
undecided ones are skipped, the numbers are properties, and any case name gives a well-formed file."""

import xml.etree.ElementTree as ET
from dataclasses import replace

from perfgate.baseline.write import write_baseline
from perfgate.cli import main
from perfgate.config.settings import Settings, settings_from_config
from perfgate.model import Comparison, Direction, Finding, FindingKind, GateResult, Verdict
from perfgate.report.junit import junit_names, render_junit
from perfgate.report.publish import publish
from perfgate.store import open_store
from tests.helpers import calibrated_of, make_run, noisy

HOSTILE = "k/t.py::test_x[<a href='x'>&\"\x00\x1b[31m\ud800\n]"


def time_row(case_id, verdict, change_pct=None, **kw):
    return Comparison(
        case_id,
        "median_ms",
        "ms",
        Direction.LOWER,
        verdict,
        baseline=kw.pop("baseline", 1.0),
        current=kw.pop("current", 1.1),
        change_pct=change_pct,
        threshold_pct=3.0,
        **kw,
    )


def cases_of(text):
    suite = ET.fromstring(text.encode()).find("testsuite")
    return suite, {(c.get("classname"), c.get("name")): c for c in suite.iter("testcase")}


def test_regressed_cases_fail_undecided_ones_are_skipped_and_every_case_is_a_testcase():
    run = make_run({"k/t.py::test_a[x]": [2.0, 2.0], "k/t.py::test_b": [1.0, 1.0], "k/t.py::test_c": [1.0, 1.0]})
    gate = GateResult(
        comparisons=(
            time_row("k/t.py::test_a[x]", Verdict.REGRESSED, 12.5, current=2.0),
            Comparison(
                "k/t.py::test_a[x]",
                "launch__registers_per_thread",
                "",
                Direction.LOWER,
                Verdict.REGRESSED,
                kernel="_k",
                baseline=128.0,
                current=255.0,
                change_pct=99.2,
                threshold_pct=0.0,
            ),
            time_row("k/t.py::test_b", Verdict.UNCHANGED, 0.4),
            time_row("k/t.py::test_c", Verdict.INCONCLUSIVE, 2.9, note="measure again"),
            time_row("k/t.py::test_gone", Verdict.MISSING, current=None),
        )
    )
    suite, cases = cases_of(render_junit(gate, run))
    counts = (suite.get("tests"), suite.get("failures"), suite.get("skipped"), suite.get("errors"))
    assert counts == ("4", "1", "2", "0")
    failure = cases[("k.t", "test_a[x]")].find("failure")
    assert failure.get("message") == "median_ms regressed: +12.50%; threshold 3%; 1 -> 2 ms"
    assert "launch__registers_per_thread [_k] regressed: +99.20%; threshold 0%" in failure.text
    assert cases[("k.t", "test_a[x]")].get("time") == "0.002"  # the measured median, in seconds
    assert cases[("k.t", "test_b")].find("failure") is None and cases[("k.t", "test_b")].find("skipped") is None
    assert "inconclusive" in cases[("k.t", "test_c")].find("skipped").get("message")
    assert cases[("k.t", "test_gone")].find("skipped") is not None and cases[("k.t", "test_gone")].get("time") is None
    props = {p.get("name"): p.get("value") for p in cases[("k.t", "test_a[x]")].iter("property")}
    assert props["median_ms.change_pct"] == "12.5" and props["launch__registers_per_thread[_k].current"] == "255.0"


def test_a_hostile_case_name_gives_well_formed_xml_that_keeps_what_xml_can_hold():
    gate = GateResult(comparisons=(time_row(HOSTILE, Verdict.REGRESSED, 10.0, note="<b>\x07bell</b>"),))
    text = render_junit(gate)
    suite, cases = cases_of(text)  # parses: escaped, and the characters XML 1.0 forbids are replaced
    [(classname, name)] = cases
    assert classname == "k.t" and name == "test_x[<a href='x'>&\"\ufffd\ufffd[31m\ufffd\n]"
    assert "\x00" not in text and "\x1b" not in text and "\x07" not in text
    assert "&lt;b&gt;" in text and suite.get("failures") == "1"


def test_a_strict_failure_without_a_case_is_a_failing_testcase_of_its_own():
    gate = GateResult(
        comparisons=(time_row("t.py::a", Verdict.UNCHANGED, 0.1),),
        strict=True,
        findings=(Finding(FindingKind.NO_BASELINE, "no baseline for this GPU"),),
    )
    assert gate.failed
    suite, cases = cases_of(render_junit(gate))
    assert suite.get("failures") == "1"
    assert cases[("perfgate.strict", FindingKind.NO_BASELINE.value)].find("failure") is not None


def test_names_follow_pytest_junit_and_a_bare_id_stays_whole():
    assert junit_names("dir/sub/test_x.py::TestK::test_y[a::b]") == ("dir.sub.test_x.TestK", "test_y[a::b]")
    assert junit_names("dir/test_x.py::test_y") == ("dir.test_x", "test_y")
    assert junit_names("just a name") == ("perfgate", "just a name")


def test_the_option_is_declared_once_and_publish_writes_the_file(tmp_path):
    settings = settings_from_config({"junit_xml": "out/junit.xml"}, rootdir=tmp_path)
    assert settings.junit_xml_path == tmp_path / "out" / "junit.xml"  # a pyproject path is the project root's
    (tmp_path / "out").mkdir()
    run = make_run({"t.py::a": [1.0, 1.0]})
    publish(GateResult(comparisons=(time_row("t.py::a", Verdict.UNCHANGED, 0.1),)), run, settings, None, environ={})
    suite, _ = cases_of(settings.junit_xml_path.read_text(encoding="utf-8"))
    assert suite.get("tests") == "1"
    assert Settings().junit_xml_path is None


def test_perfgate_compare_writes_the_junit_file_of_a_stored_run(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "baselines" / "nvidia-h100-80gb-hbm3.json"
    write_baseline(replace(calibrated_of(make_run({"t.py::a": noisy(1.0)}), tmp_path), path=path))
    with open_store(tmp_path / "h.db") as store:
        store.save_run(make_run({"t.py::a": noisy(1.2, seed=2)}))
    assert main(["compare", "--db", "h.db", "--junit-xml", "j.xml"]) == 1
    capsys.readouterr()
    suite, cases = cases_of((tmp_path / "j.xml").read_text(encoding="utf-8"))
    assert suite.get("failures") == "1" and "regressed" in cases[("t", "a")].find("failure").get("message")


def test_an_undecided_time_is_skipped_even_when_another_gated_metric_was_decided():
    memory = Comparison(
        "k/t.py::test_c",
        "memory.peak_host_bytes",
        "byte",
        Direction.LOWER,
        Verdict.UNCHANGED,
        baseline=1000.0,
        current=1000.0,
        change_pct=0.0,
        threshold_pct=5.0,
    )
    gate = GateResult(comparisons=(time_row("k/t.py::test_c", Verdict.INCONCLUSIVE, 2.9, note="measure again"), memory))
    suite, cases = cases_of(render_junit(gate))
    skipped = cases[("k.t", "test_c")].find("skipped")
    assert suite.get("skipped") == "1" and skipped is not None
    assert skipped.get("message").startswith("median_ms inconclusive")  # the undecided metric, not the decided one
