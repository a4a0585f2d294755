"""What a gate says, the records from compare to report: each case and metric's comparison and its verdict,
the findings (why a green gate might not mean "measured, compared, fine"; strict mode fails on STRICT_KINDS),
and the gate result. perfgate.model re-exports every name here (`from perfgate.model import Verdict` works).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from perfgate.runs import Environment


class Direction(str, enum.Enum):
    """Which way is better for a metric."""

    LOWER = "lower_is_better"
    HIGHER = "higher_is_better"


class Verdict(str, enum.Enum):
    REGRESSED = "regressed"
    IMPROVED = "improved"
    UNCHANGED = "unchanged"
    INCONCLUSIVE = "inconclusive"  # above the noise band, below what the case can call a regression
    BELOW_TARGET = "below target"  # speedup against the reference below min_speedup
    NEW = "new"
    MISSING = "missing"
    NOT_COMPARABLE = "not comparable"
    PROFILE_FAILED = "profile failed"


@dataclass(frozen=True)
class Comparison:
    case_id: str
    metric: str
    unit: str
    direction: Direction
    verdict: Verdict
    kernel: str = ""
    baseline: float | None = None
    current: float | None = None
    change_pct: float | None = None
    ci_low_pct: float | None = None
    ci_high_pct: float | None = None
    p_value: float | None = None
    threshold_pct: float | None = None  # what each process must exceed (T)
    noise_pct: float | None = None  # between-process noise (calibrated cases)
    score: float | None = None  # change in units of the noise's standard error
    processes: int = 1  # process values behind `current` (1 + confirmation runs)
    note: str = ""
    detects_pct: float | None = None  # the change caught with 80% power ("detects >= X%")
    gated: bool = True  # False: reported only (a case with a reference is gated on its speedup)
    suspect: bool = False  # beyond the threshold on fewer processes than a verdict needs: measure again
    stages: int = 0  # processes a failure of this metric needs (0: not a between-process decision)
    # a smaller absolute change (in `unit`) is noise whatever its percent (peak memory: 64 KiB; a percentage:
    # 1 point); None: no such floor. Shown beside the threshold, so "+28.6% unchanged" explains itself.
    min_change: float | None = None

    @classmethod
    def words(
        cls, case_id: str, metric: str, note: str, kernel: str = "", verdict: Verdict = Verdict.UNCHANGED
    ) -> Comparison:
        """A reported row of words and no number (an explanation beside a case's verdict): never gated."""
        return cls(case_id, metric, "", Direction.LOWER, verdict, kernel=kernel, note=note, gated=False)


class FindingKind(str, enum.Enum):
    """Why a green gate might not mean "measured, compared, fine"; strict mode fails on STRICT_KINDS."""

    NO_CASES = "no perf case measured"
    NO_BASELINE = "no baseline"
    TEST_SKIPPED = "test skipped"
    TEST_ERRORED = "test errored"
    NOT_COMPARABLE = "not comparable"
    PROFILE_FAILED = "profile failed"
    HOST_CLOCK = "host clock against a CUDA baseline"
    INCONCLUSIVE = "inconclusive"
    THROTTLED = "throttled"
    STALE_BASELINE = "baseline may be stale"
    AUTOTUNE_CHANGED = "autotune choice changed"
    UNCALIBRATED = "uncalibrated baseline"
    HOST_DRIFT = "host state changed since calibration"
    CHANGE_POINT = "step change in the history"
    CODE_UNCHANGED = "regressed, its code unchanged"  # no file the case's code came from changed since its reference
    COMMON_SHIFT = "common-mode shift"  # most cases moved together: environment, machine or shared code
    INTERMITTENT_SHIFT = "intermittent shared state"  # a common shift that comes and goes between runs
    UNSEEN_MODE = "a mode the calibration did not see"  # window runs beyond every calibration process (gate/unseen.py)
    NOT_MEASURED = "baseline case not measured"  # not collected, deselected, renamed, or measured under another name
    ALLOWED_MISSING = "baseline case allowed to be missing"  # [tool.perfgate] allow_missing, with its reason
    BEYOND_CEILING = "beyond the ceiling"  # a process slower than ceiling_pct, whatever the noise says
    BASELINE_CHANGED = "baseline changed since the base ref"
    BASELINE_CHANGE_STATED = "baseline change stated"  # changed, and the pull request says it is intended
    BASELINE_UNVERIFIED = "baseline not checked against the base ref"
    SELECTION_CHANGED = "test selection changed since the base ref"  # A/B: the head's pytest selection options


STRICT_KINDS = frozenset(
    {
        FindingKind.NO_CASES,
        FindingKind.NO_BASELINE,
        FindingKind.TEST_SKIPPED,
        FindingKind.TEST_ERRORED,
        FindingKind.NOT_COMPARABLE,
        FindingKind.PROFILE_FAILED,
        FindingKind.HOST_CLOCK,
        FindingKind.NOT_MEASURED,
        FindingKind.BEYOND_CEILING,
        FindingKind.BASELINE_CHANGED,
        FindingKind.BASELINE_UNVERIFIED,
        FindingKind.COMMON_SHIFT,
        FindingKind.SELECTION_CHANGED,
    }
)


@dataclass(frozen=True)
class CommonShift:
    """Most of a run's cases moved together against their calibration (gate/common.py)."""

    shift_pct: float  # the median case's change (%), the amount every centre is moved by
    moved: int  # cases whose change has the shift's sign
    cases: int  # cases that took part
    spread_pct: float  # the median distance of a case's change from the shift (%)
    changed: tuple[str, ...] = ()  # "driver 550.54 -> 555.42", per changed environment field
    # False: declared only at the looser level a changed fingerprint allows (gate/common.py SIGN_P_CHANGED): the
    # centres move, the finding is a note
    sure: bool = True
    # False: smaller than half the rule's floor (gate/common.py): the centres move, no finding names it
    named: bool = True

    @property
    def variance_share(self) -> float:
        """The error of the shift in units of one case's noise, squared: var(median of m) ~ pi / 2 * s^2 / m."""
        return math.pi / 2.0 / self.cases


@dataclass(frozen=True)
class AllowedMissing:
    """Baseline cases a strict gate may miss (`[tool.perfgate] allow_missing`): a shell pattern on case ids
    and the reason, which every report shows."""

    pattern: str
    reason: str


@dataclass(frozen=True)
class Finding:
    kind: FindingKind
    message: str  # one line, safe to publish
    case_id: str = ""

    @property
    def fails_strict(self) -> bool:
        return self.kind in STRICT_KINDS


@dataclass(frozen=True)
class GateResult:
    comparisons: tuple[Comparison, ...]
    current_env: Environment | None = None
    baseline_env: Environment | None = None
    # per regressed case: the profiler comparisons of its kernels, moved ones first (the "why")
    explanations: dict[str, tuple[Comparison, ...]] = field(default_factory=dict)
    fail_on: frozenset[Verdict] = frozenset({Verdict.REGRESSED, Verdict.BELOW_TARGET})
    findings: tuple[Finding, ...] = ()
    strict: bool = False
    calibrated: bool = False
    common_shift: CommonShift | None = None  # most cases moved together; each was judged against it

    @property
    def failed(self) -> bool:
        return bool(self.failure_reasons)

    @property
    def failure_reasons(self) -> tuple[str, ...]:
        """One line per reason the gate fails: verdicts first, then strict-mode findings."""
        reasons = [
            f"{c.case_id}: {c.metric} {c.verdict.value}"
            for c in self.comparisons
            if c.verdict in self.fail_on and c.gated
        ]
        if self.strict:
            reasons += [f"strict: {f.message}" for f in self.findings if f.fails_strict]
        return tuple(reasons)

    def by_verdict(self, verdict: Verdict) -> tuple[Comparison, ...]:
        return tuple(c for c in self.comparisons if c.verdict is verdict)
