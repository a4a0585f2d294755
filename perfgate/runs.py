"""A run's facts, as the history stores them beside its cases (model.Run): what it ran on (Environment), why it
was made (RunKind), when and from which commit (RunInfo), and the perf tests that measured nothing
(UnmeasuredTest, TestOutcome). perfgate.model re-exports every name here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


@dataclass(frozen=True)
class Environment:
    """What the numbers were measured on. `comparability_key` decides if two runs may be compared."""

    device_kind: str  # "cuda" or "host"
    device_name: str
    device_uuid: str = ""
    compute_capability: str = ""
    driver_version: str = ""
    cuda_version: str = ""
    torch_version: str = ""
    triton_version: str = ""
    python_version: str = ""
    perfgate_version: str = ""
    hostname: str = ""
    platform: str = ""
    # the host CPU (measure/machine.py), for host-timed runs what device_name is made from; "" when not
    # recorded (perfgate <= 0.2.0)
    cpu_brand: str = ""
    cpu_model: str = ""  # "family 6 model 143", "implementer 0x41 part 0xd0c"
    cpu_cores: str = ""  # logical cores, as text like every environment field
    cpu_caches: str = ""  # "L2 2 MiB, L3 32 MiB"
    os_release: str = ""  # "Linux 6.8.0"

    def comparability_key(self) -> tuple[str, str, str]:
        """Runs on another device model (or another timer) are not comparable."""
        return (self.device_kind, self.device_name, self.compute_capability)

    def comparable_with(self, other: Environment) -> bool:
        """Same device model and timer; a host baseline of perfgate <= 0.2.0, keyed by the bare brand string,
        stays comparable with today's name for that brand (which may add the CPU's model id)."""
        if self.comparability_key() == other.comparability_key():
            return True
        if self.device_kind != "host" or other.device_kind != "host":
            return False
        old, new = (self, other) if not self.cpu_model else (other, self)
        return not old.cpu_model and not old.cpu_brand and bool(new.cpu_brand) and old.device_name == new.cpu_brand


class TestOutcome(str, enum.Enum):
    """How a collected perf test ended when it measured nothing (strict mode reads these)."""

    __test__ = False  # not a pytest test class, whatever its name says

    SKIPPED = "skipped"
    FAILED = "failed"
    ERROR = "error"


@dataclass(frozen=True)
class UnmeasuredTest:
    """A collected perf test that ended without measuring (skipped, failed, errored)."""

    nodeid: str
    outcome: TestOutcome
    reason: str = ""


class RunKind(str, enum.Enum):
    """Why a run was made (stored with it: the noise of a case is read from gate runs only; an A/B run's
    two sides stay out of trends, change points and the noise window unless asked for)."""

    GATE = "gate"  # pytest --perfgate
    CALIBRATION = "calibration"  # one of perfgate calibrate's fresh processes
    CONFIRMATION = "confirmation"  # a fresh process re-measuring suspects (not stored today)
    IMPORT = "import"  # perfgate import-benchmark
    AB_BASE = "ab-base"  # A/B mode: the base commit's side (an older commit, measured beside the head)
    AB_HEAD = "ab-head"  # A/B mode: the head's side, gated against the base (its verdicts are stored)


AB_KINDS = (RunKind.AB_BASE, RunKind.AB_HEAD)


@dataclass(frozen=True)
class RunInfo:
    started_at: str  # ISO 8601 UTC
    finished_at: str
    git_commit: str = ""
    git_branch: str = ""
    git_dirty: bool = False
    hostname: str = ""
    argv: str = ""
    profile_settings: str = ""  # e.g. ncu clock/cache control, recorded with results
    run_uid: str = ""  # stable identity across machines: merging histories twice adds nothing
    unmeasured: tuple[UnmeasuredTest, ...] = ()
    kind: RunKind | None = RunKind.GATE  # None: stored before run kinds were recorded
    ab_pair: str = ""  # A/B mode: the identity both sides of one comparison share ("" for any other run)
    ab_anchor: bool = False  # A/B mode against the baseline's calibration commit (perfgate ab --anchor)
