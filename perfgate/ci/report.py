"""`perfgate ci report`: the trusted half of a gate on GitHub. It runs in a job that never ran the pull request's
code and is the only one that holds a write token: it reads the results artifact the measuring job left,
checks it (`ci verdict`'s reader: perfgate/ci/results.py, the verdicts recomputed by ci/recompute.py), sets
the commit status branch protection requires on the gated commit, and edits the one PR comment.

The measuring job ran the pull request's code, so its own exit status, its job summary and its files are the
pull request's word; the status this sets is the verdict. A missing, unreadable or self-contradicting results
file is an `error` status, never a pass.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from perfgate.ci.github import GitHubApi, GitHubHttpError, upsert_comment
from perfgate.errors import PerfgateError

DESCRIPTION_CHARS = 140  # GitHub cuts a status description here
_SHA = re.compile(r"[0-9a-f]{40}")
_LABEL = re.compile(r"[^\x00-\x1f,]{1,50}")
_HEAD = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38}):[^\s\x00-\x1f~^:?*\[\\]{1,255}")
STATES = {0: "success", 1: "failure"}  # anything else: "error" (no verdict to trust)


@dataclass(frozen=True)
class Verdicts:
    code: int  # ci verdict's: 0 passed, 1 failed, 2 missing or unreadable, 4 contradicts itself
    lines: tuple[str, ...]  # one per results file
    sections: tuple[str, ...]  # the comment's, one per results file


def read_verdicts(paths: Sequence[Path], commit: str, require_strict: bool, environ: Mapping[str, str]) -> Verdicts:
    """Each results file checked and rendered here, by this trusted code; a bad one is a section saying so.
    What is published (the status line, the comment, the log) is scrubbed: the file is another job's word."""
    from perfgate.ci.results import read_checked_results
    from perfgate.report.comment import code, missing_results, render_comment, results_from_doc
    from perfgate.report.scrub_foreign import scrub_refusal, scrub_results_doc

    worst, lines, sections = 0, [], []
    for path in paths:
        if not path.is_file():
            worst, line = max(worst, 2), f"{path}: no results file: the gate never decided"
            lines.append(line)
            sections.append(missing_results(str(path)))
            continue
        try:
            checked = read_checked_results(path)
            if require_strict and not checked.strict:
                raise PerfgateError(f"perfgate: {path}: the gate ran without strict mode where it was required")
        except PerfgateError as err:
            worst, refusal = max(worst, err.exit_status), scrub_refusal(str(err), environ)  # it quotes the file
            lines.append(refusal.removeprefix("perfgate: "))
            sections.append(f"## ❌ perfgate: results refused\n\n{code(refusal, limit=400)}\n")
            continue
        worst = max(worst, 1 if checked.failed else 0)
        lines.append(f"{path}: gate {'FAILED' if checked.failed else 'passed'}")
        sections.append(render_comment(results_from_doc(path, scrub_results_doc(checked.doc, environ)), commit))
    return Verdicts(worst, tuple(lines), tuple(sections))


def check_sha(sha: str) -> str:
    if not _SHA.fullmatch(sha):
        raise PerfgateError(f"perfgate: --sha must be a full commit sha (40 hex digits), got {sha[:50]!r}")
    return sha


def set_status(api: GitHubApi, sha: str, verdicts: Verdicts, context: str, target_url: str = "") -> str:
    """The commit status on the gated commit; its state."""
    state = STATES.get(verdicts.code, "error")
    # each line without the runner's directories in front of the file's name
    summary = "; ".join(re.sub(r"^\S*/", "", line) for line in verdicts.lines) or "no results files named"
    body: dict[str, Any] = {"state": state, "context": context, "description": summary[:DESCRIPTION_CHARS]}
    if target_url.startswith("https://"):
        body["target_url"] = target_url
    api.request("POST", f"/repos/{api.repo}/statuses/{check_sha(sha)}", body)
    return state


def label_names(text: str) -> list[str]:
    """Comma-separated label names, each checked."""
    labels = [x.strip() for x in text.split(",") if x.strip()]
    for label in labels:
        if not _LABEL.fullmatch(label):
            raise PerfgateError(f"perfgate: {label[:60]!r} is not a label name")
    return labels


def check_head(head: str) -> str:
    if not _HEAD.fullmatch(head):
        raise PerfgateError(f"perfgate: --pr-head must be OWNER:BRANCH, got {head[:80]!r}")
    return head


def remove_labels(api: GitHubApi, pr: int, labels: Sequence[str]) -> list[str]:
    """Take approval labels off the pull request (an approval is for one run, of one commit); the ones removed."""
    removed = []
    for label in label_names(",".join(labels)):
        try:
            api.request("DELETE", f"/repos/{api.repo}/issues/{pr}/labels/{quote(label, safe='')}")
        except GitHubHttpError as err:
            if err.status != 404:  # not there: nothing to take back
                raise
            continue
        removed.append(label)
    return removed


def pr_for_head(api: GitHubApi, head: str, sha: str) -> int | None:
    """The open pull request whose head is `owner:branch` and at `sha` (a fork's run names no pull request)."""
    check_head(head)
    pulls = api.request("GET", f"/repos/{api.repo}/pulls?state=open&per_page=100&head={quote(head, safe=':')}")
    for pull in pulls if isinstance(pulls, list) else ():
        number, at = pull.get("number"), (pull.get("head") or {}).get("sha")
        if isinstance(number, int) and at == sha:
            return number
    return None


def post_comment(api: GitHubApi, pr: int, verdicts: Verdicts, marker: str, author: str | None) -> str:
    result = upsert_comment(api, pr, list(verdicts.sections), marker, author)
    return f"{result.action} comment {result.comment_id} on {api.repo}#{pr}"
