"""The one orchestration: a measured (or stored) run + resolved settings -> confirmed, stored, gated,
published, baseline updated. `pytest --perfgate` and every `perfgate` command call `run_gate` (or, for
a verdict alone, `evaluate`); nothing else decides a verdict.

Two ways of measuring produce comparisons; one tail (`finish`) does everything after that for both:

    baseline mode  run_gate: noise window -> confirmation processes -> compare with the baseline --+
    A/B mode       ab/run.py: base and head side by side in rounds -> head against base -----------+
                                                                                                   v
        finish: findings (strict checks, what the pull request changed, cases not measured, the ceiling)
                -> store (an A/B run with its base side, paired) -> every output of the registry,
                scrubbed of secrets and fitted -> a baseline step (baseline mode) -> terminal, exit code
"""

from __future__ import annotations

import logging
import os
import statistics
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from perfgate.baseline import Baseline, baseline_path, load_baseline
from perfgate.config.settings import Settings
from perfgate.errors import BaselineError
from perfgate.gate.ceiling import Changes, baseline_changes
from perfgate.gate.common import past_shifts
from perfgate.gate.compare import compare_run
from perfgate.gate.confirm import Confirmer, confirm_suspects
from perfgate.gate.findings import BASELINE, Against, GateFacts, baseline_findings, common_findings
from perfgate.gate.window import WindowValues, judged_with_noise, with_noise
from perfgate.model import (
    AllowedMissing,
    CaseResult,
    Environment,
    GateResult,
    Run,
    RunInfo,
    RunKind,
    UnmeasuredTest,
)
from perfgate.report.views import GateView, View
from perfgate.store import history_exists
from perfgate.store.target import HistoryTarget

if TYPE_CHECKING:
    from perfgate.store.window import PassingGateMedian

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


@dataclass(frozen=True)
class Compared:
    """What a way of measuring hands the tail: the run it gates and its comparisons (with the findings only
    that way can make), and what they were made against."""

    run: Run  # the gated run (A/B: the head side)
    gate: GateResult
    against: Baseline | None  # the baseline (A/B: the base side's cases, as one)
    facts: GateFacts = GateFacts()
    allow_missing: tuple[AllowedMissing, ...] = ()  # which of `against`'s cases may go unmeasured
    changes: Changes | None = None  # each comparison's processes for the ceiling; None: against the baseline
    words: Against = BASELINE
    pair: Run | None = None  # A/B: the base side, stored with the run
    view: View = GateView()


def finish_verdicts(compared: Compared, settings: Settings) -> GateResult:
    """The comparisons with every finding (the way of measuring's own, then every mode's) and strictness."""
    c = compared
    changes = c.changes if c.changes is not None else baseline_changes(c.run, c.against, c.gate)
    common = common_findings(c.run, c.against, c.gate, c.facts, c.allow_missing, changes, settings.ceiling_pct, c.words)
    return replace(c.gate, findings=(*c.gate.findings, *common), strict=settings.strict)


def baseline_compared(run: Run, baseline: Baseline | None, settings: Settings, facts: GateFacts) -> Compared:
    """Baseline mode's comparisons: each case against its baseline (pure)."""
    gate = compare_run(run.results, baseline, run.environment, settings)
    gate = replace(gate, findings=baseline_findings(run, baseline, gate, facts))
    return Compared(run, gate, baseline, facts, tuple(settings.allow_missing))


def evaluate(run: Run, baseline: Baseline | None, settings: Settings, facts: GateFacts) -> GateResult:
    """The verdicts and findings for a run: pure, and the same for the plugin and `perfgate compare`."""
    return finish_verdicts(baseline_compared(run, baseline, settings, facts), settings)


@dataclass(frozen=True)
class GateRequest:
    run: Run
    settings: Settings
    baseline: Baseline | None
    baseline_path: Path
    facts: GateFacts
    confirmer: Confirmer | None = None  # the plugin re-measures; a stored run already carries its confirmations
    # read the history now: the noise window and its recent steps (a stored run carries the noise it was gated
    # with; re-gating it reads nothing else)
    resolve_noise: bool = True
    store: bool = True
    may_write_baseline: bool = True  # never from a run whose tests failed, never from `perfgate compare`


@dataclass(frozen=True)
class GateOutcome:
    run: Run
    gate: GateResult
    messages: tuple[str, ...]
    exit_code: int  # 0: passed (or a baseline update), 1: the gate failed
    terminal: tuple[str, ...] = ()  # the table, notes and findings, ending with the headline (secrets masked)
    pair: Run | None = None  # A/B: the base side, as stored


def run_gate(req: GateRequest) -> GateOutcome:
    """Baseline mode: noise -> confirm -> compare, then the tail (`finish`). PerfgateError on bad input or a
    failed store."""
    s, messages = req.settings, list[str]()
    run = req.run
    if not s.noise_branch:
        s, line = with_noise_branch(s)
        messages += filter(None, [line])
    shifts: tuple[float, ...] = ()
    if req.resolve_noise and run.results:
        windows, shifts = noise_windows(run, req.baseline, s)
        run = replace(run, results=with_noise(run.results, req.baseline, s, windows))
    if req.confirmer is not None and s.confirm_runs and run.results:
        run = confirm_suspects(run, req.baseline, s, req.confirmer, messages)
    # a stored run re-gated (`perfgate compare`) reads the run and the baseline only, not the history around it
    facts = replace(
        req.facts, change_points=change_point_lines(run, s) if req.resolve_noise else (), past_shifts_pct=shifts
    )
    compared = baseline_compared(run, req.baseline, s, facts)
    if req.resolve_noise:
        compared, lines = _named_untouched(compared, s)
        messages += lines
    outcome = finish(
        compared,
        s,
        store=req.store,
        baseline_path=req.baseline_path if req.may_write_baseline else None,
    )
    return replace(outcome, messages=(*messages, *outcome.messages))


def _named_untouched(compared: Compared, s: Settings) -> tuple[Compared, tuple[str, ...]]:
    """A regressed case whose code did not change since the baseline's commit is named so (gate/untouched.py);
    it still fails: files the provenance cannot see may be the cause."""
    from perfgate.gate.untouched import regressed_untouched

    found, lines = regressed_untouched(compared.run, compared.gate, compared.against, s.rootdir)
    gate = replace(compared.gate, findings=(*compared.gate.findings, *found))
    return replace(compared, gate=gate), lines


def finish(
    compared: Compared,
    settings: Settings,
    *,
    store: bool = True,
    publish: bool = True,
    baseline_path: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> GateOutcome:
    """The one tail of every way of measuring: findings -> store (with the verdicts, in one transaction; an
    A/B run with its base side) -> every requested output -> the baseline step (when `baseline_path` is
    given: baseline mode) -> terminal lines and the exit code. PerfgateError on a failed store or output."""
    from perfgate.report.publish import publish as write_outputs
    from perfgate.report.scrub import terminal_scrubber

    s, env = settings, os.environ if environ is None else environ
    gate = finish_verdicts(compared, s)
    run, pair, messages = compared.run, compared.pair, list[str]()
    if store and s.store and (run.results or (pair is not None and pair.results)):
        run, pair = _store(run, pair, s.db_path, gate, messages)
    if publish:
        messages += write_outputs(gate, run, s, compared.against, env, compared.view)
    if baseline_path is not None:
        line = _baseline_step(run, baseline_path, s)
        if line:
            messages.append(line)
    failed = gate.failed and not s.update_baseline
    terminal = compared.view.terminal(terminal_scrubber(env).gate(gate), s.full_table)
    return GateOutcome(run, gate, tuple(messages), 1 if failed else 0, tuple(terminal), pair)


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


def noise_windows(
    run: Run, baseline: Baseline | None, settings: Settings
) -> tuple[dict[str, WindowValues], tuple[float, ...]]:
    """Each compared case's noise window from the history: its last `noise_window` passing gate runs on
    `noise_branch` on this GPU model since the baseline's last update and the case's last accepted change
    point (none without a history, a baseline or a window); and the runs' shifts against today's centres,
    newest first (gate/common.py `past_shifts`: whether a shift comes and goes)."""
    if baseline is None or settings.noise_window <= 0 or not settings.store or not history_exists(settings.db_path):
        return {}, ()
    from perfgate.store import open_store
    from perfgate.store.window import recent_passing_gate_medians

    ids = [r.case_id for r in run.results if r.case_id in baseline.cases]
    branch = None if settings.noise_branch == "*" else settings.noise_branch or "main"
    # a recalibration measured other code than the runs before it (an uncalibrated baseline is one of its
    # own runs: nothing before it to leave out); a re-anchor after it moves the centres, not the code, so the
    # window still starts at the last calibration, not at the newest update
    calibrations = [u for u in baseline.updates if u.calibrated_runs]
    updated = calibrations[-1].at if calibrations else ""
    with open_store(settings.db_path, readonly=True) as store:
        # processes measured before the baseline's last update or an accepted change point ran other code
        starts = store.window_starts(run.environment.device_name, ids, after=updated)
        found = recent_passing_gate_medians(
            store, run.environment.comparability_key(), branch, settings.noise_window, ids, starts
        )
    for cid, points in found.items():  # an uncalibrated case's window (gate/window.py)
        if not baseline.cases[cid].calibrated:
            found[cid] = judged_with_noise(points, len(baseline.cases[cid].time_values()))
    windows = {
        cid: WindowValues(
            tuple(p.median_ms for p in points),
            tuple(p.speedup for p in points if p.speedup is not None),
            tuple(p.median_mcycles for p in points if p.median_mcycles is not None),
        )
        for cid, points in found.items()
    }
    return windows, _past_shifts(found, baseline)


def _past_shifts(found: Mapping[str, Sequence[PassingGateMedian]], baseline: Baseline) -> tuple[float, ...]:
    """The window's runs' common shifts in time against today's centres (each case weighted by its
    calibration's spread), newest first."""
    by_run: dict[int, list[tuple[float, float]]] = {}
    for cid, points in found.items():
        values = baseline.cases[cid].time_values()
        if not baseline.cases[cid].calibrated or len(values) < 2 or not points:
            continue
        centre = statistics.fmean(values)
        unit = max(100.0 * statistics.stdev(values) / centre, 1e-3)
        for p in points:
            by_run.setdefault(p.run_id, []).append((100.0 * (p.median_ms - centre) / centre, unit))
    return past_shifts(by_run)


def change_point_lines(run: Run, settings: Settings) -> tuple[str, ...]:
    """The not yet accepted steps in the recent history (on `noise_branch`) of this run's cases: a creep
    that each run hid under its threshold is named, with its commit range; it never fails the gate."""
    if not run.results or not settings.store or not history_exists(settings.db_path):
        return ()
    from perfgate.store import open_store
    from perfgate.trends.history import recent_changes

    branch = None if settings.noise_branch == "*" else settings.noise_branch or "main"
    with open_store(settings.db_path, readonly=True) as store:
        found = recent_changes(store, [r.case_id for r in run.results], run.environment.device_name, branch)
    if found:  # a range that touched none of a case's files is named (a range git cannot diff stays unnamed)
        from perfgate.gate.untouched import code_check, with_untouched_steps

        found, _ = with_untouched_steps(found, code_check(run.results, settings.rootdir))
    return tuple(
        f"{c.case_id}: a {c.change_pct:+.1f}% step between run {c.last_before.run_id} "
        f"({c.last_before.git_commit[:12] or 'no commit'}) and run {c.first_after.run_id} "
        f"({c.first_after.git_commit[:12] or 'no commit'})"
        + (": the same commit on both sides, a machine change, not the code" if c.cause == "machine" else "")
        + (": the commits between touched none of its files, not this case's code" if c.code_untouched else "")
        + ": review with `perfgate history --changes`, accept with --accept"
        for c in found
    )


def _store(
    run: Run, pair: Run | None, db_path: HistoryTarget, gate: GateResult, messages: list[str]
) -> tuple[Run, Run | None]:
    """The run with its verdicts (and an A/B run's base side before it) in one transaction."""
    from perfgate.store import open_store
    from perfgate.store.verdicts import verdicts_of

    with open_store(db_path) as store:
        if pair is None:
            run = replace(run, run_id=store.save_run(run, verdicts_of(gate)))
        else:
            base_id, head_id = store.save_runs([(pair, None), (run, verdicts_of(gate))])
            run, pair = replace(run, run_id=head_id), replace(pair, run_id=base_id)
    if pair is not None:
        messages.append(f"perfgate: stored runs {pair.run_id} (base) and {run.run_id} (head) in {db_path}")
        return run, pair
    messages.append(f"perfgate: stored run {run.run_id} in {db_path}")
    if run.run_id == 1:  # the history's first run
        from perfgate.measure.git import history_hint

        messages += filter(None, [history_hint(db_path)])
    return run, pair


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
