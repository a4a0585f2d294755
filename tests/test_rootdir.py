"""A perfgate path option written with a space (`--perfgate-db PATH`) whose value is an existing file
outside the project: pytest takes the value for a test path and moves its rootdir up; perfgate keeps the
project, the case ids and the baseline where they were, and says what happened."""

import pytest

from tests.helpers import perf_project, results_json

TEST = """
def test_a(perfgate):
    perfgate(sum, range(50))

def test_b(perfgate):
    perfgate.measure(sum, (range(50),), name="named")
"""
PYPROJECT = """
[tool.perfgate]
threshold_pct = 100.0
warmup_ms = 0
min_samples = 5
max_samples = 5
memory = false
confirm_runs = 0
"""
IDS = ["test_perf.py::test_a", "test_perf.py::test_b::named"]


@pytest.fixture
def project(pytester, monkeypatch):
    return perf_project(pytester, monkeypatch, TEST, PYPROJECT)


@pytest.fixture
def outside(pytester):
    path = pytester.path.parent / f"{pytester.path.name}-outside"
    path.mkdir()
    return path


def gate_json(pytester, *args):
    """The gate with its JSON named in the `=` form: only the option under test may confuse pytest."""
    return pytester.runpytest("--perfgate", "-p", "no:cacheprovider", "--perfgate-json=out.json", *args)


def case_ids(project):
    return sorted(c["case_id"] for c in results_json(project)["cases"])


@pytest.mark.parametrize("option", ["--perfgate-db", "--perfgate-baseline-file"])
def test_a_spaced_path_option_outside_the_project_keeps_case_ids_and_baselines(project, outside, option):
    target = outside / ("history.db" if option == "--perfgate-db" else "baseline.json")
    first = gate_json(project, f"--perfgate-db={outside / 'history.db'}")  # the `=` form: pytest is not confused
    assert first.ret == 0 and case_ids(project) == IDS
    written = next((project.path / "baselines").glob("*.json"))
    if option == "--perfgate-baseline-file":
        target.write_bytes(written.read_bytes())
    result = gate_json(project, option, str(target))
    result.stdout.fnmatch_lines(
        [
            f"perfgate: pytest read `{option} *` as a test path and moved its rootdir*"
            f"Write `{option}=*` to leave pytest's rootdir alone."
        ]
    )
    assert case_ids(project) == IDS  # not "<project dir>/test_perf.py::test_a": nothing became new or missing
    verdicts = {c["case_id"]: c["verdict"] for c in results_json(project)["comparisons"] if c["metric"] == "median_ms"}
    assert sorted(verdicts) == IDS and not {"new", "missing"} & set(verdicts.values())  # compared with the baseline
    assert not (outside.parent / "baselines").exists()  # no baseline written one directory up


def test_the_equals_form_and_paths_inside_the_project_say_nothing(project, outside):
    assert gate_json(project, f"--perfgate-db={outside / 'history.db'}").ret == 0
    inside = gate_json(project, "--perfgate-db", str(project.path / ".perfgate" / "h.db"))
    spaced_new = gate_json(project, "--perfgate-db", str(outside / "new.db"))  # not there yet: not a test path
    for result in (inside, spaced_new):
        assert "as a test path" not in result.stdout.str()
        assert case_ids(project) == IDS
