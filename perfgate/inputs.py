"""Reading outside files defensively: regular files only, bounded size, strict JSON.

A FIFO passed as a report would block `open()` forever, a 10 GB "baseline" would exhaust memory, and
Python's json module accepts NaN, Infinity, duplicate keys and recursion deep enough to crash, turns
`1e400` into inf, and raises a bare ValueError on an integer of 5,000 digits (the int-string conversion
limit). Every reader of outside input starts here.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

MAX_JSON_BYTES = 512 * 1024 * 1024

ErrorFactory = Callable[[Path, str], Exception]


def check_regular_file(path: Path, error: ErrorFactory) -> os.stat_result:
    """stat() the path and refuse anything but a regular file (without opening it)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise error(path, "no such file") from None
    except OSError as err:
        raise error(path, f"cannot be read ({err.strerror or err})") from err
    if stat.S_ISDIR(st.st_mode):
        raise error(path, "is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise error(path, "not a regular file (a pipe, socket or device cannot be read as a report)")
    return st


def read_bytes(path: Path, error: ErrorFactory, max_bytes: int = MAX_JSON_BYTES) -> bytes:
    st = check_regular_file(path, error)
    if st.st_size > max_bytes:
        raise error(path, f"too large ({st.st_size:,} bytes; at most {max_bytes:,})")
    try:
        # O_NONBLOCK: if the file was swapped for a FIFO since stat(), open() must not hang
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise error(path, "not a regular file")
            return fh.read(max_bytes + 1)
    except OSError as err:
        raise error(path, f"cannot be read ({err.strerror or err})") from err


class _JsonProblem(ValueError):
    pass


PIPE_TIMEOUT_S = 60.0


def is_pipe(path: Path) -> bool:
    """A FIFO, such as bash's process substitution `<(git show REF:baselines/x.json)` (/dev/fd/63)."""
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False


def read_pipe(
    path: Path, error: ErrorFactory, max_bytes: int = MAX_JSON_BYTES, timeout_s: float = PIPE_TIMEOUT_S
) -> bytes:
    """Everything a pipe's writer sends, bounded in size and in time: opened without blocking (a FIFO
    nobody writes to never hangs the command), read until the writer closes it."""
    import select
    import time

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as err:
        raise error(path, f"cannot be read ({err.strerror or err})") from err
    chunks: list[bytes] = []
    size, deadline = 0, time.monotonic() + timeout_s
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            raise error(path, "not a pipe")
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise error(path, f"the pipe sent nothing more for {timeout_s:.0f} s and was not closed")
            chunk = os.read(fd, 65536)
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > max_bytes:
                raise error(path, f"too large (more than {max_bytes:,} bytes)")
            chunks.append(chunk)
    finally:
        os.close(fd)


def _no_constants(name: str) -> Any:
    raise _JsonProblem(f"{name} is not valid JSON")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _JsonProblem(f"duplicate key {key!r}")
        out[key] = value
    return out


MAX_INT_DIGITS = 20  # 2**64 has 20 digits: no tool writes a longer integer


def _int64ish(token: str) -> int:
    if len(token.lstrip("-")) > MAX_INT_DIGITS:
        raise _JsonProblem(f"an integer of {len(token.lstrip('-')):,} digits: no 64-bit value is that long")
    return int(token)


def _finite_float(token: str) -> float:
    value = float(token)
    if value - value != 0:  # inf: the literal overflows a double (1e400)
        raise _JsonProblem(f"the number {token[:40]} is outside the range of a double")
    return value


def parse_json(
    data: bytes | str,
    path: Path,
    error: ErrorFactory,
    unique_keys: bool = True,
    strict_numbers: bool = True,
    checked_floats: bool = False,
) -> Any:
    """Strict JSON: no NaN/Infinity, no duplicate keys (optional: a Python hook per object is slow on
    million-event traces), bounded nesting, numbers that fit (integers of at most 20 digits, floats that
    do not overflow to inf); errors name the line and column. Without strict_numbers (a hook per number
    costs 75 % on large traces) integers may be huge and floats inf: the caller range-checks every
    number it uses (parse/invariants.py); integers past Python's conversion limit are still one line.
    With checked_floats, integers stay strict but floats are read by the C decoder without a hook (a
    1,000-case baseline holds 200,000 of them: the hook was a fifth of `perfgate compare`): an overflowing
    literal reads as inf, and the caller refuses every non-finite float it uses (the baseline reader does)."""
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as err:
            raise error(path, f"not UTF-8 text (byte {err.start})") from err
    else:
        text = data
    hooks: dict[str, Any] = {"parse_constant": _no_constants}
    if strict_numbers:
        hooks.update(parse_int=_int64ish, parse_float=float if checked_floats else _finite_float)
    if unique_keys:
        hooks["object_pairs_hook"] = _no_duplicates
    try:
        return json.loads(text, **hooks)
    except json.JSONDecodeError as err:
        raise error(path, f"not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})") from err
    except _JsonProblem as err:
        raise error(path, f"not valid JSON ({err})") from err
    except RecursionError as err:  # the C decoder guards its recursion: deep nesting is an error, not a crash
        raise error(path, "nested too deeply to read") from err
    except ValueError as err:  # int(): more digits than Python converts (sys.get_int_max_str_digits)
        raise error(path, f"not valid JSON (a number too long to read: {str(err)[:80]})") from err


def load_json_file(
    path: Path, error: ErrorFactory, max_bytes: int = MAX_JSON_BYTES, checked_floats: bool = False
) -> Any:
    data = read_bytes(path, error, max_bytes)
    if not data.strip():
        raise error(path, "the file is empty")
    return parse_json(data, path, error, checked_floats=checked_floats)


def readonly_sqlite_uri(path: Path) -> str:
    """How a command that only reads opens a SQLite file (a history, an nsys export) without creating a file
    beside it. `mode=ro` alone still creates the WAL index (-shm) and an empty -wal in a WAL-mode file.
    Without a -wal or -shm file no writer is at work and every transaction is in the file itself, so it is
    opened `immutable` (no lock, no file created). With one (a writer is storing, or one died), `mode=ro`
    reads the log's committed transactions through the files already there."""
    wal, shm = (path.with_name(path.name + suffix) for suffix in ("-wal", "-shm"))
    immutable = "" if wal.exists() or shm.exists() else "&immutable=1"
    return f"file:{quote(str(path))}?mode=ro{immutable}"
