"""The one orchestration: a measured (or stored) run + resolved settings -> confirmed, stored, gated,
published, baseline updated. `pytest --perfgate` and every `perfgate` command call `run_gate` (or, for
a verdict alone, `evaluate`); nothing else decides a verdict.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from perfgate.baseline import Baseline, baseline_path, load_baseline
from perfgate.config.settings import Settings
from perfgate.errors import BaselineError
from perfgate.gate.compare import compare_run
from perfgate.gate.confirm import Confirmer, confirm_suspects
from perfgate.gate.findings import GateFacts, findings_for
from perfgate.gate.window import WindowValues, with_noise
from perfgate.model import CaseResult, Environment, GateResult, Run, RunInfo, RunKind, UnmeasuredTest

log = logging.getLogger("perfgate")


def build_run(
    results: Iterable[CaseResult],
    unmeasured: Iterable[UnmeasuredTest],
    environment: Environment,
    rootdir: Path,
    started_at: str,
    profile_settings: str = "",
    kind: RunKind = RunKind.GATE,
) -> Run:
    """What one process measured, as one Run record: a fresh identity, the git state of `rootdir`, the
    command line, cases and unmeasured tests in a stable order."""
    from perfgate.measure.environment import command_line, utc_now
    from perfgate.measure.git import git_info

    commit, branch, dirty = git_info(rootdir)
    info = RunInfo(
        started_at=started_at,
        finished_at=utc_now(),
        git_commit=commit,
        git_branch=branch,
        git_dirty=dirty,
        hostname=environment.hostname,
        argv=command_line(),
        profile_settings=profile_settings,
        run_uid=uuid.uuid4().hex,
        unmeasured=tuple(sorted(unmeasured, key=lambda u: u.nodeid)),
        kind=kind,
    )
    return Run(info=info, environment=environment, results=tuple(sorted(results, key=lambda r: r.case_id)))


def resolve_baseline(settings: Settings, env: Environment) -> tuple[Path, Baseline | None, GateFacts]:
    """The baseline file for this device (or the one named), loaded and validated, and what the gate should
    know about its neighbours."""
    path = settings.baseline_file or baseline_path(settings.baseline_dir, env)
    if settings.baseline_file is not None and not path.exists():
        raise BaselineError(path, "no such file (named with --perfgate-baseline-file / --baseline-file)")
    baseline = load_baseline(path)
    return path, baseline, GateFacts(baseline_path=str(path), cuda_baselines=_cuda_baselines(settings, env))


def _cuda_baselines(settings: Settings, env: Environment) -> tuple[str, ...]:
    """CUDA baseline files in the baseline directory, when this run used the host clock."""
    if env.device_kind != "host" or not settings.baseline_dir.is_dir():
        return ()
    return tuple(sorted(p.name for p in settings.baseline_dir.glob("*.json") if not p.name.startswith("host-")))


def evaluate(run: Run, baseline: Baseline | None, settings: Settings, facts: GateFacts) -> GateResult:
    """The verdicts and findings for a run: pure, and the same for the plugin and `perfgate compare`."""
    gate = compare_run(run.results, baseline, run.environment, settings)
    return replace(
        gate,
        findings=findings_for(run, baseline, gate, facts, settings.allow_missing, settings.ceiling_pct),
        strict=settings.strict,
    )


@dataclass(frozen=True)
class GateRequest:
    run: Run
    settings: Settings
    baseline: Baseline | None
    baseline_path: Path
    facts: GateFacts
    confirmer: Confirmer | None = None  # the plugin re-measures; a stored run already carries its confirmations
    resolve_noise: bool = True  # read the noise window now (a stored run carries the noise it was gated with)
    store: bool = True
    may_write_baseline: bool = True  # never from a run whose tests failed, never from `perfgate compare`


@dataclass(frozen=True)
class GateOutcome:
    run: Run
    gate: GateResult
    messages: tuple[str, ...]
    exit_code: int  # 0: passed (or a baseline update), 1: the gate failed


def run_gate(req: GateRequest) -> GateOutcome:
    """Noise -> confirm -> gate -> store (with the verdicts) -> publish -> baseline. PerfgateError on bad
    input or a failed store."""
    from perfgate.report.publish import publish

    s, messages = req.settings, list[str]()
    run = req.run
    if not s.noise_branch:
        s, line = with_noise_branch(s)
        messages += filter(None, [line])
    if req.resolve_noise and run.results:
        run = replace(run, results=with_noise(run.results, req.baseline, s, noise_windows(run, req.baseline, s)))
    if req.confirmer is not None and s.confirm_runs and run.results:
        run = confirm_suspects(run, req.baseline, s, req.confirmer, messages)
    facts = replace(req.facts, change_points=change_point_lines(run, s))
    gate = evaluate(run, req.baseline, s, facts)
    if req.store and s.store and run.results:  # stored with its verdicts, in one transaction
        run = _store(run, s.db_path, gate)
        messages.append(f"perfgate: stored run {run.run_id} in {s.db_path}")
        if run.run_id == 1:  # the history's first run
            from perfgate.measure.git import history_hint

            messages += filter(None, [history_hint(s.db_path)])
    messages += publish(gate, run, s, req.baseline)
    if req.may_write_baseline:
        line = _baseline_step(run, req.baseline_path, s)
        if line:
            messages.append(line)
    failed = gate.failed and not s.update_baseline
    return GateOutcome(run, gate, tuple(messages), 1 if failed else 0)


def with_noise_branch(settings: Settings) -> tuple[Settings, str]:
    """`settings` with noise_branch resolved to the repository's default branch, and a loud line when git
    could not tell which that is (a `master` repository read as `main` would get no history noise)."""
    from perfgate.measure.git import default_branch

    branch, known = default_branch(settings.rootdir)
    line = (
        ""
        if known
        else "perfgate: WARNING: git names no default branch here (no origin/HEAD, neither or both of main and "
        "master): the noise window and change points read branch 'main'; set [tool.perfgate] noise_branch"
    )
    return replace(settings, noise_branch=branch), line


def noise_windows(run: Run, baseline: Baseline | None, settings: Settings) -> dict[str, WindowValues]:
    """Each compared case's noise window from the history: its last `noise_window` passing gate runs on
    `noise_branch` on this GPU model since the baseline's last update and the case's last accepted change
    point (none without a history, a baseline or a window)."""
    if baseline is None or settings.noise_window <= 0 or not settings.store or not settings.db_path.exists():
        return {}
    from perfgate.store import open_store
    from perfgate.store.window import recent_passing_gate_medians

    ids = [r.case_id for r in run.results if r.case_id in baseline.cases]
    branch = None if settings.noise_branch == "*" else settings.noise_branch or "main"
    # a recalibration measured other code than the runs before it (an uncalibrated baseline is one of its
    # own runs: nothing before it to leave out)
    last = baseline.updates[-1] if baseline.updates else None
    updated = last.at if last is not None and last.calibrated_runs else ""
    with open_store(settings.db_path, readonly=True) as store:
        # processes measured before the baseline's last update or an accepted change point ran other code
        starts = store.window_starts(run.environment.device_name, ids, after=updated)
        found = recent_passing_gate_medians(
            store, run.environment.comparability_key(), branch, settings.noise_window, ids, starts
        )
    return {
        cid: WindowValues(tuple(p.median_ms for p in points), tuple(p.speedup for p in points if p.speedup is not None))
        for cid, points in found.items()
    }


def change_point_lines(run: Run, settings: Settings) -> tuple[str, ...]:
    """The not yet accepted steps in the recent history (on `noise_branch`) of this run's cases: a creep
    that each run hid under its threshold is named, with its commit range; it never fails the gate."""
    if not run.results or not settings.store or not settings.db_path.exists():
        return ()
    from perfgate.store import open_store
    from perfgate.trends.history import recent_changes

    branch = None if settings.noise_branch == "*" else settings.noise_branch or "main"
    with open_store(settings.db_path, readonly=True) as store:
        found = recent_changes(store, [r.case_id for r in run.results], run.environment.device_name, branch)
    return tuple(
        f"{c.case_id}: a {c.change_pct:+.1f}% step between run {c.last_before.run_id} "
        f"({c.last_before.git_commit[:12] or 'no commit'}) and run {c.first_after.run_id} "
        f"({c.first_after.git_commit[:12] or 'no commit'})"
        + (": the same commit on both sides, a machine change, not the code" if c.cause == "machine" else "")
        + ": review with `perfgate history --changes`, accept with --accept"
        for c in found
    )


def _store(run: Run, db_path: Path, gate: GateResult) -> Run:
    from perfgate.store import open_store
    from perfgate.store.verdicts import verdicts_of

    with open_store(db_path) as store:
        return replace(run, run_id=store.save_run(run, verdicts_of(gate)))


def _baseline_step(run: Run, path: Path, s: Settings) -> str:
    """Update on request; bootstrap a missing baseline (not in strict mode, where it is a finding)."""
    from perfgate.baseline.write import update_baseline_file, updated_baseline
    from perfgate.measure.environment import who

    if not run.results:
        return ""
    if s.update_baseline:
        update_baseline_file(path, lambda old: updated_baseline(old, run, path, who(), s.reason))
        return f"perfgate: baseline {path} updated with {len(run.results)} case(s), uncalibrated: {s.reason}"
    if path.exists():  # nothing to bootstrap: not a second parse of a large baseline under the lock
        return ""
    if s.strict or not s.store:  # --perfgate-no-store writes nothing it was not asked for by name
        return f"perfgate: {'strict' if s.strict else '--perfgate-no-store'}: no initial baseline written for {path}"
    written = update_baseline_file(
        path,
        lambda old: (
            None if old is not None else updated_baseline(None, run, path, who(), "initial baseline (none existed)")
        ),
    )
    if written is None:
        return ""
    return (
        f"perfgate: no baseline for {run.environment.device_name}; wrote {path} from this run "
        f"({len(run.results)} case(s)). Review and commit it, or run perfgate calibrate."
    )
