"""The composite action (action.yml) run step by step on this machine: a passing gate, a regression that
fails the job with an annotation at the test, results and history kept outside the checkout, a PR run
that stores nothing shared and reads a seeded copy of the cache. Host timer on a manual clock (the test
takes exactly SLEEP_MS): the action's wiring is under test here, not the GPU (docs/github-actions.md has
the runs on the H100)."""

import json
import re
import shutil
import sqlite3
import sys
from pathlib import Path

import pytest
import yaml

from tests.action_runner import ROOT, evaluate, run_action
from tests.helpers import LEAN_PYTEST_ADDOPTS, MANUAL_CLOCK_CONFTEST, QUIET_PROCESSES, calibrated

SUITE = """import os
from perfgate.measure import clock

def test_sleep(perfgate):
    perfgate(clock.current().sleep, float(os.environ.get("SLEEP_MS", "2")) / 1e3)
"""
PYPROJECT = (
    "[tool.perfgate]\nwarmup_ms = 5\nmin_samples = 15\nmax_samples = 30\nbudget_ms = 100\n"
    'threshold_pct = 25\nconfirm_runs = 0\nnoise_branch = "*"\n'
)


@pytest.fixture
def project(tmp_path, monkeypatch):
    work = tmp_path / "checkout"
    work.mkdir()
    (work / "test_perf.py").write_text(SUITE)
    (work / "conftest.py").write_text(MANUAL_CLOCK_CONFTEST)
    (work / "pyproject.toml").write_text(PYPROJECT)
    runner = tmp_path / "runner"
    runner.mkdir()
    for var in ("PERFGATE_DB", "GITHUB_STEP_SUMMARY", "TRITON_CACHE_DIR", "PERFGATE_KERNEL_CACHE"):
        monkeypatch.delenv(var, raising=False)
    return work, runner


def gate(project, sleep_ms="2", **inputs):
    work, runner = project
    import os

    env = {**os.environ, "SLEEP_MS": sleep_ms, "PYTEST_ADDOPTS": LEAN_PYTEST_ADDOPTS}
    github = inputs.pop("github", None)
    stand_ins = inputs.pop("stand_ins", None)
    return run_action(
        {"pytest-args": "test_perf.py -p no:cacheprovider", "python": sys.executable, "install": "false", **inputs},
        work,
        runner,
        github=github,
        base_env=env,
        stand_ins=stand_ins,
    )


def _artifact_runs(job):
    """The uploaded results directory, and the (run_uid, kind) rows of the history.db in it."""
    results = Path(next(s for s in job.steps if s.kind == "uses").with_["path"])
    con = sqlite3.connect(results / "history.db")
    try:
        return results, con.execute("select run_uid, kind from runs").fetchall()
    finally:
        con.close()


@pytest.mark.slow  # the composite action end to end: a stage of its own in .ci/run
def test_a_passing_gate_keeps_history_and_caches_outside_the_checkout(project, tmp_path):
    work, runner = project
    first = gate(project, strict="false")  # no baseline yet: written, nothing compared
    assert not first.failed, [s.stdout for s in first.steps]
    results, rows = _artifact_runs(first)
    first_artifact = tmp_path / "job1.db"  # as the upload step saw it (the next job reuses the directory)
    first_artifact.write_bytes((results / "history.db").read_bytes())
    second = gate(project)
    assert not second.failed, [s.stdout for s in second.steps]
    history = runner / "tool-cache" / "perfgate" / "o" / "r" / "history.db"
    assert sqlite3.connect(history).execute("select count(*) from runs").fetchone()[0] == 2
    assert Path(second.env["TRITON_CACHE_DIR"]).is_dir() and not (work / ".perfgate").exists()
    results = Path(next(s for s in second.steps if s.kind == "uses").with_["path"])
    assert {"perfgate.json", "perfgate-summary.md", "history.db"} <= {p.name for p in results.iterdir()}
    assert json.loads((results / "perfgate.json").read_text())["gate"]["failed"] is False
    assert "perfgate: gate passed" in (runner / "summary").read_text()  # the job summary
    assert not any(s.uses.startswith("actions/upload-pages-artifact") for s in second.steps if s.kind == "uses")
    # the artifact carries this run's rows only, and artifacts merge incrementally into a central history
    uid = json.loads((results / "perfgate.json").read_text())["run"]["run_uid"]
    assert _artifact_runs(second)[1] == [(uid, "gate")] and len(rows) == 1 and rows[0][0] != uid
    from perfgate.store.merge import merge_histories

    central = tmp_path / "central.db"
    assert [c.added for c in merge_histories(central, [first_artifact])] == [1]
    assert [c.added for c in merge_histories(central, [first_artifact, results / "history.db"])] == [0, 1]


def calibrate_baseline(project):
    """The baseline the first run wrote, calibrated as `perfgate calibrate` would (quiet processes): the noise
    the gate judges by, without more runs of the action."""
    from perfgate.baseline import load_baseline
    from perfgate.baseline.write import write_baseline

    work, _ = project
    base = load_baseline(next((work / "baselines").glob("*.json")))
    write_baseline(calibrated(base, {cid: [c.median_ms * f for f in QUIET_PROCESSES] for cid, c in base.cases.items()}))


@pytest.mark.slow  # the composite action end to end: a stage of its own in .ci/run
def test_a_regression_fails_the_job_with_an_annotation_at_the_test(project):
    gate(project, strict="false")  # the baseline
    calibrate_baseline(project)
    slow = gate(project, sleep_ms="6")
    assert slow.failed and slow.steps[-1].returncode == 1
    annotations = "".join(s.stdout for s in slow.steps)
    assert re.search(
        r"^::error file=test_perf.py,line=4,title=perfgate::test_perf.py::test_sleep time \+\d+", annotations, re.M
    ), annotations
    upload = next(s for s in slow.steps if s.kind == "uses")
    assert upload.uses.startswith("actions/upload-artifact@") and upload.with_["name"] == "perfgate-results"


@pytest.mark.slow  # the composite action end to end: a stage of its own in .ci/run
def test_a_pull_request_run_stores_nothing_shared_and_uses_a_seeded_cache_copy(project, tmp_path):
    from perfgate.store import open_store
    from tests.helpers import make_run

    work, runner = project
    history = runner / "tool-cache" / "perfgate" / "o" / "r" / "history.db"
    history.parent.mkdir(parents=True)
    with open_store(history) as store:  # what an earlier push run stored
        store.save_run(make_run({"test_perf.py::test_sleep": [2.0, 2.0]}))
    trusted = tmp_path / "trusted-cache"
    (trusted / "triton").mkdir(parents=True)
    (trusted / "triton" / "kernel.bin").write_text("compiled")
    pr = gate(
        project,
        strict="false",
        history="none",
        **{"cache-dir": str(tmp_path / "pr-cache"), "cache-seed": str(trusted)},
        github={"event_name": "pull_request_target", "event": {"pull_request": {"number": 7}}},
    )
    assert not pr.failed, [s.stdout for s in pr.steps]
    assert (tmp_path / "pr-cache" / "triton" / "kernel.bin").read_text() == "compiled"
    assert "PERFGATE_DB" not in pr.env or pr.env["PERFGATE_DB"] == ""
    assert sqlite3.connect(history).execute("select count(*) from runs").fetchone()[0] == 1  # only the push run


def test_bad_input_stops_before_pytest_with_one_line(project):
    run = gate(project, history="a\nb")
    assert run.failed and "a path input holds a newline" in run.steps[0].stdout
    assert all(s.kind == "skipped" for s in run.steps[1:3])


ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def _steps(doc):
    if "runs" in doc:
        yield from doc["runs"]["steps"]
    for job in doc.get("jobs", {}).values():
        yield from job.get("steps", [])


@pytest.mark.parametrize(
    "path", [ROOT / "action.yml", ROOT / "report" / "action.yml", *WORKFLOWS], ids=lambda p: p.name
)
def test_scripts_never_interpolate_expressions_and_actions_are_pinned(path):
    doc = yaml.safe_load(path.read_text())
    for step in _steps(doc):
        assert "${{" not in step.get("run", ""), f"{path.name}: pass values to scripts through env (injection)"
        uses = step.get("uses", "")
        if uses and not uses.startswith("./"):
            assert re.fullmatch(r"[\w.-]+/[\w.-]+(?:/[\w.-]+)*@[0-9a-f]{40}", uses), (
                f"{path.name}: {uses} is not pinned to a SHA"
            )
        if uses.startswith("actions/checkout@"):
            assert step["with"]["persist-credentials"] is False


def test_workflows_grant_nothing_by_default():
    for path in WORKFLOWS:
        doc = yaml.safe_load(path.read_text())
        top = doc.get("permissions")
        assert top == {} or top == {"contents": "read"}, path.name


def test_the_expression_subset_behaves_like_github():
    ctx = {"inputs": {"comment": "auto"}, "github": {"event_name": "pull_request_target"}, "steps": {}}
    assert evaluate("inputs.comment == 'auto' && startsWith(github.event_name, 'pull_request')", ctx)
    assert evaluate("steps.gate.outputs.exit-code != ''", ctx) is False
    assert evaluate("github.event_name == 'push' && 'none' || ''", ctx) == ""


@pytest.mark.slow  # the composite action end to end: a stage of its own in .ci/run
def test_pages_publishes_the_dashboard_and_the_summary_links_to_it(project):
    run = gate(project, strict="false", pages="true", **{"site-url": "https://o.github.io/r"})
    assert not run.failed, [s.stdout for s in run.steps]
    uploads = {s.uses.split("@")[0]: s for s in run.steps if s.kind == "uses"}
    site = Path(uploads["actions/upload-pages-artifact"].with_["path"])
    assert (site / "index.html").is_file() and (site / "assets" / "vendor" / "uPlot.iife.min.js").is_file()
    summary = (Path(uploads["actions/upload-artifact"].with_["path"]) / "perfgate-summary.md").read_text()
    assert "[dashboard](https://o.github.io/r/index.html)" in summary  # without pages: none (the passing gate)


PUSH_TO_MAIN = {
    "ref": "refs/heads/main",
    "run_id": "7",
    "run_attempt": "1",
    "event": {"repository": {"default_branch": "main"}},
}


def _site_step(job):
    return next(s for s in job.steps if s.kind == "run" and "perfgate: wrote" in s.stdout)


@pytest.mark.slow  # the composite action end to end: a stage of its own in .ci/run
def test_the_dashboard_is_kept_between_jobs_and_rebuilt_only_where_runs_changed_it(project, tmp_path):
    work, runner = project
    first = gate(project, strict="false", pages="true", github=PUSH_TO_MAIN)
    assert not first.failed, [s.stdout for s in first.steps]
    assert "full build (no earlier build)" in _site_step(first).stdout
    used = {s.uses.split("@")[0]: s for s in first.steps if s.kind == "uses"}
    site = Path(used["actions/upload-pages-artifact"].with_["path"])
    restore, save = used["actions/cache/restore"], used["actions/cache/save"]
    assert restore.with_["path"] == save.with_["path"] == str(site)  # the same path: actions/cache's version
    assert save.with_["key"].startswith(restore.with_["restore-keys"]) and save.with_["key"].endswith("-7-1")
    saved = tmp_path / "saved-site"  # what actions/cache/save archived
    shutil.copytree(site, saved)
    # a persistent runner keeps the site: the next push rewrites only what its run changed, restores nothing
    second = gate(project, strict="false", pages="true", github=PUSH_TO_MAIN)
    assert "incremental: 2 page(s) written" in _site_step(second).stdout  # the case's page and the run's
    assert not [s for s in second.steps if s.kind == "uses" and "perfgate-site" in s.with_.get("key", "")]
    # an ephemeral runner starts bare: the restore step puts the saved build back, the build stays incremental
    shutil.rmtree(site)

    def restore(with_):  # actions/cache/restore: the saved build under the key's prefix, back at its path
        shutil.copytree(saved, with_["path"])
        return {"cache-hit": "false"}  # a hit on restore-keys, not on the key itself

    third = gate(
        project, strict="false", pages="true", github=PUSH_TO_MAIN, stand_ins={"actions/cache/restore": restore}
    )
    assert "incremental" in _site_step(third).stdout, _site_step(third).stdout
    # a pull request's run never saves the site trusted runs start from
    pr = gate(project, strict="false", pages="true", github={**PUSH_TO_MAIN, "event_name": "pull_request"})
    assert not [s for s in pr.steps if s.kind == "uses" and s.uses.startswith("actions/cache/save")]


AB_SUITE = """
import pathlib
from perfgate.measure import clock

def test_sleep(perfgate):
    ms = float((pathlib.Path(__file__).parent / "sleep_ms.txt").read_text())
    perfgate(clock.current().sleep, ms / 1e3)
"""


@pytest.mark.slow  # the composite action end to end: a stage of its own in .ci/run
def test_a_pull_request_measures_the_head_against_its_base_commit_side_by_side(project):
    """The `base` input (default: the PR's base SHA) runs A/B mode; the summary (the sticky comment's body)
    shows head vs base per case. The head takes 3x longer (on the manual clock)."""
    from tests.ab_repo import git, make_repo

    work, runner = project
    make_repo(work)
    (work / "test_perf.py").write_text(AB_SUITE)
    # the manual clock is a module-level object of each tree's conftest: in one shared process the base's
    # would serve the head's test (provenance calls that not comparable), so each side gets its processes
    pyproject = PYPROJECT.replace("budget_ms = 100", "budget_ms = 30") + 'ab_rounds = 3\nab_process = "separate"\n'
    (work / "pyproject.toml").write_text(pyproject)
    (work / "sleep_ms.txt").write_text("1")
    (work / ".gitignore").write_text(".perfgate/\n__pycache__/\n")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "base")
    base = git(work, "rev-parse", "HEAD")
    (work / "sleep_ms.txt").write_text("3")
    git(work, "commit", "-q", "-am", "head: 3x slower")
    run = gate(
        project,
        github={"event_name": "pull_request", "event": {"pull_request": {"number": 7, "base": {"sha": base}}}},
    )
    assert run.failed and run.steps[-1].returncode == 1, [s.stdout for s in run.steps]
    results = Path(next(s for s in run.steps if s.kind == "uses").with_["path"])
    summary = (results / "perfgate-summary.md").read_text()
    assert "perfgate A/B gate FAILED" in summary and "ratio (95% CI)" in summary and "🔴 regressed" in summary
    assert json.loads((results / "perfgate.json").read_text())["ab"]["base_commit"] == base


# --- hardening (issue 23): the gate's own verdict, PR runs kept off what trusted runs read ------------------


def _with_files(project, **files):
    work, _ = project
    for name, text in files.items():
        (work / name).write_text(text)


def test_a_run_that_ends_with_status_0_but_no_results_fails_the_job(project):
    """A C-level _exit(0) gets past the gate's os._exit guard; the action still sees no results file."""
    _with_files(project, **{"test_zz_end.py": "import ctypes\n\ndef test_end():\n    ctypes.CDLL(None)._exit(0)\n"})
    run = gate(project, strict="false", **{"pytest-args": "test_perf.py test_zz_end.py -p no:cacheprovider"})
    out = "".join(s.stdout for s in run.steps)
    assert run.failed and run.steps[-1].returncode == 3, out
    assert "pytest exited with 0 but wrote no" in out and "the gate never decided" in out


@pytest.mark.slow  # the composite action end to end: a stage of its own in .ci/run
def test_a_failed_verdict_fails_the_job_when_pytest_exits_0_and_pr_code_cannot_write_later_steps_env(project):
    """An atexit os._exit(0) (after the gate's guard is gone) turns pytest's status to 0; the results file still
    says the gate failed (strict, no baseline). And what a test writes to $GITHUB_ENV reaches no later step."""
    work, _ = project
    conftest = (work / "conftest.py").read_text() + (
        "\n\nimport atexit, os\n"
        "atexit.register(lambda: os._exit(0))\n"
        "if os.environ.get('GITHUB_ENV'):\n"
        "    open(os.environ['GITHUB_ENV'], 'a').write('PYTHONPATH=/planted\\n')\n"
    )
    _with_files(project, **{"conftest.py": conftest})
    run = gate(project)
    out = "".join(s.stdout for s in run.steps)
    assert "perfgate: pytest exited with 0" in out, out
    assert run.failed and run.steps[-1].returncode == 1
    assert "the results file says the gate did not pass" in out
    assert run.env.get("PYTHONPATH") != "/planted"


PR_EVENT = {
    "event_name": "pull_request_target",
    "event": {"pull_request": {"number": 7, "head": {"sha": "a" * 40}, "base": {"sha": ""}}},
}


def test_a_pull_requests_run_defaults_to_its_own_cache_and_no_history(project, tmp_path):
    work, runner = project
    trusted = runner / "tool-cache" / "perfgate" / "o" / "r" / "cache"
    (trusted / "triton").mkdir(parents=True)
    (trusted / "triton" / "kernel.bin").write_text("compiled")
    pr = gate(project, strict="false", github=PR_EVENT)
    assert not pr.failed, [s.stdout for s in pr.steps]
    cache = Path(pr.env["TRITON_CACHE_DIR"])
    assert (cache / "kernel.bin").read_text() == "compiled" and not cache.is_relative_to(runner / "tool-cache")
    assert "PERFGATE_DB" not in pr.env


@pytest.mark.parametrize(
    "inputs", [{"history": "{tool}/perfgate/o/r/history.db"}, {"cache-dir": "{tool}/perfgate/o/r/cache"}]
)
def test_a_pull_requests_run_may_not_write_what_trusted_runs_read(project, inputs):
    _, runner = project
    run = gate(project, github=PR_EVENT, **{k: v.format(tool=runner / "tool-cache") for k, v in inputs.items()})
    assert run.failed and "must not write" in run.steps[0].stdout
    assert all(s.kind == "skipped" for s in run.steps[1:3])


@pytest.mark.parametrize(
    ("declared", "runner_file", "refused"),
    [
        ("", None, "not declared ephemeral"),
        ("true", '{"agentName": "gpu-1", "poolId": 1}', "says it is not ephemeral"),
        ("true", '{"agentName": "gpu-1", "ephemeral": true}', ""),
    ],
)
def test_pull_request_code_runs_only_on_an_ephemeral_self_hosted_runner(
    project, monkeypatch, declared, runner_file, refused
):
    _, runner = project
    if runner_file is not None:
        (runner.parent / ".runner").write_text(runner_file)  # $RUNNER_TEMP/../../.runner: the default layout
    monkeypatch.setenv("RUNNER_ENVIRONMENT", "self-hosted")
    run = gate(project, strict="false", github=PR_EVENT, **{"ephemeral-runner": declared})
    if refused:
        assert run.failed and refused in run.steps[0].stdout
    else:
        assert not run.failed, [s.stdout for s in run.steps]


def test_the_measuring_action_holds_no_token_and_posts_nothing():
    """The job that runs a pull request's code gets no token from the action: the comment, the commit status and
    the labels are the report action's (report/action.yml), in a job that runs none of it."""
    text = (ROOT / "action.yml").read_text() + "".join(
        p.read_text() for p in sorted((ROOT / ".github" / "action").glob("*.sh"))
    )
    for word in ("token", "ci comment", "ci report", "GITHUB_TOKEN", "secrets."):
        assert word not in text, word
    report = yaml.safe_load((ROOT / "report" / "action.yml").read_text())
    assert report["inputs"]["github-token"]["default"] == "${{ github.token }}"


def test_the_gpu_workflow_gates_the_labelled_commit_with_the_default_branchs_action_and_reports_apart():
    doc = yaml.safe_load((ROOT / ".github" / "workflows" / "perfgate-gpu.yml").read_text())
    on = doc.get("on", doc.get(True))
    assert on["pull_request_target"] == {"types": ["labeled", "synchronize"]}
    gate_steps = doc["jobs"]["gate"]["steps"]
    assert gate_steps[0]["with"]["ref"] == "${{ github.event.pull_request.head.sha || github.sha }}"
    assert gate_steps[0]["with"]["fetch-depth"] == 0
    assert 'git rev-parse HEAD)" = "$EXPECTED"' in gate_steps[1]["run"]
    trusted = gate_steps[2]  # the default branch's action, before any pull request code (the install) runs
    assert trusted["with"] == {"ref": "${{ github.sha }}", "path": ".perfgate-action", "persist-credentials": False}
    assert "pip install" in gate_steps[3]["run"] and gate_steps[4]["uses"] == "./.perfgate-action"
    assert gate_steps[4]["with"]["accept-baseline-change"] == "${{ github.event.label.name == 'perfgate-baseline' }}"
    assert "github.event.label.name" in doc["concurrency"]["group"]  # another label never cancels a gate
    assert doc["jobs"]["unlabel"]["if"] == "github.event.action == 'synchronize'"
    report = doc["jobs"]["report"]
    merge = next(s for s in report["steps"] if "db merge" in s.get("run", ""))
    assert merge["if"] == "github.event_name == 'push'"  # PR-supplied SQLite is never parsed with a write token
    verdict = next(s for s in report["steps"] if s.get("uses") == "./report")
    assert verdict["with"]["remove-labels"] == "perfgate,perfgate-baseline"
    assert not any("pull_request.head" in str(s.get("with", {})) for s in report["steps"])


def test_every_perfgate_step_after_the_tests_runs_isolated_from_the_checkout():
    """After the PR's code ran, perfgate runs with `python -I`: a `perfgate/` package or sitecustomize.py
    planted in the checkout cannot replace the code that writes the verdict, the comment or the site."""
    root = Path(__file__).resolve().parents[1]
    lines = [
        line
        for f in (root / "action.yml", *sorted((root / ".github" / "action").glob("*.sh")))
        for line in f.read_text().splitlines()
        if "-m perfgate" in line and not line.lstrip().startswith("#")
    ]
    assert lines and all(" -I -m perfgate" in line for line in lines), [x for x in lines if " -I " not in x]


BLOCKING_CONFTEST = """
import os, pathlib, pytest

def pytest_configure(config):
    config.pluginmanager.set_blocked("perfgate")
    planted = os.environ.get("PLANTED_RESULTS")
    if planted:
        pathlib.Path(os.environ["RESULTS"], "perfgate.json").write_text(pathlib.Path(planted).read_text())

@pytest.fixture
def perfgate():
    return lambda fn, *args: fn(*args)
"""


@pytest.mark.slow
@pytest.mark.parametrize("planted", [False, True])
def test_a_conftest_that_blocks_perfgate_fails_the_job_even_with_a_planted_passing_results_file(
    project, monkeypatch, tmp_path, planted
):
    """perfgate cannot run when a root conftest blocks it (pytest then passes with status 0): the action decides.
    No results file fails the job; a passing one planted by the conftest is from an earlier run (its started_at
    is before this run's start: `perfgate ci verdict --not-before`), and fails it too."""
    import gzip

    _with_files(project, **{"conftest.py": BLOCKING_CONFTEST})
    if planted:
        stale = tmp_path / "stale.json"
        stale.write_bytes(gzip.decompress((ROOT / "tests/data/h100/gate_profiled_copy_run.json.gz").read_bytes()))
        monkeypatch.setenv("PLANTED_RESULTS", str(stale))
    run = gate(project)
    out = "".join(s.stdout for s in run.steps)
    assert "perfgate: pytest exited with 0" in out, out
    assert run.failed and run.steps[-1].returncode == 3, out
    assert ("is not this run's gate" if planted else "wrote no") in out, out


def _setup_outputs(tmp_path, **env):
    out, envfile = tmp_path / "out", tmp_path / "env"
    out.write_text(""), envfile.write_text("")
    run = __import__("subprocess").run(
        ["bash", str(ROOT / ".github" / "action" / "setup.sh")],
        env={
            "PATH": "/usr/bin:/bin",
            "GITHUB_OUTPUT": str(out),
            "GITHUB_ENV": str(envfile),
            "PYTHON": sys.executable,
            "RUNNER_TEMP": str(tmp_path / "temp"),
            "RUNNER_TOOL_CACHE": str(tmp_path / "tools"),
            "RUNNER_OS": "Linux",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return dict(line.split("=", 1) for line in out.read_text().splitlines()), envfile.read_text()


@pytest.mark.parametrize("event", ["push", "pull_request"])
def test_with_actions_cache_every_run_restores_one_path_keyed_by_the_versions(tmp_path, event):
    outputs, env = _setup_outputs(tmp_path, ACTIONS_CACHE="true", GITHUB_EVENT_NAME=event)
    assert outputs["cache"] == str(tmp_path / "temp" / "perfgate-kernel-cache")
    assert f"TRITON_CACHE_DIR={outputs['cache']}/triton" in env
    assert re.fullmatch(r"perfgate-kernels-Linux-torch[\w.+-]+-triton[\w.+-]+", outputs["cache-key"])
    step = next(s for s in ACTION["runs"]["steps"] if s.get("uses", "").startswith("actions/cache/save@"))
    assert "github.event_name == 'push'" in step["if"] and "default_branch" in step["if"]


def test_without_actions_cache_the_runner_local_cache_is_kept(tmp_path):
    outputs, _ = _setup_outputs(tmp_path, GITHUB_EVENT_NAME="push", GITHUB_REPOSITORY="o/r")
    assert outputs["cache"] == str(tmp_path / "tools" / "perfgate" / "o/r" / "cache")


# --- the runner's command files (issue 32): what the tests plant there reaches no later step -------------------

PLANTING_CONFTEST = """

import glob, os, pathlib, subprocess, sys, time

# the runner's layout is no secret: $RUNNER_TEMP/_runner_file_commands (here under the emulated runner's directory)
_DIR = os.path.join(os.environ["PLANT_RUNNER"], "temp", "_runner_file_commands")


def _plant():
    os.chmod(_DIR, 0o700)  # the runner's user may undo any mode perfgate sets
    for name in glob.glob(_DIR + "/set_env_*"):
        with open(name, "a") as out:
            out.write("BASH_ENV=" + os.environ["PLANT_SCRIPT"] + "\\n")
    for name in glob.glob(_DIR + "/add_path_*"):
        with open(name, "a") as out:
            out.write(os.environ["PLANT_BIN"] + "\\n")
    for name in glob.glob(_DIR + "/set_output_*"):
        with open(name, "a") as out:
            out.write("exit-code=0\\n")


def pytest_sessionfinish(session):
    if os.environ.get("PLANT_LATER"):  # a daemon that outlives the step writes the next steps' files
        code = (
            "import glob, os, sys, time\\n"
            "seen = set()\\n"
            "end = time.time() + 20\\n"
            "while time.time() < end:\\n"
            "    for f in glob.glob(sys.argv[1] + '/set_env_*'):\\n"
            "        if f not in seen:\\n"
            "            seen.add(f)\\n"
            "            try:\\n"
            "                open(f, 'a').write('BASH_ENV=' + sys.argv[2] + '\\\\n')\\n"
            "            except OSError:\\n"
            "                pass\\n"
            "    time.sleep(0.02)\\n"
        )
        if os.fork() == 0:  # double fork: the daemon is nobody's child
            subprocess.Popen([sys.executable, "-c", code, _DIR, os.environ["PLANT_SCRIPT"]], start_new_session=True)
            os._exit(0)
        time.sleep(0.2)
    else:
        _plant()
"""


@pytest.fixture
def planted(project, tmp_path, monkeypatch):
    """A conftest that writes BASH_ENV, a PATH entry and an exit-code output into the runner's command files."""
    work, runner = project
    script = tmp_path / "planted.sh"
    script.write_text(f"echo PLANTED-RAN >> {tmp_path / 'planted.log'}\n")
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PLANT_RUNNER", str(runner))
    monkeypatch.setenv("PLANT_SCRIPT", str(script))
    monkeypatch.setenv("PLANT_BIN", str(tmp_path / "bin"))
    _with_files(project, **{"conftest.py": (work / "conftest.py").read_text() + PLANTING_CONFTEST})
    return tmp_path / "planted.log"


def _planted_nothing(run, log, tmp_path):
    assert not log.exists(), log.read_text()  # no later step sourced the planted BASH_ENV
    assert "BASH_ENV" not in run.env and str(tmp_path / "bin") not in run.prepend_path


@pytest.mark.slow  # the composite action end to end: a stage of its own in .ci/run
def test_a_test_that_writes_the_runners_command_files_changes_no_later_step_and_fails_the_job(
    project, planted, tmp_path
):
    run = gate(project, strict="false")
    out = "".join(s.stdout for s in run.steps)
    _planted_nothing(run, planted, tmp_path)
    assert "pull-request code changed the runner's command file set_env_" in out and "(BASH_ENV)" in out, out
    assert "add_path_" in out and run.failed and run.steps[-1].returncode == 3, out


@pytest.mark.slow  # the composite action end to end: a stage of its own in .ci/run
def test_a_daemon_the_tests_leave_behind_is_killed_before_a_later_step_starts(project, planted, tmp_path, monkeypatch):
    monkeypatch.setenv("PLANT_LATER", "1")
    run = gate(project, strict="false")
    out = "".join(s.stdout for s in run.steps)
    _planted_nothing(run, planted, tmp_path)
    assert "process(es) the tests left running were killed" in out, out


def _setup(tmp_path, event, db_url):
    """The action's setup step alone: (exit status, its output, what it wrote to GITHUB_ENV)."""
    import subprocess

    env_file, out_file = tmp_path / "env", tmp_path / "out"
    env_file.write_text("")
    out_file.write_text("")
    proc = subprocess.run(
        ["bash", str(Path(__file__).parents[1] / ".github" / "action" / "setup.sh")],
        env={
            "PATH": "/usr/bin:/bin",
            "GITHUB_ENV": str(env_file),
            "GITHUB_OUTPUT": str(out_file),
            "RUNNER_TEMP": str(tmp_path / "temp"),
            "RUNNER_TOOL_CACHE": str(tmp_path / "tool-cache"),
            "GITHUB_REPOSITORY": "o/r",
            "GITHUB_EVENT_NAME": event,
            "DB_URL": db_url,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    pairs = dict(line.split("=", 1) for line in env_file.read_text().splitlines() if "=" in line)
    return proc.returncode, proc.stdout + proc.stderr, pairs


def test_a_db_url_becomes_the_history_of_trusted_runs_only_and_is_never_printed(tmp_path):
    url = "postgresql://fleet:hunter2@db.example:5432/perf"
    code, out, env = _setup(tmp_path, "push", url)
    assert code == 0 and env["PERFGATE_DB"] == url and f"::add-mask::{url}" in out
    assert "hunter2" not in out.replace(f"::add-mask::{url}", "")  # the mask command itself is not shown
    code, out, env = _setup(tmp_path, "pull_request_target", url)
    assert code == 0 and "PERFGATE_DB" not in env and "not used by a pull request" in out
    code, out, env = _setup(tmp_path, "push", "mysql://u:p@h/d")
    assert code == 2 and "must be a postgresql:// URL" in out
    code, out, env = _setup(tmp_path, "push", "")  # no server: the runner-local SQLite file, as before
    assert code == 0 and env["PERFGATE_DB"].endswith("/perfgate/o/r/history.db")
