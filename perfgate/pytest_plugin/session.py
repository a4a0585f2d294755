"""The per-run object (kept in `config.stash`): settings, what was measured, and the outcome."""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from perfgate.baseline import Baseline
from perfgate.codec import case_problem
from perfgate.config.settings import Settings
from perfgate.gate.findings import GateFacts
from perfgate.measure.in_profiler import ChildRange
from perfgate.model import CaseResult, Environment, GateResult, Timer, UnmeasuredTest
from perfgate.pytest_plugin.arguments import ArgumentError


class Mode(str, enum.Enum):
    OFF = "off"  # plain pytest: each perf callable runs once, nothing is stored
    GATE = "gate"  # pytest --perfgate: measure, confirm, store, gate, report
    MEASURE_CHILD = "measure child"  # measure and write the results for the parent; no store, no gate
    PROFILE_CHILD = "profile child"  # run each case inside an NVTX range under nsys / ncu
    XDIST_WORKER = "xdist worker"  # measure on this worker's GPU and send the results to the controller
    AB = "A/B"  # --perfgate-base: run no test here; workers in both trees measure, perfgate.ab decides
    AB_WORKER = "A/B worker"  # serve each case to the A/B coordinator, round by round


@dataclass
class PerfgateSession:
    settings: Settings
    rootdir: Path
    started_at: str
    mode: Mode = Mode.OFF
    started_monotonic: float = 0.0
    before_s: float | None = None  # the process's age when the session began (python, imports, plugins)
    profile_child: ChildRange | None = None  # a profiler's child: what it wraps around each case
    child_output: Path | None = None
    child_nonce: str = ""  # echoed in the child's output (measure/handshake.py)
    environment: Environment | None = None
    baseline: Baseline | None = None
    baseline_path: Path | None = None
    facts: GateFacts = GateFacts()
    device: Any = None  # the NVML device of this process's GPU (measure.gpu_state.NvmlDevice) or None
    results: dict[str, CaseResult] = field(default_factory=dict)
    unmeasured: dict[str, UnmeasuredTest] = field(default_factory=dict)  # nodeid -> how it ended
    gate: GateResult | None = None
    run_id: int | None = None
    exit_code: int = 0
    messages: list[str] = field(default_factory=list)  # shown in the terminal summary
    terminal: list[str] = field(default_factory=list)  # the gate's table and findings, ending with its headline
    error: str = ""
    nodeid_prefix: str = ""  # before node ids when pytest's rootdir moved above the project (rootdir.py)
    ab_server: Any = None  # an A/B worker's end of the protocol (perfgate.ab.serve.CaseServer)
    exit_guard: Any = None  # the gate's os._exit guard (exit_guard.py), removed at unconfigure
    pytest_session: Any = None  # pytest's Session, to hold the gate's exit status against later hooks
    pid: int = field(default_factory=os.getpid)  # the process that started the session: it alone stores
    kernels: Any = None  # the compiled-kernel recorder (compiled.record.KernelRecorder), made on first use
    seen_modules: set[str] = field(default_factory=set)  # modules whose provenance a case already recorded

    @property
    def timer(self) -> Timer:
        """The clock every case of this session uses unless it names one: decided once, with the environment
        (asking per case spawned gcc/ld/ldconfig through ctypes' find_library, ~17 ms a case)."""
        return (
            Timer.CUDA_EVENT if self.environment is not None and self.environment.device_kind == "cuda" else Timer.HOST
        )

    @property
    def measuring(self) -> bool:
        return self.mode in (Mode.GATE, Mode.MEASURE_CHILD, Mode.XDIST_WORKER, Mode.AB_WORKER)

    def case_id(self, nodeid: str) -> str:
        """A node id (or a location's path) relative to the project, whatever pytest's rootdir."""
        return (
            nodeid[len(self.nodeid_prefix) :]
            if self.nodeid_prefix and nodeid.startswith(self.nodeid_prefix)
            else nodeid
        )

    @property
    def owns_process(self) -> bool:
        """Whether this is the process that started the session (a test's forked child is not: it never
        measures, stores, gates or sets the exit status)."""
        return os.getpid() == self.pid

    def check_new(self, case_id: str) -> None:
        if case_id in self.results:
            raise ArgumentError(
                f"perfgate: case {case_id!r} measured twice; give each measurement "
                f"its own name with perfgate.measure(..., name=...)"
            )

    def record(self, result: CaseResult) -> None:
        """Keep a measured case; one that could not be stored (a child or worker sent it) fails its test."""
        self.check_new(result.case_id)
        problem = case_problem(result)
        if problem:
            raise ArgumentError(f"perfgate: case {result.case_id!r}: {problem}")
        self.results[result.case_id] = result
        if self.child_output is not None:  # the parent counts this process's cases as they are measured
            from perfgate.measure.processes import progress_path

            with progress_path(self.child_output).open("a", encoding="utf-8") as fh:
                fh.write(result.case_id.replace("\n", " ") + "\n")

    def kernel_recorder(self) -> Any:
        """What records each case's compiled kernels, made once per session; None when nothing is recorded
        (`compiled_kernels = false`, the host clock, a profiler's child)."""
        env = self.environment
        if not self.settings.compiled_kernels or env is None or self.timer is not Timer.CUDA_EVENT:
            return None
        if self.kernels is None:
            from perfgate.compiled.occupancy import arch_of
            from perfgate.compiled.record import KernelRecorder, library_versions

            versions = {
                "torch": env.torch_version,
                "triton": env.triton_version,
                "cuda": env.cuda_version,
                "driver": env.driver_version,
            }
            self.kernels = KernelRecorder.for_device(arch_of(env.compute_capability), library_versions(versions))
        return self.kernels

    def autotune_pins(self, case_id: str) -> dict[str, str]:
        """The baseline's autotune choices for a case, when pinning is on."""
        if not self.settings.pin_autotune or self.baseline is None:
            return {}
        case = self.baseline.cases.get(case_id)
        return dict(case.autotune) if case else {}


SESSION_KEY = pytest.StashKey[PerfgateSession]()  # config.stash[SESSION_KEY]: the one owner of run state
# a measurement child's order (measure/handshake.py), taken before any conftest runs: the order, the refusal
# to explain when --perfgate is given, or None (no PERFGATE_MEASURE_CHILD)
ORDER_KEY = pytest.StashKey[Any]()
