"""The one sticky perfgate comment on a pull request, through GitHub's REST API (urllib, no client library).

The comment carries a hidden marker (`<!-- perfgate:<name> -->`); each run finds it and edits it in place,
so a PR has one perfgate comment per marker however many times the gate ran. Extra copies (left by a
race between two jobs) are deleted. The token needs `pull-requests: write` and is only ever sent to the
API host it was given.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from perfgate.errors import PerfgateError

MAX_BODY = 65_000  # GitHub refuses comments over 65,536 characters
TIMEOUT_S = 30.0

Opener = Callable[[urllib.request.Request, float], Any]


def marker_line(name: str) -> str:
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
        req = urllib.request.Request(f"{self.api_url}{path}", data=data, method=method, headers={  # noqa: S310
            "Accept": "application/vnd.github+json", "Authorization": f"Bearer {self._token}",
            "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "perfgate",
            **({"Content-Type": "application/json"} if data is not None else {})})
        try:
            with self._open(req, TIMEOUT_S) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as err:
            raise PerfgateError(f"perfgate: GitHub API {method} {path}: HTTP {err.code} {err.reason}") from err
        except (urllib.error.URLError, TimeoutError, OSError) as err:
            raise PerfgateError(f"perfgate: GitHub API {method} {path}: {err}") from err
        return json.loads(raw) if raw else None

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


def comment_body(summary: str, name: str) -> str:
    body = f"{marker_line(name)}\n{summary}"
    if len(body) > MAX_BODY:
        body = (body[: MAX_BODY - 200]
                + "\n\n…(truncated: the full summary is in the job summary and the results artifact)\n")
    return body


def upsert_comment(api: GitHubApi, pr: int, summary: str, name: str = "perfgate") -> CommentResult:
    """Edit the PR's perfgate comment in place, or create it; never a second one."""
    marker = marker_line(name)
    body = comment_body(summary, name)
    mine = sorted((c for c in api.comments(pr) if marker in str(c.get("body", ""))), key=lambda c: int(c["id"]))
    if not mine:
        created = api.request("POST", f"/repos/{api.repo}/issues/{pr}/comments", {"body": body})
        return CommentResult("created", int(created["id"]))
    keep, extra = mine[0], mine[1:]
    api.request("PATCH", f"/repos/{api.repo}/issues/comments/{keep['id']}", {"body": body})
    for c in extra:
        api.request("DELETE", f"/repos/{api.repo}/issues/comments/{c['id']}")
    return CommentResult("updated", int(keep["id"]), len(extra))
