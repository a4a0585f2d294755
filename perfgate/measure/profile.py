"""Re-run the measured cases in child pytest processes under nsys and ncu; turn reports into metrics.

The timing run has finished by now, so profiler overhead never touches the timed numbers.
"""

from __future__ import annotations

import os
import sys
import time
from collections import defaultdict
from pathlib import Path

from perfgate.errors import PerfgateError
from perfgate.fixture import PROFILE_CALLS
from perfgate.measure.ncu import NcuSettings
from perfgate.measure.profile_child import NVTX_PREFIX
from perfgate.model import Metric
from perfgate.parse.records import NcuLaunch, Timeline
from perfgate.session import CHILD_ENV, PerfgateSession


def child_command(nodeids: list[str]) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--no-header", *nodeids]


def profile_session(state: PerfgateSession) -> str:
    """Profile with each requested tool; attach metrics or "profile failed" to every case. Returns the
    profiler settings line recorded with the run."""
    s = state.settings
    out_dir = (s.report_dir or state.rootdir / ".perfgate") / "profiles"
    nodeids = sorted(set(state.nodeids.values()))
    metrics: dict[str, list[Metric]] = defaultdict(list)
    errors: dict[str, list[str]] = defaultdict(list)
    described = []
    for tool in ("nsys", "ncu"):
        if tool not in s.profile:
            continue
        started = time.monotonic()
        try:
            found, line = _run_tool(tool, state, nodeids, out_dir)
            described.append(line)
            for case_id in state.results:
                if case_id in found:
                    metrics[case_id] += found[case_id]
                else:
                    errors[case_id].append(f"{tool}: no kernel launches of this case in the {tool} report")
        except PerfgateError as err:
            for case_id in state.results:
                errors[case_id].append(f"{tool}: {err}")
        state.messages.append(f"perfgate: {tool} phase took {time.monotonic() - started:.1f} s")
    for case_id, res in list(state.results.items()):
        state.results[case_id] = res.with_metrics(tuple(metrics.get(case_id, ())), tuple(errors.get(case_id, ())))
    return "; ".join(described)


def _run_tool(tool: str, state: PerfgateSession, nodeids: list[str], out_dir: Path) -> tuple[dict[str, list[Metric]], str]:
    env = {**os.environ, CHILD_ENV: tool}
    cmd = child_command(nodeids)
    timeout = state.settings.profile_timeout_s
    if tool == "nsys":
        from perfgate.measure import nsys
        from perfgate.parse.nsys_sqlite import read_nsys_sqlite

        rep = nsys.profile(cmd, out_dir / "perfgate-nsys", timeout, env, state.rootdir)
        timeline = read_nsys_sqlite(nsys.export_sqlite(rep, timeout))
        return nsys_case_metrics(timeline, PROFILE_CALLS), f"nsys: {rep}"
    from perfgate.measure import ncu
    from perfgate.parse.ncu_report_file import read_ncu_report

    settings = NcuSettings(sections=state.settings.ncu_sections or NcuSettings().sections,
                           metrics=state.settings.ncu_metrics, named_set=state.settings.ncu_set)
    rep = ncu.profile(cmd, out_dir / "perfgate-ncu", settings, timeout, env, state.rootdir)
    return ncu_case_metrics(read_ncu_report(rep)), settings.describe(ncu.version()) + f"; report {rep}"


def case_of(ranges: tuple[str, ...]) -> str | None:
    """The case a launch belongs to: its innermost perfgate range (user ranges may nest inside)."""
    for text in reversed(ranges):
        if text.startswith(NVTX_PREFIX):
            return text[len(NVTX_PREFIX):]
    return None


def nsys_case_metrics(timeline: Timeline, calls: int) -> dict[str, list[Metric]]:
    """Per case and kernel name: launches and GPU time per call, registers, shared memory; per case:
    memcpy bytes per call (GPU work of a case ends inside its range: the child synchronises there)."""
    grouped: dict[tuple[str, str], list] = defaultdict(list)
    for k in timeline.kernels:
        case = case_of(k.nvtx_stack or ((k.nvtx_range,) if k.nvtx_range else ()))
        if case is not None:
            grouped[(case, k.name)].append(k)
    out: dict[str, list[Metric]] = defaultdict(list)
    for (case, name), launches in sorted(grouped.items()):
        regs = [k.registers_per_thread for k in launches if k.registers_per_thread is not None]
        shared = [k.shared_mem_bytes for k in launches if k.shared_mem_bytes is not None]
        out[case] += [
            Metric("nsys.launches_per_call", len(launches) / calls, "", "nsys", name),
            Metric("nsys.kernel_ns_per_call", sum(k.duration_ns for k in launches) / calls, "ns", "nsys", name),
        ]
        if regs:
            out[case].append(Metric("nsys.registers_per_thread", float(max(regs)), "register", "nsys", name))
        if shared:
            out[case].append(Metric("nsys.shared_mem_bytes", float(max(shared)), "byte", "nsys", name))
    for r in timeline.nvtx_ranges:
        case = case_of((r.text,))
        if case is None or case not in out:
            continue
        moved = sum(m.bytes for m in timeline.memory_ops if m.kind != "memset" and r.start_ns <= m.start_ns <= r.end_ns)
        out[case].append(Metric("nsys.memcpy_bytes_per_call", moved / calls, "byte", "nsys", ""))
    return dict(out)


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
