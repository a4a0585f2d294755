"""The one A/B orchestration: `pytest --perfgate --perfgate-base REF`, `perfgate ab REF` and every step of
`perfgate bisect` call `run_ab`.

    REF -> base worktree (cached) -> workers (base, head, and a second base for the A/A unless cached)
        -> rounds (coordinator.py) -> verdicts (compare.py) -> history (both sides) -> summary / JSON

Every phase's cost is measured and printed. Nothing is stored and no cache is written when a worker
failed: the history gets whole runs of a finished comparison or nothing.
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from perfgate.ab import aa as aa_cache
from perfgate.ab.compare import (
    CALLS,
    AbComparison,
    AbRule,
    compare_ab,
    gated_count,
    side_results,
)
from perfgate.ab.coordinator import Measurement, RoundPlan
from perfgate.ab.host.sharing import decide as decide_sharing
from perfgate.ab.pairs import measure_pair
from perfgate.ab.protocol import AbError, Side
from perfgate.ab.provenance import changed_paths, judge, located
from perfgate.ab.trace import round_trace
from perfgate.ab.workers import Launcher, PytestLauncher, WorkerSpec
from perfgate.ab.worktree import Tree, checkout, discard, git, is_dirty, repository_root, verify
from perfgate.baseline.base_ref import BaseCheck
from perfgate.config.settings import Settings
from perfgate.gate.findings import against_base
from perfgate.gate.ratio import RatioDecision
from perfgate.gate.static import static_rule
from perfgate.model import CaseResult, Environment, Finding, FindingKind, GateResult, Run, RunInfo
from perfgate.report.ab import AbInfo, cost_line, publish_ab, render_ab_terminal

XDIST_FLAGS = ("-n", "--numprocesses", "--dist", "--tx", "-d")
PHASES = ("worktree", "start", "tests", "prepare", "A/A", "rounds", "confirmation", "fresh pair", "finish")


@dataclass(frozen=True)
class AbRequest:
    ref: str  # the base: any git ref
    pytest_args: tuple[str, ...]  # the selection, as pytest takes it
    settings: Settings
    invocation_dir: Path  # where pytest / perfgate ab ran: the head's working directory
    launcher: Launcher | None = None  # None: real pytest workers
    head_commit: str = ""  # bisect: the head is this commit's worktree, not the working tree
    publish: bool = True  # history and outputs (a bisect step writes neither)
    seed: int | None = None  # the rounds' order; None: a fresh one per run (recorded with the run)
    base_check: BaseCheck | None = None  # the project root and [tool.perfgate] against the base (base_ref.py)


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


def run_ab(req: AbRequest) -> AbOutcome:
    started, t0 = _now(), time.monotonic()
    s = req.settings
    messages: list[str] = []
    setup = _setup(req, messages)
    log_dir = Path(tempfile.mkdtemp(prefix="perfgate-ab-"))
    measurement = measure_pair(
        _worker_specs(req, setup, messages),
        req.launcher or PytestLauncher(),
        log_dir,
        setup.plan,
        setup.rule,
        setup.covered,
        base_first=setup.base_first,
        shared=setup.shared,
    )
    if measurement.sharing_ended:  # a side broke the shared host's contract: the fresh pair is separate too
        setup = replace(setup, shared=False)
    results = located(side_results(measurement), _checkouts(setup))
    incomparable = judge(results, _changed(setup, req)) if measurement.failure is None else {}
    if s.profile and measurement.failure is None:
        trees = {Side.BASE: (setup.base, setup.base.path), Side.HEAD: (setup.head, setup.head.path)}
        results = _profiled(results, trees, s, messages)
    cached = setup.covered.cases if setup.covered else {}
    cmp = _with_base_check(
        compare_ab(measurement, cached, setup.rule, results, s.fail_on_profile_error, incomparable=incomparable), req
    )
    fresh, fresh_s, fresh_failed = (
        _fresh_pair(req, setup, cmp, log_dir, messages) if measurement.failure is None else (None, 0.0, False)
    )
    if fresh is not None or fresh_failed:  # a failed fresh pair measured nothing: calls judged on one pair
        again = {c.case_id: c for c in fresh.cases if c.paired} if fresh is not None else {}
        cmp = compare_ab(measurement, cached, setup.rule, results, s.fail_on_profile_error, again, incomparable)
        cmp = _with_base_check(cmp, req)
    cmp, tampered = _untouched(cmp, setup, req, messages)
    costs = dict(measurement.costs_s, worktree=setup.base.seconds + setup.head.seconds)
    if fresh_s:
        costs["fresh pair"] = fresh_s
    if measurement.failure is None and not fresh_failed:
        shutil.rmtree(log_dir, ignore_errors=True)  # kept (and named in the message) when a worker failed
    head_run, base_run = _runs(cmp, measurement, setup, req, started)
    finish_started = time.monotonic()
    if req.publish and measurement.failure is None:
        head_run, base_run = _store(head_run, base_run, s, messages)
        if not tampered:  # its cache went with the worktree
            _update_aa(setup, cmp, measurement, messages)
    messages += measurement.notes + same_code_lines(measurement)
    info = AbInfo(
        setup.base.label,
        setup.head.label,
        setup.plan.rounds,
        s.false_alarm_pct,
        gated_count(measurement.cases),
        rounds_trace=tuple(round_trace(c) for c in measurement.cases),
    )
    if req.publish:
        messages += publish_ab(cmp.gate, head_run, base_run, replace(info, costs_s=_costs(costs, 0.0)), s)
    costs["finish"] = time.monotonic() - finish_started
    info = replace(info, costs_s=_costs(costs, time.monotonic() - t0))
    messages.append(cost_line(info.costs_s))
    head_failed = measurement.exitstatus.get(Side.HEAD, 0) not in (0, 5) and measurement.failure is None
    code = 1 if (cmp.gate.failed or head_failed) else 0
    return AbOutcome(
        cmp.gate,
        head_run,
        base_run,
        tuple(messages + render_ab_terminal(cmp.gate, info)),
        code,
        cmp.decisions,
        info.costs_s,
        measurement.failure is not None,
        head_failed,
    )


def _with_base_check(cmp: AbComparison, req: AbRequest) -> AbComparison:
    """The base ref check's finding (gate/findings.py, as in baseline mode) among the comparison's findings."""
    found = tuple(against_base(req.base_check))
    return replace(cmp, gate=replace(cmp.gate, findings=(*found, *cmp.gate.findings))) if found else cmp


@dataclass(frozen=True)
class _Setup:
    head: Tree
    base: Tree
    here: Path  # the invocation directory, relative to the repository root
    base_args: list[str] | None  # the base's selection (None: it has none of the selected paths)
    cache: aa_cache.AaCache
    covered: aa_cache.AaEntry | None  # the cached A/A for this selection, when there is one
    plan: RoundPlan
    rule: AbRule
    shared: bool  # every side in one process (perfgate/ab/host/)
    repo: Path  # the checkout perfgate runs in: where the environment's editable installs point

    @property
    def base_first(self) -> bool:
        """Which worker starts first, from the seed; a fresh pair starts the other one first, so an offset
        that goes with the starting order (seen on the H100: the first-started process of a 12 us add
        1-3% slower) points the other way there."""
        return bool(self.plan.seed & 1)


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


def _setup(req: AbRequest, messages: list[str]) -> _Setup:
    """Bad input first (one line, nothing started), then the trees, the cached A/A, the plan."""
    s = req.settings
    check_pytest_args(req.pytest_args)
    repo = repository_root(req.invocation_dir)
    here = req.invocation_dir.resolve().relative_to(repo.resolve())
    head = _head_tree(repo, req, messages)
    base = checkout(repo, req.ref, s.worktree_dir)
    messages.append(
        f"perfgate: A/B: base {base.label}: worktree {'reused' if base.reused else 'created'} "
        f"({base.seconds:.1f} s) at {base.path}"
    )
    cache = aa_cache.read_cache(base.cache_dir or base.path, base.commit)
    if cache.problem:
        messages.append(f"perfgate: A/B: {cache.problem}")
    base_args = base_selection(req.pytest_args, req.invocation_dir, base.path / here)
    seed = req.seed if req.seed is not None else secrets.randbits(32)
    plan = RoundPlan(
        rounds=s.ab_rounds,
        stages=1 + s.confirm_runs,
        round_ms=s.measure.budget_ms / s.ab_rounds,
        max_samples=s.measure.max_samples,
        timeout_s=s.ab_timeout_s,
        seed=seed,
        skip_same_code=s.ab_skip_same_code and s.compiled_kernels,
    )
    rule = AbRule(s.false_alarm_pct, s.min_effect_pct, plan.stages, s.strict, static_rule(s), s.ab_fresh_pair)
    sharing = decide_sharing(s.ab_process, (("base", base.path), ("head", head.path)))
    covered = cache.covering(base_args, sharing.shared) if base_args is not None else None
    messages.append(f"perfgate: A/B: {sharing.why}")
    return _Setup(head, base, here, base_args, cache, covered, plan, rule, sharing.shared, repo)


def _worker_specs(req: AbRequest, setup: _Setup, messages: list[str]) -> list[WorkerSpec]:
    head, base = setup.head, setup.base
    head_cwd = head.path / setup.here if req.head_commit else req.invocation_dir
    specs = [WorkerSpec(Side.HEAD, head.path, head_cwd, req.pytest_args, base.path, head.env(), origin=setup.repo)]
    if setup.base_args is None:
        messages.append("perfgate: A/B: the base has none of the selected test paths: every case is new")
        return specs
    base_spec = WorkerSpec(
        Side.BASE, base.path, base.path / setup.here, tuple(setup.base_args), head.path, base.env(), origin=setup.repo
    )
    specs.append(base_spec)
    if setup.covered is None:  # no cached A/A for this selection: a second base process measures it
        specs.append(replace(base_spec, side=Side.AA))
    return specs


def _untouched(cmp: AbComparison, setup: _Setup, req: AbRequest, messages: list[str]) -> tuple[AbComparison, bool]:
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


def _checkouts(setup: _Setup) -> dict[str, Path]:
    """The checkouts a side's code may come from, by the name provenance records give them."""
    return {"head": setup.head.path, "base": setup.base.path, "checkout": setup.repo}  # ties: the first named


def _changed(setup: _Setup, req: AbRequest) -> frozenset[str]:
    """The files the diff from the base to the head touches (provenance.judge's second rule)."""
    return changed_paths(setup.repo, setup.base.commit, setup.head.commit if req.head_commit else "")


def _now() -> str:
    from perfgate.measure.environment import utc_now

    return utc_now()


def check_pytest_args(args: Sequence[str]) -> None:
    """A/B mode alternates two workers on one GPU: pytest-xdist's parallel workers have no place in it."""
    for arg in args:
        name = arg.split("=", 1)[0]
        if name in XDIST_FLAGS or (arg.startswith("-n") and arg[2:].isdigit()):
            raise AbError(
                f"perfgate: A/B mode measures one case at a time on one GPU, alternating base and "
                f"head: drop {arg!r} (pytest-xdist)"
            )


def base_selection(args: Sequence[str], head_cwd: Path, base_cwd: Path) -> list[str] | None:
    """The head's pytest arguments for the base: test paths the base lacks are left out (their cases are
    new). None when the base has none of the paths asked for (or not even the directory)."""
    if not base_cwd.is_dir():
        return None
    kept, asked_paths, kept_paths = [], 0, 0
    for arg in args:
        path = arg.split("::", 1)[0]
        if arg.startswith("-") or not path or not (head_cwd / path).exists():
            kept.append(arg)
            continue
        asked_paths += 1
        if (base_cwd / path).exists():
            kept.append(arg)
            kept_paths += 1
    return None if asked_paths and not kept_paths else kept


def _head_tree(repo: Path, req: AbRequest, messages: list[str]) -> Tree:
    s = req.settings
    if req.head_commit:
        return checkout(repo, req.head_commit, s.worktree_dir)
    commit = git(repo, "rev-parse", "--verify", "--quiet", "HEAD") if _has_commits(repo) else ""
    label = f"working tree @ {commit[:12]}" if commit else "working tree"
    if is_dirty(repo):
        if s.strict:
            raise AbError(
                f"perfgate: A/B: the head tree {repo} has uncommitted changes; strict mode compares "
                f"committed code only (commit or stash them)"
            )
        messages.append(f"perfgate: A/B: the head tree {repo} has uncommitted changes: they are measured as they are")
        label += " + uncommitted changes"
    return Tree(repo, commit, label)


def _has_commits(repo: Path) -> bool:
    from perfgate.measure.tools import run_tool

    return (
        run_tool(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", "HEAD"], 60.0, check=False).returncode
        == 0
    )


def _fresh_pair(
    req: AbRequest, setup: _Setup, cmp: AbComparison, log_dir: Path, messages: list[str]
) -> tuple[Measurement | None, float, bool]:
    """The cases called regressed or improved, measured again by a fresh base and head worker and a fresh
    A/A twin (another draw of the process offset); None when nothing was called or that pair failed (said
    in `messages`); the seconds it took; whether a worker of it failed (its log is kept)."""
    called = frozenset(case_id for (case_id, _), d in cmp.decisions.items() if d.verdict in CALLS)
    if not called or not req.settings.ab_fresh_pair:
        return None, 0.0, False
    started = time.monotonic()
    first = "head" if setup.base_first else "base"
    messages.append(
        f"perfgate: A/B: {len(called)} case(s) called: measured again by a fresh pair of processes "
        f"(the {first} worker started first this time)"
    )
    specs = [spec for spec in _worker_specs(req, setup, []) if spec.side is not Side.AA]
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
    )
    if again.failure is not None:
        messages.append(f"{again.failure}; the calls stand on the first pair alone")
        return None, time.monotonic() - started, True
    return again, time.monotonic() - started, False


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


def _runs(cmp: AbComparison, m: Measurement, setup: _Setup, req: AbRequest, started: str) -> tuple[Run, Run]:
    from perfgate.measure.environment import command_line, utc_now

    head, base, plan = setup.head, setup.base, setup.plan

    finished = utc_now()
    pair = uuid.uuid4().hex
    head_env = m.environments.get(Side.HEAD) or m.environments.get(Side.BASE) or Environment("host", "unknown")
    base_env = m.environments.get(Side.BASE) or head_env
    how = f"ab: {plan.rounds} rounds x up to {plan.stages} stages, seed {plan.seed}"
    how += f" ({'base' if setup.base_first else 'head'} worker started first"
    how += ", one shared process)" if setup.shared else ", a process per tree)"
    head_info = RunInfo(
        started,
        finished,
        git_commit=head.commit,
        git_branch="",
        git_dirty="uncommitted" in head.label,
        hostname=head_env.hostname,
        argv=command_line(),
        profile_settings=f"{how}; head side, base {base.commit} ({req.ref})",
        run_uid=f"{pair}-head",
        unmeasured=tuple(m.unmeasured.get(Side.HEAD, ())),
    )
    base_info = replace(
        head_info,
        git_commit=base.commit,
        git_dirty=False,
        run_uid=f"{pair}-base",
        profile_settings=f"{how}; base side ({req.ref}) of head {head.commit or 'working tree'}",
        unmeasured=tuple(m.unmeasured.get(Side.BASE, ())),
    )
    return Run(head_info, head_env, cmp.head_results), Run(base_info, base_env, cmp.base_results)


def _store(head: Run, base: Run, s: Settings, messages: list[str]) -> tuple[Run, Run]:
    if not s.store or not (head.results or base.results):
        return head, base
    from perfgate.store import open_store

    with open_store(s.db_path) as store:
        base = replace(base, run_id=store.save_run(base))
        head = replace(head, run_id=store.save_run(head))
    messages.append(f"perfgate: stored runs {base.run_id} (base) and {head.run_id} (head) in {s.db_path}")
    return head, base


def _update_aa(setup: _Setup, cmp: AbComparison, m: Measurement, messages: list[str]) -> None:
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


def _costs(costs: Mapping[str, float], total: float) -> tuple[tuple[str, float], ...]:
    shown = tuple((name, costs[name]) for name in PHASES if costs.get(name))
    return shown + (("total", total),)
