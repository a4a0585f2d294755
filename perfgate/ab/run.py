"""A/B mode's way of producing comparisons: `pytest --perfgate --perfgate-base REF`, `perfgate ab REF` and every
step of `perfgate bisect` call `run_ab`.

    REF -> base worktree (cached) -> workers (base, head, and a second base for the A/A unless cached)
        -> rounds (coordinator.py) -> verdicts (compare.py) -> a fresh pair for the called cases (measured.py)
        -> what the tail takes (compared.py) -> gate/run.py's `finish`, the tail baseline mode goes through
           too: findings, strict checks, the ceiling, the history (both sides, paired: runs.py), every output,
           the exit code

Every phase's cost is measured, shown live (report/progress.py) and printed; the phases add up to the
total. Nothing is stored and no cache is written when a worker failed: the history gets whole runs of a
finished comparison or nothing.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from perfgate.ab.anchor import bisect_hint
from perfgate.ab.compared import as_compared, sides_as_runs, update_aa
from perfgate.ab.costs import Costs
from perfgate.ab.measured import measure
from perfgate.ab.protocol import Side
from perfgate.ab.rounds import Measurement
from perfgate.ab.setup import AbRequest, setup_run
from perfgate.errors import PYTEST_NO_TESTS_COLLECTED
from perfgate.gate.ratio import RatioDecision
from perfgate.model import GateResult, Run, Verdict
from perfgate.report.ab import cost_line
from perfgate.report.progress import Progress


@dataclass(frozen=True)
class AbOutcome:
    gate: GateResult
    head_run: Run
    base_run: Run
    messages: tuple[str, ...]
    exit_code: int  # 0 passed, 1 the gate failed or the head's tests failed, 5 the head collected no perf test
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

    started, costs = _now(), Costs(time.monotonic())
    s = req.settings
    messages: list[str] = []
    with costs.phase("worktree"):  # bad input is one line, before any display or worker starts
        setup = setup_run(req, messages)
    with _progress(req) as progress:
        measured = measure(req, setup, costs, messages, progress)
    m = measured.measurement
    messages += m.notes + same_code_lines(m)
    with costs.phase("verdicts"):
        head_run, base_run = sides_as_runs(measured, setup, req, started)
        compared = as_compared(req, setup, measured, head_run, base_run, costs, messages)
    with costs.phase("finish"):
        done = finish(compared, s, store=req.publish and m.failure is None, publish=req.publish)
        if req.publish and m.failure is None and not measured.tampered:  # its cache went with the worktree
            update_aa(setup, measured.cmp, m, messages)
    messages += done.messages
    if setup.anchor is not None:
        regressed = (cid for (cid, _), d in measured.cmp.decisions.items() if d.verdict is Verdict.REGRESSED)
        messages += bisect_hint(setup.anchor, regressed)
    total = costs.total()
    messages.append(cost_line(total))
    head_status = m.exitstatus.get(Side.HEAD, 0) if m.failure is None else 0
    head_failed = head_status not in (0, PYTEST_NO_TESTS_COLLECTED)
    return AbOutcome(
        done.gate,
        done.run,
        done.pair or base_run,
        tuple(messages),
        1 if (done.exit_code or head_failed) else head_status,  # pytest's 5: the head collected no perf test
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


@contextlib.contextmanager
def _progress(req: AbRequest) -> Iterator[Progress]:
    if req.progress is not None:
        yield req.progress
        return
    from perfgate.report.progress import open_progress

    with open_progress() as progress:
        yield progress


def _now() -> str:
    from perfgate.measure.environment import utc_now

    return utc_now()
