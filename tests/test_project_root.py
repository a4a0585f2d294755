"""The project root, `[tool.perfgate]` and the baseline directory are resolved the same way for a pull request's
head and its base (issue 32, requirement 1): pytest's own rule, asked about the working tree and about the base
commit's files (config/layout.py), so a configuration file that moves the root is a strict finding in baseline
mode and in A/B mode. The command line's rule (config/project.py, no pytest import) agrees with pytest's."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.baseline.base_ref import _CommitTree, _Git, check_against_base
from perfgate.config.layout import Invocation, WorkingTree, place_root
from perfgate.config.project import find_root
from perfgate.config.settings import Settings
from perfgate.model import Environment, FindingKind
from perfgate.pytest_plugin.rootdir import pytest_rootdir

ENV = Environment(device_kind="host", device_name="Some CPU")


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def repo_with(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    write(root, files)
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "base"],
    ):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, timeout=60)
    return root


BASE = {
    "pyproject.toml": "[tool.perfgate]\nthreshold_pct = 5\n",
    "tests/perf/test_x.py": "def test_x(perfgate):\n    pass\n",
    "baselines/host-some-cpu.json": "{}",
}


@pytest.mark.parametrize(
    "files",
    [
        {},
        {"pyproject.toml": "[project]\nname = 'x'\n", "a/setup.py": ""},
        {"pyproject.toml": "[tool.pytest.ini_options]\n", "a/pyproject.toml": "[project]\nname = 'inner'\n"},
        {"a/pytest.toml": "[pytest]\n"},
        {"a/.pytest.ini": ""},
        {"a/tox.ini": "[tox]\n", "setup.cfg": "[tool:pytest]\n"},
        {"a/tox.ini": "[pytest]\n", "pytest.ini": "[pytest]\n"},
        {"setup.py": "", "a/b/pyproject.toml": "[project]\nname = 'x'\n"},
    ],
    ids=lambda f: ",".join(f) or "nothing",
)
def test_the_command_lines_root_is_the_one_pytest_picks(tmp_path, files):
    write(tmp_path, files)
    start = tmp_path / "a" / "b"
    start.mkdir(parents=True, exist_ok=True)
    assert find_root(start) == pytest_rootdir(start).rootdir


def test_a_config_file_beside_the_tests_places_the_heads_root_there_and_the_base_commit_does_not(tmp_path):
    root = repo_with(tmp_path, BASE)
    write(root, {"tests/perf/pytest.ini": "[pytest]\n"})
    invocation = Invocation(root, ("tests/perf",))
    head = place_root(WorkingTree(root), root, invocation, pytest_rootdir)
    git = _Git(root)
    base = place_root(_CommitTree(git, git.commit("main")), root, invocation, pytest_rootdir)
    assert (head.root, head.inifile) == ("tests/perf", "tests/perf/pytest.ini")
    assert (base.root, base.inifile) == ("", "pyproject.toml")
    assert pytest_rootdir(root, ["tests/perf"]).rootdir == root / "tests" / "perf"  # pytest agrees on the head


@pytest.mark.parametrize(
    ("added", "args", "moved"),
    [
        ({"tests/perf/pytest.ini": "[pytest]\n"}, ("tests/perf",), True),
        ({"tests/perf/tox.ini": "[pytest]\n"}, ("tests/perf/test_x.py::test_x",), True),
        ({"tests/setup.cfg": "[tool:pytest]\n"}, ("tests/perf",), True),
        ({"tests/perf/pytest.ini": "[pytest]\n"}, (), False),  # run from the top: the file is not on the way
        ({"pytest.ini": "[pytest]\n"}, ("tests/perf",), False),  # another file at the same root
        ({"tests/perf/tox.ini": "[tox]\n"}, ("tests/perf",), False),  # no [pytest]: not pytest's
    ],
)
def test_the_base_check_names_a_moved_root_in_both_modes(tmp_path, added, args, moved):
    root = repo_with(tmp_path, BASE)
    write(root, added)
    settings = Settings(rootdir=root, baseline_dir=root / "baselines")
    invocation = Invocation(root, args)
    for baseline in (root / "baselines" / "host-some-cpu.json", None):  # baseline mode, A/B mode
        check = check_against_base("main", settings, ENV, baseline, invocation, pytest_rootdir)
        assert any("the project root moved" in c for c in check.changes) is moved, check.changes


def test_the_base_check_reads_the_bases_config_and_baseline_from_the_bases_root(tmp_path):
    root = repo_with(tmp_path, BASE)
    write(root, {"tests/perf/pytest.ini": "[pytest]\n", "tests/perf/baselines/host-some-cpu.json": "{}"})
    perf = root / "tests" / "perf"
    settings = Settings(rootdir=perf, baseline_dir=perf / "baselines")  # where pytest's moved root leads the gate
    check = check_against_base(
        "main",
        settings,
        ENV,
        perf / "baselines" / "host-some-cpu.json",
        Invocation(root, ("tests/perf",)),
        pytest_rootdir,
    )
    text = "; ".join(check.changes)
    assert "[tool.perfgate] differs from main in threshold_pct" in text
    gate_reads = "the gate reads tests/perf/baselines/host-some-cpu.json"
    assert f"{gate_reads}, main's configuration reads baselines/host-some-cpu.json" in text


def test_a_root_a_conftest_moved_is_named(tmp_path):
    root = repo_with(tmp_path, BASE)
    settings = Settings(rootdir=root / "tests", baseline_dir=root / "tests" / "baselines")
    check = check_against_base("main", settings, ENV, None, Invocation(root, ("tests/perf",)), pytest_rootdir)
    assert any("the gate works in tests where the pull request's own files place" in c for c in check.changes)


def test_a_moved_root_fails_a_strict_ab_comparison_unless_stated(tmp_path):
    """A/B mode: the same finding, from the same code (gate/findings.py), among the comparison's findings."""
    from perfgate.ab.run import run_ab
    from tests.ab_repo import cases, commit, make_repo, request

    repo = make_repo(tmp_path / "ab")
    commit(repo, cases({"a": 1.0, "b": 2.0}), "base")
    commit(repo, cases({"a": 1.0, "b": 2.0}), "head: unchanged")
    req = request(repo, "HEAD~1", tmp_path)
    settings = replace(req.settings, strict=True, rootdir=repo)
    (repo / "sub").mkdir()
    (repo / "sub" / "pytest.ini").write_text("[pytest]\n")
    check = check_against_base("HEAD~1", settings, ENV, None, Invocation(repo, ("sub",)), pytest_rootdir)
    assert check.changes
    outcome = run_ab(replace(req, settings=settings, base_check=check))
    kinds = [f.kind for f in outcome.gate.findings]
    assert FindingKind.BASELINE_CHANGED in kinds and outcome.exit_code == 1
    stated = run_ab(replace(req, settings=settings, base_check=replace(check, stated=True), seed=3))
    assert FindingKind.BASELINE_CHANGE_STATED in [f.kind for f in stated.gate.findings] and stated.exit_code == 0
