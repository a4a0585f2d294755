"""The base tree: REF resolved to its commit and checked out in a cached git worktree outside the checkout.

One worktree per commit, under `worktree_dir/<repository>/<commit>`, reused while REF names the same
commit (a new commit on the base branch makes a new one; the oldest beyond KEEP are removed). Build caches
live beside it, per worktree: Triton's kernel cache and torch's extension builds (a CUDA extension is
compiled once per base commit, not once per job). A worktree is created under a temporary name and moved
into place only once git has checked it out completely, then a marker beside it names its commit: an
interrupted checkout is never mistaken for a finished one, and the next run removes what it left.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from perfgate.ab.protocol import AbError
from perfgate.atomic import LockTimeout, atomic_write_text, exclusive_lock
from perfgate.errors import ToolFailed, ToolMissing, one_line
from perfgate.measure.tools import run_tool

GIT_TIMEOUT_S = 600.0  # a checkout of a large repository
READY = ".ready"  # beside the worktree: "<commit>.ready" holds the commit once the checkout is complete
KEEP = 8  # cached worktrees per repository
CACHE_ENV = ("TRITON_CACHE_DIR", "TORCH_EXTENSIONS_DIR", "PERFGATE_KERNEL_CACHE")


@dataclass(frozen=True)
class Tree:
    """A checkout a worker runs in."""

    path: Path
    commit: str  # "" for a working tree with changes not in any commit
    label: str  # how messages name it: "main @ 1a2b3c4d5e6f"
    reused: bool = False
    cache_dir: Path | None = None  # its build caches (None: the environment's own)
    seconds: float = 0.0  # what creating (or finding) it cost

    def env(self) -> dict[str, str]:
        """The build-cache variables for a worker in this tree."""
        if self.cache_dir is None:
            return {}
        return {
            "TRITON_CACHE_DIR": str(self.cache_dir / "triton"),
            "TORCH_EXTENSIONS_DIR": str(self.cache_dir / "torch_extensions"),
            "PERFGATE_KERNEL_CACHE": str(self.cache_dir / "kernels"),
        }


def git(repo: Path, *args: str, timeout_s: float = 60.0) -> str:
    """git's stdout; AbError with git's own words when it fails."""
    argv = ["git", "-C", str(repo), *args]
    try:
        return run_tool(argv, timeout_s).stdout.strip()
    except ToolMissing as err:
        raise AbError(f"perfgate: A/B mode needs git: {err}") from err
    except ToolFailed as err:
        raise AbError(f"perfgate: git {' '.join(args[:2])} failed in {repo}: {one_line(err.stderr_tail, 200)}") from err


def repository_root(path: Path) -> Path:
    """The top of the git work tree holding `path`; AbError outside one."""
    try:
        return Path(run_tool(["git", "-C", str(path), "rev-parse", "--show-toplevel"], 60.0).stdout.strip())
    except ToolMissing as err:
        raise AbError(f"perfgate: A/B mode needs git: {err}") from err
    except ToolFailed as err:
        raise AbError(f"perfgate: A/B mode needs a git checkout; {path} is not in one") from err


def resolve_commit(repo: Path, ref: str) -> str:
    """The commit REF names; AbError naming REF when git does not know it."""
    if not ref.strip() or ref.startswith("-"):
        raise AbError(f"perfgate: A/B: {ref!r} is not a git ref")
    proc = run_tool(
        ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], 60.0, check=False
    )
    if proc.returncode != 0 or not proc.stdout.strip():
        raise AbError(f"perfgate: A/B: unknown git ref {ref!r} in {repo} (fetch it first: git fetch origin {ref})")
    return proc.stdout.strip()


def is_dirty(tree: Path) -> bool:
    """Changes to tracked files (untracked ones are not part of the code that was committed)."""
    return bool(git(tree, "status", "--porcelain", "--untracked-files=no"))


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "perfgate" / "worktrees"


def checkout(repo: Path, ref: str, cache_dir: Path | None = None, commit: str | None = None) -> Tree:
    """REF's commit in a cached worktree (created on first use, then reused)."""
    started = time.monotonic()
    commit = commit or resolve_commit(repo, ref)
    home = (cache_dir or default_cache_dir()) / _repository_key(repo)
    final = home / commit
    label = f"{ref} @ {commit[:12]}" if ref != commit else commit[:12]
    try:
        with exclusive_lock(final, timeout_s=GIT_TIMEOUT_S):
            reused = _usable(final, commit)
            if not reused:
                _remove(repo, final)
                _create(repo, commit, final)
            atomic_write_text(_ready(final), commit + "\n")  # its mtime is the last use, for pruning
            _prune(repo, home, keep=final)
    except LockTimeout as err:
        raise AbError(f"perfgate: A/B: the worktree for {label} is busy: {err}") from err
    except OSError as err:
        raise AbError(f"perfgate: A/B: cannot prepare the worktree {final}: {err.strerror or err}") from err
    return Tree(final, commit, label, reused, home / f"{commit}.cache", time.monotonic() - started)


def _repository_key(repo: Path) -> str:
    common = Path(git(repo, "rev-parse", "--git-common-dir"))
    common = (repo / common).resolve() if not common.is_absolute() else common.resolve()
    return f"{repo.resolve().name}-{hashlib.sha256(str(common).encode()).hexdigest()[:12]}"


def _ready(tree: Path) -> Path:
    return tree.with_name(tree.name + READY)


def _usable(path: Path, commit: str) -> bool:
    """A finished checkout of this commit that nobody edited."""
    marker = _ready(path)
    if not path.is_dir() or not marker.is_file() or marker.read_text(encoding="utf-8").strip() != commit:
        return False
    try:
        return git(path, "rev-parse", "HEAD") == commit and not is_dirty(path)
    except AbError:
        return False


def _create(repo: Path, commit: str, final: Path) -> None:
    final.parent.mkdir(parents=True, exist_ok=True)
    partial = final.with_name(f"{final.name}.partial-{os.getpid()}")
    _remove(repo, partial)
    try:
        git(repo, "worktree", "add", "--detach", "--force", str(partial), commit, timeout_s=GIT_TIMEOUT_S)
        git(repo, "worktree", "move", str(partial), str(final), timeout_s=GIT_TIMEOUT_S)
    except BaseException:
        _remove(repo, partial)
        _remove(repo, final)
        raise


def _remove(repo: Path, path: Path) -> None:
    """A worktree (finished or not) gone from disk and from git's list, and its marker with it."""
    _ready(path).unlink(missing_ok=True)
    if path.exists():
        run_tool(
            ["git", "-C", str(repo), "worktree", "remove", "--force", "--force", str(path)], GIT_TIMEOUT_S, check=False
        )
        shutil.rmtree(path, ignore_errors=True)
    run_tool(["git", "-C", str(repo), "worktree", "prune"], 60.0, check=False)


def _prune(repo: Path, home: Path, keep: Path) -> None:
    """Leftovers of interrupted checkouts, and the least recently used worktrees beyond KEEP."""
    for partial in home.glob("*.partial-*"):
        pid = partial.name.rsplit("-", 1)[-1]
        if not (pid.isdigit() and _alive(int(pid))):
            _remove(repo, partial)
    trees = sorted(
        (m.with_name(m.name.removesuffix(READY)) for m in home.glob(f"*{READY}")),
        key=lambda p: _ready(p).stat().st_mtime,
        reverse=True,
    )
    for old in [p for p in trees if p != keep][KEEP - 1 :]:
        _remove(repo, old)
        shutil.rmtree(old.with_name(f"{old.name}.cache"), ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
