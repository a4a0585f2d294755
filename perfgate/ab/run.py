"""A/B mode's way of producing comparisons: `pytest --perfgate --perfgate-base REF`, `perfgate ab REF` and every
step of `perfgate bisect` call `run_ab`.

    REF -> base worktree (cached) -> workers (base, head, and a second base for the A/A unless cached)
        -> rounds (coordinator.py) -> verdicts (compare.py) -> a fresh pair for the called cases
        -> gate/run.py's `finish`, the tail baseline mode goes through too: findings, strict checks, the
           ceiling, the history (both sides, paired: runs.py), every output, the exit code

Every phase's cost is measured, shown live (report/progress.py) and printed; the phases add up to the
total. Nothing is stored and no cache is written when a worker failed: the history gets whole runs of a
finished comparison or nothing.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from perfgate.ab import aa as aa_cache
from perfgate.ab.anchor import bisect_hint
from perfgate.ab.compare import AbComparison, compare_ab, side_results
from perfgate.ab.findings import pair_changes
from perfgate.ab.pairs import measure_pair
from perfgate.ab.parity import base_allow_missing, base_check, baseline_findings, selection_findings
from perfgate.ab.protocol import Side
from perfgate.ab.provenance import changed_paths, judge, located
from perfgate.ab.ratios import CALLS, gated_count
from perfgate.ab.rounds import Measurement
from perfgate.ab.runs import SideFacts, side_runs
from perfgate.ab.setup import AbRequest, Setup, relative_in, setup_run, worker_specs
from perfgate.ab.trace import round_trace
from perfgate.ab.workers import PytestLauncher
from perfgate.ab.worktree import Tree, discard, verify
from perfgate.config.settings import Settings
from perfgate.gate.ratio import RatioDecision
from perfgate.model import CaseResult, Environment, Finding, FindingKind, GateResult, Run, Verdict
from perfgate.report.ab import AbInfo, AbView, cost_line
from perfgate.report.progress import Progress

if TYPE_CHECKING:
    from perfgate.gate.run import Compared

PHASES = (
    "worktree",
    "start",
    "tests",
    "prepare",
    "A/A",
    "rounds",
    "confirmation",
    "stop",
    "profilers",
    "fresh pair",
    "verdicts",
    "finish",
)


@dataclass(frozen=True)
class AbOutcome:
    gate: GateResult
    head_run: Run
    base_run: Run
    messages: tuple[str, ...]
    exit_code: int  # 0 passed, 1 the gate failed or the head's tests failed
    decisions: Mapping[tuple[str, str], RatioDecision] = field(default_factory=dict)
    costs_s: tuple[tuple[str, float], ...] = ()
    failed: bool = False  # a worker failed: the comparison is incomplete
    head_tests_failed: bool = False
    terminal: tuple[str, ...] = ()  # the table, notes and findings, ending with the headline (secrets masked)

    @property
    def lines(self) -> tuple[str, ...]:
        """Everything to print, in order: what happened, the cost, then the table."""
        return (*self.messages, *self.terminal)


def run_ab(req: AbRequest) -> AbOutcome:
    """Measure base and head side by side, then hand the comparisons to the gate's one tail (gate/run.py's
    `finish`: findings, strict checks, the ceiling, store, outputs, exit code)."""
    from perfgate.gate.run import finish

    started, costs = _now(), _Costs(time.monotonic())
    s = req.settings
    messages: list[str] = []
    with costs.phase("worktree"):  # bad input is one line, before any display or worker starts
        setup = setup_run(req, messages)
    with _progress(req) as progress:
        measured = _measure(req, setup, costs, messages, progress)
    m = measured.measurement
    messages += m.notes + same_code_lines(m)
    with costs.phase("verdicts"):
        head_run, base_run = _runs(measured, setup, req, started)
        compared = _compared(req, setup, measured, head_run, base_run, costs, messages)
    with costs.phase("finish"):
        done = finish(compared, s, store=req.publish and m.failure is None, publish=req.publish)
        if req.publish and m.failure is None and not measured.tampered:  # its cache went with the worktree
            _update_aa(setup, measured.cmp, m, messages)
    messages += done.messages
    if setup.anchor is not None:
        regressed = (cid for (cid, _), d in measured.cmp.decisions.items() if d.verdict is Verdict.REGRESSED)
        messages += bisect_hint(setup.anchor, regressed)
    total = costs.total()
    messages.append(cost_line(total))
    head_failed = m.exitstatus.get(Side.HEAD, 0) not in (0, 5) and m.failure is None
    return AbOutcome(
        done.gate,
        done.run,
        done.pair or base_run,
        tuple(messages),
        1 if (done.exit_code or head_failed) else 0,
        measured.cmp.decisions,
        total,
        m.failure is not None,
        head_failed,
        done.terminal,
    )


def same_code_lines(m: Measurement) -> list[str]:
    """What skipping the cases with the same code on both sides saved (one line; none when nothing was)."""
    skipped = [c for c in m.cases if c.same_code]
    if not skipped:
        return []
    saved_s = sum(c.saved_ms for c in skipped) / 1000.0
    return [
        f"perfgate: A/B: {len(skipped)} case(s) unchanged (same code: identical SASS, launches, inputs and "
        f"libraries on both sides), not measured: at least {saved_s:.1f} s of GPU time saved "
        f"(--perfgate-ab-measure-same-code measures them)"
    ]


class _Costs:
    """Each phase's seconds on the monotonic clock; the total is the whole run, the phases add up to it."""

    def __init__(self, t0: float) -> None:
        self.t0 = t0
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.add(name, time.monotonic() - started)

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def shown(self) -> tuple[tuple[str, float], ...]:
        return tuple((name, self.seconds[name]) for name in PHASES if self.seconds.get(name))

    def total(self) -> tuple[tuple[str, float], ...]:
        """Every phase, what no phase covers ("other"), and the total since the run began."""
        total = time.monotonic() - self.t0
        other = total - sum(self.seconds.values())
        return (*self.shown(), *((("other", other),) if other > 0 else ()), ("total", total))


@contextlib.contextmanager
def _progress(req: AbRequest) -> Iterator[Progress]:
    if req.progress is not None:
        yield req.progress
        return
    from perfgate.report.progress import open_progress

    with open_progress() as progress:
        yield progress


@dataclass(frozen=True)
class _Measured:
    measurement: Measurement
    cmp: AbComparison
    fresh_failed: bool
    tampered: bool  # a worktree perfgate checked out changed during the run (it was discarded)


def _measure(req: AbRequest, setup: Setup, costs: _Costs, messages: list[str], progress: Progress) -> _Measured:
    """The first pair's rounds, the profilers, the verdicts, and the fresh pair for the called cases."""
    s = req.settings
    log_dir = Path(tempfile.mkdtemp(prefix="perfgate-ab-"))
    m = measure_pair(
        worker_specs(req, setup, messages),
        req.launcher or PytestLauncher(),
        log_dir,
        setup.plan,
        setup.rule,
        setup.covered,
        base_first=setup.base_first,
        shared=setup.shared,
        progress=progress,
        label="A/B",
    )
    for name, seconds in m.costs_s.items():
        costs.add(name, seconds)
    if m.sharing_ended:  # a side broke the shared host's contract: the fresh pair is separate too
        setup = replace(setup, shared=False)
    results = located(side_results(m), _checkouts(setup))
    incomparable = judge(results, _changed(setup, req), setup.shared) if m.failure is None else {}
    if s.profile and m.failure is None:
        with costs.phase("profilers"):
            trees = {Side.BASE: (setup.base, setup.base.path), Side.HEAD: (setup.head, setup.head.path)}
            results = _profiled(results, trees, s, messages)
    cached = setup.covered.cases if setup.covered else {}
    with costs.phase("verdicts"):
        cmp = compare_ab(m, cached, setup.rule, results, s.fail_on_profile_error, incomparable=incomparable)
    fresh_failed = False
    if m.failure is None and s.ab_fresh_pair and _called(cmp):
        with costs.phase("fresh pair"):
            fresh, fresh_failed = _fresh_pair(req, setup, cmp, m, log_dir, messages, progress)
        if fresh is not None or fresh_failed:  # a failed fresh pair measured nothing: calls judged on one pair
            again = {c.case_id: c for c in fresh.cases if c.paired} if fresh is not None else {}
            with costs.phase("verdicts"):
                cmp = compare_ab(m, cached, setup.rule, results, s.fail_on_profile_error, again, incomparable)
    cmp, tampered = _untouched(cmp, setup, req, messages)
    if m.failure is None and not fresh_failed:
        shutil.rmtree(log_dir, ignore_errors=True)  # kept (and named in the message) when a worker failed
    return _Measured(m, cmp, fresh_failed, tampered)


def _compared(
    req: AbRequest,
    setup: Setup,
    measured: _Measured,
    head: Run,
    base: Run,
    costs: _Costs,
    messages: list[str],
) -> Compared:
    """The comparisons as the tail takes them: the head run gated against the base side's cases, the base's
    own allow_missing, what the pull request changed in what it is gated with, each pair for the ceiling."""
    from perfgate.baseline import Baseline
    from perfgate.baseline.write import case_from_result
    from perfgate.gate.findings import Against, GateFacts
    from perfgate.gate.run import Compared

    s, cmp, m = req.settings, measured.cmp, measured.measurement
    against = Baseline(setup.base.path, base.environment, {r.case_id: case_from_result(r) for r in cmp.base_results})
    allow, problem = base_allow_missing(setup.base.path / setup.root, setup.base.label)
    if problem:
        messages.append(f"perfgate: A/B: {problem}")
    env = m.environments.get(Side.HEAD) or m.environments.get(Side.BASE)
    checked = not req.head_commit and env is not None and setup.base.commit  # (a bisect step checks nothing)
    facts = GateFacts(base=(req.base_check or base_check(setup.base.commit, s, env)) if checked and env else None)
    own = cmp.gate.findings
    if checked:
        label, stated = setup.base.label, s.accept_baseline_change
        own += tuple(selection_findings(req.invocation_dir, setup.base.path / setup.here, label, stated))
        base_dir = setup.base.path / relative_in(s.baseline_dir, setup.head.path)
        if setup.anchor is None:  # an anchor's base predates its baseline by construction: calibrating wrote it
            own += tuple(baseline_findings(s.baseline_dir, base_dir, label, stated))
    info = AbInfo(
        setup.base.label,
        setup.head.label,
        setup.plan.rounds,
        s.false_alarm_pct,
        gated_count(m.cases),
        costs_s=costs.shown(),
        rounds_trace=tuple(round_trace(c) for c in m.cases),
        base_commit=base.info.git_commit,
        base_run_uid=base.info.run_uid,
        base_code=tuple((r.case_id, r.code) for r in base.results),
        anchor=setup.anchor.label if setup.anchor else "",
    )
    return Compared(
        head,
        replace(cmp.gate, findings=own),
        against,
        facts,
        allow,
        pair_changes(cmp.decisions),
        Against("base", "the base's [tool.perfgate] allow_missing"),
        pair=base,
        view=AbView(info),
    )


def _untouched(cmp: AbComparison, setup: Setup, req: AbRequest, messages: list[str]) -> tuple[AbComparison, bool]:
    """The worktrees perfgate checked out, as they were when the run took them (worktree.py): one that
    changed makes the comparison not comparable (strict fails) and is discarded. Whether one changed."""
    findings = []
    for tree in (setup.base, setup.head) if req.head_commit else (setup.base,):
        changed = verify(tree)
        if changed:
            discard(setup.repo, tree)
            findings.append(
                Finding(
                    FindingKind.NOT_COMPARABLE,
                    f"the worktree of {tree.label} changed during the run ({', '.join(changed)}): what it ran "
                    "is not that commit; the worktree was discarded (the next run checks it out afresh)",
                )
            )
    messages += [f"perfgate: A/B: {f.message}" for f in findings]
    gate = replace(cmp.gate, findings=cmp.gate.findings + tuple(findings))
    return replace(cmp, gate=gate), bool(findings)


def _checkouts(setup: Setup) -> dict[str, Path]:
    """The checkouts a side's code may come from, by the name provenance records give them."""
    return {"head": setup.head.path, "base": setup.base.path, "checkout": setup.repo}  # ties: the first named


def _changed(setup: Setup, req: AbRequest) -> frozenset[str]:
    """The files the diff from the base to the head touches (provenance.judge's second rule)."""
    return changed_paths(setup.repo, setup.base.commit, setup.head.commit if req.head_commit else "")


def _now() -> str:
    from perfgate.measure.environment import utc_now

    return utc_now()


def _fresh_pair(
    req: AbRequest,
    setup: Setup,
    cmp: AbComparison,
    first: Measurement,
    log_dir: Path,
    messages: list[str],
    progress: Progress,
) -> tuple[Measurement | None, bool]:
    """The cases called regressed or improved, measured again by a fresh base and head worker and a fresh
    A/A twin (another draw of the process offset), which run those cases' tests alone; None when nothing
    was called or that pair failed (said in `messages`); whether a worker of it failed (its log is kept)."""
    called = _called(cmp)
    tests = frozenset(c.nodeid for c in first.cases if c.case_id in called)
    first_side = "head" if setup.base_first else "base"
    messages.append(
        f"perfgate: A/B: {len(called)} case(s) called: measured again by a fresh pair of processes running "
        f"their {len(tests)} test(s) alone (the {first_side} worker started first this time)"
    )
    specs = [spec for spec in worker_specs(req, setup, []) if spec.side is not Side.AA]
    specs += [replace(spec, side=Side.AA) for spec in specs if spec.side is Side.BASE]  # a fresh A/A draw too
    plan = replace(setup.plan, seed=setup.plan.seed + 1)
    again = measure_pair(
        specs,
        req.launcher or PytestLauncher(),
        log_dir / "fresh-pair",  # the first pair's logs stay as they were
        plan,
        setup.rule,
        None,
        called,
        None,  # every called case gets the fresh twin's A/A
        base_first=not setup.base_first,
        shared=setup.shared,
        only_tests=tests,
        progress=progress,
        label="A/B fresh pair",
    )
    if again.failure is not None:
        messages.append(f"{again.failure}; the calls stand on the first pair alone")
        return None, True
    return again, False


def _called(cmp: AbComparison) -> frozenset[str]:
    return frozenset(case_id for (case_id, _), d in cmp.decisions.items() if d.verdict in CALLS)


def _profiled(
    results: Mapping[tuple[Side, str], CaseResult],
    trees: Mapping[Side, tuple[Tree, Path]],
    s: Settings,
    messages: list[str],
) -> dict[tuple[Side, str], CaseResult]:
    """The profilers (--perfgate-profile) over each side's cases, in each side's tree, after every round:
    their counters are then compared head against base like any metric."""
    from perfgate.measure.profiling import profile_cases

    out = dict(results)
    for side, (tree, root) in trees.items():
        mine = {cid: r for (sd, cid), r in results.items() if sd is side}
        if not mine:
            continue
        profiled = profile_cases(mine, s, root, tree.env())
        messages += [f"{line} ({side.value})" for line in profiled.messages]
        out.update({(side, cid): r for cid, r in profiled.results.items()})
    return out


def _runs(measured: _Measured, setup: Setup, req: AbRequest, started: str) -> tuple[Run, Run]:
    m, cmp, plan = measured.measurement, measured.cmp, setup.plan
    head_env = m.environments.get(Side.HEAD) or m.environments.get(Side.BASE) or Environment("host", "unknown")
    base_env = m.environments.get(Side.BASE) or head_env
    how = f"ab: {plan.rounds} rounds x up to {plan.stages} stages, seed {plan.seed}"
    how += f" ({'base' if setup.base_first else 'head'} worker started first"
    how += ", one shared process)" if setup.shared else ", a process per tree)"
    head = SideFacts(
        setup.head.commit,
        "uncommitted" in setup.head.label,
        head_env,
        tuple(m.unmeasured.get(Side.HEAD, ())),
        cmp.head_results,
    )
    base = SideFacts(setup.base.commit, False, base_env, tuple(m.unmeasured.get(Side.BASE, ())), cmp.base_results)
    anchor = setup.anchor
    ref = f"anchor: {anchor.label}" if anchor else req.ref
    return side_runs(head, base, how, ref, started, req.settings.measure.max_samples, anchor=anchor is not None)


def _update_aa(setup: Setup, cmp: AbComparison, m: Measurement, messages: list[str]) -> None:
    env, base_args = m.environments.get(Side.BASE), setup.base_args
    if setup.covered is not None or not cmp.aa_measured or env is None or base_args is None:
        return
    base_cases: dict[str, list[str]] = {}
    for case in m.cases:
        if Side.BASE in case.sides:
            base_cases.setdefault(case.nodeid, []).append(case.case_id)
    entry = aa_cache.AaEntry(
        env.device_name,
        tuple(base_args),
        {k: dict(v) for k, v in cmp.aa_measured.items()},
        {k: tuple(v) for k, v in base_cases.items()},
        m.shared,
    )
    try:
        aa_cache.write_cache(aa_cache.with_entry(setup.cache, entry))
    except OSError as err:
        messages.append(f"perfgate: A/B: could not cache the A/A ({err.strerror or err}); the next run measures it")
