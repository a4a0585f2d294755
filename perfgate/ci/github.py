"""The one sticky perfgate comment on a pull request, through GitHub's REST API (urllib, no client library).

The comment starts with a hidden marker line (`<!-- perfgate:<name> -->`); each run finds it and edits it in
place, so a PR has one perfgate comment per marker however many times the gate ran. Extra copies (left by a
race between two jobs) are deleted. Only comments the token's own identity wrote, whose *first line* is the
marker, are ever edited or deleted: a token with `pull-requests: write` may edit anyone's comment, and an
attacker's or a maintainer's comment that carries the marker (or a summary that quotes another job's
marker in a case id) must stay as it is. The identity is the token's login (GET /user), or, for GitHub
Actions' installation token (which cannot read /user), `github-actions[bot]`; `--author` names another
app's bot. The token is only ever sent to the API host it was given.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from perfgate.errors import PerfgateError
from perfgate.report.markdown_fit import fit_each, utf16_units

MAX_BODY = 65_000  # GitHub refuses comments over 65,536 characters (counted here in UTF-16 units, the stricter)
SEPARATOR = "\n\n---\n\n"  # between the summaries of several GPUs in one comment
ELSEWHERE = "the full summary is in the job summary and the results artifact"
TIMEOUT_S = 30.0

ACTIONS_BOT = "github-actions[bot]"  # who GitHub Actions' GITHUB_TOKEN comments as
_MARKER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")

Opener = Callable[[urllib.request.Request, float], Any]


class GitHubHttpError(PerfgateError):
    """An HTTP error status from the API, kept so a caller can tell 403 from the rest."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def marker_line(name: str) -> str:
    if not _MARKER_NAME.fullmatch(name):
        raise PerfgateError(
            f"perfgate: a comment marker is letters, digits, '.', '_' and '-' (at most 100), got {name[:40]!r}"
        )
    return f"<!-- perfgate:{name} -->"


@dataclass(frozen=True)
class CommentResult:
    action: str  # "created" | "updated"
    comment_id: int
    deleted_duplicates: int = 0


class GitHubApi:
    def __init__(self, api_url: str, repo: str, token: str, opener: Opener | None = None) -> None:
        if repo.count("/") != 1:
            raise PerfgateError(f"perfgate: --repo must be owner/name, got {repo!r}")
        if not api_url.startswith(("https://", "http://")):
            # urllib would also open file: and ftp: URLs; the token goes to an HTTP(S) API host only
            raise PerfgateError(f"perfgate: --api-url must be an http(s) URL, got {api_url!r}")
        self.api_url = api_url.rstrip("/")
        self.repo = repo
        self._token = token
        self._open = opener or (lambda req, timeout: urllib.request.urlopen(req, timeout=timeout))  # noqa: S310

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(  # noqa: S310 (api_url is http(s), checked in __init__)
            f"{self.api_url}{path}",
            data=data,
            method=method,
            headers={
                "Accept": "application/vnd.github+json",
                "Authorization": f"Bearer {self._token}",
                "X-GitHub-Api-Version": "2022-11-28",
                "User-Agent": "perfgate",
                **({"Content-Type": "application/json"} if data is not None else {}),
            },
        )
        try:
            with self._open(req, TIMEOUT_S) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as err:
            raise GitHubHttpError(
                f"perfgate: GitHub API {method} {path}: HTTP {err.code} {err.reason}", err.code
            ) from err
        except (urllib.error.URLError, TimeoutError, OSError) as err:
            raise PerfgateError(f"perfgate: GitHub API {method} {path}: {err}") from err
        return json.loads(raw) if raw else None

    def login(self) -> str:
        """Who this token comments as: its user's login, or github-actions[bot] for GitHub Actions' token."""
        try:
            user = self.request("GET", "/user")
        except GitHubHttpError as err:
            if err.status == 403:  # "Resource not accessible by integration": an installation token
                return ACTIONS_BOT
            raise
        login = user.get("login") if isinstance(user, dict) else None
        if not isinstance(login, str) or not login:
            raise PerfgateError("perfgate: GitHub API GET /user returned no login")
        return login

    def comments(self, pr: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        page = 1
        while True:
            batch = self.request("GET", f"/repos/{self.repo}/issues/{pr}/comments?per_page=100&page={page}")
            if not isinstance(batch, list):
                raise PerfgateError("perfgate: GitHub API returned something other than a list of comments")
            out += batch
            if len(batch) < 100:
                return out
            page += 1


def comment_body(summary: str | Sequence[str], name: str) -> str:
    """The marker, then the summary, or several (one per GPU) separated by rules: each summary gets its
    share of GitHub's limit and is cut at its section boundaries (markdown_fit.py), so every GPU keeps what
    failed, which its summary lists first."""
    summaries = [summary] if isinstance(summary, str) else list(summary)
    marker = marker_line(name)
    room = MAX_BODY - utf16_units(marker + "\n") - 1
    fitted = fit_each([s.strip() + "\n" for s in summaries], room, utf16_units, SEPARATOR, ELSEWHERE)
    return f"{marker}\n" + SEPARATOR.join(f.strip() for f in fitted) + "\n"


def is_ours(comment: Any, marker: str, author: str) -> bool:
    """Written by `author` and starting with the marker line (a marker quoted further down is not one)."""
    if not isinstance(comment, dict) or not isinstance(comment.get("id"), int):
        return False
    user = comment.get("user")
    body = comment.get("body")
    return (
        isinstance(user, dict)
        and user.get("login") == author
        and isinstance(body, str)
        and body.split("\n", 1)[0].rstrip("\r") == marker
    )


def upsert_comment(
    api: GitHubApi, pr: int, summary: str | Sequence[str], name: str = "perfgate", author: str | None = None
) -> CommentResult:
    """Edit the PR's perfgate comment in place, or create it; never a second one. Only the comments `author`
    (default: the token's own identity) wrote are ever edited or deleted."""
    marker = marker_line(name)
    body = comment_body(summary, name)
    me = author or api.login()
    mine = sorted((c for c in api.comments(pr) if is_ours(c, marker, me)), key=lambda c: int(c["id"]))
    if not mine:
        created = api.request("POST", f"/repos/{api.repo}/issues/{pr}/comments", {"body": body})
        return CommentResult("created", int(created["id"]))
    keep, extra = mine[0], mine[1:]
    api.request("PATCH", f"/repos/{api.repo}/issues/comments/{keep['id']}", {"body": body})
    for c in extra:
        api.request("DELETE", f"/repos/{api.repo}/issues/comments/{c['id']}")
    return CommentResult("updated", int(keep["id"]), len(extra))
