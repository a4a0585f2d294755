"""`perfgate bisect GOOD BAD`: the first commit whose cases are slower than GOOD's, found with the A/B
measurement at every step.

The commits from GOOD to BAD (first-parent, oldest first) are searched in halves. Each step measures one
commit's worktree against GOOD's side by side (run.py, nothing stored or published) and calls it bad when
any selected case's time regressed. First the ends: BAD against GOOD, so a bisection never starts on a
slowdown that is not there. A commit whose worker fails (it does not build, import or pass its tests), or
whose verdict is inconclusive, is skipped the way `git bisect skip` does: the next step takes the
untested commit nearest the middle, and if only skipped commits separate a good one from a bad one, the
answer is that range.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from perfgate.ab.protocol import AbError
from perfgate.ab.run import AbOutcome, run_ab
from perfgate.ab.setup import AbRequest
from perfgate.ab.worktree import git, repository_root, resolve_commit
from perfgate.errors import PerfgateError, one_line
from perfgate.metrics import TIME_METRIC
from perfgate.model import Verdict


class StepResult(enum.Enum):
    GOOD = "good"
    BAD = "bad"
    SKIP = "skip"


@dataclass(frozen=True)
class Step:
    commit: str
    subject: str
    result: StepResult
    case_id: str = ""  # the case that decided (the most regressed one)
    ratio: float | None = None  # its head / base time ratio
    ci: tuple[float, float] | None = None
    why: str = ""  # a skip's cause, or the verdict in words

    def line(self, number: int) -> str:
        ratio = f" ratio {self.ratio:.3f}" if self.ratio is not None else ""
        ci = f" [{self.ci[0]:.3f}, {self.ci[1]:.3f}]" if self.ci is not None else ""
        case = f" {self.case_id}" if self.case_id else ""
        why = f" ({self.why})" if self.why else ""
        return f"step {number}: {self.commit[:12]} {self.result.value}{case}{ratio}{ci}{why}  {self.subject}"


@dataclass(frozen=True)
class Bisection:
    good: str
    bad: str
    first_bad: str | None  # None: no regression between GOOD and BAD, or only skipped commits decide
    candidates: tuple[str, ...]  # when skips hide the answer: the commits it is among
    steps: tuple[Step, ...]

    def summary(self) -> list[str]:
        lines = [s.line(i) for i, s in enumerate(self.steps, 1)]
        decided = next((s for s in self.steps if s.commit == self.first_bad), None)
        if self.first_bad is not None and decided is not None:
            lines.append(
                f"perfgate bisect: first bad commit {self.first_bad} ({decided.subject}): "
                f"{decided.case_id} ratio {decided.ratio:.3f} against {self.good[:12]}, "
                f"{len(self.steps)} step(s)"
            )
        elif self.candidates:
            among = ", ".join(c[:12] for c in self.candidates)
            lines.append(
                f"perfgate bisect: the first bad commit is one of {among} (the others were skipped), "
                f"{len(self.steps)} step(s)"
            )
        else:
            lines.append(
                f"perfgate bisect: {self.bad[:12]} is not slower than {self.good[:12]} beyond what the "
                f"cases can detect: nothing to bisect ({len(self.steps)} step(s))"
            )
        return lines


Measure = Callable[[str], AbOutcome]  # a commit -> its A/B outcome against GOOD


def bisect(
    request: AbRequest,
    good: str,
    bad: str,
    progress: Callable[[str], None] = lambda _: None,
    measure: Measure | None = None,
    measuring: Callable[[str], None] = lambda _: None,
) -> Bisection:
    """Search GOOD..BAD; `request` carries the selection and settings (its ref is replaced by GOOD).
    `measuring` is told which step starts (a step is a whole A/B run: minutes), `progress` each step's line."""
    repo = repository_root(request.invocation_dir)
    good_commit, bad_commit = resolve_commit(repo, good), resolve_commit(repo, bad)
    commits = _between(repo, good_commit, bad_commit)
    step_request = replace(request, ref=good_commit, publish=False)
    run = measure or (lambda commit: run_ab(replace(step_request, head_commit=commit)))
    steps: list[Step] = []

    def judge(index: int) -> StepResult:
        measuring(f"step {len(steps) + 1}: measuring {commits[index][:12]} against {good_commit[:12]}")
        step = _step(repo, commits[index], run)
        steps.append(step)
        progress(step.line(len(steps)))
        return step.result

    verdicts: dict[int, StepResult] = {}
    verdicts[len(commits) - 1] = judge(len(commits) - 1)
    if verdicts[len(commits) - 1] is not StepResult.BAD:
        return Bisection(good_commit, bad_commit, None, (), tuple(steps))
    lo, hi = -1, len(commits) - 1  # lo: the last known good (-1 = GOOD), hi: the first known bad
    while True:
        todo = [i for i in range(lo + 1, hi) if i not in verdicts]
        if not todo:
            break
        mid = (lo + hi) / 2
        index = min(todo, key=lambda i: (abs(i - mid), i))
        verdicts[index] = judge(index)
        if verdicts[index] is StepResult.BAD:
            hi = index
        elif verdicts[index] is StepResult.GOOD:
            lo = index
    between = [commits[i] for i in range(lo + 1, hi + 1)]
    if len(between) == 1:
        return Bisection(good_commit, bad_commit, between[0], (), tuple(steps))
    return Bisection(good_commit, bad_commit, None, tuple(between), tuple(steps))


def _between(repo: Path, good: str, bad: str) -> list[str]:
    """GOOD's descendants up to BAD on BAD's first-parent line, oldest first, BAD last."""
    if git(repo, "merge-base", good, bad) != good:
        raise AbError(f"perfgate bisect: {good[:12]} is not an ancestor of {bad[:12]}")
    listed = git(repo, "rev-list", "--first-parent", "--ancestry-path", f"{good}..{bad}").split()
    if not listed:
        raise AbError(f"perfgate bisect: no commits between {good[:12]} and {bad[:12]}")
    return list(reversed(listed))


def _step(repo: Path, commit: str, run: Measure) -> Step:
    subject = git(repo, "log", "-1", "--format=%s", commit)
    try:
        outcome = run(commit)
    except PerfgateError as err:
        return Step(commit, subject, StepResult.SKIP, why=one_line(str(err), 200))
    if outcome.failed or outcome.head_tests_failed:
        why = next((f.message for f in outcome.gate.findings), "its tests failed")
        return Step(commit, subject, StepResult.SKIP, why=one_line(why, 200))
    return _judged(commit, subject, outcome)


def _judged(commit: str, subject: str, outcome: AbOutcome) -> Step:
    rows = [
        c
        for c in outcome.gate.comparisons
        if c.metric == TIME_METRIC
        and c.change_pct is not None
        and c.verdict in (Verdict.REGRESSED, Verdict.INCONCLUSIVE, Verdict.UNCHANGED, Verdict.IMPROVED)
    ]
    if not rows:
        return Step(commit, subject, StepResult.SKIP, why="no case measured on both sides")
    regressed = [c for c in rows if c.verdict is Verdict.REGRESSED]
    worst = max(regressed or rows, key=lambda c: c.change_pct or 0.0)
    ratio = 1 + (worst.change_pct or 0.0) / 100
    ci = (
        (1 + worst.ci_low_pct / 100, 1 + worst.ci_high_pct / 100)
        if worst.ci_low_pct is not None and worst.ci_high_pct is not None
        else None
    )
    if regressed:
        return Step(
            commit,
            subject,
            StepResult.BAD,
            worst.case_id,
            ratio,
            ci,
            why=f"{worst.change_pct:+.1f}% > {worst.threshold_pct or 0.0:.2f}%",
        )
    if any(c.verdict is Verdict.INCONCLUSIVE for c in rows):
        return Step(commit, subject, StepResult.SKIP, worst.case_id, ratio, ci, why="inconclusive")
    return Step(commit, subject, StepResult.GOOD, worst.case_id, ratio, ci)
