"""The Profiler protocol and its two built-in implementations, nsys and ncu: how to run a child command under
the tool, read its report and attribute what it saw to perf cases (by the `perfgate:<case id>` NVTX range each
case runs in). Which profilers exist is profiler_registry.py's business; nothing else names a tool.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from perfgate.measure import ncu, nsys
from perfgate.measure.in_profiler import NVTX_PREFIX, PROFILE_CALLS, ChildRange
from perfgate.model import Metric
from perfgate.parse.records import KernelLaunch, NcuLaunch, Timeline


@dataclass(frozen=True)
class CaseFindings:
    """What one profiler found for the cases: metrics, and notes for cases it had nothing to say about
    for a good reason (copy-engine work has no kernel for ncu to profile)."""

    metrics: dict[str, list[Metric]]
    notes: dict[str, str]
    settings: str  # recorded with the run: tool version, clock and cache control, report path


@dataclass(frozen=True)
class ProfilerOptions:
    """What a profiler is told by the run's settings (config/settings.py)."""

    out_dir: Path  # where its reports go
    timeout_s: float  # for one run of the tool
    ncu_sections: tuple[str, ...] = ()
    ncu_metrics: tuple[str, ...] = ()
    ncu_set: str = ""


class Profiler(Protocol):
    """One profiler backend. Stateless: a registry entry, told everything per call."""

    @property
    def name(self) -> str:
        """What `--perfgate-profile` names it by; also its metrics' `source`."""

    @property
    def executable(self) -> str:
        """The program it runs, looked up on PATH before the first test."""

    @property
    def install_hint(self) -> str:
        """How to get the program when it is missing."""

    @property
    def child(self) -> ChildRange:
        """What the child wraps around each case (measure/in_profiler.py)."""

    def argv(self, executable: str, report: Path, command: list[str], options: ProfilerOptions) -> list[str]:
        """The command line running `command` under the tool, writing its report at `report`."""

    def record(self, command: list[str], options: ProfilerOptions, env: dict[str, str], cwd: Path) -> Path | None:
        """Run `command` under the tool; the report it wrote (None: it ran fine and had nothing to report)."""

    def read(self, report: Path | None, case_ids: Sequence[str], options: ProfilerOptions) -> CaseFindings:
        """The report's metrics per case (source = `name`), and notes for cases it rightly had nothing on."""


def case_of(ranges: tuple[str, ...]) -> str | None:
    """The case a launch belongs to: its innermost perfgate range (user ranges may nest inside)."""
    for text in reversed(ranges):
        if text.startswith(NVTX_PREFIX):
            return text[len(NVTX_PREFIX) :]
    return None


class NsysProfiler:
    """Nsight Systems: `child.calls` calls per case in its range; per-call metrics per kernel, transfers."""

    name = "nsys"
    executable = "nsys"
    child = ChildRange(calls=PROFILE_CALLS)

    install_hint = nsys.INSTALL_HINT

    def argv(self, executable: str, report: Path, command: list[str], options: ProfilerOptions) -> list[str]:
        return nsys.nsys_profile_argv(executable, report, command)

    def record(self, command: list[str], options: ProfilerOptions, env: dict[str, str], cwd: Path) -> Path | None:
        return nsys.profile(command, options.out_dir / "perfgate-nsys", options.timeout_s, env, cwd)

    def read(self, report: Path | None, case_ids: Sequence[str], options: ProfilerOptions) -> CaseFindings:
        from perfgate.errors import ReportFileError
        from perfgate.parse.nsys_sqlite import read_nsys_sqlite

        if report is None:
            raise ReportFileError(options.out_dir / "perfgate-nsys", "nsys wrote no report")
        timeline = read_nsys_sqlite(nsys.export_sqlite(report, options.timeout_s))
        # rows the reader left out are said where the profile is described, never folded in silently
        return CaseFindings(
            nsys_case_metrics(timeline, self.child.calls), {}, "; ".join((f"nsys: {report}", *timeline.notes))
        )


class NcuProfiler:
    """Nsight Compute: one call per case between cudaProfilerStart/Stop (capture starts off); every metric
    of each kernel launched in the range."""

    name = "ncu"
    executable = "ncu"
    child = ChildRange(calls=1, profiler_api=True)

    install_hint = ncu.INSTALL_HINT

    def argv(self, executable: str, report: Path, command: list[str], options: ProfilerOptions) -> list[str]:
        return ncu.ncu_argv(executable, report, _ncu_settings(options), command)

    def record(self, command: list[str], options: ProfilerOptions, env: dict[str, str], cwd: Path) -> Path | None:
        return ncu.profile(
            command, options.out_dir / "perfgate-ncu", _ncu_settings(options), options.timeout_s, env, cwd
        )

    def read(self, report: Path | None, case_ids: Sequence[str], options: ProfilerOptions) -> CaseFindings:
        from perfgate.parse.ncu_report_file import read_ncu_report

        described = _ncu_settings(options).describe(ncu.version())
        found = ncu_case_metrics(read_ncu_report(report) if report is not None else [])
        # ncu profiles every kernel in a case's range: a case with none launched none (memcpy/memset work)
        notes = {
            c: "ncu: no kernel to profile (this case launched none: copy-engine work such as memcpy/memset "
            "has none; nsys reports its transfers)"
            for c in case_ids
            if c not in found
        }
        where = f"; report {report}" if report else "; no kernels were profiled"
        return CaseFindings(found, notes, described + where)


def _ncu_settings(options: ProfilerOptions) -> ncu.NcuSettings:
    return ncu.NcuSettings(
        sections=options.ncu_sections or ncu.NcuSettings().sections,
        metrics=options.ncu_metrics,
        named_set=options.ncu_set,
    )


def nsys_case_metrics(timeline: Timeline, calls: int) -> dict[str, list[Metric]]:
    """Per case and kernel name: launches and GPU time per call, registers, shared memory; per case:
    memcpy bytes, time and bandwidth, memset bytes per call (the child synchronises inside the range,
    so a case's GPU work ends inside it)."""
    grouped: dict[tuple[str, str], list[KernelLaunch]] = defaultdict(list)
    for k in timeline.kernels:
        case = case_of(k.nvtx_stack or ((k.nvtx_range,) if k.nvtx_range else ()))
        if case is not None:
            grouped[(case, k.name)].append(k)
    out: dict[str, list[Metric]] = defaultdict(list)
    for (case, name), ks in sorted(grouped.items()):
        regs = [k.registers_per_thread for k in ks if k.registers_per_thread is not None]
        shared = [k.shared_mem_bytes for k in ks if k.shared_mem_bytes is not None]
        out[case] += [
            Metric("nsys.launches_per_call", len(ks) / calls, "", "nsys", name),
            Metric("nsys.kernel_ns_per_call", sum(k.duration_ns for k in ks) / calls, "ns", "nsys", name),
        ]
        if regs:
            out[case].append(Metric("nsys.registers_per_thread", float(max(regs)), "register", "nsys", name))
        if shared:
            out[case].append(Metric("nsys.shared_mem_bytes", float(max(shared)), "byte", "nsys", name))
    for case, metrics in _transfer_metrics(timeline, calls).items():
        out[case] += metrics
    return dict(out)


def _transfer_metrics(timeline: Timeline, calls: int) -> dict[str, list[Metric]]:
    out: dict[str, list[Metric]] = {}
    ops = sorted(timeline.memory_ops, key=lambda m: m.start_ns)
    for r in timeline.nvtx_ranges:
        case = case_of((r.text,))
        if case is None:
            continue
        inside = [m for m in ops if r.start_ns <= m.start_ns <= r.end_ns]
        copies = [m for m in inside if m.kind != "memset"]
        sets = [m for m in inside if m.kind == "memset"]
        metrics = [Metric("nsys.memcpy_bytes_per_call", sum(m.bytes for m in copies) / calls, "byte", "nsys", "")]
        copy_ns = sum(m.duration_ns for m in copies)
        if copies and copy_ns > 0:
            metrics += [
                Metric("nsys.memcpy_ns_per_call", copy_ns / calls, "ns", "nsys", ""),
                Metric(
                    "nsys.memcpy_bytes_per_second", sum(m.bytes for m in copies) / (copy_ns / 1e9), "byte/s", "nsys", ""
                ),
            ]
        if sets:
            metrics.append(Metric("nsys.memset_bytes_per_call", sum(m.bytes for m in sets) / calls, "byte", "nsys", ""))
        out[case] = metrics
    return out


def ncu_case_metrics(launches: list[NcuLaunch]) -> dict[str, list[Metric]]:
    """Every numeric metric of each profiled launch, keyed by case (NVTX) and kernel name. A kernel
    launched twice in one call keeps its last launch (the launches of one call are alike)."""
    out: dict[str, dict[tuple[str, str], Metric]] = defaultdict(dict)
    for launch in launches:
        case = case_of(launch.nvtx_ranges)
        if case is None:
            continue
        for name, m in launch.metrics.items():
            if not isinstance(m.value, str):
                out[case][(launch.name, name)] = Metric(name, float(m.value), m.unit, "ncu", launch.name)
    return {case: list(d.values()) for case, d in out.items()}
