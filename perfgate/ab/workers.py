"""Worker processes: one per tree, long-lived, each importing its own tree's code.

A worker is `pytest --perfgate` run in its tree (cwd and sys.path[0] there), told through
PERFGATE_AB_WORKER which two pipe descriptors to talk on. perfgate itself is imported from where the
coordinator's perfgate lives *before* the tree joins sys.path, so a tree that has a `perfgate` package of
its own (this repository's history) still runs the tool the coordinator speaks to, while `import kernels`
(or any module of the project) resolves to the worker's own tree. Output goes to a log file per worker;
its last lines are what a crash reports.

The launcher is injectable: tests start stand-in workers that speak the same protocol and report times
they were told, so the coordinator is tested without a GPU or a clock.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from perfgate.ab.protocol import WORKER_ENV, AbError, Pipe, PytestEnded, SharingEnded, Side, WorkerFailed
from perfgate.errors import PYTEST_USAGE_ERROR, one_line, pytest_usage_line
from perfgate.measure.handshake import MEASURE_CHILD_ENV
from perfgate.measure.processes import PROFILE_CHILD_ENV

STOP_GRACE_S = 5.0
WORKER_PYTEST_ARGS = (
    "-q",
    "--no-header",
    "-p",
    "no:cacheprovider",
    "-p",
    "no:randomly",
    "--perfgate",
    "--perfgate-no-store",
    "--continue-on-collection-errors",
)

# `python -c BOOT TOOL TREE OTHER ORIGIN PYTEST_ARGS...`: the tool's perfgate first, then the tree (its own
# sys.path and import hooks, perfgate/ab/imports.py), then pytest
BOOT = """\
import sys
tool, tree, other, origin = sys.argv[1:5]
del sys.argv[1:5]
sys.path[:] = [p for p in sys.path if p not in ("", ".")]
sys.path.insert(0, tool)
import perfgate.pytest_plugin, perfgate.ab.serve, perfgate.ab.imports
sys.path.remove(tool)
perfgate.ab.imports.boot_separate(tree, origin, [other] if other else [])
import pytest
sys.exit(pytest.main(sys.argv[1:]))
"""


@dataclass(frozen=True)
class WorkerSpec:
    side: Side
    tree: Path  # the checkout's root
    cwd: Path  # where pytest runs (the tree's counterpart of the directory pytest was invoked in)
    pytest_args: tuple[str, ...]
    other_tree: Path | None = None  # the other side's root: never on this worker's sys.path
    env: dict[str, str] = field(default_factory=dict)  # build caches of its tree
    origin: Path | None = None  # the checkout the environment's installs point into (None: this tree)


# `python -c SHARED_BOOT TOOL SIDES_JSON`: every side in one process (perfgate/ab/host/)
SHARED_BOOT = """\
import sys
tool, sides = sys.argv[1:3]
del sys.argv[1:3]
sys.path[:] = [p for p in sys.path if p not in ("", ".")]
sys.path.insert(0, tool)
import perfgate.pytest_plugin, perfgate.ab.serve, perfgate.pytest_plugin.shared_host
sys.path.remove(tool)
sys.exit(perfgate.pytest_plugin.shared_host.main(sides))
"""


class Launcher(Protocol):
    def argv(self, spec: WorkerSpec) -> list[str]: ...

    def shared_argv(self, sides_json: str) -> list[str]: ...


class PytestLauncher:
    """The real worker: pytest --perfgate in the tree, serving cases through perfgate.ab.serve."""

    def argv(self, spec: WorkerSpec) -> list[str]:
        import perfgate

        tool = str(Path(perfgate.__file__).resolve().parents[1])
        return [
            sys.executable,
            "-c",
            BOOT,
            tool,
            str(spec.tree),
            str(spec.other_tree or ""),
            str(spec.origin or ""),
            *WORKER_PYTEST_ARGS,
            *spec.pytest_args,
        ]

    def shared_argv(self, sides_json: str) -> list[str]:
        import perfgate

        return [sys.executable, "-c", SHARED_BOOT, str(Path(perfgate.__file__).resolve().parents[1]), sides_json]


class Worker:
    """One running worker: its process, its pipes, its log."""

    def __init__(
        self,
        spec: WorkerSpec,
        process: subprocess.Popen[bytes],
        pipe: Pipe,
        log_path: Path,
        host: SharedHost | None = None,
    ) -> None:
        self.spec = spec
        self.side = spec.side
        self.process = process
        self.pipe = pipe
        self.log_path = log_path
        self.host = host  # the process this side shares with the others (None: its own)
        self.stopped = False

    @classmethod
    def start(cls, spec: WorkerSpec, launcher: Launcher, log_dir: Path) -> Worker:
        log_dir.mkdir(parents=True, exist_ok=True)
        log_path = log_dir / f"{spec.side.name.lower()}.log"
        pipes = _Pipes()
        env = {**_inherited_env(), **spec.env, WORKER_ENV: pipes.worker_value}
        what = f"the {spec.side.value} worker"
        process = _spawn(launcher.argv(spec), spec.cwd, env, log_path, [pipes], what)
        return cls(spec, process, pipes.coordinator_end(spec.side), log_path)

    @classmethod
    def start_shared(cls, specs: Sequence[WorkerSpec], launcher: Launcher, log_dir: Path) -> list[Worker]:
        """Every side in one host process (perfgate/ab/host/), in the order given; a log per side."""
        from perfgate.ab.host.baton import SideBoot
        from perfgate.ab.host.process import SHARED_PYTEST_ARGS
        from perfgate.ab.host.sharing import preloads

        log_dir.mkdir(parents=True, exist_ok=True)
        pipes = [_Pipes() for _ in specs]
        boots = [
            SideBoot(
                side=spec.side.value,
                tree=str(spec.tree),
                cwd=str(spec.cwd),
                origin=str(spec.origin or ""),
                env={**spec.env, WORKER_ENV: p.worker_value},
                log=str(log_dir / f"{spec.side.name.lower()}.log"),
                args=[*WORKER_PYTEST_ARGS, *SHARED_PYTEST_ARGS, *spec.pytest_args],
                write_fd=p.from_w,
            )
            for spec, p in zip(specs, pipes)
        ]
        preload = preloads([spec.tree for spec in specs])
        argv = launcher.shared_argv(SideBoot.encode(boots, log_dir / "running", preload))
        host_log = log_dir / "shared.log"
        process = _spawn(argv, specs[0].cwd, _inherited_env(), host_log, pipes, "the shared worker process")
        host = SharedHost(process, host_log, log_dir / "running", len(specs))
        return [
            cls(spec, process, p.coordinator_end(spec.side), Path(boot.log), host)
            for spec, boot, p in zip(specs, boots, pipes)
        ]

    def send(self, command: dict[str, Any], doing: str) -> None:
        try:
            self.pipe.send(command)
        except WorkerFailed as err:
            raise self._explained(doing, err) from err

    def receive(self, timeout_s: float, doing: str) -> dict[str, Any]:
        try:
            return self.pipe.receive(timeout_s, doing)
        except WorkerFailed as err:
            raise self._explained(doing, err) from err

    def request(self, command: dict[str, Any], timeout_s: float, doing: str) -> dict[str, Any]:
        self.send(command, doing)
        return self.receive(timeout_s, doing)

    def _explained(self, doing: str, err: WorkerFailed) -> AbError:
        """The cause with what the process said last: its exit status and the tail of its log; pytest's own
        line when it refused its arguments (PytestEnded: a usage error, not a crash)."""
        if err.cause.startswith("hung"):
            if self.host is not None:  # a hung side holds the shared host's baton: nothing else can run
                self.host.stopped_for = f"the {self.side.value} side hung while {doing}"
            self.stop(whole_process=True)
            return WorkerFailed(self.side, f"{err.cause} (stopped it; log {self.log_path})")
        if self.host is not None:
            ended = self.host.sharing_ended()
            if ended:
                return SharingEnded(self.side, ended)
            # a side's session that refused its arguments ends its pipe, not always the process
            return self._refused(None) or WorkerFailed(self.side, self.host.explained(self.log_path, doing))
        try:
            code = self.process.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            self.stop()
            return err
        why = f"crashed (exit status {code})" if code else "exited"
        tail = self.log_tail() or "(no output)"
        return self._refused(code) or WorkerFailed(self.side, f"{why} while {doing}: {tail}")

    def _refused(self, code: int | None) -> PytestEnded | None:
        """pytest refused this side's arguments, in its own words (`code` None: a shared host's side, whose
        status the process does not tell); None otherwise. The A/A twin's arguments are the base's."""
        if self.side is Side.AA or code not in (None, PYTEST_USAGE_ERROR):
            return None
        usage = pytest_usage_error(self.log_path)
        return PytestEnded(self.side, PYTEST_USAGE_ERROR, usage) if usage else None

    def log_tail(self, lines: int = 3) -> str:
        return _log_tail(self.log_path, lines)

    def stop(self, whole_process: bool = False) -> None:
        """End the worker and anything it started (its own process group), then close the pipes. A side of a
        shared host: its pipes closed (its session ends), the process ended with its last side."""
        if self.host is None or whole_process:
            _end_process(self.process)
        if self.stopped:  # once: its descriptors may have been reused since
            return
        self.stopped = True
        self.pipe.close()
        if self.host is not None and self.host.side_stopped():
            _end_process(self.process, self.host.grace_s)


@dataclass
class SharedHost:
    """The one process of a shared run, and how many of its sides are still open."""

    process: subprocess.Popen[bytes]
    log_path: Path
    holder_path: Path  # names the side that ran last (host.process.running_side)
    open_sides: int
    grace_s: float = STOP_GRACE_S  # the sides' sessions end on their own once their pipes close
    stopped_for: str = ""  # why perfgate ended the process itself (a side hung)

    def sharing_ended(self) -> str:
        """Why the host ended the shared comparison itself (a side broke the contract); "" otherwise."""
        from perfgate.ab.host.process import sharing_ended

        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=1.0)
        return sharing_ended(self.holder_path) if self.process.poll() is not None else ""

    def side_stopped(self) -> bool:
        self.open_sides -= 1
        return self.open_sides <= 0

    def explained(self, side_log: Path, doing: str) -> str:
        """Why a side's pipe ended: its session alone (the process goes on), or the whole process, named with
        the side that was running then and that side's last lines."""
        from perfgate.ab.host.process import running_side

        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=1.0)  # a process that is going down: its status
        code = self.process.poll()
        logs = f"(logs in {self.log_path.parent})"
        if self.stopped_for:
            return f"ended while {doing}: perfgate stopped the shared process because {self.stopped_for} {logs}"
        if code is None:
            return f"ended its session while {doing}: {_log_tail(side_log, 3) or '(no output)'} {logs}"
        running = running_side(self.holder_path) or "unknown"
        by_side = {s.value: self.log_path.with_name(f"{s.name.lower()}.log") for s in Side}
        # a fatal signal's stacks (faulthandler, every thread) go to the host's log; a Python error to the side's
        tail = _fatal_error(self.log_path) if code < 0 else ""
        tail = tail or _log_tail(by_side.get(running, side_log), 3) or _log_tail(self.log_path, 3)
        how = f"crashed (exit status {code})" if code else "exited"
        return (
            f"ended while {doing}: the shared process {how}, last run by the {running} side: "
            f"{tail or '(no output)'} {logs}"
        )


class _Pipes:
    """A worker's two pipes: it reads to_r and writes from_w; the coordinator the other ends."""

    def __init__(self) -> None:
        self.to_r, self.to_w = os.pipe()
        self.from_r, self.from_w = os.pipe()

    @property
    def worker_value(self) -> str:
        return f"{self.to_r},{self.from_w}"  # WORKER_ENV

    def coordinator_end(self, side: Side) -> Pipe:
        return Pipe(self.from_r, self.to_w, side)


def _inherited_env() -> dict[str, str]:
    """The coordinator's environment without the markers that would make the worker another kind of child."""
    return {k: v for k, v in os.environ.items() if k not in (MEASURE_CHILD_ENV, PROFILE_CHILD_ENV, WORKER_ENV)}


def _spawn(
    argv: list[str], cwd: Path, env: dict[str, str], log_path: Path, pipes: Sequence[_Pipes], what: str
) -> subprocess.Popen[bytes]:
    """argv in a session of its own, its output to log_path, the workers' ends of `pipes` passed on and closed
    here once it runs; every descriptor closed and one line (AbError) when it cannot start."""
    worker_fds = [fd for p in pipes for fd in (p.to_r, p.from_w)]
    try:
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                pass_fds=worker_fds,
                start_new_session=True,
            )
    except OSError as err:
        for p in pipes:
            for fd in (p.to_r, p.to_w, p.from_r, p.from_w):
                os.close(fd)
        raise AbError(f"perfgate: A/B: cannot start {what} in {cwd}: {err.strerror or err}") from err
    for fd in worker_fds:
        os.close(fd)
    return process


def pytest_usage_error(path: Path) -> str:
    """pytest's own line in a worker's log when it refused its arguments before any test ("" when none)."""
    try:
        return pytest_usage_line(path.read_bytes()[:64000].decode(errors="replace"))
    except OSError:
        return ""


def _fatal_error(path: Path) -> str:
    """From a faulthandler dump: the error and the innermost frame of the thread that died."""
    try:
        lines = [line.strip() for line in path.read_bytes()[-64000:].decode(errors="replace").splitlines()]
    except OSError:
        return ""
    error = next((line for line in reversed(lines) if line.startswith("Fatal Python error")), "")
    if not error:
        return ""
    start = max((i for i, line in enumerate(lines) if line.startswith("Current thread")), default=len(lines))
    frame = next((line for line in lines[start + 1 :] if line.startswith("File ")), "")
    return one_line(f"{error} | {frame}" if frame else error, 300)


def _log_tail(path: Path, lines: int) -> str:
    try:
        text = path.read_bytes()[-8000:].decode(errors="replace")
    except OSError:
        return ""
    kept = [line.strip() for line in text.splitlines() if line.strip() and not set(line.strip()) <= set("=-_")]
    return one_line(" | ".join(kept[-lines:]), 300)


def _end_process(process: subprocess.Popen[bytes], grace_s: float = 0.0) -> None:
    """Wait `grace_s` for it to end by itself, then SIGTERM its group, then SIGKILL."""
    if grace_s:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=grace_s)
    if process.poll() is None:
        _signal_group(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            _signal_group(process.pid, signal.SIGKILL)
            process.wait(timeout=STOP_GRACE_S)


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)  # the worker leads its own session (start_new_session): this group is ours


def stop_all(workers: Sequence[Worker]) -> None:
    for w in workers:
        w.stop()
