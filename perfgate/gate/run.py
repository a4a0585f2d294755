"""The one orchestration: a measured (or stored) run + resolved settings -> confirmed, stored, gated,
published, baseline updated. `pytest --perfgate` and every `perfgate` command call `run_gate` (or, for
a verdict alone, `evaluate`); nothing else decides a verdict.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from perfgate.baseline import Baseline, baseline_path, load_baseline
from perfgate.config.settings import Settings
from perfgate.errors import BaselineError, PerfgateError
from perfgate.gate.compare import compare_run
from perfgate.gate.findings import GateFacts, findings_for
from perfgate.metrics import SPEEDUP_METRIC, TIME_METRIC
from perfgate.model import CaseResult, Environment, GateResult, Run, RunInfo, UnmeasuredTest, Verdict

log = logging.getLogger("perfgate")

# case ids -> each case as one fresh process measured it (PerfgateError when that process fails)
Confirmer = Callable[[Sequence[str]], Mapping[str, CaseResult]]
SUSPECT = (Verdict.REGRESSED, Verdict.INCONCLUSIVE)
CONFIRMED_METRICS = (TIME_METRIC, SPEEDUP_METRIC)  # the metrics a fresh process re-measures


def build_run(results: Iterable[CaseResult], unmeasured: Iterable[UnmeasuredTest], environment: Environment,
              rootdir: Path, started_at: str, profile_settings: str = "") -> Run:
    """What one process measured, as one Run record: a fresh identity, the git state of `rootdir`, the
    command line, cases and unmeasured tests in a stable order."""
    from perfgate.measure.environment import command_line, utc_now
    from perfgate.measure.git import git_info

    commit, branch, dirty = git_info(rootdir)
    info = RunInfo(started_at=started_at, finished_at=utc_now(), git_commit=commit, git_branch=branch,
                   git_dirty=dirty, hostname=environment.hostname, argv=command_line(),
                   profile_settings=profile_settings, run_uid=uuid.uuid4().hex,
                   unmeasured=tuple(sorted(unmeasured, key=lambda u: u.nodeid)))
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
    return replace(gate, findings=findings_for(run, baseline, gate, facts), strict=settings.strict)


def suspects(gate: GateResult) -> list[str]:
    """Cases whose time (or speedup) verdict needs another process: inconclusive, or regressed on one
    process only."""
    return sorted({c.case_id for c in gate.comparisons if c.metric in CONFIRMED_METRICS and c.verdict in SUSPECT
                   and c.processes >= 1 and not (c.verdict is Verdict.REGRESSED and c.processes > 1)})


def confirm_suspects(run: Run, baseline: Baseline | None, settings: Settings, confirmer: Confirmer,
                     messages: list[str]) -> Run:
    """Re-measure suspect cases in fresh processes, round by round, until each is confirmed, cleared or
    the budget (`confirm_runs`) is spent. Only a regression that survives this fails the gate."""
    for round_no in range(1, settings.confirm_runs + 1):
        todo = suspects(compare_run(run.results, baseline, run.environment, settings, intervals=False))
        if not todo:
            break
        started = time.monotonic()
        try:
            fresh = confirmer(todo)
        except PerfgateError as err:
            messages.append(f"perfgate: confirmation run failed, keeping the unconfirmed verdicts: {err}")
            break
        # the cost of a confirmation is part of the gate's wall time: shown so it can be budgeted
        messages.append(f"perfgate: confirmed {len(todo)} suspect case(s) in a fresh process "
                        f"(round {round_no} of {settings.confirm_runs}): {time.monotonic() - started:.1f} s")
        run = replace(run, results=tuple(_confirmed(r, fresh[r.case_id]) if r.case_id in fresh else r
                                         for r in run.results))
    return run


def _confirmed(r: CaseResult, again: CaseResult) -> CaseResult:
    speedups = r.confirmation_speedups
    if r.speedup is not None and again.speedup is not None:
        speedups += (again.speedup.median,)
    return replace(r, confirmation_medians_ms=r.confirmation_medians_ms + (again.timing.median_ms,),
                   confirmation_speedups=speedups)


@dataclass(frozen=True)
class GateRequest:
    run: Run
    settings: Settings
    baseline: Baseline | None
    baseline_path: Path
    facts: GateFacts
    confirmer: Confirmer | None = None  # the plugin re-measures; a stored run already carries its confirmations
    store: bool = True
    may_write_baseline: bool = True  # never from a run whose tests failed, never from `perfgate compare`


@dataclass(frozen=True)
class GateOutcome:
    run: Run
    gate: GateResult
    messages: tuple[str, ...]
    exit_code: int  # 0: passed (or a baseline update), 1: the gate failed


def run_gate(req: GateRequest) -> GateOutcome:
    """Confirm -> store -> gate -> publish -> baseline. PerfgateError on bad input or a failed store."""
    from perfgate.report.publish import publish

    s, messages = req.settings, list[str]()
    run = req.run
    if req.confirmer is not None and s.confirm_runs and run.results:
        run = confirm_suspects(run, req.baseline, s, req.confirmer, messages)
    if req.store and s.store and run.results:
        run = _store(run, s.db_path)
        messages.append(f"perfgate: stored run {run.run_id} in {s.db_path}")
        if run.run_id == 1:  # the history's first run
            from perfgate.measure.git import history_hint

            messages += filter(None, [history_hint(s.db_path)])
    gate = evaluate(run, req.baseline, s, req.facts)
    messages += publish(gate, run, s, req.baseline)
    if req.may_write_baseline:
        line = _baseline_step(run, req.baseline_path, s)
        if line:
            messages.append(line)
    failed = gate.failed and not s.update_baseline
    return GateOutcome(run, gate, tuple(messages), 1 if failed else 0)


def _store(run: Run, db_path: Path) -> Run:
    from perfgate.store import open_store

    with open_store(db_path) as store:
        return replace(run, run_id=store.save_run(run))


def _baseline_step(run: Run, path: Path, s: Settings) -> str:
    """Update on request; bootstrap a missing baseline (not in strict mode, where it is a finding)."""
    from perfgate.baseline.write import update_baseline_file, updated_baseline
    from perfgate.measure.environment import who

    if not run.results:
        return ""
    if s.update_baseline:
        update_baseline_file(path, lambda old: updated_baseline(old, run, path, who(), s.reason))
        return f"perfgate: baseline {path} updated with {len(run.results)} case(s), uncalibrated: {s.reason}"
    if s.strict:
        return "" if path.exists() else f"perfgate: strict: no initial baseline written for {path}"
    written = update_baseline_file(
        path, lambda old: None if old is not None else updated_baseline(None, run, path, who(),
                                                                        "initial baseline (none existed)"))
    if written is None:
        return ""
    return (f"perfgate: no baseline for {run.environment.device_name}; wrote {path} from this run "
            f"({len(run.results)} case(s)). Review and commit it, or run perfgate calibrate.")
