"""The messages between the A/B coordinator and a worker: one JSON object per line, over two pipes.

Pipes of their own, not stdin/stdout: pytest captures file descriptors 0-2 while a test runs, and a test
may print anything. The worker is told its two descriptors in PERFGATE_AB_WORKER ("<read fd>,<write fd>").

A worker speaks when it reaches a point where the coordinator decides (an *event*), then waits for one
command; a command asked of a case (prepare, round) gets one *reply*:

    worker -> coordinator          coordinator -> worker
    collected {nodeids, errors}     continue
    case {case_id, nodeid}          prepare {pins} -> prepared {case, per_call_ms} | failed {error}
                                    round {samples} -> round {samples_ms, reference_samples_ms}
                                    skip (measure nothing) | done (the case's rounds are over)
    test {nodeid, outcome}          continue
    end {exitstatus, reason}        (nothing: the worker exits; reason: pytest's own line when its session
                                     ended early, a usage error, an interruption or an internal error)

Every read on the coordinator's side has a deadline: a worker that hangs is a WorkerFailed naming its
side, never a gate that waits forever.
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
import select
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from perfgate.codec import CodecError, case_from_dict, case_to_dict, environment_from_dict
from perfgate.errors import PerfgateError, one_line
from perfgate.model import CaseResult, Environment, TestOutcome

WORKER_ENV = "PERFGATE_AB_WORKER"  # "<read fd>,<write fd>" in a worker process
MAX_LINE_BYTES = 64 * 1024 * 1024


class AbError(PerfgateError):
    """A/B mode could not compare: bad input (a REF git does not know), a worktree, a worker."""


class Side(str, enum.Enum):
    """Which tree a worker runs: the base, the head, or a second base process for the A/A measurement."""

    BASE = "base"
    HEAD = "head"
    AA = "base (A/A)"


class WorkerFailed(AbError):
    """A worker crashed, hung, or said something that is not the protocol; names the side and the cause."""

    def __init__(self, side: Side, cause: str) -> None:
        super().__init__(f"perfgate: A/B: {side.value} worker {cause}")
        self.side = side
        self.cause = cause


# pytest's exit statuses of a session that did not run its tests to the end: the comparison would be incomplete,
# and the cases never reached would read as new or removed
PYTEST_ENDED = {2: "interrupted", 3: "an internal error", 4: "a usage error"}


class PytestEnded(AbError):
    """A side's pytest session ended early (PYTEST_ENDED): pytest's own line, its exit status for the run's."""

    def __init__(self, side: Side, exitstatus: int, reason: str) -> None:
        super().__init__(
            f"perfgate: A/B: {side.value}: pytest: {reason or '(it said nothing)'} (pytest exit status {exitstatus}, "
            f"{PYTEST_ENDED.get(exitstatus, 'an error')}: nothing compared, nothing stored)"
        )
        self.side = side
        self.exit_status = exitstatus


class SharingEnded(WorkerFailed):
    """The shared host stopped itself: a side changed process-wide state the baton does not hand over
    (perfgate/ab/host/). Not a failure of the code: the run is measured again in a process per tree."""

    def __init__(self, side: Side, why: str) -> None:
        super().__init__(side, f"ended the shared process: {why}")
        self.why = why


# --- events (worker -> coordinator, unasked) ----------------------------------------------------------


@dataclass(frozen=True)
class Collected:
    nodeids: tuple[str, ...]  # the perf tests it will run, in order
    errors: tuple[tuple[str, str], ...] = ()  # (file or node id, one line) that failed to collect
    environment: Environment | None = None


@dataclass(frozen=True)
class CaseReady:
    case_id: str
    nodeid: str


@dataclass(frozen=True)
class TestDone:
    __test__ = False  # not a pytest test class

    nodeid: str
    outcome: TestOutcome | None = None  # None: passed
    reason: str = ""


@dataclass(frozen=True)
class End:
    exitstatus: int  # pytest's
    reason: str = ""  # pytest's own line when the session ended early (PYTEST_ENDED)


Event = Collected | CaseReady | TestDone | End


# --- replies (worker -> coordinator, to prepare / round) -------------------------------------------------


@dataclass(frozen=True)
class Prepared:
    """The case compiled, autotuned and checked: what it is (no samples yet) and how long one call takes."""

    case: CaseResult  # thresholds, work, location, memory metrics, autotune choices; timing of the first calls
    per_call_ms: float
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class Failed:
    error: str  # one line: why prepare failed (the output check, an exception in the first call)


@dataclass(frozen=True)
class RoundSamples:
    samples_ms: tuple[float, ...]
    reference_samples_ms: tuple[float, ...] = ()


Reply = Prepared | Failed | RoundSamples


def encode(message: dict[str, Any]) -> bytes:
    return (json.dumps(message, allow_nan=False, separators=(",", ":")) + "\n").encode()


def event_message(event: Event) -> dict[str, Any]:
    if isinstance(event, Collected):
        return {
            "type": "collected",
            "nodeids": list(event.nodeids),
            "errors": [list(e) for e in event.errors],
            "environment": event.environment.__dict__ if event.environment else None,
        }
    if isinstance(event, CaseReady):
        return {"type": "case", "case_id": event.case_id, "nodeid": event.nodeid}
    if isinstance(event, TestDone):
        return {
            "type": "test",
            "nodeid": event.nodeid,
            "outcome": event.outcome.value if event.outcome else None,
            "reason": event.reason,
        }
    return {"type": "end", "exitstatus": event.exitstatus, "reason": event.reason}


def reply_message(reply: Reply) -> dict[str, Any]:
    if isinstance(reply, Prepared):
        return {
            "type": "prepared",
            "case": case_to_dict(reply.case),
            "per_call_ms": reply.per_call_ms,
            "problems": list(reply.problems),
        }
    if isinstance(reply, Failed):
        return {"type": "failed", "error": reply.error}
    return {
        "type": "round",
        "samples_ms": list(reply.samples_ms),
        "reference_samples_ms": list(reply.reference_samples_ms),
    }


def _collected(m: dict[str, Any]) -> Collected:
    env = m.get("environment")
    return Collected(
        tuple(_texts(m["nodeids"])),
        tuple((str(a), str(b)) for a, b in m["errors"]),
        environment_from_dict(env) if env else None,
    )


def _test(m: dict[str, Any]) -> TestDone:
    outcome = m.get("outcome")
    return TestDone(str(m["nodeid"]), TestOutcome(outcome) if outcome else None, str(m.get("reason", "")))


def _round(m: dict[str, Any]) -> RoundSamples:
    samples = tuple(_positive(v) for v in m["samples_ms"])
    refs = tuple(_positive(v) for v in m.get("reference_samples_ms", []))
    if not samples or (refs and len(refs) != len(samples)):
        raise ValueError("a round needs samples (and as many reference samples, when any)")
    return RoundSamples(samples, refs)


_DECODERS: dict[str, Callable[[dict[str, Any]], Event | Reply]] = {
    "collected": _collected,
    "case": lambda m: CaseReady(str(m["case_id"]), str(m["nodeid"])),
    "test": _test,
    "end": lambda m: End(int(m["exitstatus"]), one_line(str(m.get("reason", "")), 300)),
    "prepared": lambda m: Prepared(
        case_from_dict(m["case"]), _positive(m["per_call_ms"]), tuple(_texts(m.get("problems", [])))
    ),
    "failed": lambda m: Failed(one_line(str(m["error"]), 300)),
    "round": _round,
}


def decode(message: dict[str, Any]) -> Event | Reply:
    """A worker's message as a record; ValueError (with what is wrong) for anything else."""
    decoder = _DECODERS.get(str(message.get("type")))
    if decoder is None:
        raise ValueError(f"unknown message type {message.get('type')!r}")
    try:
        return decoder(message)
    except (KeyError, TypeError, ValueError, CodecError) as err:
        raise ValueError(f"bad {message['type']!r} message ({type(err).__name__}: {err})") from err


def _texts(values: Any) -> list[str]:
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise TypeError("expected a list of strings")
    return list(values)


def _positive(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < float(value) < float("inf"):
        raise ValueError(f"expected a finite positive time, got {value!r}")
    return float(value)


class Pipe:
    """The coordinator's end of one worker's pipes: send a command, receive a message within a deadline."""

    def __init__(self, read_fd: int, write_fd: int, side: Side) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.side = side
        self._buffer = b""
        os.set_blocking(read_fd, False)

    def send(self, command: dict[str, Any]) -> None:
        data = encode(command)
        try:
            while data:
                data = data[os.write(self.write_fd, data) :]
        except (BrokenPipeError, OSError) as err:
            raise WorkerFailed(self.side, f"stopped listening ({err.strerror or err})") from err

    def receive(self, timeout_s: float, doing: str) -> dict[str, Any]:
        """The next message; WorkerFailed when the worker closes its pipe (it died) or says nothing for
        `timeout_s` (it hangs)."""
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WorkerFailed(self.side, f"hung: no answer in {timeout_s:g} s while {doing}")
            ready, _, _ = select.select([self.read_fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.read_fd, 1 << 16)
            if not chunk:
                raise WorkerFailed(self.side, f"exited while {doing}")
            self._buffer += chunk
            if len(self._buffer) > MAX_LINE_BYTES:
                raise WorkerFailed(self.side, f"sent a message over {MAX_LINE_BYTES} bytes while {doing}")
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            message = json.loads(line)
        except ValueError as err:
            raise WorkerFailed(
                self.side, f"sent something that is not the protocol while {doing}: {line[:80]!r}"
            ) from err
        if not isinstance(message, dict):
            raise WorkerFailed(self.side, f"sent a non-object message while {doing}")
        return message

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


def _nobody_listening() -> None:
    os._exit(3)  # the coordinator is gone: no result can reach anyone


class WorkerEnd:
    """The worker's end: blocking reads (the coordinator decides when), whole-line writes."""

    def __init__(
        self,
        read_fd: int,
        write_fd: int,
        waiting: Callable[[], contextlib.AbstractContextManager[None]] = contextlib.nullcontext,
        gone: Callable[[], None] = _nobody_listening,
    ) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.waiting = waiting  # around every blocking read and write (a shared host hands its baton over)
        self.gone = gone  # the coordinator closed its end
        self._buffer = b""

    @classmethod
    def from_env(
        cls,
        value: str,
        waiting: Callable[[], contextlib.AbstractContextManager[None]] = contextlib.nullcontext,
        gone: Callable[[], None] = _nobody_listening,
    ) -> WorkerEnd:
        try:
            read_fd, write_fd = (int(v) for v in value.split(","))
        except ValueError as err:
            raise AbError(f"perfgate: {WORKER_ENV} must be '<read fd>,<write fd>', got {value!r}") from err
        return cls(read_fd, write_fd, waiting, gone)

    def send(self, message: dict[str, Any]) -> None:
        data = encode(message)
        try:
            with self.waiting():
                while data:
                    data = data[os.write(self.write_fd, data) :]
        except BrokenPipeError:
            self.gone()

    def receive(self) -> dict[str, Any]:
        """The next command; the coordinator closing its end (it is gone) ends this worker."""
        while b"\n" not in self._buffer:
            with self.waiting():
                chunk = os.read(self.read_fd, 1 << 16)
            if not chunk:
                self.gone()
                raise AbError("perfgate: A/B worker: the coordinator is gone")  # not reached: gone() ends it
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        message = json.loads(line)
        if not isinstance(message, dict) or "cmd" not in message:
            raise AbError(f"perfgate: A/B worker: bad command {line[:80]!r}")
        return message
