"""`perfgate ci`: the GitHub Actions helpers, one function per action; handlers in cli/ci.py.

Either side of the trust boundary: `annotate`, `comment`, `verdict`, `report` and `unlabel` serve the trusted
job, `confine` runs the measuring job's tests; `init` writes the workflows."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from perfgate.cli.parsers import command, lazy


def add_ci(sub: Any) -> None:
    c = command(
        sub,
        "ci",
        "GitHub Actions helpers",
        (
            "perfgate ci init --runner-label gpu-h100 --action-ref owner/perfgate@<40-hex sha>",
            "perfgate ci annotate perfgate.json",
        ),
    )
    csub = c.add_subparsers(required=True, metavar="ACTION")
    # the order of `perfgate ci --help`'s action list
    for add in (_annotate, _comment, _verdict, _report, _unlabel, _confine, _init):
        add(csub)


def _annotate(csub: Any) -> None:
    ann = command(
        csub,
        "annotate",
        "print ::error/::warning workflow commands for a results JSON",
        ("perfgate ci annotate results/perfgate.json",),
    )
    ann.add_argument("results", type=Path, help="perfgate.json written by --perfgate-json")
    ann.set_defaults(func=lazy("perfgate.cli.ci", "annotate"))


def _comment(csub: Any) -> None:
    com = command(
        csub,
        "comment",
        "create or update the one perfgate comment on a pull request",
        (
            "GITHUB_TOKEN=... perfgate ci comment --results results/*/perfgate.json --repo owner/name --pr 12",
            "perfgate ci comment h100.md a100.md --repo owner/name --pr 12 --marker perfgate-matrix",
        ),
    )
    com.add_argument(
        "summary",
        type=Path,
        nargs="*",
        help="Markdown summaries to post as they are (trusted input only); several become one comment",
    )
    com.add_argument(
        "--results",
        type=Path,
        nargs="+",
        metavar="JSON",
        help="render the comment from these results files (perfgate.json), every string from them "
        "shown as code: what a job that ran pull-request code wrote",
    )
    com.add_argument("--commit", default="", help="the commit that was gated (40 hex), named in the comment")
    com.add_argument("--repo", required=True, help="owner/name")
    com.add_argument("--pr", type=int, required=True, help="pull request number")
    _github_api_options(com)
    com.add_argument("--marker", default="perfgate", help="one sticky comment per marker (matrix jobs: one each)")
    com.add_argument(
        "--author",
        help="the login the token comments as (default: asked of the API; "
        "github-actions[bot] for GitHub Actions' token): only its comments are edited",
    )
    com.set_defaults(func=lazy("perfgate.cli.ci", "comment"))


def _verdict(csub: Any) -> None:
    ver = command(
        csub,
        "verdict",
        "exit 1 when a results file says the gate failed, 2 when it is missing or "
        "unreadable, 4 when its verdicts contradict its own numbers (the action checks the gate's own "
        "verdict, not only pytest's status)",
        ("perfgate ci verdict results/perfgate.json",),
    )
    ver.add_argument("results", type=Path, nargs="+", help="perfgate.json files written by --perfgate-json")
    ver.add_argument(
        "--not-before",
        metavar="ISO_TIME",
        help="refuse (exit 2) a results file whose run started before this time: a stale file",
    )
    ver.add_argument(
        "--require-strict", action="store_true", help="refuse (exit 2) a results file written without --perfgate-strict"
    )
    ver.set_defaults(func=lazy("perfgate.cli.ci", "verdict"))


def _report(csub: Any) -> None:
    rep = command(
        csub,
        "report",
        "the trusted job's step: approval labels off, the results checked (ci verdict), the commit status set "
        "on the gated commit, the comment edited; exit status ci verdict's",
        ("GITHUB_TOKEN=... perfgate ci report --results results/perfgate.json --repo o/r --sha <40 hex> --pr 12",),
    )
    rep.add_argument("--results", type=Path, nargs="+", required=True, metavar="JSON", help="the perfgate.json files")
    rep.add_argument("--repo", required=True, help="owner/name")
    rep.add_argument("--sha", required=True, help="the gated commit (40 hex): the status is set on it")
    rep.add_argument("--pr", type=int, help="the pull request to comment on")
    rep.add_argument(
        "--pr-head", default="", help="OWNER:BRANCH: the open pull request from there at --sha (a fork's run)"
    )
    rep.add_argument("--context", default="perfgate", help="the commit status's name (branch protection requires it)")
    rep.add_argument("--target-url", default="", help="where the status links (the workflow run)")
    rep.add_argument("--remove-labels", default="", help="comma-separated approval labels to take off first")
    rep.add_argument("--no-comment", dest="comment", action="store_false", help="set the status only")
    rep.add_argument("--require-strict", action="store_true", help="a results file without strict mode is an error")
    rep.add_argument("--marker", default="perfgate", help="one sticky comment per marker")
    rep.add_argument("--author", help="the login the token comments as (default: asked of the API)")
    _github_api_options(rep)
    rep.set_defaults(func=lazy("perfgate.cli.ci", "report"))


def _unlabel(csub: Any) -> None:
    unl = command(
        csub,
        "unlabel",
        "take approval labels off a pull request (on every push: an approval is for one commit)",
        ("GITHUB_TOKEN=... perfgate ci unlabel --repo o/r --pr 12 --labels perfgate,perfgate-baseline",),
    )
    unl.add_argument("--repo", required=True, help="owner/name")
    unl.add_argument("--pr", type=int, required=True, help="pull request number")
    unl.add_argument("--labels", required=True, help="comma-separated label names")
    _github_api_options(unl)
    unl.set_defaults(func=lazy("perfgate.cli.ci", "unlabel"))


def _confine(csub: Any) -> None:
    con = command(
        csub,
        "confine",
        "run a command (the gate's pytest) away from the GitHub runner's command files: what it writes "
        "there is put back and fails the command (exit 3), processes it leaves behind are killed",
        ("perfgate ci confine -- python -m pytest --perfgate tests/perf",),
    )
    con.add_argument("pytest_args", nargs="*", metavar="CMD", help="the command, after --")
    con.set_defaults(func=lazy("perfgate.cli.ci", "confine"))


def _init(csub: Any) -> None:
    init = command(
        csub,
        "init",
        "write the workflows for the perfgate actions: the gate, its trusted report, baseline updates",
        (
            "perfgate ci init --runner-label gpu-h100 --action-ref owner/perfgate@<40-hex commit sha>",
            "perfgate ci init --runner-label ubuntu-latest --action-ref owner/perfgate@<40-hex commit sha>",
        ),
    )
    init.add_argument(
        "--output",
        type=Path,
        default=Path(".github/workflows/perfgate.yml"),
        help="the gate's workflow; -report.yml (hosted runners) and -baseline.yml are written beside it "
        "(default .github/workflows/perfgate.yml)",
    )
    init.add_argument(
        "--action-ref",
        required=True,
        help="OWNER/REPO@COMMIT_SHA of the perfgate action: pinned by a full 40-hex commit, never by "
        "a movable tag (its report action and the perfgate the workflows install come from the same commit)",
    )
    init.add_argument(
        "--runner-label",
        default="gpu",
        help="the runner's label: a self-hosted GPU runner's (gpu-h100), or a GitHub-hosted image (ubuntu-latest)",
    )
    init.add_argument(
        "--runner",
        choices=("auto", "self-hosted", "hosted"),
        default="auto",
        help="the kind of runner (auto: hosted for ubuntu-*, windows-*, macos-* labels)",
    )
    init.add_argument(
        "--tests",
        action="append",
        default=[],
        metavar="PATH",
        help="the perf tests the workflows run (a directory, file or node id; repeat for more), each checked to be "
        "in the repository (default: the directories of the test files that use the perfgate or benchmark "
        "fixture or marker)",
    )
    init.add_argument(
        "--pytest-args",
        default="",
        help="more pytest arguments for the workflows (-k, -m, ...; split on whitespace, no quotes); a test path "
        "among them is checked as --tests is",
    )
    init.add_argument("--python-version", default="3.11", help="the Python actions/setup-python installs")
    init.add_argument("--default-branch", default="", help="default: the repository's (origin/HEAD, else the current)")
    init.add_argument(
        "--db-secret",
        default="",
        metavar="NAME",
        help="the repository secret holding the fleet's history URL (postgresql://...): the gate stores there "
        "(default: a SQLite history on each runner)",
    )
    init.add_argument("--force", action="store_true", help="overwrite existing files")
    init.set_defaults(func=lazy("perfgate.cli.ci", "init"))


def _github_api_options(p: argparse.ArgumentParser) -> None:
    """Where the commands that call GitHub's REST API find their token and the API."""
    p.add_argument("--token-env", default="GITHUB_TOKEN", help="environment variable holding the token")
    p.add_argument("--api-url", default="https://api.github.com", help="GitHub REST API base URL")
