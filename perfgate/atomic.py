"""Files other processes may read or write at the same time: atomic replacement and an exclusive lock.

Every file perfgate writes (baselines, summaries, JSON, charts) goes through a unique temporary file in
the same directory, fsync and rename, so a reader never sees half a file and two writers never share a
temporary name. Baseline updates also hold a lock, so concurrent updates serialize instead of losing
each other's cases; holding it, a writer removes the temporaries a killed writer (`kill -9`, a power
cut) left beside the file, so they never pile up in `baselines/`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

LOCK_DIR_ENV = "PERFGATE_LOCK_DIR"
TMP_SUFFIX = ".tmp"
_MKSTEMP_PART = re.compile(r"[a-z0-9_]{8}")  # what tempfile.mkstemp puts between prefix and suffix


def make_dir(path: Path, what: str) -> None:
    """Create an output directory (and its parents); PerfgateError in one line (`perfgate: {what}: cannot
    write there: ...`) when it cannot be, naming the part of the path in the way (a file where a directory
    belongs, /proc, a read-only file system)."""
    from perfgate.errors import PerfgateError

    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        blocking = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), None)
        why = f"{blocking} is a file, not a directory" if blocking is not None else err.strerror or str(err)
        raise PerfgateError(f"perfgate: {what}: cannot write there: {why}") from err


@contextlib.contextmanager
def staged_dir(target: Path, what: str) -> Iterator[Path]:
    """A directory of outputs that appear in `target` all together or not at all: the caller writes into the
    staging directory yielded, a hidden sibling of a new `target` (renamed into place at the end: a new
    `target` never exists half-written), or a hidden directory inside an existing one (its files moved over
    their older versions at the end, each by rename, after every one was written; the other files there
    kept). On a failure the staging directory is removed; an OSError becomes one PerfgateError line naming
    `what`, and a writer's own line names `target`, not the staging directory."""
    import secrets
    import shutil

    from perfgate.errors import PerfgateError

    target = Path(target)
    make_dir(target.parent, what)
    new = not target.exists()
    # os.mkdir, not tempfile.mkdtemp: the directory renamed into place gets the umask's mode, not 0700
    stage = (target.parent if new else target) / f".{target.name}.staging.{os.getpid()}.{secrets.token_hex(4)}"
    try:
        stage.mkdir()
    except OSError as err:
        make_dir(target, what)  # names a file in the way
        raise PerfgateError(f"perfgate: {what}: cannot write there: {err.strerror or err}") from err
    try:
        yield stage
        if new:
            os.rename(stage, target)  # fails when something appeared there meanwhile: nothing is merged
        else:
            for entry in sorted(stage.iterdir()):
                os.replace(entry, target / entry.name)
            stage.rmdir()
        _fsync_dir(target.parent if new else target)
    except OSError as err:
        raise PerfgateError(f"perfgate: {what}: {err.strerror or err}; nothing written") from err
    except PerfgateError as err:
        err.args = (str(err).replace(str(stage), str(target)) + "; nothing written",)
        raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    atomic_write_stream(path, lambda fh: fh.write(data))


def atomic_write_stream(path: Path, fill: Callable[[BinaryIO], object]) -> None:
    """As atomic_write_bytes, for content written in pieces by `fill` (never one string in memory)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=_tmp_prefix(path), suffix=TMP_SUFFIX, dir=path.parent)
    try:
        if hasattr(os, "fchmod"):  # POSIX
            os.fchmod(fd, _mode_for(path))
        with os.fdopen(fd, "wb") as fh:
            fill(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def _tmp_prefix(path: Path) -> str:
    return f".{path.name}."


def stale_temporaries(path: Path) -> list[Path]:
    """Temporary files of `atomic_write_bytes(path)` in path's directory (only ever names it made)."""
    prefix = _tmp_prefix(Path(path))
    try:
        names = os.listdir(Path(path).parent)
    except OSError:
        return []
    return sorted(
        Path(path).parent / n
        for n in names
        if n.startswith(prefix)
        and n.endswith(TMP_SUFFIX)
        and _MKSTEMP_PART.fullmatch(n[len(prefix) : -len(TMP_SUFFIX)])
    )


def remove_stale_temporaries(path: Path) -> int:
    """Remove what killed writers of `path` left; call only while holding `exclusive_lock(path)`, when no
    other writer of it can be running. Returns how many were removed."""
    removed = 0
    for tmp in stale_temporaries(path):
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
            removed += 1
    return removed


def _mode_for(path: Path) -> int:
    """The file's current mode, or what a plain open() would create (mkstemp makes files 0600)."""
    try:
        return os.stat(path).st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def _fsync_dir(directory: Path) -> None:
    """Make the rename itself durable (POSIX); a no-op where directories cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def lock_path_for(path: Path) -> Path:
    """A lock file outside the repository (nothing for git to see), one per absolute target path."""
    digest = hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:24]
    base = Path(os.environ.get(LOCK_DIR_ENV) or Path(tempfile.gettempdir()) / "perfgate-locks")
    return base / f"{digest}.lock"


class LockTimeout(Exception):
    """Another process held the lock for longer than the wait allowed."""


@contextlib.contextmanager
def exclusive_lock(target: Path, timeout_s: float = 300.0, poll_s: float = 0.05) -> Iterator[None]:
    """Hold an exclusive advisory lock for `target` (same machine); LockTimeout after `timeout_s`.

    The lock file lives only while someone holds or waits for it: the holder removes it before letting go,
    so the lock directory holds one file per lock in use, not one per target ever locked (a base commit per
    A/B run, for ever). A waiter that got the lock of a file removed meanwhile sees that it no longer is the
    file at the lock's path and tries again on the new one (the usual unlink-on-release protocol)."""
    lock = lock_path_for(target)
    lock.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout_s
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            while not _try_lock(fd):
                if time.monotonic() > deadline:
                    raise LockTimeout(f"{target} is locked by another process (lock file {lock})")
                time.sleep(poll_s)
        except BaseException:
            os.close(fd)
            raise
        if _still_at(fd, lock):
            break
        _unlock(fd)  # the previous holder removed this file after we opened it: it guards nothing now
        os.close(fd)
    try:
        yield
    finally:
        if sys.platform != "win32":  # Windows cannot remove an open file; its lock files stay
            with contextlib.suppress(FileNotFoundError):
                os.unlink(lock)
        _unlock(fd)
        os.close(fd)


def _still_at(fd: int, lock: Path) -> bool:
    """Whether the open file `fd` is the file at `lock` (not one removed since it was opened)."""
    if sys.platform == "win32":  # pragma: no cover (nothing is removed there)
        return True
    try:
        here, there = os.fstat(fd), os.stat(lock)
    except FileNotFoundError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def _try_lock(fd: int) -> bool:
    if sys.platform == "win32":  # pragma: no cover
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def _unlock(fd: int) -> None:
    if sys.platform == "win32":  # pragma: no cover
        import msvcrt

        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        return
    import fcntl

    fcntl.flock(fd, fcntl.LOCK_UN)
