"""`perfgate ci init`: the workflows for the composite actions, written with PyYAML and validated by loading
them back. One shape per kind of runner (docs/github-actions.md explains each choice):

- a self-hosted GPU runner (`--runner-label gpu-h100`): pushes to the default branch, manual dispatch, and a
  pull request only when a maintainer adds the `perfgate` label (or `perfgate-baseline`, which also accepts
  its baseline change): `pull_request_target` runs the default branch's copy of the workflow, the gate job
  checks out exactly the commit the label event names, holds a read-only token and leaves an artifact; a
  report job on a GitHub-hosted runner, which runs none of the pull request's code, checks the artifact, sets
  the required commit status on that commit, comments, and takes the labels back; a push to the pull request
  (`synchronize`) takes them back too. Labelled pull requests run only on ephemeral runners.
- a GitHub-hosted runner (`--runner-label ubuntu-latest`, a CPU project on the host clock): plain
  `pull_request`, no label needed (no secret is at stake: fork pull requests get a read-only token); the
  verdict, the required status and the comment come from a `workflow_run` workflow (perfgate-report.yml) that
  runs the default branch's code with the write token and reads the run's artifact.
- both: a nightly anchor run on the default branch (perfgate-anchor.yml: `perfgate ab --anchor`, the cumulative
  change of each case since the baseline's calibration in the job summary; docs/anchor.md), a Python of its
  own (actions/setup-python: current images refuse pip into the system Python), the default branch as the
  repository names it, a baseline-update workflow (perfgate-baseline.yml), every action
  pinned to a full commit sha (perfgate's own too: a tag can be moved), and every argument checked so nothing
  from the command line becomes a `${{ }}` expression in the files; a weekly scheduled run gates the default
  branch and lets the action apply its retention (`db prune`); with `--db-secret NAME` the history is the
  fleet's server whose URL that secret holds, handed to trusted runs only (never a pull request's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfgate.ci import workflow_jobs as jobs
from perfgate.errors import PerfgateError, require

_ACTION_REF = re.compile(r"(?P<owner>[\w.-]+)/(?P<repo>[\w.-]+)(?:/(?P<path>[\w./-]+))?@(?P<sha>[0-9a-f]{40})")
HOSTED_LABEL = re.compile(r"(ubuntu|windows|macos)-[0-9a-z.-]+")  # GitHub's own runner images
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
_BRANCH = re.compile(r"(?!-)(?!.*\.\.)(?!.*//)(?!.*@\{)[A-Za-z0-9._/-]{1,200}(?<!\.lock)(?<![/.])")
_PYTHON = re.compile(r"3\.(?:[0-9]{1,2}|x)(?:\.[0-9]{1,3})?")
_SECRET = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")
# weekly: the gate on the default branch, then the action's retention (db prune: keep-runs, keep-days)
WEEKLY = [{"cron": "17 3 * * 1"}]
MAX_PYTEST_ARGS = 500
GIT_TIMEOUT_S = 30.0


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

    @property
    def report_uses(self) -> str:
        """The report action, beside the measuring one."""
        return f"{self.owner}/{self.repo}/{self.path + '/' if self.path else ''}report@{self.sha}"

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


def _checked(option: str, value: str, pattern: re.Pattern[str] | None, what: str) -> str:
    """An argument bound for a workflow file: never an expression GitHub would evaluate, never a control
    character, and of the shape its place needs."""
    if "${{" in value or any(not ch.isprintable() for ch in value) or (pattern and not pattern.fullmatch(value)):
        raise PerfgateError(f"perfgate: {option} must be {what}, got {value[:80]!r}")
    return value


def choices(
    action_ref: str,
    runner_label: str,
    pytest_args: str,
    default_branch: str,
    runner: str = "auto",
    python_version: str = "3.11",
    db_secret: str = "",
) -> jobs.Choices:
    action = parse_action_ref(action_ref)
    label = _checked("--runner-label", runner_label, _LABEL, "a runner label (letters, digits, '.', '_', '-')")
    if len(pytest_args) > MAX_PYTEST_ARGS:
        raise PerfgateError(f"perfgate: --pytest-args is longer than {MAX_PYTEST_ARGS} characters")
    return jobs.Choices(
        action=action.uses,
        report=action.report_uses,
        pip_requirement=action.pip_requirement(),
        runner_label=label,
        hosted=runner == "hosted" or (runner == "auto" and bool(HOSTED_LABEL.fullmatch(label))),
        pytest_args=_checked("--pytest-args", pytest_args.strip(), None, "pytest's arguments, no ${{ }}"),
        python_version=_checked("--python-version", python_version, _PYTHON, "a Python 3 version such as 3.11"),
        default_branch=_checked("--default-branch", default_branch, _BRANCH, "a branch name"),
        db_secret=_checked("--db-secret", db_secret, _SECRET, "a repository secret's name (letters, digits, _)")
        if db_secret
        else "",
    )


def detect_default_branch(where: Path) -> str:
    """The repository's default branch: origin's HEAD, else the branch checked out, else git's init default."""
    from perfgate.measure.tools import run_tool

    def git(*args: str) -> str:
        out = run_tool(["git", *args], GIT_TIMEOUT_S, cwd=where, check=False)
        return out.stdout.strip() if out.returncode == 0 else ""

    remote = git("symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD")
    if remote.startswith("origin/"):
        return remote.removeprefix("origin/")
    current = git("symbolic-ref", "--quiet", "--short", "HEAD")
    if current:
        return current
    raise PerfgateError(
        f"perfgate: cannot tell {where}'s default branch (no origin/HEAD, no branch checked out): pass --default-branch"
    )


def workflows(c: jobs.Choices, name: str) -> dict[str, dict[str, Any]]:
    """file stem -> workflow, for the kind of runner chosen."""
    out = _hosted_workflows(c, name) if c.hosted else {name: _labelled_gate(c, name)}
    out[f"{name}-baseline"] = _baseline_workflow(c, name)
    out[f"{name}-anchor"] = _anchor_workflow(c, name)
    return out


def _hosted_workflows(c: jobs.Choices, name: str) -> dict[str, dict[str, Any]]:
    """A GitHub-hosted runner: the gate on plain pull_request, and its workflow_run report."""
    branches = {"branches": [c.default_branch]}
    gate = {
        "name": name,
        "on": {
            "push": branches,
            "pull_request": {"types": ["opened", "synchronize", "reopened", "labeled"]},
            "workflow_dispatch": {},
            "schedule": WEEKLY,
        },
        "permissions": {},
        "concurrency": {
            "group": f"{name}-${{{{ github.event.pull_request.number || github.ref }}}}",
            "cancel-in-progress": True,  # a newer push supersedes the run of the commit before it
        },
        "jobs": {
            "gate": jobs.gate_job(
                c,
                accept=f"${{{{ github.event.label.name == '{jobs.BASELINE_LABEL}' }}}}",
                condition=f"github.event.action != 'labeled' || github.event.label.name == '{jobs.BASELINE_LABEL}'",
            )
        },
    }
    report = {
        "name": f"{name}-report",
        "on": {"workflow_run": {"workflows": [name], "types": ["completed"]}},
        "permissions": {},
        # one report at a time per commit, in the order its runs ended: the last run's verdict stands
        "concurrency": {
            "group": f"{name}-report-${{{{ github.event.workflow_run.head_sha }}}}",
            "cancel-in-progress": False,
        },
        "jobs": {
            "report": jobs.report_job(
                c,
                "github.event.workflow_run.event == 'pull_request' && "
                "github.event.workflow_run.conclusion != 'skipped'",
                run_id="${{ github.event.workflow_run.id }}",
            )
        },
    }
    return {name: gate, f"{name}-report": report}


def _labelled_gate(c: jobs.Choices, name: str) -> dict[str, Any]:
    """A self-hosted GPU runner: pull_request_target on a maintainer's label, unlabel, gate and report jobs."""
    branches = {"branches": [c.default_branch]}
    approved = (
        f"github.event_name != 'pull_request_target' || (github.event.action == 'labeled' && "
        f"(github.event.label.name == '{jobs.LABEL}' || github.event.label.name == '{jobs.BASELINE_LABEL}'))"
    )
    gate = {
        "name": name,
        "on": {
            "push": branches,
            "workflow_dispatch": {},
            "pull_request_target": {"types": ["labeled", "synchronize"]},
            "schedule": WEEKLY,
        },
        "permissions": {},
        # the label in the group: another label's event, or a push, never cancels a gate
        "concurrency": {
            "group": f"{name}-${{{{ github.event.pull_request.number || github.ref }}}}-"
            "${{ github.event.label.name || github.event.action || 'push' }}",
            "cancel-in-progress": True,
        },
        "jobs": {
            "unlabel": jobs.unlabel_job(c),
            "gate": jobs.gate_job(
                c, accept=f"${{{{ github.event.label.name == '{jobs.BASELINE_LABEL}' }}}}", condition=approved
            ),
            "report": jobs.report_job(
                c, f"always() && needs.gate.result != 'skipped' && {jobs.IS_PR_TARGET}", needs="gate"
            ),
        },
    }
    return gate


def _anchor_workflow(c: jobs.Choices, name: str) -> dict[str, Any]:
    """Nightly on the default branch (a schedule runs only there): the anchor run (docs/anchor.md)."""
    return {
        "name": f"{name}-anchor",
        "on": {"schedule": [{"cron": jobs.ANCHOR_CRON}], "workflow_dispatch": {}},
        "permissions": {},
        "concurrency": {"group": f"{name}-anchor", "cancel-in-progress": False},
        "jobs": {"anchor": jobs.anchor_job(c)},
    }


def _baseline_workflow(c: jobs.Choices, name: str) -> dict[str, Any]:
    return {
        "name": f"{name}-baseline",
        "on": {
            "workflow_dispatch": {
                "inputs": {
                    "reason": {
                        "description": "Why the baseline changes (the baseline's update log)",
                        "required": True,
                        "type": "string",
                    },
                    "runs": {
                        "description": "Fresh processes to calibrate from (0: as many as the suite's size needs)",
                        "default": 0,
                        "type": "number",
                    },
                }
            }
        },
        "permissions": {},
        "concurrency": {"group": f"{name}-baseline", "cancel-in-progress": False},
        "jobs": {"calibrate": jobs.calibrate_job(c), "open-pr": jobs.open_pr_job(c)},
    }


# (a line of the rendered file, the comment it gets): why each permission, pin and reviewed finding, where zizmor
# and a reviewer look for it
COMMENTS = (
    ("  pull_request_target:\n", "zizmor: ignore[dangerous-triggers] runs PR code only on a maintainer's label"),
    ("  workflow_run:\n", "zizmor: ignore[dangerous-triggers] runs no PR code: checks the run's artifact"),
    ("    - self-hosted\n", "zizmor: ignore[self-hosted-runner] the GPU; labelled pull requests only on ephemeral"),
    ("      contents: read\n", "checkout only: a job that runs the project's code can write nothing"),
    ("      contents: write\n", "a new branch, never the protected one"),
    ("      pull-requests: write\n", "the pull request's comment and approval labels"),
    ("      statuses: write\n", "the commit status branch protection requires"),
    ("      actions: read\n", "the measuring run's artifact"),
    *((f"uses: {pin}\n", version) for pin, version in jobs.PINS.items()),
)
DB_URL_LINE = "        db-url: ${{ !startsWith(github.event_name, 'pull_request') && secrets."
DB_URL_COMMENT = (
    "zizmor: ignore[secrets-outside-env] trusted runs only: a pull request's job is handed ''; "
    "a deployment environment would gate every push on a reviewer"
)
ANCHOR_DB_LINE = "        PERFGATE_DB: ${{ secrets."
ANCHOR_DB_COMMENT = (
    "zizmor: ignore[secrets-outside-env] the nightly anchor run: the default branch's code only (schedule or "
    "dispatch, no pull request)"
)
SECRET_LINES = ((DB_URL_LINE, DB_URL_COMMENT), (ANCHOR_DB_LINE, ANCHOR_DB_COMMENT))
HEADER = """\
# Written by `perfgate ci init`; docs/github-actions.md explains it, the settings that make it safe and what it
# does not protect. Make the `perfgate` commit status required in branch protection.
"""


def render(doc: dict[str, Any]) -> str:
    require("yaml", "ci", "perfgate ci init")  # one line naming the extra when PyYAML is missing
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def block_scripts(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)

    Dumper.add_representer(str, block_scripts)
    text = HEADER + yaml.dump(doc, Dumper=Dumper, sort_keys=False, width=120)
    for line, comment in COMMENTS:
        text = text.replace(line, f"{line.rstrip(chr(10))}  # {comment}\n")
    for start, comment in SECRET_LINES:  # the reviewed finding, at the end of the line that starts with it
        if start in text:
            at = text.index("\n", text.index(start))
            text = f"{text[:at]}  # {comment}{text[at:]}"
    back = yaml.safe_load(text)
    # YAML 1.1 reads a bare `on` as true; PyYAML quotes it, and GitHub reads the quoted key as "on"
    if back.get("on", back.get(True)) != doc["on"] or back["jobs"] != doc["jobs"]:
        raise PerfgateError("perfgate: a workflow did not survive a YAML round trip")
    return text


def write_workflows(path: Path, c: jobs.Choices, force: bool) -> list[Path]:
    """The workflows beside `path` (its stem names them); nothing written when one exists without --force."""
    from perfgate.report.publish import write_text

    docs = workflows(c, path.stem)
    targets = {path.with_name(f"{stem}{path.suffix or '.yml'}"): doc for stem, doc in docs.items()}
    existing = [str(p) for p in targets if p.exists()]
    if existing and not force:
        raise PerfgateError(f"perfgate: {', '.join(existing)} exist(s); pass --force to overwrite")
    texts = {p: render(doc) for p, doc in targets.items()}  # every one renders before any is written
    for p, text in texts.items():
        write_text(p, text)
    return list(texts)
