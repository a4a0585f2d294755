"""`perfgate ci annotate|comment|init`: GitHub Actions helpers (the composite action calls them)."""

from __future__ import annotations

import argparse
import os
import re
import sys
from datetime import datetime
from pathlib import Path

from perfgate.errors import PerfgateError, ReportFileError
from perfgate.inputs import read_bytes


def annotate(args: argparse.Namespace) -> int:
    from perfgate.ci.results import read_checked_results
    from perfgate.report.annotations import check_results, workflow_commands
    from perfgate.report.scrub import scrub_rendered

    checked = read_checked_results(args.results)
    for line in workflow_commands(check_results(args.results, checked.doc)):
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

    summaries = [scrub_rendered(s, os.environ) for s in summaries]
    result = upsert_comment(GitHubApi(args.api_url, args.repo, token), args.pr, summaries, args.marker, args.author)
    extra = f", {result.deleted_duplicates} duplicate(s) removed" if result.deleted_duplicates else ""
    print(f"perfgate: {result.action} comment {result.comment_id} on {args.repo}#{args.pr}{extra}")
    return 0


def _rendered(paths: list[Path], commit: str) -> list[str]:
    """One section per results file, rendered by this (trusted) code; a missing file is a failed section."""
    from perfgate.ci.results import read_checked_results
    from perfgate.report.comment import missing_results, render_comment, results_from_doc

    def one(p: Path) -> str:
        # the same checks as `ci verdict` (a comment never shows what it would refuse), one read of the file
        return render_comment(results_from_doc(p, read_checked_results(p).doc), commit)

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
    from perfgate.ci.workflow import write_workflow

    write_workflow(args.output, args.action_ref, args.runner_label, args.force, args.pytest_args)
    print(
        f"perfgate: wrote {args.output}; review it, then read docs/github-actions.md for the repository "
        f"settings that keep fork code off the GPU runner"
    )
    return 0
