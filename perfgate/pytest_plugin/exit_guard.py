"""A gate that never decided must not look like a gate that passed.

`os._exit(0)` in a test ends the process at once: no hook runs, no verdict is written, and the exit status
CI reads is 0. While a gate runs, `os._exit` (and `posix._exit`, the same function) called in the gate's
own process exits non-zero when asked for 0, after one line on stderr (a forked worker's exit is its own).
Code that is determined to end the process (a signal, a C call) still can; that is why the GitHub action
also fails when the results file was not written (docs/robustness.md).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn

NOT_DECIDED_EXIT = 3  # pytest's "internal error": the run ended before the gate decided


class ExitGuard:
    """Installed while the gate runs (pytest_configure .. pytest_unconfigure), removed after."""

    def __init__(self) -> None:
        self._original: Callable[[int], NoReturn] | None = None

    def install(self, before_exit: Callable[[], None] | None = None) -> None:
        """`before_exit` runs first (the plugin stops pytest's output capture, so the line is seen)."""
        if self._original is not None:
            return
        original = os._exit
        self._original = original
        gate_pid = os.getpid()

        def guarded_exit(status: int) -> NoReturn:
            if status == 0 and os.getpid() == gate_pid:  # a forked worker (multiprocessing) ends as it asks
                status = NOT_DECIDED_EXIT
                with contextlib.suppress(Exception):  # the exit status is what matters; the line is a courtesy
                    if before_exit is not None:
                        before_exit()
                    sys.stderr.write(
                        "perfgate: the process was ended with os._exit(0) before the gate decided: "
                        f"exit status {NOT_DECIDED_EXIT}\n"
                    )
                    sys.stderr.flush()
            original(status)

        _set_exit(guarded_exit)

    def remove(self) -> None:
        if self._original is not None:
            _set_exit(self._original)
            self._original = None


def _set_exit(function: Any) -> None:
    os._exit = function
    posix = sys.modules.get("posix")
    if posix is not None:
        setattr(posix, "_exit", function)  # noqa: B010 (the module is Linux's; mypy types it per platform)
