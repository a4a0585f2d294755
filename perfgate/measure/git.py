"""What git says: the commit, branch and dirty state a run was measured at, and whether the history file
would be offered for committing (the first-run hint)."""

from __future__ import annotations

import subprocess
from pathlib import Path

GIT_TIMEOUT_S = 10.0


def _git(cwd: Path, *args: str) -> str:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=GIT_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def default_branch(cwd: Path) -> tuple[str, bool]:
    """The repository's default branch and whether git said so: origin's HEAD (what a clone checks out),
    else the one local branch of `main` and `master` that exists. ("main", False) when none tells."""
    remote = _git(cwd, "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD")
    if remote.startswith("origin/") and len(remote) > len("origin/"):
        return remote.removeprefix("origin/"), True
    local = [b for b in ("main", "master") if _git(cwd, "rev-parse", "--verify", "--quiet", f"refs/heads/{b}")]
    if len(local) == 1:
        return local[0], True
    return "main", False


def git_info(cwd: Path) -> tuple[str, str, bool]:
    """(commit, branch, dirty); empty values outside a git checkout or without git."""

    def git(*args: str) -> str:
        return _git(cwd, *args)

    commit = git("rev-parse", "HEAD")
    if not commit:
        return "", "", False
    branch = git("rev-parse", "--abbrev-ref", "HEAD")
    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    return commit, branch, dirty


def is_unignored_in_git(path: Path) -> bool:
    """True when `path` lies in a git work tree that does not ignore it. Best effort: no git, not a
    repository, or a slow git all answer False (a hint is never worth failing a run)."""
    try:
        proc = subprocess.run(
            ["git", "check-ignore", "-q", "--", path.name],
            cwd=path.parent,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 1  # 0: ignored, 1: not ignored, 128: not a repository (or another error)


def history_hint(db_path: Path) -> str | None:
    """The line for the run that created the history, when git would offer to commit it."""
    if not is_unignored_in_git(db_path):
        return None
    folder = db_path.parent.name
    return (
        f"perfgate: created the history {db_path}; it is this machine's record, not source: "
        f"add `{folder}/` to .gitignore (CI keeps it outside the checkout: PERFGATE_DB)"
    )
