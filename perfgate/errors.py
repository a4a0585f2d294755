"""Errors users can act on: each names the file or tool and what is wrong with it, on one line."""

from __future__ import annotations

from perfgate.credentials import mask_credentials


def one_line(text: str, limit: int = 400) -> str:
    """Messages reach terminals, table cells and CI annotations: never more than one line, and never a
    password (a history URL's, from a CI secret)."""
    flat = mask_credentials(" ".join(str(text).split()))
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


PYTEST_USAGE_ERROR = 4  # pytest's exit status for arguments it refuses (a test path it does not find, an option)
PYTEST_NO_TESTS_COLLECTED = 5  # ... and when nothing was selected (under --perfgate a worker or child: no perf test)


def pytest_usage_line(output: str) -> str:
    """pytest's own line when it refused its arguments ("" when its output has none): it prints each part of a
    UsageError as `ERROR: ...`; argparse's is a usage line, then `prog: error: what is wrong`."""
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("ERROR: ")), None)
    if start is None:
        return ""
    block = [lines[start].removeprefix("ERROR: "), *lines[start + 1 : start + 4]]
    if block[0].startswith("usage:"):  # argparse: the line that says what is wrong
        said = next((line.partition(": error: ")[2] for line in block if ": error: " in line), "")
        return one_line(said or block[0], 300)
    return one_line(block[0], 300)


class PerfgateError(Exception):
    """Base class; `str(err)` is the one line shown to the user, `exit_status` the command's status."""

    exit_status = 2  # bad input; 4: an input that contradicts itself (perfgate/ci/recompute.py)

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


class ConfigError(PerfgateError):
    """A bad option, `[tool.perfgate]` entry or marker argument."""


class BaselineError(PerfgateError):
    """A baseline file that cannot be read, does not have the expected shape, or cannot be written."""

    def __init__(self, path: object, problem: str) -> None:
        super().__init__(f"perfgate: baseline {path}: {problem}")
        self.path = path
        self.problem = problem


class ReportFileError(PerfgateError):
    """A profiler report or export (or any input file) that cannot be parsed."""

    def __init__(self, path: object, problem: str) -> None:
        super().__init__(f"perfgate: cannot read {path}: {problem}")
        self.path = path
        self.problem = problem


class StoreError(PerfgateError):
    """The history database cannot be opened, migrated, read or written."""


class MissingExtra(PerfgateError):
    """An optional dependency is not installed; names the extra that brings it."""

    def __init__(self, module: str, extra: str, needed_for: str) -> None:
        super().__init__(
            f"perfgate: {needed_for} needs {module}, which is not installed: pip install 'perfgate[{extra}]'"
        )
        self.module = module
        self.extra = extra


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
        super().__init__(f"perfgate: {_tool_name(argv)} {what}: {tail or '(no output)'}")
        self.argv = argv
        self.returncode = returncode
        self.stderr_tail = stderr_tail
        self.timed_out = timed_out


def _tool_name(argv: list[str]) -> str:
    return argv[0].rsplit("/", 1)[-1] if argv else "tool"


def require(module: str, extra: str, needed_for: str) -> object:
    """Import an optional dependency, or MissingExtra naming the extra to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingExtra(module, extra, needed_for) from err
