"""Long work talks: one progress display for every command that takes more than a few seconds.

A command that prints nothing for minutes looks hung (`perfgate ab` used to be silent for up to 6 minutes,
`perfgate calibrate` for 11). Every long step reports through a `Progress`:

    with open_progress("calibrate") as progress:
        with progress.task("fresh processes", total=6) as task:
            for i in range(6):
                ...
                task.advance(f"process {i + 1} done")

Where it goes depends on where it is read:
- a terminal (and rich installed, the `report` extra): one live rich display (spinner, bar, count, elapsed),
  cleared of carriage-return noise when the command ends;
- a log (CI, a pipe, a file): plain lines, one when a task starts, then at most one every
  `LOG_INTERVAL_S` while it runs, and one when it ends, each with its elapsed time; no carriage returns;
- quiet (`PERFGATE_PROGRESS=0`, or a caller that passes quiet=True): nothing.

The clock is injectable (`perfgate.measure.clock`): a test's manual clock decides the elapsed times printed,
so the lines are the same on an idle and a busy machine.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO

LOG_INTERVAL_S = 30.0  # a log line while a task runs at most this often: quiet enough for CI logs
ENV_SWITCH = "PERFGATE_PROGRESS"  # "0" silences the display; "log" forces plain lines on a terminal


class Task(Protocol):
    def advance(self, what: str = "", steps: int = 1) -> None:
        """One (or `steps`) more unit of the task done; `what` says which, for the display."""

    def update(self, what: str) -> None:
        """What the task is doing now, without counting a step (a stage of a case, say)."""


class Progress(Protocol):
    def task(self, description: str, total: int | None = None) -> contextlib.AbstractContextManager[Task]:
        """A task of `total` steps (None: unknown); its end is reported when the block ends."""

    def note(self, line: str) -> None:
        """A line of output that must not be torn by the live display."""


def elapsed_text(seconds: float) -> str:
    """12.3 s, 4 min 05 s, 1 h 02 min: short and unambiguous in a log."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _now_s() -> float:
    from perfgate.measure.clock import current

    return current().perf_counter_ns() / 1e9


@dataclass
class _LogTask:
    """Plain lines: start, at most one every LOG_INTERVAL_S, end."""

    out: TextIO
    prefix: str
    description: str
    total: int | None
    started_s: float = field(default_factory=_now_s)
    done: int = 0
    last_line_s: float = 0.0
    what: str = ""

    def __post_init__(self) -> None:
        self.last_line_s = self.started_s
        of = f" ({self.total} step(s))" if self.total is not None else ""
        self._line(f"{self.description}{of}: started")

    def _count(self) -> str:
        return f"{self.done}/{self.total}" if self.total is not None else f"{self.done} done"

    def _line(self, text: str) -> None:
        self.out.write(f"{self.prefix}{text}\n")
        self.out.flush()

    def _maybe_line(self) -> None:
        now = _now_s()
        if now - self.last_line_s >= LOG_INTERVAL_S:
            self.last_line_s = now
            what = f", {self.what}" if self.what else ""
            self._line(f"{self.description}: {self._count()}{what} ({elapsed_text(now - self.started_s)})")

    def advance(self, what: str = "", steps: int = 1) -> None:
        self.done += steps
        self.what = what or self.what
        self._maybe_line()

    def update(self, what: str) -> None:
        self.what = what
        self._maybe_line()

    def finish(self) -> None:
        done = "done" if self.total is None and not self.done else self._count()  # a task of no steps
        self._line(f"{self.description}: {done} in {elapsed_text(_now_s() - self.started_s)}")


@dataclass
class LogProgress:
    """Progress as plain lines, for CI logs and pipes."""

    out: TextIO
    prefix: str = "perfgate: "

    @contextlib.contextmanager
    def task(self, description: str, total: int | None = None) -> Iterator[Task]:
        t = _LogTask(self.out, self.prefix, description, total)
        try:
            yield t
        finally:
            t.finish()

    def note(self, line: str) -> None:
        self.out.write(line + "\n")
        self.out.flush()


class _NoTask:
    def advance(self, what: str = "", steps: int = 1) -> None:
        pass

    def update(self, what: str) -> None:
        pass


@dataclass
class QuietProgress:
    """Nothing at all: notes still go to `out` (they are output, not progress), when one is given."""

    out: TextIO | None = None

    @contextlib.contextmanager
    def task(self, description: str, total: int | None = None) -> Iterator[Task]:
        yield _NoTask()

    def note(self, line: str) -> None:
        if self.out is not None:
            self.out.write(line + "\n")
            self.out.flush()


@dataclass
class _RichTask:
    bar: Any  # rich.progress.Progress
    task_id: Any
    description: str

    def advance(self, what: str = "", steps: int = 1) -> None:
        self.bar.update(self.task_id, advance=steps, description=self._label(what))

    def update(self, what: str) -> None:
        self.bar.update(self.task_id, description=self._label(what))

    def _label(self, what: str) -> str:
        from rich.markup import escape  # case ids hold "[...]", which rich would read as markup

        return escape(f"{self.description}: {what}" if what else self.description)


@dataclass
class RichProgress:
    """One live rich display on a terminal; finished tasks stay as one line each."""

    bar: Any  # rich.progress.Progress, started

    @contextlib.contextmanager
    def task(self, description: str, total: int | None = None) -> Iterator[Task]:
        from rich.markup import escape

        task_id = self.bar.add_task(escape(description), total=total)
        try:
            yield _RichTask(self.bar, task_id, description)
        finally:
            self.bar.update(task_id, description=escape(description))
            self.bar.stop_task(task_id)  # its elapsed time stops with it

    def note(self, line: str) -> None:
        self.bar.console.print(line, markup=False, highlight=False, soft_wrap=True)


def _mode(stream: TextIO, quiet: bool) -> str:
    switch = os.environ.get(ENV_SWITCH, "").strip().lower()
    if quiet or switch in {"0", "off", "no", "false"}:
        return "quiet"
    if switch == "log" or os.environ.get("CI") or not _isatty(stream):
        return "log"
    return "live"


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


@contextlib.contextmanager
def open_progress(stream: TextIO | None = None, *, quiet: bool = False) -> Iterator[Progress]:
    """The progress display for one command, on `stream` (stderr by default): live on a terminal, plain
    lines in a log, nothing when quiet."""
    out = stream if stream is not None else sys.stderr
    mode = _mode(out, quiet)
    if mode == "quiet":
        yield QuietProgress(out)  # notes are output, not progress: they still go to `out`
        return
    if mode == "live":
        try:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
            )
            from rich.progress import Progress as RichBar
        except ImportError:  # the `report` extra is not installed: plain lines serve as well
            mode = "log"
        else:
            columns = (
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
            )
            with RichBar(*columns, console=Console(file=out), transient=False) as bar:
                yield RichProgress(bar)
            return
    yield LogProgress(out)
