"""`perfgate ci annotate|comment|init`: GitHub Actions helpers (the composite action calls them)."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from perfgate.errors import PerfgateError, ReportFileError
from perfgate.inputs import read_bytes


def annotate(args: argparse.Namespace) -> int:
    from perfgate.ci.results import read_checked_results
    from perfgate.report.annotations import check_results, workflow_commands
    from perfgate.report.scrub import scrub_rendered
    from perfgate.report.scrub_foreign import scrub_results_doc

    checked = read_checked_results(args.results)
    for line in workflow_commands(check_results(args.results, scrub_results_doc(checked.doc, os.environ))):
        print(scrub_rendered(line, os.environ))
    return 0


def comment(args: argparse.Namespace) -> int:
    from perfgate.ci.github import GitHubApi, upsert_comment

    token = os.environ.get(args.token_env, "")
    if not token:
        raise PerfgateError(f"perfgate: ci comment needs a token in ${args.token_env} (pull-requests: write)")
    if bool(args.summary) == bool(args.results):
        raise PerfgateError("perfgate: ci comment takes Markdown summaries or --results files, one of the two")
    if args.commit and not re.fullmatch(r"[0-9a-f]{7,64}", args.commit):
        raise PerfgateError(f"perfgate: --commit must be a commit sha, got {args.commit[:40]!r}")
    summaries = (
        _rendered(args.results, args.commit)
        if args.results
        else [read_bytes(path, ReportFileError).decode("utf-8", errors="replace") for path in args.summary]
    )
    from perfgate.report.scrub import scrub_rendered
    from perfgate.report.scrub_foreign import scrub_foreign_text

    # a summary is the measuring job's Markdown: free text throughout; a rendered results file is this code's
    scrub = scrub_rendered if args.results else scrub_foreign_text
    summaries = [scrub(s, os.environ) for s in summaries]
    result = upsert_comment(GitHubApi(args.api_url, args.repo, token), args.pr, summaries, args.marker, args.author)
    extra = f", {result.deleted_duplicates} duplicate(s) removed" if result.deleted_duplicates else ""
    print(f"perfgate: {result.action} comment {result.comment_id} on {args.repo}#{args.pr}{extra}")
    return 0


def _rendered(paths: list[Path], commit: str) -> list[str]:
    """One section per results file, rendered by this (trusted) code; a missing file is a failed section."""
    from perfgate.ci.results import read_checked_results
    from perfgate.report.comment import missing_results, render_comment, results_from_doc
    from perfgate.report.scrub_foreign import scrub_results_doc

    def one(p: Path) -> str:
        # the same checks as `ci verdict` (a comment never shows what it would refuse), one read of the file
        return render_comment(results_from_doc(p, scrub_results_doc(read_checked_results(p).doc, os.environ)), commit)

    return [one(p) if p.is_file() else missing_results(str(p)) for p in paths]


def verdict(args: argparse.Namespace) -> int:
    """0 when every results file says the gate passed; 1 when one failed; 2 when one is missing, unreadable,
    from before --not-before, or not strict under --require-strict (perfgate/ci/results.py checks each)."""
    from perfgate.ci.results import read_checked_results

    not_before = _time(args.not_before) if args.not_before else None
    worst = 0
    for path in args.results:
        if not path.is_file():
            print(f"perfgate: {path}: no results file: the gate never decided", file=sys.stderr)
            worst = 2
            continue
        results = read_checked_results(path)
        problem = _not_this_run(results.started_at, results.strict, not_before, args.require_strict)
        if problem:
            print(f"perfgate: {path}: {problem}", file=sys.stderr)
            worst = 2
            continue
        print(f"perfgate: {path}: gate {'FAILED' if results.failed else 'passed'}")
        worst = max(worst, 1 if results.failed else 0)
    return worst


def _time(text: str) -> datetime:
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        when = None
    if when is None or when.tzinfo is None:
        raise PerfgateError(f"perfgate: --not-before must be an ISO 8601 time with a UTC offset, got {text[:40]!r}")
    return when


def _not_this_run(started_at: datetime | None, strict: bool, not_before: datetime | None, require_strict: bool) -> str:
    """Why a well-formed results file is still not this run's gate ('' when nothing says so)."""
    if not_before is not None:
        if started_at is None:
            return "the results file says nothing of its run (no run.started_at): not this run's gate"
        if started_at < not_before.replace(microsecond=0):
            return (
                f"the results file is from a run started {started_at.isoformat()}, before this one "
                f"({not_before.isoformat()}): a stale file, not this run's gate"
            )
    if require_strict and not strict:
        return "the gate ran without strict mode (gate.strict is false) where strict mode was required"
    return ""


def init(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from perfgate.ci.selection import repository_root, workflow_selection
    from perfgate.ci.workflow import choices, detect_default_branch, parse_action_ref, write_workflows
    from perfgate.errors import require

    require("yaml", "ci", "perfgate ci init")  # what is missing, and the bad reference, before asking git
    parse_action_ref(args.action_ref)
    where = next(p for p in (args.output.absolute().parent, *args.output.absolute().parents) if p.is_dir())
    branch = args.default_branch or detect_default_branch(where)  # the repository the workflows go into
    chosen = choices(
        args.action_ref,
        args.runner_label,
        args.pytest_args,
        branch,
        args.runner,
        args.python_version,
        args.db_secret,
    )
    repo = repository_root(where)  # where the workflows run pytest
    selection = workflow_selection(repo, args.tests, chosen.pytest_args)  # never a workflow that measures nothing
    chosen = replace(chosen, pytest_args=selection.pytest_args)
    written = write_workflows(args.output, chosen, args.force)
    kind = "GitHub-hosted" if chosen.hosted else "self-hosted"
    found = f", {selection.found}" if selection.found else ""
    print(
        f"perfgate: wrote {', '.join(map(str, written))} ({kind} runner {chosen.runner_label}, default branch "
        f"{branch}, pytest {chosen.pytest_args}{found}); review them, make the `perfgate` commit status required, "
        f"and read docs/github-actions.md for the repository settings"
        f"{'' if chosen.hosted else ' that keep fork code off the GPU runner'}"
    )
    return 0


def confine(args: argparse.Namespace) -> int:
    """Run the command away from the runner's command files (perfgate/ci/confine.py); its exit status, or 3
    when it changed them (put back, each named)."""
    from perfgate.ci.confine import run_confined

    if not args.pytest_args:
        raise PerfgateError("perfgate: ci confine needs a command after --")
    done = run_confined(args.pytest_args, os.environ)
    for line in done.refused:
        print(
            f"::error title=perfgate::pull-request code changed the runner's command file {line}: put back, "
            "not applied to any later step",
            flush=True,
        )
    if done.killed:
        print(f"perfgate: {done.killed} process(es) the tests left running were killed", flush=True)
    if not done.subreaper:
        print("perfgate: not Linux: a process that left the tests' process group is not found and killed", flush=True)
    return done.returncode


def report(args: argparse.Namespace) -> int:
    """The trusted job's step (perfgate/ci/report.py): approval labels off, the results checked, the commit
    status set, the comment edited. Exit status: ci verdict's."""
    from perfgate.ci.github import GitHubApi
    from perfgate.ci.report import (
        check_head,
        check_sha,
        label_names,
        post_comment,
        pr_for_head,
        read_verdicts,
        remove_labels,
        set_status,
    )

    token = os.environ.get(args.token_env, "")
    if not token:
        raise PerfgateError(f"perfgate: ci report needs a token in ${args.token_env} (statuses, pull-requests: write)")
    sha, labels = check_sha(args.sha), label_names(args.remove_labels)
    head = check_head(args.pr_head) if args.pr_head else ""
    api = GitHubApi(args.api_url, args.repo, token)
    pr = args.pr or (pr_for_head(api, head, sha) if head else None)
    if pr and labels:  # first, whatever happens next: an approval is for one run
        _warn_on_failure(lambda: print(f"perfgate: labels removed: {remove_labels(api, pr, labels) or 'none'}"))
    verdicts = read_verdicts(args.results, sha, args.require_strict, os.environ)
    for line in verdicts.lines:
        print(f"perfgate: {line}", flush=True)
    state = set_status(api, sha, verdicts, args.context, args.target_url)
    print(f"perfgate: status {args.context}={state} on {sha}")
    if pr and args.comment:
        _warn_on_failure(lambda: print(f"perfgate: {post_comment(api, pr, verdicts, args.marker, args.author)}"))
    elif args.comment:
        print(f"perfgate: no open pull request at {sha}: no comment")
    return verdicts.code


def _warn_on_failure(step: Callable[[], None]) -> None:
    """A label or comment the token may not touch (a fork's read-only token) warns; the status decides."""
    try:
        step()
    except PerfgateError as err:
        print(f"::warning title=perfgate::{err}", flush=True)


def unlabel(args: argparse.Namespace) -> int:
    """Approval labels off a pull request (on every push: an approval is for the commit it was given to)."""
    from perfgate.ci.github import GitHubApi
    from perfgate.ci.report import label_names, remove_labels

    token = os.environ.get(args.token_env, "")
    if not token:
        raise PerfgateError(f"perfgate: ci unlabel needs a token in ${args.token_env} (pull-requests: write)")
    removed = remove_labels(GitHubApi(args.api_url, args.repo, token), args.pr, label_names(args.labels))
    print(f"perfgate: labels removed from {args.repo}#{args.pr}: {', '.join(removed) or 'none'}")
    return 0
