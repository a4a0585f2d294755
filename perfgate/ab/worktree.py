"""The base tree: REF resolved to its commit and checked out in a cached git worktree outside the checkout.

One worktree per commit, under `worktree_dir/<repository>/<commit>`, reused while REF names the same
commit (a new commit on the base branch makes a new one; the oldest beyond KEEP are removed). Build caches
live beside it, per worktree: Triton's kernel cache and torch's extension builds (a CUDA extension is
compiled once per base commit, not once per job). A worktree is created under a temporary name and moved
into place only once git has checked it out completely, then a marker beside it names its commit and the
digest of its contents: an interrupted checkout is never mistaken for a finished one, and the next run
removes what it left.

The base tree is read-only to a run. Its contents (`contents`: HEAD, and the bytes of every tracked file
and of every untracked file git does not ignore) are taken when it is checked out or reused and again after
the comparison (`changes`): a run whose base changed fails strict mode and the worktree is discarded. A
cached worktree is reused only as a fresh checkout: its ignored files (byte-code caches, .pytest_cache,
build directories: what a base session legitimately leaves) are removed first, and then its contents must
be the ones recorded when it was made, so an edited file, an untracked file left by an earlier run (a
conftest.py, a sitecustomize.py) or a rewritten byte-code cache never runs in a later base session.
Ignored files created *during* a run are not covered (a base session makes them legitimately), and this
is detection, not a sandbox: code that can write the base worktree can write the environment too.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
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
    contents: Contents | None = None  # what it held when the run took it (a cached worktree: checked)
    branch: str = ""  # the branch checked out ("": a commit, or a detached HEAD)

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


@dataclass(frozen=True)
class Contents:
    """What git sees of a worktree: its HEAD, and a digest of every tracked file and every untracked file
    it does not ignore (mode and bytes; a symbolic link's target; a tracked file deleted as such)."""

    head: str
    files: Mapping[str, str] = field(default_factory=dict)  # path -> sha256

    @property
    def digest(self) -> str:
        h = hashlib.sha256(self.head.encode())
        for path in sorted(self.files):
            h.update(f"\0{path}\0{self.files[path]}".encode(errors="surrogateescape"))
        return h.hexdigest()


def contents(tree: Path) -> Contents:
    """HEAD and the digest of each file git lists (tracked, and untracked but not ignored)."""
    head = git(tree, "rev-parse", "HEAD")
    listed = git(tree, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--deduplicate")
    return Contents(head, {p: _file_digest(tree / p) for p in listed.split("\0") if p})


def _file_digest(path: Path) -> str:
    try:
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode):
            return "link:" + os.readlink(path)
        if not stat.S_ISREG(st.st_mode):
            return f"mode:{stat.S_IFMT(st.st_mode):o}"  # a directory (a submodule), a fifo...
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        return f"{st.st_mode & 0o111:o}:{h.hexdigest()}"
    except FileNotFoundError:
        return "deleted"
    except OSError as err:
        return f"unreadable:{err.errno}"


def changes(before: Contents, after: Contents, limit: int = 5) -> list[str]:
    """What differs between two takes of a worktree's contents: the paths (and HEAD), at most `limit`."""
    out = [f"HEAD {before.head[:12]} -> {after.head[:12]}"] if before.head != after.head else []
    for path in sorted(set(before.files) | set(after.files)):
        was, now = before.files.get(path), after.files.get(path)
        if was != now:
            out.append(f"{path} ({'added' if was is None else 'removed' if now is None else 'changed'})")
    return out[:limit] + ([f"and {len(out) - limit} more"] if len(out) > limit else [])


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
            found = _usable(final, commit)
            reused = found is not None
            if found is None:
                _remove(repo, final)
                shutil.rmtree(_cache(final), ignore_errors=True)  # its build caches and A/A came from that tree
                _create(repo, commit, final)
                found = contents(final)
            atomic_write_text(_ready(final), f"{commit}\n{found.digest}\n")  # mtime: the last use, for pruning
            _prune(repo, home, keep=final)
    except LockTimeout as err:
        raise AbError(f"perfgate: A/B: the worktree for {label} is busy: {err}") from err
    except OSError as err:
        raise AbError(f"perfgate: A/B: cannot prepare the worktree {final}: {err.strerror or err}") from err
    return Tree(final, commit, label, reused, _cache(final), time.monotonic() - started, found)


def _repository_key(repo: Path) -> str:
    common = Path(git(repo, "rev-parse", "--git-common-dir"))
    common = (repo / common).resolve() if not common.is_absolute() else common.resolve()
    return f"{repo.resolve().name}-{hashlib.sha256(str(common).encode()).hexdigest()[:12]}"


def _ready(tree: Path) -> Path:
    return tree.with_name(tree.name + READY)


def _usable(path: Path, commit: str) -> Contents | None:
    """The contents of a finished checkout of this commit, once its ignored files (what base sessions leave:
    byte-code caches, .pytest_cache, build directories) are removed, when they are the ones recorded when it
    was made; None when anything differs (an edited or an added file) or it cannot be read."""
    marker = _ready(path)
    if not path.is_dir() or not marker.is_file():
        return None
    recorded = marker.read_text(encoding="utf-8").split()
    if len(recorded) != 2 or recorded[0] != commit:
        return None  # another commit, an interrupted checkout, or a marker from before contents were recorded
    try:
        git(path, "clean", "-ffdqX")
        found = contents(path)
    except AbError:
        return None
    return found if found.head == commit and found.digest == recorded[1] else None


def verify(tree: Tree) -> list[str]:
    """What changed in a worktree since the run took it (`changes`); [] when nothing did."""
    if tree.contents is None:
        return []
    try:
        return changes(tree.contents, contents(tree.path))
    except AbError as err:
        return [f"its contents cannot be read ({err})"]


def discard(repo: Path, tree: Tree) -> None:
    """A worktree that changed during a run, gone with its caches: the next run checks it out afresh."""
    try:
        with exclusive_lock(tree.path, timeout_s=GIT_TIMEOUT_S):
            _remove(repo, tree.path)
            shutil.rmtree(_cache(tree.path), ignore_errors=True)
    except (LockTimeout, OSError):
        _ready(tree.path).unlink(missing_ok=True)  # at least never reused


def _cache(tree: Path) -> Path:
    return tree.with_name(f"{tree.name}.cache")


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
        shutil.rmtree(_cache(old), ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
