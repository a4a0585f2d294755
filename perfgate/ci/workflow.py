"""`perfgate ci init`: a starter GitHub Actions workflow for the composite action, written with PyYAML and
validated by loading it back.

The starter is the safe shape, not the shortest one (docs/github-actions.md explains each choice):
- the GPU job runs for pushes to the default branch, manual dispatch, and a pull request only when a
  maintainer adds the `perfgate` label: `pull_request_target` runs the default branch's copy of this
  file, which the pull request cannot edit, and `synchronize` is not a trigger, so new commits need
  the label again (the report job removes it);
- the GPU job holds a read-only token and no git credentials; a pull request's run writes its own copy
  of the caches (seeded from the trusted one) and no shared history;
- the gate job checks out exactly the commit that was labelled (the event's head sha, verified after the
  checkout) with the full history, so the baseline is compared with the pull request's base commit; a
  `perfgate-baseline` label states that a baseline change is intended;
- labelled pull requests run only on ephemeral runners: the action refuses a persistent self-hosted one
  unless the repository variable PERFGATE_EPHEMERAL_RUNNERS is "true";
- the report job runs on a GitHub-hosted runner, only the default branch's code: it removes the approval
  label first (`always()`: a failed or cancelled run keeps no approval), then renders the comment from the
  results files (every string from them shown as code) and edits only its own comment;
- a weekly scheduled run gates the default branch and applies the action's retention (`db prune`); with
  `--db-secret NAME` the history is the fleet's server whose URL that secret holds, for trusted runs only;
- every action, perfgate's included, is pinned to a full commit SHA (the versions below were current
  when this was written); `perfgate ci init` refuses a tag, and the report job installs perfgate from the
  same commit of the action's repository (pip's git form: nothing unpublished is asked of an index).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfgate.errors import PerfgateError, require

LABEL = "perfgate"
BASELINE_LABEL = "perfgate-baseline"  # the pull request states that its baseline change is intended
CHECKOUT = "actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1"  # v7.0.1 (COMMENTS names each version)
SETUP_PYTHON = "actions/setup-python@5fda3b95a4ea91299a34e894583c3862153e4b97"  # v7.0.0
DOWNLOAD_ARTIFACT = "actions/download-artifact@3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c"  # v8.0.1
IS_PR = "github.event_name == 'pull_request_target'"


HEAD_SHA = "${{ github.event.pull_request.head.sha || github.sha }}"
_ACTION_REF = re.compile(r"(?P<owner>[\w.-]+)/(?P<repo>[\w.-]+)(?:/(?P<path>[\w./-]+))?@(?P<sha>[0-9a-f]{40})")
VERIFY_HEAD = (
    'test "$(git rev-parse HEAD)" = "$EXPECTED" || '
    '{ echo "::error title=perfgate::checked out $(git rev-parse HEAD), not the labelled $EXPECTED"; '
    "exit 1; }\n"
)


@dataclass(frozen=True)
class ActionRef:
    """`owner/repo[/path]@sha`: where the composite action, and the perfgate it installs, come from."""

    owner: str
    repo: str
    path: str
    sha: str

    @property
    def uses(self) -> str:
        return f"{self.owner}/{self.repo}{'/' + self.path if self.path else ''}@{self.sha}"

    def pip_requirement(self, url: str = "") -> str:
        """perfgate from this commit of the action's repository (pip's direct reference to a git commit)."""
        where = url or f"https://github.com/{self.owner}/{self.repo}"
        subdirectory = f"#subdirectory={self.path}" if self.path else ""
        return f"perfgate @ git+{where}@{self.sha}{subdirectory}"


def parse_action_ref(text: str) -> ActionRef:
    """owner/repo[/path]@<40-hex sha>: a tag or branch can be moved to other code after review."""
    m = _ACTION_REF.fullmatch(text)  # whole: no stray newline or space either
    if m is None:
        raise PerfgateError(
            f"perfgate: --action-ref must pin the action by a full commit sha "
            f"(OWNER/REPO@COMMIT_SHA, 40 hex digits), got {text[:80]!r}: a tag can be moved "
            "to other code"
        )
    return ActionRef(m["owner"], m["repo"], (m["path"] or "").strip("/"), m["sha"])


def _db_url(db_secret: str) -> dict[str, str]:
    """The action's db-url from a repository secret, for trusted runs only: a labelled pull request's job
    (which runs its code) is never handed the secret."""
    if not db_secret:
        return {}
    return {"db-url": f"${{{{ github.event_name != 'pull_request_target' && secrets.{db_secret} || '' }}}}"}


def _gate_job(action: ActionRef, runner_label: str, pytest_args: str, db_secret: str = "") -> dict[str, Any]:
    checkout = {
        "uses": CHECKOUT,
        "with": {
            "ref": HEAD_SHA,
            "persist-credentials": False,
            "fetch-depth": 0,  # the base commit, for the baseline check
            "allow-unsafe-pr-checkout": f"${{{{ {IS_PR} }}}}",
        },
    }
    return {
        "name": "gate",
        "if": f"github.event_name != 'pull_request_target' || github.event.label.name == '{LABEL}'",
        "runs-on": ["self-hosted", "linux", runner_label],
        "timeout-minutes": 60,
        "permissions": {"contents": "read"},  # checkout only: the job that runs PR code can write nothing
        "steps": [
            checkout,
            {"name": "the labelled commit, nothing newer", "env": {"EXPECTED": HEAD_SHA}, "run": VERIFY_HEAD},
            {"name": "install the project", "run": "python3 -m pip install --quiet -e ."},
            {
                "uses": action.uses,
                "with": {
                    "pytest-args": pytest_args,
                    "strict": "true",
                    "comment": "false",
                    "accept-baseline-change": (
                        f"${{{{ contains(github.event.pull_request.labels.*.name, '{BASELINE_LABEL}') }}}}"
                    ),
                    "ephemeral-runner": "${{ vars.PERFGATE_EPHEMERAL_RUNNERS == 'true' }}",
                    "history": f"${{{{ {IS_PR} && 'none' || '' }}}}",
                    "cache-dir": f"${{{{ {IS_PR} && format('{{0}}/perfgate-pr-cache', runner.temp) || '' }}}}",
                    "cache-seed": f"${{{{ {IS_PR} && format('{{0}}/perfgate/{{1}}/cache', runner.tool_cache, "
                    "github.repository) || '' }}",
                    **_db_url(db_secret),
                },
            },
        ],
    }


def _report_job(action: ActionRef) -> dict[str, Any]:
    unlabel = (
        f'gh pr edit "$PR" --repo "$GITHUB_REPOSITORY" --remove-label {LABEL} || '
        'echo "::warning title=perfgate::could not remove the approval label"\n'
    )
    comment = (
        'perfgate ci comment --results results/perfgate.json --commit "$HEAD_SHA" '
        '--repo "$GITHUB_REPOSITORY" --pr "$PR"\n'
    )
    token = {
        "GITHUB_TOKEN": "${{ github.token }}",
        "GH_TOKEN": "${{ github.token }}",
        "PR": "${{ github.event.pull_request.number }}",
    }
    return {
        "name": "report",
        "needs": "gate",
        "if": f"always() && needs.gate.result != 'skipped' && {IS_PR}",
        "runs-on": "ubuntu-latest",
        "timeout-minutes": 10,
        "permissions": {"pull-requests": "write"},  # the sticky comment and removing the approval label
        "steps": [
            {"name": "new commits need a maintainer's label again", "if": "always()", "env": token, "run": unlabel},
            {"uses": SETUP_PYTHON, "with": {"python-version": "3.11"}},
            {
                "name": "install perfgate (the action's commit)",
                "run": f'python -m pip install --quiet "{action.pip_requirement()}"',
            },
            {"uses": DOWNLOAD_ARTIFACT, "with": {"name": "perfgate-results", "path": "results"}},
            {
                "name": "the comment, rendered here from the results",
                "run": comment,
                "env": {**token, "HEAD_SHA": "${{ github.event.pull_request.head.sha }}"},
            },
        ],
    }


def starter_workflow(
    action_ref: str, runner_label: str, pytest_args: str = "tests/perf", db_secret: str = ""
) -> dict[str, Any]:
    action = parse_action_ref(action_ref)
    if db_secret and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,99}", db_secret):
        raise PerfgateError(
            f"perfgate: --db-secret must name a repository secret (letters, digits, _), got {db_secret[:40]!r}"
        )
    return {
        "name": "perfgate",
        "on": {
            "push": {"branches": ["main"]},
            "workflow_dispatch": {},
            "pull_request_target": {"types": ["labeled"]},
            # weekly: the gate on the default branch, then the action's retention (db prune: keep-runs, keep-days)
            "schedule": [{"cron": "17 3 * * 1"}],
        },
        "permissions": {},
        # the label in the group: another label's event (a run that does nothing) never cancels a gate
        "concurrency": {
            "group": "perfgate-${{ github.event.pull_request.number || github.ref }}-"
            "${{ github.event.label.name || 'push' }}",
            "cancel-in-progress": True,
        },
        "jobs": {"gate": _gate_job(action, runner_label, pytest_args, db_secret), "report": _report_job(action)},
    }


COMMENTS = (
    ("  pull_request_target:\n", "zizmor: ignore[dangerous-triggers] only on a maintainer's label"),
    ("    runs-on:\n", "zizmor: ignore[self-hosted-runner] the GPU; labelled pull requests only on ephemeral runners"),
    ("      contents: read\n", "checkout only: the job that runs pull-request code can write nothing"),
    ("      pull-requests: write\n", "the sticky comment and removing the approval label"),
    (f"uses: {CHECKOUT}\n", "v7.0.1"),
    (f"uses: {SETUP_PYTHON}\n", "v7.0.0"),
    (f"uses: {DOWNLOAD_ARTIFACT}\n", "v8.0.1"),
)
DB_URL_LINE = "        db-url: ${{ github.event_name != 'pull_request_target' && secrets."
DB_URL_COMMENT = (
    "zizmor: ignore[secrets-outside-env] trusted runs only: a labelled pull request's job is handed ''; "
    "a deployment environment would gate every push on a reviewer"
)
HEADER = """\
# Written by `perfgate ci init`; docs/github-actions.md explains it and the settings that make it safe:
# a runner group for the GPU runners that accepts only this workflow file at the default branch, approval
# for external contributors' workflows, and ephemeral runners for label-approved pull requests.
"""


def render_workflow(action_ref: str, runner_label: str, pytest_args: str = "tests/perf", db_secret: str = "") -> str:
    require("yaml", "ci", "perfgate ci init")  # one line naming the extra when PyYAML is missing
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def block_scripts(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)

    Dumper.add_representer(str, block_scripts)
    doc = starter_workflow(action_ref, runner_label, pytest_args, db_secret)
    text = HEADER + yaml.dump(doc, Dumper=Dumper, sort_keys=False, width=120)
    comments = COMMENTS + ((DB_URL_LINE, DB_URL_COMMENT),) if db_secret else COMMENTS
    for line, comment in comments:  # why each permission, pin and reviewed finding: where zizmor looks for it
        if line not in text:
            raise PerfgateError(f"perfgate: the starter workflow lost the line {line.strip()!r}")
        text = _commented(text, line, comment)
    back = yaml.safe_load(text)
    # YAML 1.1 reads a bare `on` as true; PyYAML quotes it, and GitHub reads the quoted key as "on"
    if back.get("on", back.get(True)) != doc["on"] or back["jobs"] != doc["jobs"]:
        raise PerfgateError("perfgate: the starter workflow did not survive a YAML round trip")
    return text


def _commented(text: str, line: str, comment: str) -> str:
    """`comment` at the end of the first line that starts with `line` (a whole line when it ends in a newline)."""
    at = text.index(line)
    end = text.index("\n", at)
    return f"{text[:end]}  # {comment}{text[end:]}"


def write_workflow(
    path: Path, action_ref: str, runner_label: str, force: bool, pytest_args: str = "tests/perf", db_secret: str = ""
) -> str:
    from perfgate.report.publish import write_text

    if path.exists() and not force:
        raise PerfgateError(f"perfgate: {path} exists; pass --force to overwrite it")
    text = render_workflow(action_ref, runner_label, pytest_args, db_secret)
    write_text(path, text)
    return text
