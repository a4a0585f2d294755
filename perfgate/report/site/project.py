"""Who the dashboard is about: the project's name (the pages' titles) and its repository's web address (the
commit links), from the `repo_url` setting, else the CI's own variables, else the git remote `origin`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

GIT_TIMEOUT_S = 10.0
_SCP_LIKE = re.compile(r"^[\w.-]+@(?P<host>[\w.-]+):(?P<path>[\w./-]+?)(?:\.git)?/?$")  # git@github.com:o/r.git
_WEB = re.compile(r"^https?://[\w.-]+(?::\d+)?(?:/[\w.~-]+)+$")
COMMIT = re.compile(r"^[0-9a-f]{7,64}$")  # only a hex commit id is linked: stored labels are not ids


@dataclass(frozen=True)
class Project:
    name: str  # "" when nothing names it
    repo_url: str  # https://host/owner/repo, or "" (no commit links)

    def title(self, what: str) -> str:
        return f"{what}: {self.name} performance (perfgate)" if self.name else f"{what}: perfgate"


def project_for(rootdir: Path, repo_url: str, env: dict[str, str] | None = None) -> Project:
    env = dict(os.environ) if env is None else env
    url = web_url(repo_url) if repo_url else _detected_url(rootdir, env)
    return Project(_name(rootdir, url), url)


def web_url(text: str) -> str:
    """The repository's https address from a remote URL or web address; "" for anything else (a local path,
    a URL with credentials or a query: nothing a link may carry)."""
    text = text.strip()
    m = _SCP_LIKE.match(text)
    if m:
        text = f"https://{m['host']}/{m['path']}"
    elif text.startswith(("ssh://", "git://")):
        text = "https://" + re.sub(r"^[a-z]+://(?:[^@/]+@)?", "", text)
    text = text.removesuffix("/").removesuffix(".git")
    return text if _WEB.match(text) else ""


def commit_url(repo_url: str, commit: str) -> str:
    return f"{repo_url}/commit/{commit}" if repo_url and COMMIT.match(commit) else ""


def _detected_url(rootdir: Path, env: dict[str, str]) -> str:
    server, repo = env.get("GITHUB_SERVER_URL", ""), env.get("GITHUB_REPOSITORY", "")
    if server and repo:
        return web_url(f"{server.rstrip('/')}/{repo}")
    try:
        done = subprocess.run(
            ["git", "-C", str(rootdir), "remote", "get-url", "origin"],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""  # no git, or a hung one: the site is built without commit links
    return web_url(done.stdout) if done.returncode == 0 else ""


def _name(rootdir: Path, url: str) -> str:
    try:
        with (rootdir / "pyproject.toml").open("rb") as f:
            project = tomllib.load(f).get("project", {})
        name = project.get("name", "") if isinstance(project, dict) else ""
        if isinstance(name, str) and name.strip():
            return name.strip()
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        pass  # no readable pyproject: named by its repository or directory
    if url:
        return url.rsplit("/", 1)[-1]
    return rootdir.resolve().name
