"""The jobs of the workflows `perfgate ci init` writes, as plain data (ci/workflow.py renders and checks them).

Every job that runs a pull request's code holds `contents: read` and nothing else; every job that holds a
write token runs none (it checks out nothing of the pull request and installs perfgate from the pinned action).
docs/github-actions.md explains each choice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

LABEL = "perfgate"  # a maintainer's approval to run one commit of a pull request on the self-hosted runner
BASELINE_LABEL = "perfgate-baseline"  # ... and to accept its baseline change (the run it triggers only)
CHECKOUT = "actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1"  # v7.0.1 (COMMENTS names each version)
SETUP_PYTHON = "actions/setup-python@5fda3b95a4ea91299a34e894583c3862153e4b97"  # v7.0.0
UPLOAD_ARTIFACT = "actions/upload-artifact@bbbca2ddaa5d8feaa63e36b76fdaad77386f024f"  # v7.0.0
DOWNLOAD_ARTIFACT = "actions/download-artifact@3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c"  # v8.0.1
PINS = {CHECKOUT: "v7.0.1", SETUP_PYTHON: "v7.0.0", UPLOAD_ARTIFACT: "v7.0.0", DOWNLOAD_ARTIFACT: "v8.0.1"}
ARTIFACT = "perfgate-results"
IS_PR_TARGET = "github.event_name == 'pull_request_target'"
HEAD_SHA = "${{ github.event.pull_request.head.sha || github.sha }}"
VERIFY_HEAD = (
    'test "$(git rev-parse HEAD)" = "$EXPECTED" || '
    '{ echo "::error title=perfgate::checked out $(git rev-parse HEAD), not the approved $EXPECTED"; '
    "exit 1; }\n"
)


@dataclass(frozen=True)
class Choices:
    """What `perfgate ci init` was told (checked in ci/workflow.py: no `${{` from an argument reaches a file)."""

    action: str  # owner/repo[/path]@sha of the measuring action
    report: str  # ... and of the report action (report/ beside it)
    pip_requirement: str  # perfgate from the same commit
    runner_label: str
    hosted: bool
    pytest_args: str
    python_version: str
    default_branch: str
    db_secret: str = ""  # the repository secret holding the fleet's history URL ("": SQLite on each runner)


def runs_on(c: Choices) -> str | list[str]:
    return c.runner_label if c.hosted else ["self-hosted", "linux", c.runner_label]


def _python(c: Choices) -> dict[str, Any]:
    # a Python of its own (current runner images refuse pip into the system Python: PEP 668)
    return {"uses": SETUP_PYTHON, "with": {"python-version": c.python_version}}


def _checkout(ref: str = "", unsafe: str = "") -> dict[str, Any]:
    options: dict[str, Any] = {"persist-credentials": False}
    if ref:
        options.update({"ref": ref, "fetch-depth": 0})  # the base commit, for the base ref check and A/B mode
    if unsafe:
        options["allow-unsafe-pr-checkout"] = unsafe
    return {"uses": CHECKOUT, "with": options}


def gate_job(c: Choices, accept: str, condition: str) -> dict[str, Any]:
    """The measuring job: the pull request's code, a read-only token, the results as an artifact."""
    steps: list[dict[str, Any]] = [
        _checkout(HEAD_SHA, "" if c.hosted else f"${{{{ {IS_PR_TARGET} }}}}"),
        {"name": "the approved commit, nothing newer", "env": {"EXPECTED": HEAD_SHA}, "run": VERIFY_HEAD},
        _python(c),
        {"name": "install the project", "run": "python -m pip install --quiet -e .\n"},
        {
            "uses": c.action,
            "with": {
                "pytest-args": c.pytest_args,
                "strict": "true",
                "python": "python",
                "accept-baseline-change": accept,
                "artifact-name": ARTIFACT,
                **({} if c.hosted else _self_hosted_inputs()),
                **_db_url(c.db_secret),
            },
        },
    ]
    job: dict[str, Any] = {"name": "gate", "if": condition} if condition else {"name": "gate"}
    return {
        **job,
        "runs-on": runs_on(c),
        "timeout-minutes": 60,
        "permissions": {"contents": "read"},  # checkout only: the job that runs PR code can write nothing
        "steps": steps,
    }


def _db_url(db_secret: str) -> dict[str, str]:
    """The action's db-url from a repository secret, for trusted runs only: a pull request's job (which runs its
    code) is never handed the secret."""
    if not db_secret:
        return {}
    return {"db-url": f"${{{{ !startsWith(github.event_name, 'pull_request') && secrets.{db_secret} || '' }}}}"}


def _self_hosted_inputs() -> dict[str, str]:
    """A pull request's run on a persistent machine: its own cache copy, no shared history, ephemeral only."""
    return {
        "ephemeral-runner": "${{ vars.PERFGATE_EPHEMERAL_RUNNERS == 'true' }}",
        "history": f"${{{{ {IS_PR_TARGET} && 'none' || '' }}}}",
        "cache-dir": f"${{{{ {IS_PR_TARGET} && format('{{0}}/perfgate-pr-cache', runner.temp) || '' }}}}",
        "cache-seed": f"${{{{ {IS_PR_TARGET} && format('{{0}}/perfgate/{{1}}/cache', runner.tool_cache, "
        "github.repository) || '' }}",
    }


def report_job(c: Choices, condition: str, needs: str = "", run_id: str = "") -> dict[str, Any]:
    """The trusted job: no pull request code; the artifact checked, the status set, the comment edited."""
    download: dict[str, Any] = {"uses": DOWNLOAD_ARTIFACT, "continue-on-error": True, "with": {"name": ARTIFACT}}
    download["with"]["path"] = "results"  # no artifact (the gate never uploaded one): the report says so
    if run_id:
        download["with"].update({"run-id": run_id, "github-token": "${{ github.token }}"})
    report: dict[str, Any] = {"uses": c.report, "with": {"results": "results/perfgate.json"}}
    if not c.hosted:
        report["with"]["remove-labels"] = f"{LABEL},{BASELINE_LABEL}"  # an approval is for one run
    job: dict[str, Any] = {"name": "report"}
    if needs:
        job["needs"] = needs
    permissions = {"pull-requests": "write", "statuses": "write"}
    if run_id:
        permissions = {"actions": "read", **permissions}  # another run's artifact
    return {
        **job,
        "if": condition,
        "runs-on": "ubuntu-latest",
        "timeout-minutes": 10,
        "permissions": permissions,
        "steps": [download, report],
    }


def unlabel_job(c: Choices) -> dict[str, Any]:
    """A push to a pull request takes its approval back: the labels approved the commit before it."""
    return {
        "name": "a push takes the approval back",
        "if": "github.event.action == 'synchronize'",
        "runs-on": "ubuntu-latest",
        "timeout-minutes": 10,
        "permissions": {"pull-requests": "write"},
        "steps": [
            {
                "uses": c.report,
                "with": {"unlabel-only": "true", "remove-labels": f"{LABEL},{BASELINE_LABEL}"},
            }
        ],
    }


def calibrate_job(c: Choices) -> dict[str, Any]:
    """Baseline updates: calibrate on the measuring runner (the default branch's code, a read-only token)."""
    calibrate = (
        "mkdir -p new old\n"
        "cp -r baselines/. old/ 2>/dev/null || true\n"
        'read -r -a args <<< "$PYTEST_ARGS"\n'
        "runs=()\n"
        '[ "$RUNS" = 0 ] || runs=(--runs "$RUNS")  # 0: as many as the suite\'s size needs\n'
        'python -m perfgate calibrate "${runs[@]}" --reason "$REASON" --replace --no-store -- "${args[@]}"\n'
        "cp -r baselines/. new/\n"
    )
    return {
        "name": "calibrate",
        "runs-on": runs_on(c),
        "timeout-minutes": 90,
        "permissions": {"contents": "read"},
        "steps": [
            _checkout(),
            _python(c),
            {
                "name": "install the project and perfgate",
                "run": f'python -m pip install --quiet -e . "{c.pip_requirement}"\n',
            },
            {
                "name": "calibrate",
                "env": {"REASON": "${{ inputs.reason }}", "RUNS": "${{ inputs.runs }}", "PYTEST_ARGS": c.pytest_args},
                "run": calibrate,
            },
            {"uses": UPLOAD_ARTIFACT, "with": {"name": "perfgate-baseline", "path": "old\nnew\n"}},
        ],
    }


OPEN_PR = """\
{
  echo "Baseline update: $REASON"
  echo
  for new in calibrated/new/*.json; do
    name=$(basename "$new")
    old="calibrated/old/$name"
    [ -f "$old" ] || old=/dev/null
    echo "### $name"
    perfgate baseline diff "$old" "$new" --format md || echo "(new baseline file)"
    echo
  done
  echo "Calibrated by workflow run ${GITHUB_SERVER_URL}/${GITHUB_REPOSITORY}/actions/runs/${GITHUB_RUN_ID}."
  echo "A maintainer gates it by adding the perfgate-baseline label, which also states the change is intended."
} > body.md
cp calibrated/new/*.json baselines/
git config user.name "perfgate"
git config user.email "perfgate@users.noreply.github.com"
git switch -c "$BRANCH"
git add baselines
git commit -m "perfgate baseline: $REASON"
git push "https://x-access-token:${GH_TOKEN}@github.com/${GITHUB_REPOSITORY}.git" "$BRANCH"
gh pr create --repo "$GITHUB_REPOSITORY" --base "$BASE" --head "$BRANCH" --title "perfgate baseline: $REASON" \\
  --body-file body.md
"""


def open_pr_job(c: Choices) -> dict[str, Any]:
    """A new branch and a pull request with the old-vs-new table; nothing pushed to a protected branch."""
    return {
        "name": "open the pull request",
        "needs": "calibrate",
        "runs-on": "ubuntu-latest",
        "timeout-minutes": 10,
        "permissions": {"contents": "write", "pull-requests": "write"},
        "steps": [
            _checkout(),
            _python(c),
            {
                "name": "install perfgate (the action's commit)",
                "run": f'python -m pip install --quiet "{c.pip_requirement}"\n',
            },
            {"uses": DOWNLOAD_ARTIFACT, "with": {"name": "perfgate-baseline", "path": "calibrated"}},
            {
                "name": "open the pull request",
                "env": {
                    "GH_TOKEN": "${{ github.token }}",
                    "REASON": "${{ inputs.reason }}",
                    "BRANCH": "perfgate/baseline-${{ github.run_id }}",
                    "BASE": c.default_branch,
                },
                "run": OPEN_PR,
            },
        ],
    }


ANCHOR_CRON = "17 3 * * *"  # nightly, off the hour (GitHub delays runs scheduled on the hour)
ANCHOR = """\
read -r -a args <<< "$PYTEST_ARGS"
db=()
if [ -n "${{PERFGATE_DB:-}}" ]; then  # the fleet's server (a repository secret): perfgate reads it from there
  where="{server_where}"
else
  history="{history}"
  mkdir -p "$(dirname "$history")"
  db=(--db "$history")
  where="{where}"
fi
mkdir -p perfgate-anchor
status=0
python -m perfgate ab --anchor --summary "$GITHUB_STEP_SUMMARY" --json perfgate-anchor/anchor.json \\
  "${{db[@]}}" -- "${{args[@]}}" || status=$?
if [ -f perfgate-anchor/anchor.json ]; then
  # this run's rows, scrubbed like every output, for the artifact (merge the nights with db merge)
  python -m perfgate db export perfgate-anchor/history.db "${{db[@]}}" --results perfgate-anchor/anchor.json
  echo "$where" && printf '\\n%s\\n' "$where" >> "$GITHUB_STEP_SUMMARY"  # after the summary's last block
fi
exit "$status"
"""
# a persistent GPU runner keeps the history the gate's action keeps (the dashboard lists anchor runs over time); a
# hosted runner keeps nothing between jobs: the run is stored in the job's temporary directory and the artifact
# (perfgate-anchor: anchor.json, history.db) is the record; with --db-secret, the fleet's server, as the gate's
# trusted runs
ANCHOR_HISTORY = "$RUNNER_TOOL_CACHE/perfgate/$GITHUB_REPOSITORY/history.db"
HOSTED_ANCHOR_HISTORY = "$RUNNER_TEMP/perfgate-anchor-history.db"
LISTED = "\\`perfgate history --db history.db --kind anchor\\`"
ANCHOR_WHERE = {
    True: "perfgate: this anchor run's history is the artifact \\`perfgate-anchor\\` (history.db; a GitHub-hosted "
    f"runner keeps nothing between jobs): {LISTED} lists it, \\`perfgate db merge anchors.db history.db\\` "
    "gathers the nights",
    False: "perfgate: this anchor run is stored in the runner's history (\\`$history\\`: the dashboard and "
    "\\`perfgate history --kind anchor\\` list it); its rows are also the artifact \\`perfgate-anchor\\` "
    f"(history.db: {LISTED})",
}
SERVER_WHERE = (
    "perfgate: this anchor run is stored in the fleet's history (the server in the repository secret {secret}: "
    "\\`perfgate history --kind anchor\\` with PERFGATE_DB set to it lists it, as the dashboard does); its rows "
    f"are also the artifact \\`perfgate-anchor\\` (history.db: {LISTED})"
)


def anchor_job(c: Choices) -> dict[str, Any]:
    """The scheduled anchor run: the default branch measured beside the commit its baseline was calibrated at
    (perfgate ab --anchor), the cumulative change per case in the job summary, the run stored (the fleet's server
    with --db-secret, else the runner's history or the job's) and its rows in the artifact, the summary saying
    where. The default branch's code only (a schedule: trusted, so it may hold the server's secret), a read-only
    token; the whole history checked out, since the anchor is an old commit."""
    env = {"PYTEST_ARGS": c.pytest_args}
    requirement = c.pip_requirement
    if c.db_secret:
        env["PERFGATE_DB"] = f"${{{{ secrets.{c.db_secret} }}}}"
        requirement = requirement.replace("perfgate @", "perfgate[server] @", 1)  # SQLAlchemy, psycopg
    script = ANCHOR.format(
        history=HOSTED_ANCHOR_HISTORY if c.hosted else ANCHOR_HISTORY,
        where=ANCHOR_WHERE[c.hosted],
        server_where=SERVER_WHERE.format(secret=c.db_secret or "PERFGATE_DB"),
    )
    steps: list[dict[str, Any]] = [
        _checkout(c.default_branch),
        _python(c),
        {"name": "install the project and perfgate", "run": f'python -m pip install --quiet -e . "{requirement}"\n'},
        {"name": "cumulative change since the baseline's calibration", "env": env, "run": script},
        {
            "if": "always()",
            "uses": UPLOAD_ARTIFACT,
            "with": {"name": "perfgate-anchor", "path": "perfgate-anchor/", "if-no-files-found": "ignore"},
        },
    ]
    return {
        "name": "anchor",
        "runs-on": runs_on(c),
        "timeout-minutes": 90,
        "permissions": {"contents": "read"},
        "steps": steps,
    }
