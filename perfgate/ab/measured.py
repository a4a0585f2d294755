"""A/B's measuring: the workers -> the first pair's rounds (pairs.py), the profilers over each side's cases, the
verdicts (compare.py), a fresh pair of processes for the called cases and the verdicts again, the checked-out
worktrees verified as untouched -> Measured, what run.py hands on to the gate's tail.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from perfgate.ab.compare import AbComparison, compare_ab, side_results
from perfgate.ab.costs import Costs
from perfgate.ab.pairs import measure_pair
from perfgate.ab.protocol import PytestEnded, Side
from perfgate.ab.provenance import changed_paths, judge, located
from perfgate.ab.ratios import CALLS
from perfgate.ab.rounds import Measurement
from perfgate.ab.setup import AbRequest, Setup, worker_specs
from perfgate.ab.workers import PytestLauncher
from perfgate.ab.worktree import Tree, discard, verify
from perfgate.config.settings import Settings
from perfgate.model import CaseResult, Finding, FindingKind
from perfgate.report.progress import Progress


@dataclass(frozen=True)
class Measured:
    measurement: Measurement
    cmp: AbComparison
    fresh_failed: bool
    tampered: bool  # a worktree perfgate checked out changed during the run (it was discarded)


def measure(req: AbRequest, setup: Setup, costs: Costs, messages: list[str], progress: Progress) -> Measured:
    """The first pair's rounds, the profilers, the verdicts, and the fresh pair for the called cases."""
    s = req.settings
    log_dir = Path(tempfile.mkdtemp(prefix="perfgate-ab-"))
    try:
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
    except PytestEnded:  # pytest's own line says why: no log to keep
        shutil.rmtree(log_dir, ignore_errors=True)
        raise
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
    return Measured(m, cmp, fresh_failed, tampered)


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
