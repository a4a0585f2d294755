"""Did the code a case measured change between two commits? (issue 31: "a case whose behaviour changed
across commits that did not touch it is named as such").

A case's files are its provenance (ab/provenance.py, recorded in baseline runs too): the measured callable's
and the reference's source files, and the project's modules the run imported (every case of the run counts
them all: a module first imported by another case still runs in this one). `git diff --name-only A B`
(B: the working tree when the run was dirty) touching none of them means the step came from somewhere the
code cannot: the machine, a library, a driver, a mode. It is a name beside the verdict, never a pass: files
provenance cannot see (a data file read at run time, a C library built elsewhere, a config file) may still
be the cause (docs/decision-rule.md, "Not this case's code").
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from perfgate.baseline import Baseline
from perfgate.errors import PerfgateError
from perfgate.model import CaseResult, CodeRole, CodeSource, Finding, FindingKind, GateResult, Run, Verdict

if TYPE_CHECKING:
    from perfgate.trends.history import HistoryChange

TEST_LOADER = "AssertionRewritingHook"  # pytest's loader of test modules and conftest.py files


@dataclass(frozen=True)
class CodeCheck:
    """The files each case's code came from (relative to the repository's top), and the repository."""

    top: Path  # the repository's top directory
    files: Mapping[str, frozenset[str]]  # case id -> its files; a case absent (or empty) cannot be checked
    scope: str = ""  # the rootdir relative to `top` ("" when it is the top): provenance records modules below it

    def untouched(self, case_id: str, changed: frozenset[str]) -> bool:
        """True when the case has files and the diff touches none of them, nor anything outside the rootdir
        (a monorepo's sibling package a test imports by sys.path is not recorded: it might be the cause), nor
        a directory holding one of them (a submodule's gitlink: `git diff` names the submodule, not its files)."""
        files = self.files.get(case_id, frozenset())
        if not files:
            return False
        scope = self.scope.rstrip("/") + "/" if self.scope else ""
        for path in changed:
            if scope and not path.startswith(scope):
                return False
            prefix = path.rstrip("/") + "/"
            if path in files or any(f.startswith(prefix) for f in files):
                return False
        return True


def repository_top(path: Path) -> Path | None:
    """The git top directory holding `path`; None outside a repository or without git."""
    from perfgate.ab.worktree import repository_root

    try:
        return repository_root(path)
    except PerfgateError:
        return None


def code_check(results: Sequence[CaseResult], rootdir: Path, top: Path | None = None) -> CodeCheck | None:
    """Each case's files inside the repository `top` (default: the one holding `rootdir`; None outside one)."""
    top = top or repository_top(rootdir)
    if top is None:
        return None
    modules = _inside(top, (_path(c, rootdir) for r in results for c in r.code if _shared(c)))
    files = {}
    for r in results:
        own = _inside(top, (_path(c, rootdir) for c in r.code if c.role is not CodeRole.MODULE))
        if own:  # without its own callable's file the case's code is unknown: never claim "untouched"
            files[r.case_id] = own | modules
    real_top, real_root = os.path.realpath(top), os.path.realpath(rootdir)
    scope = os.path.relpath(real_root, real_top).replace(os.sep, "/") if real_root != real_top else ""
    return CodeCheck(top, files, "" if scope.startswith("..") else scope)


def _path(c: CodeSource, rootdir: Path) -> str:
    """The file's absolute path: a baseline run records the checkout's files relative to its rootdir; an A/B
    run's base and head trees are gone (""), an absolute path stays."""
    if c.tree == "checkout":
        return os.path.join(os.path.realpath(rootdir), c.path)
    return "" if c.tree else c.path


def _shared(c: CodeSource) -> bool:
    """A module of the project every case of the run counts: not another case's test module (pytest collects
    them all before the first case; its assertion rewriter serves them, named by pytest's default
    `python_files`), but conftest.py files and helpers rewritten through `pytest.register_assert_rewrite`.
    A test module under other `python_files` patterns counts for every case: more files, never a false claim."""
    if c.role is not CodeRole.MODULE:
        return False
    leaf = c.name.rpartition(".")[2]
    return c.loader != TEST_LOADER or not (leaf.startswith("test_") or leaf.endswith("_test"))


def _inside(top: Path, paths: Iterable[str]) -> frozenset[str]:
    real = os.path.join(os.path.realpath(top), "")
    out = set()
    for p in paths:
        if not p or not os.path.isabs(p):
            continue
        full = os.path.realpath(p)
        if full.startswith(real):
            out.add(os.path.relpath(full, real).replace(os.sep, "/"))
    return frozenset(out)


class DiffUnavailable(PerfgateError):
    """`git diff` between two commits could not answer (a commit missing from a shallow clone, no git)."""


def changed_between(top: Path, since: str, until: str = "") -> frozenset[str]:
    """The files changed from `since` to `until` (the working tree with its untracked files when ""):
    DiffUnavailable in one line when git cannot tell."""
    from perfgate.ab.provenance import changed_paths

    if not since:
        raise DiffUnavailable("no commit recorded to compare with")
    try:
        return changed_paths(top, since, until)
    except PerfgateError as err:
        first = (str(err).strip().splitlines() or [""])[-1]
        raise DiffUnavailable(
            f"git cannot diff {since[:12]}..{until[:12] or 'the working tree'} in {top} (a shallow clone or a "
            f"commit not fetched?): {first[:160]}"
        ) from err


def skipped_line(err: DiffUnavailable) -> str:
    return f"perfgate: whether the cases' code changed was not checked: {err}"


# --- baseline mode: a regressed case whose code did not change since the baseline's reference ----------


def reference_commit(baseline: Baseline | None) -> tuple[str, str]:
    """(commit, what it is) the baseline's values were taken at: its last update; ("", why not) when unknown."""
    if baseline is None or not baseline.updates or not baseline.updates[-1].commit:
        return "", "the baseline records no commit"
    last = baseline.updates[-1]
    if last.dirty:
        return "", f"the baseline was written from a tree with uncommitted changes at {last.commit[:12]}"
    return last.commit, "the baseline's calibration" if last.calibrated_runs else "the baseline's last update"


def regressed_untouched(
    run: Run, gate: GateResult, baseline: Baseline | None, rootdir: Path
) -> tuple[tuple[Finding, ...], tuple[str, ...]]:
    """A finding for each regressed case none of whose files changed since the baseline's commit, and the one
    line saying why the check was skipped (a shallow clone, no commit), if it was."""
    regressed = [c for c in gate.comparisons if c.verdict is Verdict.REGRESSED]
    if not regressed:
        return (), ()
    since, what = reference_commit(baseline)
    check = code_check(run.results, rootdir)
    if check is None or not any(c.case_id in check.files for c in regressed):
        return (), ()
    if not since:
        return (), (f"perfgate: whether the regressed cases' code changed was not checked: {what}",)
    try:
        changed = changed_between(check.top, since, "" if run.info.git_dirty else run.info.git_commit)
    except DiffUnavailable as err:
        return (), (skipped_line(err),)
    found = tuple(
        Finding(FindingKind.CODE_UNCHANGED, _regressed_line(c.case_id, c.change_pct, since, what), c.case_id)
        for c in regressed
        if check.untouched(c.case_id, changed)
    )
    return found, ()


def _regressed_line(case_id: str, change_pct: float | None, since: str, what: str) -> str:
    by = f" {change_pct:+.1f} %" if change_pct is not None else ""
    return (
        f"{case_id}: regressed{by}, but no file this case's code came from changed since {since[:12]} ({what}): "
        "a machine, library or mode change, not this code (unless it reads files perfgate cannot see: data, a C "
        "library); see perfgate baseline reanchor / calibrate"
    )


# --- the history: a step whose commit range did not touch the case's files -----------------------------


def with_untouched_steps(
    changes: Sequence[HistoryChange], check: CodeCheck | None
) -> tuple[list[HistoryChange], tuple[str, ...]]:
    """The steps, each marked `code_untouched` when `git diff` over its commit range touches none of its
    case's files; the one line saying why a range could not be checked, if one could not."""
    out, skipped = list(changes), list[str]()
    if check is None:
        return out, ()
    for i, c in enumerate(out):
        before, after = c.last_before.git_commit, c.first_after.git_commit
        dirty = c.last_before.git_dirty or c.first_after.git_dirty  # the commits do not say what code ran
        if c.case_id not in check.files or not before or not after or before == after or dirty:
            continue
        try:
            changed = changed_between(check.top, before, after)
        except DiffUnavailable as err:
            skipped[:1] = [skipped_line(err)]
            continue
        out[i] = replace(c, code_untouched=check.untouched(c.case_id, changed))
    return out, tuple(skipped)
