"""The per-run object (kept in `config.stash`): settings, what was measured, and the outcome."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from perfgate.baseline import Baseline
from perfgate.model import CaseResult, Environment, GateResult
from perfgate.settings import MarkerOptions, Settings

CHILD_ENV = "PERFGATE_PROFILE_CHILD"  # set in the child pytest processes run under nsys / ncu


@dataclass
class PerfgateSession:
    settings: Settings
    rootdir: Path
    started_at: str
    started_monotonic: float = 0.0
    environment: Environment | None = None
    baseline: Baseline | None = None
    baseline_path: Path | None = None
    child_tool: str = ""  # "nsys" or "ncu" inside a profiling child, else ""
    results: dict[str, CaseResult] = field(default_factory=dict)
    markers: dict[str, MarkerOptions] = field(default_factory=dict)
    nodeids: dict[str, str] = field(default_factory=dict)  # case id -> pytest node id
    gate: GateResult | None = None
    run_id: int | None = None
    messages: list[str] = field(default_factory=list)  # shown in the terminal summary
    error: str = ""

    def record(self, result: CaseResult, nodeid: str, marker: MarkerOptions | None) -> None:
        if result.case_id in self.results:
            raise ValueError(f"perfgate: case {result.case_id!r} measured twice; give each measurement "
                             f"its own name with perfgate.measure(..., name=...)")
        self.results[result.case_id] = result
        self.nodeids[result.case_id] = nodeid
        if marker is not None:
            self.markers[result.case_id] = marker
