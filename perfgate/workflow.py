"""`perfgate ci init`: a starter GitHub Actions workflow for the composite action, written with PyYAML and
validated by loading it back.

The starter is the safe shape, not the shortest one: the GPU job runs only for pushes to the default
branch, a maintainer-applied label or a manual dispatch (a fork's pull request never reaches the
self-hosted runner on its own), with a read-only token, and a second job on a GitHub-hosted runner posts
the PR comment from the results artifact (docs/github-actions.md explains each choice).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perfgate.errors import PerfgateError

LABEL = "perfgate"


def starter_workflow(action_ref: str, runner_label: str) -> dict[str, Any]:
    gate_if = ("github.event_name != 'pull_request_target' || (github.event.action == 'labeled' && "
               f"github.event.label.name == '{LABEL}')")
    checkout = {"uses": "actions/checkout@v4", "with": {
        "ref": "${{ github.event.pull_request.head.sha || github.sha }}", "persist-credentials": False}}
    gate = {
        "if": gate_if, "runs-on": ["self-hosted", "linux", runner_label], "timeout-minutes": 60,
        "permissions": {"contents": "read"},
        "steps": [checkout, {"uses": action_ref, "id": "gate", "with": {
            "pytest-args": "tests/perf", "strict": "true", "comment": "false"}}],
    }
    comment = {
        "needs": "gate", "if": "always() && github.event_name == 'pull_request_target'", "runs-on": "ubuntu-latest",
        "permissions": {"pull-requests": "write"},
        "steps": [{"uses": "actions/download-artifact@v4", "with": {"name": "perfgate-results", "path": "results"}},
                  {"run": "python -m pip install perfgate && perfgate ci comment results/perfgate-summary.md "
                          "--repo \"$GITHUB_REPOSITORY\" --pr \"$PR\"",
                   "env": {"GITHUB_TOKEN": "${{ github.token }}", "PR": "${{ github.event.pull_request.number }}"}}],
    }
    return {
        "name": "perfgate",
        "on": {"push": {"branches": ["main"]}, "workflow_dispatch": {},
               "pull_request_target": {"types": ["labeled", "synchronize"]}},
        "permissions": {},
        "concurrency": {"group": "perfgate-${{ github.event.pull_request.number || github.ref }}",
                        "cancel-in-progress": True},
        "jobs": {"gate": gate, "comment": comment},
    }


def render_workflow(action_ref: str, runner_label: str) -> str:
    import yaml  # a core dependency: GitHub Actions helpers are what PyYAML is here for

    doc = starter_workflow(action_ref, runner_label)
    text = "# Written by `perfgate ci init`; see docs/github-actions.md for the settings that make it safe.\n"
    text += yaml.safe_dump(doc, sort_keys=False, width=110)
    back = yaml.safe_load(text)
    # YAML 1.1 reads a bare `on` as true; PyYAML quotes it, and GitHub reads the quoted key as "on"
    if back.get("on", back.get(True)) != doc["on"] or back["jobs"] != doc["jobs"]:
        raise PerfgateError("perfgate: the starter workflow did not survive a YAML round trip")
    return text


def write_workflow(path: Path, action_ref: str, runner_label: str, force: bool) -> str:
    from perfgate.publish import write_text

    if path.exists() and not force:
        raise PerfgateError(f"perfgate: {path} exists; pass --force to overwrite it")
    text = render_workflow(action_ref, runner_label)
    write_text(path, text)
    return text
