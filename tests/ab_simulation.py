"""Seeded A/B runs on the shipped decision functions: per case, rounds as the coordinator measures them (base,
head and the A/A twin in every round of every stage, more stages while `perfgate.ab.pairs.screen` asks for
them), the verdict of `perfgate.ab.ratios.judge_case` (the first pair, then, for a call, a fresh pair of
processes with its own twin), whole runs of m cases sharing the false-alarm budget. Used by
tests/test_ab_rates.py and scripts/ab_rates.py (importable helpers, not a test module).

The noise is drawn as docs/evidence/ab-noise.md measured it on the H100: per case a round noise and a
process-offset scale, per process an offset (steady for the process's life), per round each side's own
noise (normal, or Student's t with 3 dof at the same sd), a drift every side shares (rounds cancel it), and
wild rounds: a window something else hit, one side's round 5-150% slower.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from perfgate.ab.compare import AbRule
from perfgate.ab.pairs import screen
from perfgate.ab.protocol import Prepared, RoundSamples, Side
from perfgate.ab.ratios import judge_case
from perfgate.ab.rounds import CaseRounds, Measurement, SideRounds
from perfgate.ab.schedule import round_orders
from perfgate.gate.ratio import RatioDecision
from perfgate.metrics import TIME_METRIC
from perfgate.model import CaseResult, Timer, Verdict
from perfgate.stats import summarize

ROUNDS = 20  # per stage: the shipped ab_rounds
STAGES = 3  # 1 + the shipped confirm_runs


@dataclass(frozen=True)
class Kind:
    """How one kind of case behaves (log units; ranges are drawn uniformly per case)."""

    name: str
    round_sd: tuple[float, float]  # sd of a round's log ratio head / base
    offset_sd: tuple[float, float]  # sd of the offset between two processes of the same code
    wild: float = 0.02  # share of side-rounds a window hit
    t3: bool = False  # Student's t (3 dof) round noise instead of normal


# Separate processes (docs/evidence/ab-noise.md, sessions J, K, M, L): the 12 us add's processes 1-3% apart,
# the long kernels' ~0.1-0.3%; round noise with the wild rounds set aside.
SEPARATE = (
    Kind("12 us add", (0.006, 0.013), (0.01, 0.03)),
    Kind("cuBLAS GEMM", (0.012, 0.023), (0.001, 0.004)),
    Kind("Triton matmul", (0.012, 0.025), (0.001, 0.004)),
    Kind("1 GB copy", (0.0005, 0.0015), (0.001, 0.003)),
    Kind("attention", (0.0015, 0.003), (0.001, 0.003)),
)
# One shared process (session N): the add's twin and head within their rounds' noise of the base over 212
# comparisons; its rounds are noisier there (1.3-2.4%).
SHARED = (
    Kind("12 us add", (0.013, 0.024), (0.0, 0.001)),
    Kind("cuBLAS GEMM", (0.012, 0.023), (0.0, 0.0005)),
    Kind("Triton matmul", (0.012, 0.025), (0.0, 0.0005)),
    Kind("1 GB copy", (0.0005, 0.0015), (0.0, 0.0003)),
    Kind("attention", (0.0015, 0.003), (0.0, 0.0003)),
)


@dataclass(frozen=True)
class Suite:
    """m cases of these kinds (cycled), measured in one shared process or a process per side."""

    kinds: Sequence[Kind]
    cases: int
    shared: bool
    t3: bool = False  # every kind with Student's t rounds
    wild: float | None = None  # every kind with this share of wild side-rounds
    offset_scale: float = 1.0  # every offset sd times this (a stress: offsets beyond the measured)

    def kind(self, i: int) -> Kind:
        k = self.kinds[i % len(self.kinds)]
        return Kind(
            k.name,
            k.round_sd,
            (k.offset_sd[0] * self.offset_scale, k.offset_sd[1] * self.offset_scale),
            k.wild if self.wild is None else self.wild,
            k.t3 or self.t3,
        )


@dataclass
class Outcome:
    verdicts: list[tuple[str, Verdict, RatioDecision | None]] = field(default_factory=list)  # (kind, final, d)
    fresh_pairs: int = 0

    @property
    def failed(self) -> bool:
        return any(v is Verdict.REGRESSED for _, v, _ in self.verdicts)


class _Pair:
    """One pair of processes (base, head, A/A twin) of one case: offsets drawn once, rounds on demand."""

    def __init__(self, rng: np.random.Generator, kind: Kind, round_sd: float, offset_sd: float, change: float):
        side_sd = offset_sd / math.sqrt(2.0)  # two processes' offsets differ by offset_sd (sd)
        self.rng, self.kind, self.change = rng, kind, change
        self.noise_sd = round_sd / math.sqrt(2.0)  # each side's share of the round's ratio noise
        self.offset = {side: float(rng.normal(0.0, side_sd)) for side in (Side.BASE, Side.HEAD, Side.AA)}

    def value(self, side: Side, drift: float) -> float:
        e = self.rng.standard_t(3) / math.sqrt(3.0) if self.kind.t3 else self.rng.standard_normal()
        log = drift + self.offset[side] + self.noise_sd * float(e) + (self.change if side is Side.HEAD else 0.0)
        if self.rng.random() < self.kind.wild:
            log += math.log1p(float(self.rng.uniform(0.05, 1.5)))
        return 1.0e-2 * math.exp(log)  # 10 us


def _skeleton(case_id: str) -> CaseResult:
    return CaseResult(case_id, summarize([0.01], Timer.CUDA_EVENT), (0.01,), nodeid=case_id)


def _rounds(
    pair: _Pair, case_id: str, measurement: Measurement, rule: AbRule, shared: bool, py: random.Random
) -> CaseRounds:
    """A case's rounds as the coordinator measures them: stage 1, then stages while the screen asks."""
    case = CaseRounds(case_id, case_id)
    for side in (Side.BASE, Side.HEAD, Side.AA):
        case.sides[side] = SideRounds(Prepared(_skeleton(case_id), 0.01))
    needs_stage = screen(rule, {}, shared)
    drift = 0.0
    for stage in range(STAGES):
        for order in round_orders((Side.BASE, Side.HEAD, Side.AA), ROUNDS, py):
            drift += float(pair.rng.normal(0.0, 0.002))  # clocks and temperature: every side alike
            for side in order:
                case.sides[side].rounds.append(RoundSamples((pair.value(side, drift),)))
            case.orders.append(order)
        case.stage_ends.append(len(case.orders))
        if stage + 1 >= STAGES or not needs_stage(case, measurement):
            break
    return case


def run(
    suite: Suite,
    seed: int,
    change: float = 0.0,
    budget_pct: float = 1.0,
    fresh_pair: bool = True,
    min_effect_pct: float = 1.0,
) -> Outcome:
    """One A/B run of the suite, every case `change` (log) slower in the head; the final verdicts."""
    rng = np.random.default_rng(seed)
    py = random.Random(seed)
    rule = AbRule(false_alarm_pct=budget_pct, min_effect_pct=min_effect_pct, stages=STAGES, fresh_pair=fresh_pair)
    ratio_rule = rule.for_comparisons(suite.cases, separate=not suite.shared)
    ids = tuple(f"test_ab.py::test_case[{i}]" for i in range(suite.cases))
    measurement = Measurement(collected={Side.HEAD: ids})
    out = Outcome()
    for i, case_id in enumerate(ids):
        kind = suite.kind(i)
        round_sd, offset_sd = (float(rng.uniform(*r)) for r in (kind.round_sd, kind.offset_sd))
        first = _rounds(_Pair(rng, kind, round_sd, offset_sd, change), case_id, measurement, rule, suite.shared, py)
        d = judge_case(first, TIME_METRIC, None, ratio_rule)
        if d is not None and d.called and fresh_pair:
            out.fresh_pairs += 1
            fresh = _rounds(_Pair(rng, kind, round_sd, offset_sd, change), case_id, measurement, rule, suite.shared, py)
            d = judge_case(first, TIME_METRIC, None, ratio_rule, {case_id: fresh})
        out.verdicts.append((kind.name, d.verdict if d is not None else Verdict.UNCHANGED, d))
    return out


def runs(suite: Suite, count: int, seed: int = 0, **kw: float | bool) -> Iterator[Outcome]:
    for i in range(count):
        yield run(suite, seed * 1_000_003 + i, **kw)  # type: ignore[arg-type]
