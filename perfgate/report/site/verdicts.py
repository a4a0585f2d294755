"""Where the dashboard's verdicts come from: the one place to change when the history stores them.

Today every verdict is reached by re-gating the stored run with the library (`gate.evaluate` against the
committed baseline of its device model), exactly as `perfgate compare --run ID` does: the thresholds
stored with each case and its confirmation medians give the plugin's verdicts back. Once the history
stores each case's verdict, `RunVerdicts.gated` reads them instead; nothing else in the site changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from perfgate.baseline import Baseline
from perfgate.config.settings import Settings
from perfgate.gate.findings import GateFacts
from perfgate.model import Comparison, Environment, GateResult, Run, Verdict
from perfgate.store import Store

# The most telling verdict of a case's rows first: what the overview shows for the case.
SEVERITY = (
    Verdict.REGRESSED,
    Verdict.BELOW_TARGET,
    Verdict.PROFILE_FAILED,
    Verdict.NOT_COMPARABLE,
    Verdict.INCONCLUSIVE,
    Verdict.IMPROVED,
    Verdict.UNCHANGED,
    Verdict.NEW,
    Verdict.MISSING,
)


@dataclass(frozen=True)
class GatedRun:
    run: Run
    gate: GateResult
    baseline: Baseline | None


class RunVerdicts:
    """THE source of the site's verdicts (see the module docstring). Each device model's baseline is read
    once; runs are gated on request and not kept (a run with its samples can be large)."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self.store, self.settings = store, settings
        self._baselines: dict[tuple[str, str, str], tuple[Baseline | None, GateFacts]] = {}

    def baseline(self, env: Environment) -> tuple[Baseline | None, GateFacts]:
        from perfgate.gate.run import resolve_baseline

        key = env.comparability_key()
        if key not in self._baselines:
            _, baseline, facts = resolve_baseline(self.settings, env)
            self._baselines[key] = (baseline, facts)
        return self._baselines[key]

    def gated(self, run_id: int) -> GatedRun:
        from perfgate.gate.run import evaluate

        run = self.store.load_run(run_id)
        baseline, facts = self.baseline(run.environment)
        return GatedRun(run, evaluate(run, baseline, self.settings, facts), baseline)


def gate_runs(store: Store, run_ids: Iterable[int], settings: Settings) -> dict[int, GatedRun]:
    """Several runs with their verdicts, through RunVerdicts."""
    verdicts = RunVerdicts(store, settings)
    return {run_id: verdicts.gated(run_id) for run_id in sorted(set(run_ids))}


def case_verdict(rows: Iterable[Comparison]) -> Verdict | None:
    """The case's verdict over all its metrics: the most severe one (None when it has no row)."""
    seen = {c.verdict for c in rows}
    return next((v for v in SEVERITY if v in seen), None)
