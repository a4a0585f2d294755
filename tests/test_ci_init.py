"""`perfgate ci init` for every kind of runner (issue 29, requirement 7; issue 32, requirement 2): a self-hosted
GPU runner gated by a maintainer's label, a GitHub-hosted CPU runner on plain `pull_request`; in both, the job
that runs a pull request's code holds no token and a job that runs none of it sets the verdict; a Python of its
own; the default branch as the repository names it; the baseline-update workflow; no argument becomes a
`${{ }}` expression; zizmor and actionlint clean (slow: they run in .ci/run's stage too)."""

from __future__ import annotations

import contextlib
import io
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from perfgate.cli import main

ROOT = Path(__file__).resolve().parents[1]
SHA = "0123456789abcdef0123456789abcdef01234567"
REF = f"me/perfgate@{SHA}"
VARIANTS = {"self-hosted GPU": ("--runner-label", "gpu-h100"), "GitHub-hosted": ("--runner-label", "ubuntu-latest")}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.strip()


def init(repo: Path, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(["ci", "init", "--output", str(repo / ".github" / "workflows" / "perfgate.yml"), *args])
    return code, out.getvalue()


def written(repo: Path) -> dict[str, dict]:
    return {p.stem: yaml.safe_load(p.read_text()) for p in sorted((repo / ".github" / "workflows").glob("*.yml"))}


PERF_TEST = "def test_sum(perfgate):\n    perfgate(sum, [1, 2, 3])\n"


def bare_repo(tmp_path: Path) -> Path:
    """A project whose default branch is `master` (not assumed `main`), with no file yet."""
    path = tmp_path / "project"
    path.mkdir()
    git(path, "-c", "init.defaultBranch=master", "init", "-q")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A project whose default branch is `master` (not assumed `main`), its perf tests in tests/perf."""
    path = bare_repo(tmp_path)
    (path / "tests" / "perf").mkdir(parents=True)
    (path / "tests" / "perf" / "test_kernels.py").write_text(PERF_TEST)
    return path


def _triggers(doc: dict) -> dict:
    return doc.get("on", doc.get(True))


def runs_pull_request_code(doc: dict, job: dict) -> bool:
    """A job that checks out or builds a pull request's code: any job of a `pull_request` workflow that checks
    out, and a `pull_request_target` job that checks out the pull request's head."""
    checkouts = [s for s in job.get("steps", []) if s.get("uses", "").startswith("actions/checkout@")]
    if "pull_request" in _triggers(doc):
        return bool(checkouts)
    return any("pull_request.head" in str(s.get("with", {}).get("ref", "")) for s in checkouts)


def holds_a_token(job: dict) -> bool:
    writes = any(v == "write" for v in (job.get("permissions") or {}).values())
    text = yaml.safe_dump(job.get("steps", []))
    return writes or "github.token" in text or "secrets." in text


def assert_no_token_where_pull_request_code_runs(docs: dict[str, dict]) -> None:
    for name, doc in docs.items():
        for job_name, job in doc["jobs"].items():
            if runs_pull_request_code(doc, job):
                assert not holds_a_token(job), f"{name}.{job_name} runs PR code and holds a token"
                assert job.get("permissions", doc.get("permissions")) == {"contents": "read"}, f"{name}.{job_name}"


def test_a_self_hosted_gpu_runner_gets_a_labelled_gate_and_a_trusted_report(repo):
    assert init(repo, "--action-ref", REF, "--runner-label", "gpu-h100")[0] == 0
    docs = written(repo)
    assert set(docs) == {"perfgate", "perfgate-baseline", "perfgate-anchor"}
    gate = docs["perfgate"]
    assert _triggers(gate)["pull_request_target"] == {"types": ["labeled", "synchronize"]}
    jobs = gate["jobs"]
    assert jobs["gate"]["runs-on"] == ["self-hosted", "linux", "gpu-h100"]
    # the approval is the label event's, for the commit that event names: never a label left on the pull request
    action = next(s for s in jobs["gate"]["steps"] if s.get("uses", "").startswith("me/perfgate@"))
    assert action["with"]["accept-baseline-change"] == "${{ github.event.label.name == 'perfgate-baseline' }}"
    assert "contains(" not in yaml.safe_dump(gate)
    assert jobs["gate"]["steps"][0]["with"]["ref"] == "${{ github.event.pull_request.head.sha || github.sha }}"
    assert jobs["unlabel"]["if"] == "github.event.action == 'synchronize'"  # a push takes the approval back
    assert jobs["report"]["runs-on"] == "ubuntu-latest" and jobs["report"]["needs"] == "gate"
    report = jobs["report"]["steps"][-1]
    assert report["uses"] == f"me/perfgate/report@{SHA}"
    assert report["with"]["remove-labels"] == "perfgate,perfgate-baseline"
    assert not any(s.get("uses", "").startswith("actions/checkout@") for s in jobs["report"]["steps"])
    assert_no_token_where_pull_request_code_runs(docs)


def test_a_github_hosted_runner_gets_plain_pull_request_and_a_workflow_run_report(repo):
    code, out = init(repo, "--action-ref", REF, "--runner-label", "ubuntu-latest")
    assert code == 0 and "GitHub-hosted runner ubuntu-latest" in out
    docs = written(repo)
    assert set(docs) == {"perfgate", "perfgate-report", "perfgate-baseline", "perfgate-anchor"}
    gate = docs["perfgate"]
    assert "pull_request" in _triggers(gate) and "pull_request_target" not in _triggers(gate)
    assert gate["jobs"]["gate"]["runs-on"] == "ubuntu-latest"  # not [self-hosted, linux, ubuntu-latest]
    assert "ephemeral-runner" not in yaml.safe_dump(gate)
    report = docs["perfgate-report"]
    assert _triggers(report) == {"workflow_run": {"workflows": ["perfgate"], "types": ["completed"]}}
    download = report["jobs"]["report"]["steps"][0]
    assert download["with"]["run-id"] == "${{ github.event.workflow_run.id }}"
    assert report["jobs"]["report"]["permissions"] == {
        "actions": "read",
        "pull-requests": "write",
        "statuses": "write",
    }
    assert_no_token_where_pull_request_code_runs(docs)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_python_is_set_up_before_anything_is_installed_and_the_default_branch_is_the_repositorys(repo, variant):
    assert init(repo, "--action-ref", REF, *VARIANTS[variant])[0] == 0
    for name, doc in written(repo).items():
        if "push" in _triggers(doc):
            assert _triggers(doc)["push"] == {"branches": ["master"]}, name
        for job in doc["jobs"].values():
            steps = job["steps"]
            installs = [i for i, s in enumerate(steps) if "pip install" in s.get("run", "")]
            pythons = [i for i, s in enumerate(steps) if s.get("uses", "").startswith("actions/setup-python@")]
            assert not installs or (pythons and pythons[0] < installs[0]), (name, job["name"])
    opened = written(repo)["perfgate-baseline"]["jobs"]["open-pr"]["steps"][-1]
    assert opened["env"]["BASE"] == "master"


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_nightly_anchor_run_on_the_default_branch_publishes_the_cumulative_change(repo, variant):
    """Issue 31, requirement 3: `perfgate ab --anchor` on a schedule (a schedule runs on the default branch only),
    its whole history checked out (the anchor is an old commit), the default branch's code with a read-only token,
    the table in the job summary; a GPU runner keeps its history (anchor runs over time), a hosted one stores none."""
    assert init(repo, "--action-ref", REF, *VARIANTS[variant])[0] == 0
    doc = written(repo)["perfgate-anchor"]
    assert _triggers(doc) == {"schedule": [{"cron": "17 3 * * *"}], "workflow_dispatch": {}}
    assert doc["permissions"] == {}
    job = doc["jobs"]["anchor"]
    assert job["permissions"] == {"contents": "read"} and not holds_a_token(job)
    checkout = job["steps"][0]
    assert checkout["with"] == {"persist-credentials": False, "ref": "master", "fetch-depth": 0}
    run = next(s for s in job["steps"] if "perfgate ab" in s.get("run", ""))
    assert 'python -m perfgate ab --anchor --summary "$GITHUB_STEP_SUMMARY"' in run["run"]
    assert run["env"] == {"PYTEST_ARGS": "tests/perf"}  # ci init's default selection, as the gate's
    hosted = variant == "GitHub-hosted"
    assert job["runs-on"] == ("ubuntu-latest" if hosted else ["self-hosted", "linux", "gpu-h100"])
    upload = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["if"] == "always()" and upload["with"]["name"] == "perfgate-anchor"
    assert upload["with"]["path"] == "perfgate-anchor/"


def run_anchor_step(repo: Path, tmp_path: Path, ab_status: int, **env: str) -> tuple[int, list[str], str, dict]:
    """The anchor step's script, run by bash with a stand-in `python` that logs its arguments and plays
    `perfgate ab` (exit `ab_status`, a results file): (its status, python's calls, the job summary, the job)."""
    job = written(repo)["perfgate-anchor"]["jobs"]["anchor"]
    step = next(s for s in job["steps"] if "perfgate ab" in s.get("run", ""))
    bin_dir, log, summary = tmp_path / "bin", tmp_path / "calls.log", tmp_path / "summary.md"
    bin_dir.mkdir()
    stand_in = bin_dir / "python"
    stand_in.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> "{log}"\n'
        'case "$*" in *" ab "*) mkdir -p perfgate-anchor && echo {} > perfgate-anchor/anchor.json;'
        f" exit {ab_status};; esac\n"
    )
    stand_in.chmod(0o755)
    (tmp_path / "work").mkdir()
    (tmp_path / "runner-temp").mkdir()
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "GITHUB_STEP_SUMMARY": str(summary),
        "RUNNER_TEMP": str(tmp_path / "runner-temp"),
        "RUNNER_TOOL_CACHE": str(tmp_path / "tool-cache"),
        "GITHUB_REPOSITORY": "me/project",
        **step["env"],
        **env,
    }
    done = subprocess.run(
        ["bash", "-e", "-c", step["run"]], cwd=tmp_path / "work", env=env, capture_output=True, text=True
    )
    calls = log.read_text().splitlines() if log.exists() else []
    return done.returncode, calls, summary.read_text() + done.stdout, job


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("ab_status", [0, 1])
def test_the_anchor_run_is_stored_and_its_summary_says_where_history_kind_anchor_finds_it(
    repo, tmp_path, variant, ab_status
):
    """Issue 31 review: the hosted variant passed --no-store while the docs sent users to `perfgate history
    --kind anchor`. Every anchor run is stored (the runner's history on a self-hosted runner, one in the job's
    temporary directory on a hosted one), its rows exported to the artifact, and the job summary says where;
    the job's status is the anchor run's."""
    assert init(repo, "--action-ref", REF, *VARIANTS[variant])[0] == 0
    status, calls, said, _ = run_anchor_step(repo, tmp_path, ab_status)
    assert status == ab_status, said
    hosted = variant == "GitHub-hosted"
    history = str(
        tmp_path / ("runner-temp/perfgate-anchor-history.db" if hosted else "tool-cache/perfgate/me/project/history.db")
    )
    assert calls[0].startswith("-m perfgate ab --anchor ") and f"--db {history} --" in calls[0], calls
    assert "--no-store" not in calls[0]
    export = "-m perfgate db export perfgate-anchor/history.db"
    assert calls[1] == f"{export} --db {history} --results perfgate-anchor/anchor.json"
    assert "perfgate history --db history.db --kind anchor" in said and "artifact `perfgate-anchor`" in said
    assert ("the runner's history" in said) is not hosted


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_with_a_fleet_server_the_anchor_run_is_stored_there_as_the_gates_trusted_runs_are(repo, tmp_path, variant):
    assert init(repo, "--action-ref", REF, *VARIANTS[variant], *FLEET)[0] == 0
    url = "postgresql://ci:s3cret-pw@db.example/perfgate"  # what GitHub hands the step for the secret
    status, calls, said, job = run_anchor_step(repo, tmp_path, 1, PERFGATE_DB=url)
    assert status == 1, said
    step = next(s for s in job["steps"] if "perfgate ab" in s.get("run", ""))
    assert step["env"]["PERFGATE_DB"] == "${{ secrets.PERFGATE_DB_URL }}"  # a schedule's run: trusted code only
    installs = [s["run"] for s in job["steps"] if "pip install" in s.get("run", "")]
    assert installs == [
        f'python -m pip install --quiet -e . "perfgate[server] @ git+https://github.com/me/perfgate@{SHA}"\n'
    ]
    assert calls[0].startswith("-m perfgate ab --anchor ") and "--db" not in calls[0], calls  # the URL never in argv
    assert calls[1] == "-m perfgate db export perfgate-anchor/history.db --results perfgate-anchor/anchor.json"
    assert "the fleet's history" in said and "s3cret" not in said and "perfgate history --kind anchor" in said


def test_the_default_branch_is_origins_head_when_there_is_one(repo):
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "x")
    git(repo, "update-ref", "refs/remotes/origin/trunk", "HEAD")
    git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/trunk")
    git(repo, "switch", "-q", "-c", "feature")
    assert init(repo, "--action-ref", REF)[0] == 0
    assert _triggers(written(repo)["perfgate"])["push"] == {"branches": ["trunk"]}


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--runner-label", "${{ secrets.DEPLOY_KEY }}"),
        ("--runner-label", "gpu h100"),
        ("--pytest-args", "tests ${{ github.token }}"),
        ("--pytest-args", "tests\n-k x"),
        ("--default-branch", "${{ github.head_ref }}"),
        ("--default-branch", "a..b"),
        ("--python-version", "${{ 3 }}"),
    ],
)
def test_no_argument_reaches_a_workflow_as_an_expression(repo, option, value):
    code, out = init(repo, "--action-ref", REF, "--default-branch", "main", option, value)
    assert code == 2 and f"perfgate: {option} must be" in out and len(out.strip().splitlines()) == 1, out
    assert not (repo / ".github").exists()


def test_nothing_is_overwritten_unless_forced(repo):
    assert init(repo, "--action-ref", REF)[0] == 0
    baseline = repo / ".github" / "workflows" / "perfgate-baseline.yml"
    baseline.write_text("mine\n")
    code, out = init(repo, "--action-ref", REF, "--runner-label", "ubuntu-latest")
    assert code == 2 and "pass --force" in out and baseline.read_text() == "mine\n"
    assert not (repo / ".github" / "workflows" / "perfgate-report.yml").exists()
    assert init(repo, "--action-ref", REF, "--runner-label", "ubuntu-latest", "--force")[0] == 0


def test_this_repositorys_workflows_hold_no_token_where_pull_request_code_runs_and_pin_their_gate():
    docs = {p.stem: yaml.safe_load(p.read_text()) for p in sorted((ROOT / ".github" / "workflows").glob("*.yml"))}
    assert_no_token_where_pull_request_code_runs(docs)
    gpu = docs["perfgate-gpu"]["jobs"]["gate"]["steps"]
    assert not any(s.get("uses") == "./" for s in gpu), "the gate must not use the pull request's copy of the action"


FLEET = ("--db-secret", "PERFGATE_DB_URL")  # the fleet's server: the gate's trusted runs and the anchor run hold it


@pytest.mark.slow  # zizmor three times and actionlint per variant: .ci/run runs them as a stage of its own too
@pytest.mark.parametrize("fleet", [(), FLEET], ids=["runner history", "fleet server"])
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_the_workflows_pass_zizmor_and_actionlint(repo, variant, fleet):
    zizmor, actionlint = shutil.which("zizmor"), shutil.which("actionlint")
    if not zizmor or not actionlint:
        pytest.skip("zizmor and actionlint come with the dev extra")
    assert init(repo, "--action-ref", REF, *VARIANTS[variant], *fleet)[0] == 0
    shutil.copy(ROOT / ".github" / "actionlint.yaml", repo / ".github" / "actionlint.yaml")
    for persona in ("regular", "pedantic", "auditor"):
        done = subprocess.run(
            [zizmor, "--offline", "--no-progress", "--persona", persona, str(repo)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    done = subprocess.run([actionlint], cwd=repo, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def selections(repo: Path) -> set[str]:
    """PYTEST_ARGS of every workflow written: the gate's input, the baseline update's and the anchor run's."""
    docs = written(repo)
    gate = next(s for s in docs["perfgate"]["jobs"]["gate"]["steps"] if "pytest-args" in s.get("with", {}))
    calibrate = next(s for s in docs["perfgate-baseline"]["jobs"]["calibrate"]["steps"] if "env" in s)
    anchor = next(s for s in docs["perfgate-anchor"]["jobs"]["anchor"]["steps"] if "env" in s)
    return {gate["with"]["pytest-args"], calibrate["env"]["PYTEST_ARGS"], anchor["env"]["PYTEST_ARGS"]}


@pytest.fixture
def kernels_repo(tmp_path: Path) -> Path:
    """Perf tests in kernels/tests (no tests/perf), unit tests in tests/."""
    path = bare_repo(tmp_path)
    (path / "kernels" / "tests").mkdir(parents=True)
    (path / "kernels" / "tests" / "test_perf.py").write_text(PERF_TEST)
    (path / "kernels" / "tests" / "test_shapes.py").write_text("def test_shape():\n    assert True\n")
    (path / "tests").mkdir()
    (path / "tests" / "test_unit.py").write_text("def test_unit():\n    assert True\n")
    return path


def test_the_workflows_run_the_perf_tests_where_they_are_when_no_path_is_given(kernels_repo):
    code, out = init(kernels_repo, "--action-ref", REF, "--pytest-args", "-k sum -m gpu")
    assert code == 0, out
    assert selections(kernels_repo) == {"kernels/tests -k sum -m gpu"}  # -k's and -m's values are no paths
    assert "pytest kernels/tests -k sum -m gpu, the perf tests found in kernels/tests" in out


@pytest.mark.parametrize("given", [("--tests", "tests/perf"), ("--pytest-args", "tests/perf -k sum")])
def test_a_test_path_not_in_the_repository_is_one_line_and_nothing_is_written(kernels_repo, given):
    code, out = init(kernels_repo, "--action-ref", REF, *given)
    assert code == 2 and len(out.strip().splitlines()) == 1, out
    assert f"perfgate: {given[0]} names tests/perf, which is not in {kernels_repo}" in out, out
    assert "the workflows would measure nothing; perf tests are in kernels/tests" in out, out
    assert not (kernels_repo / ".github").exists()


def test_a_repository_without_perf_tests_gets_no_workflow(tmp_path):
    empty = bare_repo(tmp_path)
    (empty / "tests").mkdir()
    (empty / "tests" / "test_unit.py").write_text("def test_unit():\n    assert True\n")
    code, out = init(empty, "--action-ref", REF)
    assert code == 2 and len(out.strip().splitlines()) == 1, out
    assert f"perfgate: no perf test in {empty}" in out and "--tests PATH" in out, out
    assert not (empty / ".github").exists()


def test_the_tests_given_are_run_as_given_each_checked(kernels_repo):
    code, out = init(
        kernels_repo, "--action-ref", REF, "--tests", "kernels/tests/test_perf.py::test_sum", "--tests", "tests"
    )
    assert code == 0, out
    assert selections(kernels_repo) == {"kernels/tests/test_perf.py::test_sum tests"}


def test_quoted_pytest_arguments_are_refused_since_the_workflows_split_on_whitespace(repo):
    code, out = init(repo, "--action-ref", REF, "--pytest-args", 'tests/perf -k "not slow"')
    assert code == 2 and "write it without quotes" in out, out
    assert not (repo / ".github").exists()


def test_only_arguments_that_are_neither_options_nor_their_values_are_taken_for_test_paths():
    from perfgate.ci.selection import test_paths

    args = ["-k", "sum", "--perfgate-db", "h.db", "-mgpu", "--tb=short", "-x", "tests/perf", "a.py::test_b"]
    assert test_paths(args) == ["tests/perf", "a.py::test_b"]
    assert test_paths(["--pyargs", "mypkg.perf"]) == []  # module names


def test_perf_tests_embedded_in_a_string_are_not_taken_and_a_marked_test_is(kernels_repo):
    # a plugin's own tests write test files from strings: not perf tests of this project
    (kernels_repo / "tests" / "test_plugin.py").write_text(
        'FILE = """\ndef test_x(perfgate):\n    perfgate(sum, [1])\n"""\n\ndef test_plugin():\n    assert FILE\n'
    )
    (kernels_repo / "bench").mkdir()  # a pytest-codspeed style test: marked, no fixture
    (kernels_repo / "bench" / "test_walltime.py").write_text(
        "import pytest\n\n@pytest.mark.benchmark\ndef test_walltime():\n    sum(range(100))\n"
    )
    assert init(kernels_repo, "--action-ref", REF)[0] == 0
    assert selections(kernels_repo) == {"bench kernels/tests"}


def test_perf_tests_in_many_directories_run_from_their_common_parent_and_are_named(tmp_path):
    repo = bare_repo(tmp_path)
    for where in ("perf/a", "perf/b", "perf/c", "perf/d"):
        (repo / where).mkdir(parents=True)
        (repo / where / "test_p.py").write_text(PERF_TEST)
    code, out = init(repo, "--action-ref", REF)
    assert code == 0 and selections(repo) == {"perf"}, out
    assert "the common parent of the 4 directories holding perf tests (perf/a, perf/b, perf/c, ...;" in out
