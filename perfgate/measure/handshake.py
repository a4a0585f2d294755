"""How a gate hands a fresh measurement process its order, so that nothing else can make a gate a child.

A measurement child (confirmation, calibration) measures and writes its cases for its parent; it stores,
compares and fails nothing. If an environment variable alone switched a run into that mode, a variable
planted in CI (a pull request's build step can write `GITHUB_ENV`) would turn `pytest --perfgate --perfgate-strict`
into a run that measures and exits 0. So the parent writes the order (where to write, a fresh nonce) into
a pipe and passes the pipe's read end to the child; `PERFGATE_MEASURE_CHILD` only names that descriptor.
The child takes the variable out of its environment before any conftest or test runs (a test cannot read
it to behave differently in the child), reads the pipe without waiting, and echoes the nonce in its
results, which the parent checks. A variable without the parent's pipe is refused with one line.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import stat
from collections.abc import MutableMapping
from dataclasses import dataclass
from pathlib import Path

from perfgate.errors import ConfigError

MEASURE_CHILD_ENV = "PERFGATE_MEASURE_CHILD"  # "fd:N": the order's pipe, passed by the parent
MAX_ORDER_BYTES = 16_384  # well inside a pipe's buffer: the parent writes it whole before the child starts


class HandshakeRefused(ConfigError):
    """PERFGATE_MEASURE_CHILD is set, but no parent perfgate process handed this run an order."""


@dataclass(frozen=True)
class ChildOrder:
    """What a parent asks of one measurement child."""

    output: Path  # where the child writes its cases (inside the parent's private temporary directory)
    nonce: str  # echoed in the output: the parent reads only what its own child wrote

    @classmethod
    def fresh(cls, output: Path) -> ChildOrder:
        return cls(output=output, nonce=secrets.token_hex(16))


def offer(order: ChildOrder) -> tuple[int, str]:
    """The parent's side: a pipe holding the order. Returns (the read end to pass to the child with
    `pass_fds`, the value of PERFGATE_MEASURE_CHILD); the caller closes the read end after the child ran."""
    data = json.dumps({"output": str(order.output), "nonce": order.nonce}).encode()
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, data)  # < MAX_ORDER_BYTES: never blocks on an empty pipe
    finally:
        os.close(write_fd)
    return read_fd, f"fd:{read_fd}"


def accept(environ: MutableMapping[str, str]) -> ChildOrder | None:
    """The child's side: None when PERFGATE_MEASURE_CHILD is not set; the order when a parent passed one;
    HandshakeRefused otherwise. The variable is removed from `environ` in every case."""
    value = environ.pop(MEASURE_CHILD_ENV, None)
    if value is None:
        return None
    match = re.fullmatch(r"fd:(\d{1,5})", value)
    if match is None:
        raise _refused(f"its value {value[:40]!r} names no handshake pipe")
    fd = int(match.group(1))
    if fd < 3:  # a parent's pipe is never stdin/stdout/stderr; never read from (or unblock) those
        raise _refused(f"descriptor {fd} is a standard stream, not the parent's pipe")
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            raise _refused(f"descriptor {fd} is not the parent's pipe")
        raw = _read_now(fd)
    except OSError as err:
        raise _refused(f"descriptor {fd} is not open ({err.strerror})") from err
    finally:
        with contextlib.suppress(OSError):  # already closed, or never open
            os.close(fd)
    return _order(raw)


def _read_now(fd: int) -> bytes:
    """Everything the parent wrote, without waiting: the parent closed its end before the child started,
    so the whole order is there; a pipe someone else still writes to is refused, not waited on."""
    os.set_blocking(fd, False)
    chunks: list[bytes] = []
    size = 0
    while True:
        try:
            chunk = os.read(fd, 4096)
        except BlockingIOError as err:
            raise _refused("the handshake pipe is still open for writing (not a parent's order)") from err
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_ORDER_BYTES:
            raise _refused("the handshake is larger than any order a parent writes")
        chunks.append(chunk)


def _order(raw: bytes) -> ChildOrder:
    try:
        doc = json.loads(raw.decode())
    except (UnicodeDecodeError, ValueError) as err:
        raise _refused("the handshake is not a parent's order") from err
    if (
        not isinstance(doc, dict)
        or not isinstance(doc.get("output"), str)
        or not isinstance(doc.get("nonce"), str)
        or not re.fullmatch(r"[0-9a-f]{32}", doc["nonce"])
    ):
        raise _refused("the handshake is not a parent's order")
    output = Path(doc["output"])
    folder = output.parent
    try:
        st = folder.stat()
    except OSError as err:
        raise _refused(f"the order's folder {folder} does not exist") from err
    if not output.is_absolute() or not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise _refused(f"the order's folder {folder} is not a private temporary folder of this user")
    return ChildOrder(output=output, nonce=doc["nonce"])


def _refused(why: str) -> HandshakeRefused:
    return HandshakeRefused(
        f"perfgate: {MEASURE_CHILD_ENV} is set, but {why}: only a perfgate parent process can "
        f"start a measurement child; unset {MEASURE_CHILD_ENV} to run the gate"
    )
