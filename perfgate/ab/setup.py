"""Before any worker starts: the request checked (bad input is one line, nothing started), the head and base
trees (the base in a cached worktree), the base's selection, the cached A/A, the rounds' plan, shared or
separate processes, and each worker's spec."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from perfgate.ab import aa as aa_cache
from perfgate.ab.anchor import Anchor, anchor_lines, resolve_anchor
from perfgate.ab.compare import AbRule
from perfgate.ab.host.sharing import decide as decide_sharing
from perfgate.ab.protocol import AbError, Side
from perfgate.ab.rounds import RoundPlan
from perfgate.ab.workers import Launcher, WorkerSpec
from perfgate.ab.worktree import Tree, checkout, git, is_dirty, repository_root
from perfgate.baseline.base_ref import BaseCheck
from perfgate.config.settings import Settings
from perfgate.gate.static import static_rule
from perfgate.measure.git import git_info
from perfgate.report.progress import Progress

XDIST_FLAGS = ("-n", "--numprocesses", "--dist", "--tx", "-d")


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
    progress: Progress | None = None  # None: report/progress.py's display on stderr
    base_check: BaseCheck | None = None  # the project root and [tool.perfgate] against the base (base_ref.py)
    anchor: bool = False  # the base is the baseline's calibration commit (ab/anchor.py), not `ref`


@dataclass(frozen=True)
class Setup:
    head: Tree
    base: Tree
    here: Path  # the invocation directory, relative to the repository root
    root: Path  # the project root (where [tool.perfgate] is read), relative to the repository root
    base_args: list[str] | None  # the base's selection (None: it has none of the selected paths)
    cache: aa_cache.AaCache
    covered: aa_cache.AaEntry | None  # the cached A/A for this selection, when there is one
    plan: RoundPlan
    rule: AbRule
    shared: bool  # every side in one process (perfgate/ab/host/)
    repo: Path  # the checkout perfgate runs in: where the environment's editable installs point
    anchor: Anchor | None = None  # an anchor run: the calibration the base commit comes from

    @property
    def base_first(self) -> bool:
        """Which worker starts first, from the seed; a fresh pair starts the other one first, so an offset
        that goes with the starting order (seen on the H100: the first-started process of a 12 us add
        1-3% slower) points the other way there."""
        return bool(self.plan.seed & 1)


def setup_run(req: AbRequest, messages: list[str]) -> Setup:
    """Bad input first (one line, nothing started), then the trees, the cached A/A, the plan."""
    s = req.settings
    check_pytest_args(req.pytest_args)
    repo = repository_root(req.invocation_dir)
    here = req.invocation_dir.resolve().relative_to(repo.resolve())
    anchor = resolve_anchor(s, repo) if req.anchor else None
    head = _head_tree(repo, req, messages)
    base = checkout(repo, anchor.commit if anchor else req.ref, s.worktree_dir)
    if anchor is not None:
        messages += anchor_lines(anchor, repo, head.commit)
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
    root = relative_in(s.rootdir, repo)
    return Setup(head, base, here, root, base_args, cache, covered, plan, rule, sharing.shared, repo, anchor)


def relative_in(path: Path, repo: Path) -> Path:
    """`path` within the repository (the repository itself when it lies outside)."""
    try:
        return path.resolve().relative_to(repo.resolve())
    except ValueError:
        return Path()


def worker_specs(req: AbRequest, setup: Setup, messages: list[str]) -> list[WorkerSpec]:
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
    branch = git_info(repo)[1] if commit else ""
    if is_dirty(repo):
        if s.strict:
            raise AbError(
                f"perfgate: A/B: the head tree {repo} has uncommitted changes; strict mode compares "
                f"committed code only (commit or stash them)"
            )
        messages.append(f"perfgate: A/B: the head tree {repo} has uncommitted changes: they are measured as they are")
        label += " + uncommitted changes"
    return Tree(repo, commit, label, branch="" if branch == "HEAD" else branch)  # HEAD: detached, no branch


def _has_commits(repo: Path) -> bool:
    from perfgate.measure.tools import run_tool

    return (
        run_tool(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", "HEAD"], 60.0, check=False).returncode
        == 0
    )
