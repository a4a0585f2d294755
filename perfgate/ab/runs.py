"""An A/B comparison's two sides as history records: each side a Run of its own kind (`ab-base`, `ab-head`), both
carrying the identity of their pair, the base's commit on the base side, and samples bounded like a gate run's.

A side measured every round's samples (up to rounds x stages x max_samples a case: 1.15 MB a side on the
bundled suite, against 19 KB for a gate run); its statistics are computed from all of them (ab/compare.py),
and the history keeps an evenly spaced `max_samples` of them in time order, as a gate run keeps at most
`max_samples`. Its reference's samples are thinned at the same places, so each kept pair is still a pair.
The base side is kept apart from the main branch's trend, change points and noise window by its kind.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace

from perfgate.model import CaseResult, Environment, Run, RunInfo, RunKind, UnmeasuredTest


@dataclass(frozen=True)
class SideFacts:
    """What one side's Run says about where it came from."""

    commit: str
    dirty: bool
    environment: Environment
    unmeasured: tuple[UnmeasuredTest, ...]
    results: tuple[CaseResult, ...]
    branch: str = ""  # the branch its tree had checked out ("": a commit)


def side_runs(
    head: SideFacts, base: SideFacts, how: str, ref: str, started_at: str, max_samples: int, anchor: bool = False
) -> tuple[Run, Run]:
    """(head, base) runs of one comparison: kinds, pairing, bounded samples. `how`: the rounds' plan, as
    each side's profile_settings starts; `anchor`: the base is the baseline's calibration commit (ab/anchor.py),
    both sides are marked so."""
    from perfgate.measure.environment import command_line, utc_now

    pair = uuid.uuid4().hex
    head_info = RunInfo(
        started_at,
        utc_now(),
        git_commit=head.commit,
        git_branch=head.branch,  # an anchor run's head: the default branch the nightly job checked out
        git_dirty=head.dirty,
        hostname=head.environment.hostname,
        argv=command_line(),
        profile_settings=f"{how}; head side, base {base.commit} ({ref})",
        run_uid=f"{pair}-head",
        unmeasured=head.unmeasured,
        kind=RunKind.AB_HEAD,
        ab_pair=pair,
        ab_anchor=anchor,
    )
    base_info = replace(
        head_info,
        git_commit=base.commit,
        git_branch=base.branch,
        git_dirty=base.dirty,
        hostname=base.environment.hostname,
        run_uid=f"{pair}-base",
        profile_settings=f"{how}; base side ({ref}) of head {head.commit or 'working tree'}",
        unmeasured=base.unmeasured,
        kind=RunKind.AB_BASE,
    )
    return (
        Run(head_info, head.environment, tuple(bounded(r, max_samples) for r in head.results)),
        Run(base_info, base.environment, tuple(bounded(r, max_samples) for r in base.results)),
    )


def bounded(r: CaseResult, max_samples: int) -> CaseResult:
    """The case with at most `max_samples` of its samples (evenly spaced, in time order; its statistics
    stay those of every sample)."""
    n = len(r.samples_ms)
    if n <= max_samples or max_samples < 2:
        return r
    keep = [round(i * (n - 1) / (max_samples - 1)) for i in range(max_samples)]
    speedup = r.speedup
    if speedup is not None and len(speedup.reference_samples_ms) == n:
        speedup = replace(speedup, reference_samples_ms=tuple(speedup.reference_samples_ms[i] for i in keep))
    return replace(r, samples_ms=tuple(r.samples_ms[i] for i in keep), speedup=speedup)
