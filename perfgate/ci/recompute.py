"""A results file's verdicts recomputed from its own numbers, as far as those numbers decide them.

`perfgate ci verdict`, `ci annotate` and `ci comment` read a file a job that ran pull-request code wrote;
a verdict flipped from regressed to unchanged, with its numbers left as they were, must not pass. What the
file holds does not let the gate's whole rule run again (the baseline's calibration processes, the number
of confirmation stages and the run's alpha are not in it), but it pins down enough for the rule's own
consequences, which this module checks with the gate's own functions:

- a change is what its baseline and current values make it (stats.percent_change, as gate/compare.py);
- a case's current time (or speedup) is the mean of its process values in `cases`, one per process;
- REGRESSED needs every process beyond the threshold T (gate/decision.py: each process beyond T_k or more;
  A/B's ratio rule: the mean beyond T);
- UNCHANGED or IMPROVED with the change beyond T needs the change inside the noise band, which is narrower
  than the interval's half width (t(0.95) < t(0.975), both rules) and at most
  decision.noise_band_pct(noise, df, processes, 1) (a centre of one process, the widest band);
- in a strict gate, a gated time or speedup whose process lies beyond 100 % (the highest `ceiling_pct`)
  either fails or has its `beyond the ceiling` finding (gate/ceiling.py).

A file that contradicts one of these is refused with exit status 4 (Contradiction). What no check here can
find is a file whose numbers were all invented consistently: the measuring job ran the pull request's code
(docs/github-actions.md says what that means).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from perfgate.errors import ReportFileError, one_line
from perfgate.gate.ceiling import changes_against
from perfgate.gate.decision import noise_band_pct
from perfgate.gate.noise import MIN_REFERENCE_PROCESSES
from perfgate.metrics import SPEEDUP_METRIC, TIME_METRIC
from perfgate.model import Direction, FindingKind, Verdict
from perfgate.stats import percent_change

HIGHEST_CEILING_PCT = 100.0  # config/validate.py CEILING's upper bound: no setting lets a process past it
REL_TOL = 1e-6  # the file's numbers went through JSON's shortest round trip: far closer than this
_DECIDED = frozenset(v.value for v in (Verdict.REGRESSED, Verdict.IMPROVED, Verdict.UNCHANGED, Verdict.INCONCLUSIVE))
_NOT_FAILING = frozenset({Verdict.UNCHANGED.value, Verdict.IMPROVED.value, Verdict.INCONCLUSIVE.value})
_RULED = (TIME_METRIC, SPEEDUP_METRIC)  # decided by the between-process rule; the rest by tolerances


class Contradiction(ReportFileError):
    """A results file whose verdicts its own numbers contradict: exit status 4."""

    exit_status = 4

    def __init__(self, path: object, problem: str) -> None:
        super().__init__(path, problem)
        self.args = (one_line(f"perfgate: {path}: {problem}"),)  # read, and refused: not "cannot read"


def check_verdicts(path: Any, doc: dict[str, Any], strict: bool) -> None:
    """Contradiction for the first row whose verdict its numbers rule out (module docstring)."""
    ab = isinstance(doc.get("ab"), dict)
    cases = {c["case_id"]: c for c in doc.get("cases", []) if isinstance(c.get("timing"), dict)}
    ceiling = {f.get("case_id") for f in doc.get("findings", []) if f["kind"] == FindingKind.BEYOND_CEILING.value}
    for i, row in enumerate(doc.get("comparisons", [])):
        if row["verdict"] not in _DECIDED:
            continue
        values = () if ab else _process_values(path, row, cases.get(row["case_id"]))
        problem = _arithmetic(row, values, ab) or _against_rule(row, values, cases.get(row["case_id"]), ab)
        if not problem and strict and not ab and row["case_id"] not in ceiling:
            problem = _beyond_ceiling(row, values)
        if problem:
            raise Contradiction(
                path,
                f"comparisons[{i}] ({row['case_id'][:80]} {row['metric'][:40]}): {problem}: "
                "the verdict contradicts its own numbers",
            )


def worse_pct(row: dict[str, Any], change: float) -> float:
    """The change in the direction the rule judges, worse positive: time up, a speedup's reciprocal up, a
    tolerance metric's change signed by its direction."""
    if row.get("direction") != Direction.HIGHER.value:
        return change
    if row["metric"] != SPEEDUP_METRIC:
        return -change
    return math.inf if change <= -100.0 else 100.0 * (100.0 / (100.0 + change) - 1.0)


def _process_values(path: Any, row: dict[str, Any], case: dict[str, Any] | None) -> tuple[float, ...]:
    """The case's process values behind a time or speedup row: its median (speedup) first, then the
    confirmation processes'."""
    if case is None or row["metric"] not in _RULED:
        return ()
    if row["metric"] == TIME_METRIC:
        first, more = case["timing"].get("median_ms"), case.get("confirmation_medians_ms", [])
    else:
        speedup = case.get("speedup")
        if not isinstance(speedup, dict):
            return ()
        first, more = speedup.get("median"), case.get("confirmation_speedups", [])
    values = [first, *more] if isinstance(more, list) else None
    if values is None or not all(type(v) in (int, float) and math.isfinite(v) and v > 0 for v in values):
        raise ReportFileError(path, f"case {row['case_id'][:80]!r}: its process values are not positive numbers")
    return tuple(float(v) for v in values)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-9)


def _arithmetic(row: dict[str, Any], values: Sequence[float], ab: bool) -> str:
    """The change against baseline and current, and current against the case's processes."""
    base, current, change = row.get("baseline"), row.get("current"), row.get("change_pct")
    if not ab and base is not None and current is not None and change is not None:
        expected = percent_change(base, current)
        if expected is not None and not _close(expected, change):
            return f"a change of {change:+g}% where baseline {base:g} and current {current:g} make {expected:+g}%"
    if values and current is not None:
        mean = _mean(row["metric"], values)
        if not _close(mean, current) or row.get("processes", len(values)) != len(values):
            return (
                f"current {current:g} over {row.get('processes')} process(es) where the case's "
                f"{len(values)} process value(s) make {mean:g}"
            )
    return ""


def _mean(metric: str, values: Sequence[float]) -> float:
    """gate/compare.py's current: the mean time, or the speedup whose reciprocal is the mean reciprocal."""
    if metric == TIME_METRIC:
        return math.fsum(values) / len(values)
    return len(values) / math.fsum(1.0 / v for v in values)


def _against_rule(row: dict[str, Any], values: Sequence[float], case: dict[str, Any] | None, ab: bool) -> str:
    change, threshold = row.get("change_pct"), row.get("threshold_pct")
    if change is None or threshold is None:
        return ""
    worse, verdict = worse_pct(row, change), row["verdict"]
    if verdict == Verdict.REGRESSED.value:
        processes = changes_against(row["metric"], row.get("baseline"), values, values) if values else (worse,)
        below = [d for d in processes if not d > threshold - 1e-9]
        if below:
            return f"regressed with a change of {below[0]:+.4g}% against a threshold of {threshold:.4g}%"
        return ""
    if verdict not in (Verdict.UNCHANGED.value, Verdict.IMPROVED.value) or row["metric"] not in _RULED:
        return ""
    band = _widest_band(row, case, ab)
    if worse > threshold and band is not None and worse > band:
        return (
            f"{verdict} with a change of {worse:+.4g}% against a threshold of {threshold:.4g}% and a noise band "
            f"of at most {band:.4g}%"
        )
    return ""


def _widest_band(row: dict[str, Any], case: dict[str, Any] | None, ab: bool) -> float | None:
    """The widest noise band the row's own numbers allow (worse terms, %); None when they say nothing."""
    noise = row.get("noise_pct")
    if noise is None:
        return None  # no between-process noise: the within-run rank test decided, from samples not in the file
    bands = []
    low, high = row.get("ci_low_pct"), row.get("ci_high_pct")
    if low is not None and high is not None and min(low, high) > -100.0:
        if ab:  # pct(mean +- half) of a log ratio (a speedup's ends flipped): symmetric in log1p
            bands.append(100.0 * math.expm1(abs(math.log1p(high / 100.0) - math.log1p(low / 100.0)) / 2.0))
        else:  # mean +- half, in the rule's own (worse) terms, negated for a speedup
            bands.append(abs(high - low) / 2.0)
    if not ab:
        processes = row.get("processes")
        df = _df(row, case)
        if type(processes) is int and processes > 0:
            bands.append(noise_band_pct(noise, df, processes, 1))
    return min(bands) if bands else None


def _df(row: dict[str, Any], case: dict[str, Any] | None) -> int:
    """The noise estimate's degrees of freedom where the case states them, else the fewest a noise has."""
    key = "time_noise" if row["metric"] == TIME_METRIC else "speedup_noise"
    thresholds = case.get("thresholds") if case else None
    noise = thresholds.get(key) if isinstance(thresholds, dict) else None
    df = noise.get("df") if isinstance(noise, dict) else None
    return df if type(df) is int and df >= MIN_REFERENCE_PROCESSES - 1 else MIN_REFERENCE_PROCESSES - 1


def _beyond_ceiling(row: dict[str, Any], values: Sequence[float]) -> str:
    """A strict gate's gated time or speedup with a process past every ceiling, neither failed nor named."""
    if row["metric"] not in _RULED or row.get("gated") is False or row["verdict"] not in _NOT_FAILING:
        return ""
    changes = changes_against(row["metric"], row.get("baseline"), values, values) if values else ()
    if not changes and row.get("change_pct") is not None:
        changes = (worse_pct(row, row["change_pct"]),)
    worst = max(changes, default=0.0)
    if worst > HIGHEST_CEILING_PCT:
        return (
            f"{row['verdict']} with a process {worst:+.4g}% against the baseline, beyond every ceiling, and no "
            f"'{FindingKind.BEYOND_CEILING.value}' finding for it in a strict gate"
        )
    return ""
