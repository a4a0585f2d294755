"""Only the process that started a session measures, stores and gates (issue 32).

A test that forks and lets its child carry on makes the child run the rest of the session: without this, the
child stored a second run and set the exit status, and a fork inside the measured call, whose child returned
into perfgate's timing loop and called the function again, stored 80 runs before it was killed. Two rules:

- every store, publish and exit path checks the session's pid (PerfgateSession.owns_process): a forked child
  that finishes a session does nothing, and a child that calls `perfgate(...)` runs the function once,
  unmeasured, as plain pytest does (it must not compete with the parent's timing either);
- a child forked inside a measured call ends when the function returns into perfgate's timing code (a
  profile hook set in the child only, by os.register_at_fork: the parent's timing loop pays nothing). A child
  that ends by itself, as multiprocessing's do, is never touched.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from types import FrameType
from typing import Any

_MEASURE = str(Path(__file__).resolve().parents[1] / "measure") + os.sep  # the code that calls measured functions
ENDED = b"perfgate: a process forked inside a measured call returned into perfgate's timing loop; it ends here\n"


@functools.cache
def watch_forks() -> None:
    """Install the fork hook once per process (os.register_at_fork cannot be undone)."""
    os.register_at_fork(after_in_child=_after_fork_in_child)


def measured_frame(frame: FrameType | None) -> FrameType | None:
    """The outermost frame of the measured function: the one perfgate's timing code called, or None when
    `frame` is not inside a measured call."""
    inner = None
    while frame is not None:
        if frame.f_code.co_filename.startswith(_MEASURE):
            return inner
        inner, frame = frame, frame.f_back
    return None


def _after_fork_in_child() -> None:
    boundary = measured_frame(sys._getframe(1))
    if boundary is None:
        return

    def end_on_return(frame: FrameType, event: str, arg: Any) -> None:
        if event == "return" and frame is boundary:
            sys.setprofile(None)
            os.write(2, ENDED)
            os._exit(0)

    sys.setprofile(end_on_return)
