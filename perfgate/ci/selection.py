"""What the workflows `perfgate ci init` writes measure: the perf tests' paths, checked against the repository.

The workflows hand PYTEST_ARGS to pytest split on whitespace (`read -r -a`), from the repository's root. A path
that is not in the repository makes pytest stop with "file or directory not found" on every run, so each path
is checked here, before anything is written: the ones given (`--tests`, and the paths among `--pytest-args`), or,
when none is given, the directories of the tracked test files that use a perf fixture or marker.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from perfgate.errors import PerfgateError

GIT_TIMEOUT_S = 30.0
MAX_TEST_FILE_BYTES = 2 * 1024 * 1024
MAX_DIRS = 3  # more directories than this: their common parent
TEST_FILE = re.compile(r"(?:^|/)(?:test_[^/]*|[^/]*_test)\.py$")  # pytest's default python_files
# a test that takes the perfgate fixture (or pytest-benchmark's / pytest-codspeed's, which perfgate serves), or a
# perf marker
PERF_USE = re.compile(
    r"\bdef\s+test\w*\s*\([^)]*\b(?:perfgate|benchmark|codspeed_benchmark)\b|\bmark\.(?:perfgate|benchmark)\b"
)
PERF_FIXTURES = ("perfgate", "benchmark", "codspeed_benchmark")
PERF_MARKERS = ("perfgate", "benchmark")
# pytest's own options that take a value as the next argument (`-k EXPR`): that value is not a test path
# fmt: off
PYTEST_VALUE_OPTIONS = frozenset((
    "-k", "-m", "-p", "-c", "-o", "-r", "-W", "--rootdir", "--confcutdir", "--basetemp", "--deselect", "--ignore",
    "--ignore-glob", "--junitxml", "--junit-xml", "--junit-prefix", "--maxfail", "--tb", "--durations",
    "--durations-min", "--log-level", "--log-file", "--log-file-level", "--log-file-mode", "--log-format",
    "--log-date-format", "--log-cli-level", "--log-cli-format", "--log-cli-date-format", "--log-file-format",
    "--log-file-date-format", "--import-mode", "--capture", "--override-ini", "--config-file", "--inifile",
    "--show-capture", "--color", "--code-highlight", "--pastebin", "--assert", "--doctest-glob",
    "--doctest-report", "--cov", "--cov-report", "--cov-config", "--timeout", "--reruns", "--randomly-seed",
    "--benchmark-json", "--benchmark-save", "--benchmark-storage", "--benchmark-compare-fail",
))
# fmt: on
NO_PATHS_WITH = ("--pyargs",)  # its arguments are module names, not paths


@dataclass(frozen=True)
class Selection:
    pytest_args: str  # PYTEST_ARGS of the workflows
    found: str  # how the paths were found ("" when they were given), for ci init's line


def workflow_selection(repo: Path, tests: Sequence[str], pytest_args: str) -> Selection:
    """The paths given (each checked in `repo`), or found, then the other pytest arguments. PerfgateError (one
    line) when a path is not in the repository, or when none is given and no perf test is found."""
    args = pytest_args.split()
    if any(q in pytest_args for q in "\"'"):
        raise PerfgateError(
            f"perfgate: --pytest-args {pytest_args[:80]!r}: the workflows split it on whitespace and keep quotes as "
            "they are (a -k or -m expression of several words does not survive): write it without quotes"
        )
    for option, paths in (("--tests", list(tests)), ("--pytest-args", test_paths(args))):
        missing = [p for p in paths if not (repo / p.split("::", 1)[0]).exists()]
        if missing:
            raise PerfgateError(
                f"perfgate: {option} names {missing[0]}, which is not in {repo}: the workflows would measure "
                f"nothing; {_where_perf_tests_are(repo)}"
            )
    if any(" " in t or not t for t in tests):
        raise PerfgateError("perfgate: --tests takes paths without whitespace (the workflows split on it)")
    if tests or test_paths(args):
        return Selection(" ".join([*tests, *args]), "")
    found = perf_test_dirs(repo)
    if not found:
        raise PerfgateError(
            f"perfgate: no perf test in {repo} (no test file there uses the perfgate or benchmark fixture or "
            "marker), so the workflows would measure nothing: write them first, or pass their paths with --tests PATH"
        )
    if len(found) <= MAX_DIRS:
        return Selection(" ".join([*found, *args]), f"the perf tests found in {', '.join(found)}")
    parent = os.path.commonpath(found) or "."
    shown = ", ".join(found[:MAX_DIRS]) + ", ..."
    where = f"the common parent of the {len(found)} directories holding perf tests ({shown}; --tests PATH chooses)"
    return Selection(" ".join([parent, *args]), where)


def repository_root(where: Path) -> Path:
    """The top of the git repository `where` is in (where the workflows run pytest); `where` outside one."""
    from perfgate.measure.tools import run_tool

    top = run_tool(["git", "rev-parse", "--show-toplevel"], GIT_TIMEOUT_S, cwd=where, check=False)
    return Path(top.stdout.strip()) if top.returncode == 0 and top.stdout.strip() else where


def test_paths(args: Sequence[str]) -> list[str]:
    """The test paths (or node ids) among pytest's arguments: what is neither an option nor an option's value."""
    if any(a.split("=", 1)[0] in NO_PATHS_WITH for a in args):
        return []
    from perfgate.config.option import Arg
    from perfgate.config.options import OPTIONS

    takes_value = PYTEST_VALUE_OPTIONS | {o.flag for o in OPTIONS if o.flag and o.arg not in (Arg.FLAG, Arg.NO_FLAG)}
    paths, value_next = [], False
    for arg in args:
        if value_next:
            value_next = False
        elif arg.startswith("-"):
            value_next = arg in takes_value  # `--opt=value` and `-kEXPR` carry their value
        else:
            paths.append(arg)
    return paths


def perf_test_dirs(repo: Path) -> list[str]:
    """The directories of the repository's test files (tracked, or new and not ignored) that use a perf fixture or
    marker, relative to `repo`: each outermost one."""
    dirs = sorted({os.path.dirname(name) or "." for name in _test_files(repo) if _uses_perf(repo / name)})
    return [d for d in dirs if not any(d != o and (o == "." or d.startswith(o + "/")) for o in dirs)]


def _test_files(repo: Path) -> list[str]:
    from perfgate.measure.tools import run_tool

    listed = run_tool(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], GIT_TIMEOUT_S, cwd=repo, check=False
    )
    if listed.returncode != 0:
        raise PerfgateError(f"perfgate: {repo} is not a git repository: pass the perf tests' paths with --tests PATH")
    return [name for name in listed.stdout.split("\0") if TEST_FILE.search(name)]


def _uses_perf(path: Path) -> bool:
    """A test file whose own code (not a string in it: a plugin's tests embed test files) has a test that takes a
    perf fixture, or a perf marker."""
    import ast

    try:
        with path.open("rb") as f:
            text = f.read(MAX_TEST_FILE_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return False
    if not PERF_USE.search(text):  # most files: no parse
        return False
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return any(_perf_node(node) for node in ast.walk(tree))


def _perf_node(node: object) -> bool:
    import ast

    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
        return any(a.arg in PERF_FIXTURES for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs))
    return isinstance(node, ast.Attribute) and node.attr in PERF_MARKERS and _is_mark(node.value)


def _is_mark(node: object) -> bool:
    import ast

    if isinstance(node, ast.Attribute):
        return node.attr == "mark"
    return isinstance(node, ast.Name) and node.id == "mark"


def _where_perf_tests_are(repo: Path) -> str:
    try:
        found = perf_test_dirs(repo)
    except PerfgateError:
        found = []
    if found:
        listed = ", ".join(found[:MAX_DIRS]) + (", ..." if len(found) > MAX_DIRS else "")
        return f"perf tests are in {listed} (pass them with --tests PATH, or leave --tests out to use them)"
    return "no test file here uses the perfgate or benchmark fixture or marker: pass the perf tests with --tests PATH"
