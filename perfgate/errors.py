"""Errors users can act on: each names the file or tool and what is wrong with it."""

from __future__ import annotations


class PerfgateError(Exception):
    """Base class; `str(err)` is the one line shown to the user."""


class ConfigError(PerfgateError):
    """A bad option, `[tool.perfgate]` entry or marker argument."""


class BaselineError(PerfgateError):
    """A baseline file that cannot be read or does not have the expected shape."""

    def __init__(self, path: object, problem: str) -> None:
        super().__init__(f"perfgate: baseline {path}: {problem}")
        self.path = path
        self.problem = problem


class ReportFileError(PerfgateError):
    """A profiler report or export that cannot be parsed."""

    def __init__(self, path: object, problem: str) -> None:
        super().__init__(f"perfgate: cannot read {path}: {problem}")
        self.path = path
        self.problem = problem


class StoreError(PerfgateError):
    """The history database cannot be opened or migrated."""


class ToolMissing(PerfgateError):
    """An external tool (nsys, ncu) is not installed or not on PATH."""

    def __init__(self, tool: str, hint: str) -> None:
        super().__init__(f"perfgate: {tool} not found on PATH; {hint}")
        self.tool = tool


class ToolFailed(PerfgateError):
    """An external tool exited non-zero or timed out; keeps the tail of its stderr."""

    def __init__(self, argv: list[str], returncode: int | None, stderr_tail: str, timed_out: bool = False) -> None:
        what = "timed out" if timed_out else f"exited with status {returncode}"
        # the last few lines of stderr on one line: enough to act on, short enough for a table cell
        tail = " | ".join(line.strip() for line in stderr_tail.strip().splitlines()[-3:] if line.strip())
        super().__init__(f"perfgate: {argv[0]} {what}: {tail or '(no output)'}")
        self.argv = argv
        self.returncode = returncode
        self.stderr_tail = stderr_tail
        self.timed_out = timed_out
