"""What A/B measured, as the gate's tail takes it (gate/run.py's `finish`): the head run gated against the base
side's cases with the base's own allow_missing and what the pull request changed in what it is gated with
(Compared), both sides as runs for the history (runs.py), and the A/A measured here for the cache (aa.py).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from perfgate.ab import aa as aa_cache
from perfgate.ab.compare import AbComparison
from perfgate.ab.costs import Costs
from perfgate.ab.findings import pair_changes
from perfgate.ab.measured import Measured
from perfgate.ab.parity import base_allow_missing, base_check, baseline_findings, selection_findings
from perfgate.ab.protocol import Side
from perfgate.ab.ratios import gated_count
from perfgate.ab.rounds import Measurement
from perfgate.ab.runs import SideFacts, side_runs
from perfgate.ab.setup import AbRequest, Setup, relative_in
from perfgate.ab.trace import round_trace
from perfgate.model import Environment, Finding, Run
from perfgate.report.ab import AbInfo, AbView

if TYPE_CHECKING:
    from perfgate.gate.run import Compared


def as_compared(
    req: AbRequest,
    setup: Setup,
    measured: Measured,
    head: Run,
    base: Run,
    costs: Costs,
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
    own = cmp.gate.findings + (_base_findings(req, setup) if checked else ())
    return Compared(
        head,
        replace(cmp.gate, findings=own),
        against,
        facts,
        allow,
        pair_changes(cmp.decisions),
        Against("base", "the base's [tool.perfgate] allow_missing"),
        pair=base,
        view=AbView(_info(setup, m, base, costs, s.false_alarm_pct)),
    )


def _base_findings(req: AbRequest, setup: Setup) -> tuple[Finding, ...]:
    """What the pull request changed in what it is gated with: the test selection and the baselines."""
    s = req.settings
    label, stated = setup.base.label, s.accept_baseline_change
    own = tuple(selection_findings(req.invocation_dir, setup.base.path / setup.here, label, stated))
    base_dir = setup.base.path / relative_in(s.baseline_dir, setup.head.path)
    if setup.anchor is None:  # an anchor's base predates its baseline by construction: calibrating wrote it
        own += tuple(baseline_findings(s.baseline_dir, base_dir, label, stated))
    return own


def _info(setup: Setup, m: Measurement, base: Run, costs: Costs, false_alarm_pct: float) -> AbInfo:
    """What the A/B report says of the run beside its table: the sides, rounds, budget, cost, traces."""
    return AbInfo(
        setup.base.label,
        setup.head.label,
        setup.plan.rounds,
        false_alarm_pct,
        gated_count(m.cases),
        costs_s=costs.shown(),
        rounds_trace=tuple(round_trace(c) for c in m.cases),
        base_commit=base.info.git_commit,
        base_run_uid=base.info.run_uid,
        base_code=tuple((r.case_id, r.code) for r in base.results),
        anchor=setup.anchor.label if setup.anchor else "",
    )


def sides_as_runs(measured: Measured, setup: Setup, req: AbRequest, started: str) -> tuple[Run, Run]:
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
        setup.head.branch,
    )
    base = SideFacts(setup.base.commit, False, base_env, tuple(m.unmeasured.get(Side.BASE, ())), cmp.base_results)
    anchor = setup.anchor
    ref = f"anchor: {anchor.label}" if anchor else req.ref
    return side_runs(head, base, how, ref, started, req.settings.measure.max_samples, anchor=anchor is not None)


def update_aa(setup: Setup, cmp: AbComparison, m: Measurement, messages: list[str]) -> None:
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
