"""The rounds as records: the plan (rounds per stage, stages, each side's samples per round), one side's rounds
of a case, a case's rounds on every side, and everything the workers measured and said (the Measurement the
coordinator fills and compare.py judges).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from perfgate.ab.protocol import Prepared, RoundSamples, Side, WorkerFailed
from perfgate.model import Environment, Timer, UnmeasuredTest

HOST_TURN_MS = 1.0  # a host-clock side's samples in one round last about this long (samples_for)
HOST_SAMPLE_MS = 0.01  # a host-clock sample lasts at least this (measure/host_clock.py: MIN_SAMPLE_NS)


@dataclass(frozen=True)
class RoundPlan:
    rounds: int = 20  # per stage
    stages: int = 3  # at most: 1 + confirmation stages
    round_ms: float = 40.0  # one side's share of a round (samples = round_ms / one call, clamped)
    min_samples: int = 5  # per round, whatever the call's length
    max_samples: int = 200  # per round (samples_for)
    timeout_s: float = 900.0  # the longest one step may take (a test body, compiling a case, a round)
    seed: int = 0
    start_timeout_s: float = 900.0  # starting: importing the tree's code and collecting its tests
    skip_same_code: bool = False  # a case whose sides run the same compiled code is not measured (same_code.py)

    @property
    def collect_timeout_s(self) -> float:
        return max(self.timeout_s, self.start_timeout_s)

    def samples_for(self, per_call_ms: float, timer: Timer = Timer.CUDA_EVENT) -> int:
        """One side's samples in one round: its share of the round's time, at most max_samples, at least
        min_samples. On the host clock a side's turn lasts about HOST_TURN_MS of samples (each at least
        HOST_SAMPLE_MS long): there what moves a round's ratio is how far apart in time the two sides' turns
        lie more than how many samples a turn takes (lab/ab_host_samples.py on the loaded development machine:
        turns of 25 to 200 samples ~4 ms apart gave 20-round means of the same spread, sd 0.76-0.82%), while
        every sample of a turn costs time; a steady offset between the sides is the rule's to bound
        (ratios.offsets_unknown). CUDA events keep the round's share up to max_samples."""
        if timer is Timer.CUDA_EVENT:
            fits = self.round_ms // max(per_call_ms, 1e-9)
        else:  # (1 ms / 0.05 ms is 19.999...: the turn's samples are counted, not floored below the count)
            fits = math.floor(min(self.round_ms, HOST_TURN_MS) / max(per_call_ms, HOST_SAMPLE_MS) + 1e-9)
        return int(max(self.min_samples, min(self.max_samples, fits)))


@dataclass
class SideRounds:
    """One side's view of a case: its prepare reply and every round it measured, in time order."""

    prepared: Prepared
    rounds: list[RoundSamples] = field(default_factory=list)


@dataclass
class CaseRounds:
    case_id: str
    nodeid: str
    sides: dict[Side, SideRounds] = field(default_factory=dict)
    failed: dict[Side, str] = field(default_factory=dict)  # a side whose prepare failed: why
    orders: list[tuple[Side, ...]] = field(default_factory=list)
    stage_ends: list[int] = field(default_factory=list)  # round count at the end of each stage
    same_code: str = ""  # not measured: both sides run the same compiled code (the evidence)
    saved_ms: float = 0.0  # the GPU time its rounds would have taken at least (first stage)

    @property
    def paired(self) -> bool:
        return Side.BASE in self.sides and Side.HEAD in self.sides


@dataclass
class Measurement:
    """Everything the workers measured and said."""

    cases: list[CaseRounds] = field(default_factory=list)
    environments: dict[Side, Environment] = field(default_factory=dict)
    collected: dict[Side, tuple[str, ...]] = field(default_factory=dict)
    collect_errors: dict[Side, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    unmeasured: dict[Side, list[UnmeasuredTest]] = field(default_factory=lambda: defaultdict(list))
    exitstatus: dict[Side, int] = field(default_factory=dict)
    costs_s: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    notes: list[str] = field(default_factory=list)
    failure: WorkerFailed | None = None  # base or head stopped answering: what was measured until then
    sharing_ended: str = ""  # a shared host a side broke the contract of: why (measured separately instead)
    shared: bool = False  # every side in one process (False: a process per side): how offsets are bounded


NeedsStage = Callable[[CaseRounds, "Measurement"], bool]  # another stage of rounds for this case?
WantsAa = Callable[[str], bool]  # does this case need the A/A worker's rounds (no cached A/A)?
