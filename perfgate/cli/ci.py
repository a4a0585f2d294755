"""`perfgate ci annotate|comment|init`: GitHub Actions helpers (the composite action calls them)."""

from __future__ import annotations

import argparse
import os

from perfgate.errors import PerfgateError, ReportFileError
from perfgate.inputs import load_json_file, read_bytes


def annotate(args: argparse.Namespace) -> int:
    from perfgate.report.annotations import check_results, workflow_commands

    doc = check_results(args.results, load_json_file(args.results, ReportFileError))
    for line in workflow_commands(doc):
        print(line)
    return 0


def comment(args: argparse.Namespace) -> int:
    from perfgate.ci.github import GitHubApi, upsert_comment

    token = os.environ.get(args.token_env, "")
    if not token:
        raise PerfgateError(f"perfgate: ci comment needs a token in ${args.token_env} (pull-requests: write)")
    summary = "\n\n---\n\n".join(read_bytes(path, ReportFileError).decode("utf-8", errors="replace").strip()
                                  for path in args.summary) + "\n"
    result = upsert_comment(GitHubApi(args.api_url, args.repo, token), args.pr, summary, args.marker)
    extra = f", {result.deleted_duplicates} duplicate(s) removed" if result.deleted_duplicates else ""
    print(f"perfgate: {result.action} comment {result.comment_id} on {args.repo}#{args.pr}{extra}")
    return 0


def init(args: argparse.Namespace) -> int:
    from perfgate.ci.workflow import write_workflow

    write_workflow(args.output, args.action_ref, args.runner_label, args.force, args.pytest_args)
    print(f"perfgate: wrote {args.output}; review it, then read docs/github-actions.md for the repository "
          f"settings that keep fork code off the GPU runner")
    return 0
