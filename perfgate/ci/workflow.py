"""`perfgate ci init`: a starter GitHub Actions workflow for the composite action, written with PyYAML and
validated by loading it back.

The starter is the safe shape, not the shortest one (docs/github-actions.md explains each choice):
- the GPU job runs for pushes to the default branch, manual dispatch, and a pull request only when a
  maintainer adds the `perfgate` label: `pull_request_target` runs the default branch's copy of this
  file, which the pull request cannot edit, and `synchronize` is not a trigger, so new commits need
  the label again (the report job removes it);
- the GPU job holds a read-only token and no git credentials; a pull request's run writes its own copy
  of the caches (seeded from the trusted one) and no shared history;
- the PR comment is posted by a job on a GitHub-hosted runner that only runs the default branch's code;
- every action is pinned to a commit SHA (the versions below were current when this was written).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perfgate import _version
from perfgate.errors import PerfgateError

LABEL = "perfgate"
CHECKOUT = "actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1"  # v7.0.1
SETUP_PYTHON = "actions/setup-python@5fda3b95a4ea91299a34e894583c3862153e4b97"  # v7.0.0
DOWNLOAD_ARTIFACT = "actions/download-artifact@3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c"  # v8.0.1
IS_PR = "github.event_name == 'pull_request_target'"


def _gate_job(action_ref: str, runner_label: str, pytest_args: str) -> dict[str, Any]:
    checkout = {"uses": CHECKOUT, "with": {
        "ref": "${{ github.event.pull_request.head.sha || github.sha }}", "persist-credentials": False,
        "allow-unsafe-pr-checkout": f"${{{{ {IS_PR} }}}}"}}
    return {
        "if": f"github.event_name != 'pull_request_target' || github.event.label.name == '{LABEL}'",
        "runs-on": ["self-hosted", "linux", runner_label], "timeout-minutes": 60,
        "permissions": {"contents": "read"},
        "steps": [checkout,
                  {"name": "install the project", "run": "python3 -m pip install --quiet -e ."},
                  {"uses": action_ref, "with": {
                      "pytest-args": pytest_args, "strict": "true", "comment": "false",
                      "history": f"${{{{ {IS_PR} && 'none' || '' }}}}",
                      "cache-dir": f"${{{{ {IS_PR} && format('{{0}}/perfgate-pr-cache', runner.temp) || '' }}}}",
                      "cache-seed": f"${{{{ {IS_PR} && format('{{0}}/perfgate/{{1}}/cache', runner.tool_cache, "
                                    "github.repository) || '' }}"}}],
    }


def _report_job(version: str) -> dict[str, Any]:
    comment = ("perfgate ci comment results/perfgate-summary.md --repo \"$GITHUB_REPOSITORY\" --pr \"$PR\"\n"
               f"gh pr edit \"$PR\" --repo \"$GITHUB_REPOSITORY\" --remove-label {LABEL} || true\n")
    return {
        "needs": "gate", "if": f"always() && needs.gate.result != 'skipped' && {IS_PR}", "runs-on": "ubuntu-latest",
        "timeout-minutes": 10, "permissions": {"pull-requests": "write"},
        "steps": [{"uses": SETUP_PYTHON, "with": {"python-version": "3.11"}},
                  {"run": f"python -m pip install --quiet perfgate=={version}"},
                  {"uses": DOWNLOAD_ARTIFACT, "with": {"name": "perfgate-results", "path": "results"}},
                  {"run": comment, "env": {"GITHUB_TOKEN": "${{ github.token }}", "GH_TOKEN": "${{ github.token }}",
                                           "PR": "${{ github.event.pull_request.number }}"}}],
    }


def starter_workflow(action_ref: str, runner_label: str, pytest_args: str = "tests/perf") -> dict[str, Any]:
    return {
        "name": "perfgate",
        "on": {"push": {"branches": ["main"]}, "workflow_dispatch": {},
               "pull_request_target": {"types": ["labeled"]}},
        "permissions": {},
        "concurrency": {"group": "perfgate-${{ github.event.pull_request.number || github.ref }}",
                        "cancel-in-progress": True},
        "jobs": {"gate": _gate_job(action_ref, runner_label, pytest_args), "report": _report_job(_version())},
    }


HEADER = """\
# Written by `perfgate ci init`; docs/github-actions.md explains it and the settings that make it safe:
# a runner group for the GPU runners that accepts only this workflow file at the default branch, approval
# for external contributors' workflows, and ephemeral runners for label-approved pull requests.
"""


def render_workflow(action_ref: str, runner_label: str, pytest_args: str = "tests/perf") -> str:
    import yaml  # a core dependency: GitHub Actions helpers are what PyYAML is here for

    class Dumper(yaml.SafeDumper):
        pass

    def block_scripts(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)

    Dumper.add_representer(str, block_scripts)
    doc = starter_workflow(action_ref, runner_label, pytest_args)
    text = HEADER + yaml.dump(doc, Dumper=Dumper, sort_keys=False, width=120)
    # the trigger is reviewed on purpose: say so where zizmor looks for it
    reviewed = "  # zizmor: ignore[dangerous-triggers] only on a maintainer's label"
    text = text.replace("  pull_request_target:\n", f"  pull_request_target:{reviewed}\n", 1)
    back = yaml.safe_load(text)
    # YAML 1.1 reads a bare `on` as true; PyYAML quotes it, and GitHub reads the quoted key as "on"
    if back.get("on", back.get(True)) != doc["on"] or back["jobs"] != doc["jobs"]:
        raise PerfgateError("perfgate: the starter workflow did not survive a YAML round trip")
    return text


def write_workflow(path: Path, action_ref: str, runner_label: str, force: bool, pytest_args: str = "tests/perf") -> str:
    from perfgate.report.publish import write_text

    if path.exists() and not force:
        raise PerfgateError(f"perfgate: {path} exists; pass --force to overwrite it")
    text = render_workflow(action_ref, runner_label, pytest_args)
    write_text(path, text)
    return text
