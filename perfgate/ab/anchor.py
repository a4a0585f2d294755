"""An anchor run: A/B mode against the commit the baseline was calibrated at (`perfgate ab --anchor`).

A baseline is a commit too. Measuring that commit beside the head, in the same job on the same machine,
cancels what changed in between that is not the code (the driver, the board's state, the machine's drift)
and leaves what the code did since the calibration: each case's ratio is its cumulative change. The anchor
is the commit of the baseline's latest calibration (its update log's last entry written by `perfgate
calibrate`); everything after that is the one A/B pipeline (ab/run.py), its runs stored as an A/B pair marked
as an anchor run (store/ab_pairs.py lists them over time). docs/anchor.md says what it cancels and what not.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from perfgate.ab.protocol import AbError
from perfgate.baseline import Baseline, Update, load_baseline
from perfgate.config.settings import Settings

GIT_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Anchor:
    """The calibration an anchor run measures against."""

    baseline_path: Path
    commit: str  # the full commit the calibration ran at
    calibrated_at: str  # ISO 8601 UTC, from the baseline's update log
    calibrated_runs: int  # the calibration's fresh processes
    later_updates: int  # updates of the baseline after it (their cases' numbers come from other commits)
    dirty: bool = False  # the calibration's tree had uncommitted changes

    @property
    def label(self) -> str:
        """`baselines/x.json, calibrated 2026-11-22 at 1a2b3c4d5e6f`: what the reports say the base is."""
        return f"{self.baseline_path.name}, calibrated {self.calibrated_at[:10]} at {self.commit[:12]}"


def calibration_update(baseline: Baseline) -> Update | None:
    """The baseline's latest calibration that recorded its commit (None: no calibration has one)."""
    found = [u for u in baseline.updates if u.calibrated_runs > 0 and u.commit.strip()]
    return found[-1] if found else None


def anchor_baseline_path(settings: Settings) -> Path:
    """The baseline file whose calibration is the anchor: the one named, else the only one in the baseline
    directory; AbError (one line) when there is none or more than one."""
    if settings.baseline_file is not None:
        if not settings.baseline_file.is_file():
            raise AbError(f"perfgate: ab --anchor: {settings.baseline_file}: no such baseline file")
        return settings.baseline_file
    found = sorted(settings.baseline_dir.glob("*.json")) if settings.baseline_dir.is_dir() else []
    if not found:
        raise AbError(
            f"perfgate: ab --anchor: no baseline in {settings.baseline_dir}: an anchor run measures against the "
            "commit a baseline was calibrated at (run perfgate calibrate first)"
        )
    if len(found) > 1:
        names = ", ".join(p.name for p in found)
        raise AbError(
            f"perfgate: ab --anchor: {settings.baseline_dir} holds {len(found)} baselines ({names}): "
            "name this device's with --baseline-file"
        )
    return found[0]


def resolve_anchor(settings: Settings, repo: Path) -> Anchor:
    """The anchor of this project's baseline, its commit checked to be in `repo`; AbError (one line naming
    the file) when the baseline has no calibration commit or the repository lacks that commit."""
    path = anchor_baseline_path(settings)
    baseline = load_baseline(path)  # a malformed file: BaselineError, one line naming it
    update = calibration_update(baseline) if baseline is not None else None
    if baseline is None or update is None:
        raise AbError(
            f"perfgate: ab --anchor: {path} records no calibration commit (its update log has no entry written by "
            "perfgate calibrate with a commit): calibrate it in a git checkout to anchor it"
        )
    later = len(baseline.updates) - 1 - baseline.updates.index(update)
    anchor = Anchor(path, update.commit.strip(), update.at, update.calibrated_runs, later, update.dirty)
    _check_present(repo, anchor)
    return anchor


def _check_present(repo: Path, anchor: Anchor) -> None:
    from perfgate.measure.tools import run_tool

    def git(*args: str) -> tuple[int, str]:
        out = run_tool(["git", "-C", str(repo), *args], GIT_TIMEOUT_S, check=False)
        return out.returncode, out.stdout.strip()

    code, _ = git("cat-file", "-e", f"{anchor.commit}^{{commit}}")
    if code == 0:
        return
    where = f"perfgate: ab --anchor: the calibration commit {anchor.commit[:12]} of {anchor.baseline_path}"
    if git("rev-parse", "--is-shallow-repository")[1] == "true":
        raise AbError(
            f"{where} is not in this shallow clone: fetch the whole history (actions/checkout with fetch-depth: 0, "
            "or git fetch --unshallow)"
        )
    raise AbError(
        f"{where} is not in this repository (a rewritten history?): fetch it (git fetch origin {anchor.commit}) "
        "or recalibrate"
    )


def anchor_lines(anchor: Anchor, repo: Path, head_commit: str) -> list[str]:
    """What the run says before it measures: which commit is the base and how far back it lies."""
    from perfgate.measure.tools import run_tool

    since = ""
    if head_commit:
        out = run_tool(
            ["git", "-C", str(repo), "rev-list", "--count", f"{anchor.commit}..{head_commit}"],
            GIT_TIMEOUT_S,
            check=False,
        )
        if out.returncode == 0 and out.stdout.strip().isdigit():
            since = f", {int(out.stdout)} commit(s) before the head"
    try:
        shown = anchor.baseline_path.resolve().relative_to(repo.resolve())
    except ValueError:
        shown = anchor.baseline_path
    lines = [
        f"perfgate: anchor: the base is {shown}'s calibration commit {anchor.commit[:12]} "
        f"(calibrated {anchor.calibrated_at} from {anchor.calibrated_runs} processes{since}): each ratio is "
        "the case's cumulative change since, machine and driver drift cancelled"
    ]
    if anchor.dirty:
        lines.append(
            f"perfgate: anchor: the calibration ran on a tree with uncommitted changes: commit {anchor.commit[:12]} "
            "is not exactly the code it measured (calibrate from a clean checkout)"
        )
    if anchor.later_updates:
        lines.append(
            f"perfgate: anchor: {anchor.later_updates} later update(s) of {anchor.baseline_path.name} changed cases "
            "without calibrating: their accepted changes show here as changes since the anchor"
        )
    return lines


def bisect_hint(anchor: Anchor, regressed: Iterable[str]) -> list[str]:
    """After an anchor run that called cases regressed: the command that finds the commit (one line)."""
    tests = sorted({case_id.split("::")[-1].split("[", 1)[0] for case_id in regressed})
    if not tests:
        return []
    return [
        f"perfgate: anchor: {len(tests)} test(s) slower since the calibration; the commit that did it: "
        f"perfgate bisect {anchor.commit[:12]} HEAD -k '{' or '.join(tests)}'"
    ]
