"""A profiler backend is a registry entry: a stand-in installed as a package (a dist-info with a
`perfgate.profilers` entry point on sys.path, no edit in perfgate) is accepted by the settings, checked before
the first test with its own install hint, run by the profiling phase, and its metrics reach the report."""

import sys
from dataclasses import replace

import pytest

from perfgate.config.profile_options import parse_profile_list
from perfgate.config.settings import settings_from_config
from perfgate.errors import ConfigError
from perfgate.gate.compare import compare_run
from perfgate.measure.in_profiler import ChildRange
from perfgate.measure.profiler_registry import ENTRY_POINT_GROUP, profiler_named, profiler_names
from perfgate.measure.profiling import profile_cases
from perfgate.metrics import CATALOGUE, KERNELS
from perfgate.report.markdown import render_markdown
from tests.helpers import make_run

MODULE = "perfgate_standin_profiler"
STANDIN = """
import json
from perfgate.measure.in_profiler import ChildRange
from perfgate.measure.profilers import CaseFindings
from perfgate.model import Metric


class StandIn:
    name = "standin"
    executable = "standin-profiler-not-installed"
    install_hint = "pip install standin-profiler"
    child = ChildRange(calls=2)

    def argv(self, executable, report, command, options):
        return [executable, "--out", str(report), *command]

    def record(self, command, options, env, cwd):
        options.out_dir.mkdir(parents=True, exist_ok=True)
        report = options.out_dir / "standin.json"
        report.write_text(json.dumps({"argv": self.argv(self.executable, report, command, options),
                                      "child": env["PERFGATE_PROFILE_CHILD"]}))
        return report

    def read(self, report, case_ids, options):
        doc = json.loads(report.read_text())
        metrics = {c: [Metric("gpu__time_duration.sum", 1500.0, "ns", "standin", "standin_kernel")]
                   for c in case_ids}
        return CaseFindings(metrics, {}, f"standin: child {doc['child']}, {len(doc['argv'])} argv words")


PROFILER = StandIn()
"""


@pytest.fixture
def standin(tmp_path, monkeypatch):
    """Install the stand-in the way a package would: its module and a dist-info naming the entry point."""
    site = tmp_path / "site"
    dist = site / "standin_profiler-1.0.dist-info"
    dist.mkdir(parents=True)
    (site / f"{MODULE}.py").write_text(STANDIN)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: standin-profiler\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nstandin = {MODULE}:PROFILER\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    yield
    sys.modules.pop(MODULE, None)


def test_the_built_in_profilers_carry_their_child_range_and_install_hint():
    assert profiler_names()[:2] == ("nsys", "ncu")
    assert profiler_named("ncu").child == ChildRange(calls=1, profiler_api=True)
    assert profiler_named("nsys").child.calls == 3 and not profiler_named("nsys").child.profiler_api
    assert "Nsight Systems" in profiler_named("nsys").install_hint


def test_an_unknown_profiler_is_one_line_listing_the_known_ones():
    with pytest.raises(ConfigError, match=r"unknown profiler\(s\) \['vtune'\]; known: nsys, ncu"):
        parse_profile_list("nsys,vtune", "--perfgate-profile")


def test_an_installed_profiler_is_accepted_by_the_settings(standin):
    assert profiler_names() == ("nsys", "ncu", "standin")
    assert parse_profile_list("nsys, standin", "--perfgate-profile") == frozenset({"nsys", "standin"})
    assert settings_from_config({}, overrides={"profile": "standin"}).profile == frozenset({"standin"})
    with pytest.raises(ConfigError, match="known: nsys, ncu, standin"):
        parse_profile_list("rocprof", "--perfgate-profile")


def test_an_installed_profiler_runs_in_the_profiling_phase_and_its_metrics_reach_the_report(standin, tmp_path):
    run = make_run({"t.py::a": [1.0, 1.0], "t.py::b": [2.0, 2.0]})
    settings = settings_from_config({}, rootdir=tmp_path, overrides={"profile": "standin"})
    profiled = profile_cases({r.case_id: r for r in run.results}, settings, tmp_path)
    assert profiled.settings_line.startswith("standin: child standin, ")  # the child was told its profiler
    assert any("standin phase took" in m for m in profiled.messages)
    [metric] = profiled.results["t.py::a"].metrics
    assert (metric.source, metric.kernel, metric.value) == ("standin", "standin_kernel", 1500.0)
    assert CATALOGUE["gpu__time_duration.sum"].group is KERNELS  # a catalogue metric with a report column...
    profiled_run = replace(run, results=tuple(profiled.results.values()))
    text = render_markdown(compare_run(profiled_run.results, None, run.environment, settings), run=profiled_run)
    row = next(line for line in text.splitlines() if "standin_kernel" in line)  # ...shows up from any source
    assert "1.5 us" in row and "### Profiler metrics per kernel (standin)" in text


def test_a_missing_profiler_program_is_one_line_with_its_own_hint_before_any_test(standin, pytester):
    pytester.makepyfile(test_x="def test_x(perfgate):\n    perfgate(sum, [1, 2])\n")
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--perfgate", "--perfgate-profile", "standin", "--perfgate-no-store"
    )
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*standin-profiler-not-installed not found on PATH; pip install standin-profiler*"])
