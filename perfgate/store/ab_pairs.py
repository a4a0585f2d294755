"""A/B comparisons in the history: the two sides of one comparison (kinds `ab-base` and `ab-head`, sharing their
`ab_pair`) read back as one comparison, and the SQL that keeps them out of everything else.

An A/B run's base side is an older commit measured on the day of a pull request; its head side is code that
may never reach the main branch. Neither belongs in a case's trend, its change points, its noise window or
the dashboard's series, which are the history of the code as it was gated: those queries add
store/kinds.py's `OUTSIDE_AB`. `perfgate history --kind ab` lists them, and `ab_comparisons` /
`ab_comparison` give what a view of one A/B comparison needs (both sides, the base commit, the head's
verdicts).
"""

from __future__ import annotations

from dataclasses import dataclass

from perfgate.model import Run, RunKind
from perfgate.store import Store
from perfgate.store.verdicts import RunVerdicts


@dataclass(frozen=True)
class AbPairRow:
    """One stored A/B comparison, as a list shows it."""

    pair: str
    head_run_id: int
    base_run_id: int
    started_at: str
    head_commit: str
    base_commit: str
    device_name: str
    cases: int
    gate: str  # passed / failed ("" when the head was stored without verdicts)
    anchor: bool = False  # the base is the baseline's calibration commit (perfgate ab --anchor)


def ab_comparisons(store: Store, last: int, anchor_only: bool = False) -> list[AbPairRow]:
    """The last `last` A/B comparisons whose both sides are stored, oldest first; `anchor_only`: anchor runs
    only (the cumulative change since the calibration, over time)."""
    only = " AND h.ab_anchor = 1" if anchor_only else ""
    rows = store.query(
        "SELECT h.ab_pair, h.id AS head_id, b.id AS base_id, h.started_at, h.git_commit AS head_commit, "
        "b.git_commit AS base_commit, h.device_name, h.gate_failed, h.ab_anchor, "
        "(SELECT count(*) FROM cases c WHERE c.run_id = h.id) AS n_cases "
        "FROM runs h JOIN runs b ON b.ab_pair = h.ab_pair AND b.kind = :base "
        f"WHERE h.kind = :head{only} ORDER BY h.id DESC LIMIT :last",
        {"base": RunKind.AB_BASE.value, "head": RunKind.AB_HEAD.value, "last": max(last, 0)},
    )
    return [
        AbPairRow(
            str(r["ab_pair"]),
            int(r["head_id"]),
            int(r["base_id"]),
            r["started_at"] or "",
            r["head_commit"] or "",
            r["base_commit"] or "",
            r["device_name"] or "",
            int(r["n_cases"]),
            "" if r["gate_failed"] is None else ("failed" if r["gate_failed"] else "passed"),
            bool(r["ab_anchor"]),
        )
        for r in reversed(rows)
    ]


@dataclass(frozen=True)
class AbComparisonRecord:
    """One A/B comparison read back whole: both sides (every value re-validated) and the head's verdicts."""

    head: Run
    base: Run
    verdicts: RunVerdicts | None

    @property
    def base_commit(self) -> str:
        return self.base.info.git_commit


def ab_comparison(store: Store, pair: str) -> AbComparisonRecord | None:
    """The comparison `pair` names, None when the history does not hold both its sides."""
    found = store.query(
        "SELECT id, kind FROM runs WHERE ab_pair = :pair AND kind IN (:head, :base)",
        {"pair": pair, "head": RunKind.AB_HEAD.value, "base": RunKind.AB_BASE.value},
    )
    ids = {r["kind"]: int(r["id"]) for r in found}
    head, base = ids.get(RunKind.AB_HEAD.value), ids.get(RunKind.AB_BASE.value)
    if head is None or base is None:
        return None
    return AbComparisonRecord(store.load_run(head), store.load_run(base), store.load_verdicts(head))
