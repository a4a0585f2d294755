"""Reading outside files defensively: regular files only, bounded size, strict JSON.

A FIFO passed as a report would block `open()` forever, a 10 GB "baseline" would exhaust memory, and
Python's json module accepts NaN, Infinity, duplicate keys and recursion deep enough to crash. Every
reader of outside input starts here.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


def _no_constants(name: str) -> Any:
    raise _JsonProblem(f"{name} is not valid JSON")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _JsonProblem(f"duplicate key {key!r}")
        out[key] = value
    return out


def parse_json(data: bytes, path: Path, error: ErrorFactory, unique_keys: bool = True) -> Any:
    """Strict JSON: no NaN/Infinity, no duplicate keys (optional: a Python hook per object is slow on
    million-event traces), bounded nesting; errors name the line and column."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise error(path, f"not UTF-8 text (byte {err.start})") from err
    try:
        if unique_keys:
            return json.loads(text, parse_constant=_no_constants, object_pairs_hook=_no_duplicates)
        return json.loads(text, parse_constant=_no_constants)
    except json.JSONDecodeError as err:
        raise error(path, f"not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})") from err
    except _JsonProblem as err:
        raise error(path, f"not valid JSON ({err})") from err
    except RecursionError as err:  # the C decoder guards its recursion: deep nesting is an error, not a crash
        raise error(path, "nested too deeply to read") from err


def load_json_file(path: Path, error: ErrorFactory, max_bytes: int = MAX_JSON_BYTES) -> Any:
    data = read_bytes(path, error, max_bytes)
    if not data.strip():
        raise error(path, "the file is empty")
    return parse_json(data, path, error)
