"""Fresh pytest processes that only measure: `perfgate calibrate` runs N of them, confirmation one per round.

Between-process noise (power state, autotuning, allocation) only shows between processes, so a baseline
is calibrated from several and a suspect case is re-measured in a new one. Each child is a normal
`pytest --perfgate` run handed an order through a pipe (measure/handshake.py: an environment variable
alone never makes a gate a child): it measures exactly as the gate does, writes its cases where the order
says, with the order's nonce, and stores, compares and writes nothing else. Its command line carries no
child-only flag and the variable is gone before its tests run, so a test sees a gate like any other.
"""

from __future__ import annotations

import concurrent.futures
import os
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from perfgate.codec import CodecError, case_from_dict, environment_from_dict, unmeasured_from_dict
from perfgate.config.settings import Settings
from perfgate.errors import PYTEST_USAGE_ERROR, PerfgateError, ReportFileError, ToolFailed, pytest_usage_line
from perfgate.inputs import parse_json, read_bytes
from perfgate.measure.handshake import MEASURE_CHILD_ENV, ChildOrder, offer
from perfgate.measure.tools import ToolOutput, run_tool
from perfgate.model import CaseResult, Environment, UnmeasuredTest

CHILD_TIMEOUT_S = 3600.0
POLL_S = 0.25  # how often the parent reads which cases a child has measured (its progress display)
PROFILE_CHILD_ENV = "PERFGATE_PROFILE_CHILD"  # the profiler's name in the child pytest run under a profiler


def progress_path(output: Path) -> Path:
    """Where a child appends each case id as it is measured: beside its results, in the parent's private
    folder, so the parent's progress display can count a process's cases while it runs."""
    return output.with_name(output.name + ".progress")


@dataclass(frozen=True)
class ChildRun:
    results: tuple[CaseResult, ...]
    unmeasured: tuple[UnmeasuredTest, ...]
    environment: Environment | None
    returncode: int
    said: str = ""  # pytest's own line when it refused its arguments (exit status 4)


class ChildRunner:
    def __init__(
        self, rootdir: Path, settings: Settings, baseline_file: Path | None = None, timeout_s: float = CHILD_TIMEOUT_S
    ) -> None:
        self.rootdir = rootdir
        self.settings = settings
        self.baseline_file = baseline_file
        self.timeout_s = timeout_s

    def argv(self, pytest_args: Sequence[str]) -> list[str]:
        argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--perfgate"]
        if self.baseline_file is not None and self.baseline_file.exists():
            # the autotune pins live there; `=` so pytest never takes the path for a test path (rootdir.py)
            argv.append(f"--perfgate-baseline-file={self.baseline_file}")
        if self.settings.pin_autotune:
            argv.append("--perfgate-pin-autotune")
        return argv + list(pytest_args)

    def run(self, pytest_args: Sequence[str], on_case: Callable[[str], None] | None = None) -> ChildRun:
        """One fresh process; PerfgateError when it wrote no results (it crashed, or its tests errored
        before anything was measured). `on_case` is told each case id as the child measures it."""
        with tempfile.TemporaryDirectory(prefix="perfgate-child-") as tmp:  # mode 0700: this user's only
            order = ChildOrder.fresh(Path(tmp) / "results.json")
            read_fd, value = offer(order)
            try:
                env = {k: v for k, v in os.environ.items() if k != PROFILE_CHILD_ENV}
                env[MEASURE_CHILD_ENV] = value
                argv = self.argv(pytest_args)

                def child() -> ToolOutput:
                    return run_tool(argv, self.timeout_s, cwd=self.rootdir, env=env, check=False, pass_fds=(read_fd,))

                proc = child() if on_case is None else _watched(child, progress_path(order.output), on_case)
            finally:
                os.close(read_fd)
            said = pytest_usage_line(proc.stdout + proc.stderr) if proc.returncode == PYTEST_USAGE_ERROR else ""
            if not order.output.is_file():  # refused before the plugin ran (an option it does not know): its line
                raise ToolFailed(argv, proc.returncode, said or proc.stdout[-2000:] + proc.stderr[-2000:])
            return replace(parse_child_output(order.output, proc.returncode, nonce=order.nonce), said=said)

    def confirmer(self, results: Mapping[str, CaseResult]) -> _Confirm:
        return _Confirm(self, results)


class _Confirm:
    """The gate's Confirmer: measure the suspects' tests in one fresh process, return their medians."""

    def __init__(self, runner: ChildRunner, results: Mapping[str, CaseResult]) -> None:
        self.runner = runner
        self.results = results

    def __call__(self, case_ids: Sequence[str]) -> dict[str, CaseResult]:
        nodeids = sorted({self.results[c].nodeid or c.split("::")[0] for c in case_ids if c in self.results})
        child = self.runner.run(nodeids)
        wanted = set(case_ids)
        return {r.case_id: r for r in child.results if r.case_id in wanted}


def _watched(child: Callable[[], ToolOutput], progress: Path, on_case: Callable[[str], None]) -> ToolOutput:
    """Run `child` in a thread while this one tells `on_case` each case id the child appends to `progress`."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(child)
        seen = 0
        while True:
            done = future.done()  # read after the child ended too: its last cases are reported
            seen = _report_new(progress, seen, on_case)
            if done:
                return future.result()
            concurrent.futures.wait([future], timeout=POLL_S)


def _report_new(progress: Path, seen: int, on_case: Callable[[str], None]) -> int:
    try:
        lines = progress.read_text(errors="replace").splitlines()
    except OSError:  # not written yet
        return seen
    for case_id in lines[seen:]:
        on_case(case_id)
    return max(seen, len(lines))


def parse_child_output(path: Path, returncode: int, nonce: str | None = None) -> ChildRun:
    """A child's results; with `nonce`, only when the child echoed it (results of this parent's own child)."""
    try:
        doc = parse_json(read_bytes(path, ReportFileError), path, ReportFileError, unique_keys=False)
        if nonce is not None and doc.get("nonce") != nonce:
            raise PerfgateError(f"perfgate: a measurement child's results {path} do not carry this run's nonce")
        results = tuple(case_from_dict(d) for d in doc["results"])
        ids = [r.case_id for r in results]
        if len(set(ids)) != len(ids):
            twice = next(i for i in ids if ids.count(i) > 1)
            raise CodecError(f"case {twice[:120]!r} appears twice")
        return ChildRun(
            results=results,
            unmeasured=tuple(unmeasured_from_dict(d) for d in doc.get("unmeasured", ())),
            environment=environment_from_dict(doc["environment"]) if doc.get("environment") else None,
            returncode=returncode,
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError, CodecError) as err:
        raise PerfgateError(f"perfgate: a measurement child wrote unreadable results {path}: {err}") from err
