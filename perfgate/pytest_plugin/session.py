"""The per-run object (kept in `config.stash`): settings, what was measured, and the outcome."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from perfgate.baseline import Baseline
from perfgate.config.settings import MarkerOptions, Settings
from perfgate.gate.findings import GateFacts
from perfgate.model import CaseResult, Environment, GateResult, UnmeasuredTest


class Mode(str, enum.Enum):
    OFF = "off"  # plain pytest: each perf callable runs once, nothing is stored
    GATE = "gate"  # pytest --perfgate: measure, confirm, store, gate, report
    MEASURE_CHILD = "measure child"  # measure and write the results for the parent; no store, no gate
    PROFILE_CHILD = "profile child"  # run each case inside an NVTX range under nsys / ncu
    XDIST_WORKER = "xdist worker"  # measure on this worker's GPU and send the results to the controller


@dataclass
class PerfgateSession:
    settings: Settings
    rootdir: Path
    started_at: str
    mode: Mode = Mode.OFF
    started_monotonic: float = 0.0
    profile_tool: str = ""
    child_output: Path | None = None
    environment: Environment | None = None
    baseline: Baseline | None = None
    baseline_path: Path | None = None
    facts: GateFacts = GateFacts()
    device: Any = None  # the NVML device of this process's GPU (measure.gpu_state.NvmlDevice) or None
    results: dict[str, CaseResult] = field(default_factory=dict)
    markers: dict[str, MarkerOptions] = field(default_factory=dict)
    unmeasured: dict[str, UnmeasuredTest] = field(default_factory=dict)  # nodeid -> how it ended
    gate: GateResult | None = None
    run_id: int | None = None
    exit_code: int = 0
    messages: list[str] = field(default_factory=list)  # shown in the terminal summary
    error: str = ""

    @property
    def measuring(self) -> bool:
        return self.mode in (Mode.GATE, Mode.MEASURE_CHILD, Mode.XDIST_WORKER)

    def record(self, result: CaseResult) -> None:
        if result.case_id in self.results:
            raise ValueError(f"perfgate: case {result.case_id!r} measured twice; give each measurement "
                             f"its own name with perfgate.measure(..., name=...)")
        self.results[result.case_id] = result

    def autotune_pins(self, case_id: str) -> dict[str, str]:
        """The baseline's autotune choices for a case, when pinning is on."""
        if not self.settings.pin_autotune or self.baseline is None:
            return {}
        case = self.baseline.cases.get(case_id)
        return dict(case.autotune) if case else {}


SESSION_KEY = pytest.StashKey[PerfgateSession]()  # config.stash[SESSION_KEY]: the one owner of run state
