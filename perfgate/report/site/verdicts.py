"""Where the dashboard's verdicts come from: the one place to change when the history stores them.

Today every verdict is reached by re-gating the stored run with the library (`gate.evaluate` against the
committed baseline of its device model), exactly as `perfgate compare --run ID` does: the thresholds
stored with each case and its confirmation medians give the plugin's verdicts back. Once the history
stores each case's verdict, `gate_runs` reads them instead; nothing else in the site changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from perfgate.baseline import Baseline
from perfgate.findings import GateFacts
from perfgate.model import Comparison, GateResult, Run, Verdict
from perfgate.settings import Settings
from perfgate.store import Store

# The most telling verdict of a case's rows first: what the overview shows for the case.
SEVERITY = (Verdict.REGRESSED, Verdict.BELOW_TARGET, Verdict.PROFILE_FAILED, Verdict.NOT_COMPARABLE,
            Verdict.INCONCLUSIVE, Verdict.IMPROVED, Verdict.UNCHANGED, Verdict.NEW, Verdict.MISSING)


@dataclass(frozen=True)
class GatedRun:
    run: Run
    gate: GateResult
    baseline: Baseline | None


def gate_runs(store: Store, run_ids: Iterable[int], settings: Settings) -> dict[int, GatedRun]:
    """Each stored run with its verdicts: THE source of verdicts for the site (see the module docstring)."""
    from perfgate.gate import evaluate, resolve_baseline

    baselines: dict[tuple[str, str, str], tuple[Baseline | None, GateFacts]] = {}
    out: dict[int, GatedRun] = {}
    for run_id in sorted(set(run_ids)):
        run = store.load_run(run_id)
        key = run.environment.comparability_key()
        if key not in baselines:
            _, baseline, facts = resolve_baseline(settings, run.environment)
            baselines[key] = (baseline, facts)
        baseline, facts = baselines[key]
        out[run_id] = GatedRun(run, evaluate(run, baseline, settings, facts), baseline)
    return out


def case_verdict(rows: Iterable[Comparison]) -> Verdict | None:
    """The case's verdict over all its metrics: the most severe one (None when it has no row)."""
    seen = {c.verdict for c in rows}
    return next((v for v in SEVERITY if v in seen), None)
