"""Which runs a query reads, by kind, as SQL conditions on the runs table (aliased `r`): A/B runs stay out of a
case's trend, change points, noise window and the dashboard's series unless asked for (store/ab_pairs.py)."""

from __future__ import annotations

from perfgate.model import AB_KINDS, RunKind

_AB_VALUES = ", ".join(f"'{k.value}'" for k in AB_KINDS)
OUTSIDE_AB = f"coalesce(r.kind, '') NOT IN ({_AB_VALUES})"  # on the runs table as `r`
INSIDE_AB = f"r.kind IN ({_AB_VALUES})"


def kind_condition(kind: str) -> str:
    """A condition on `runs r` for `perfgate history --kind`: "" every run but A/B's, "all" every run,
    "ab" both sides of A/B runs, "anchor" both sides of anchor runs (A/B against the baseline's calibration
    commit), else one run kind."""
    if kind == "":
        return OUTSIDE_AB
    if kind == "all":
        return "1 = 1"
    if kind == "ab":
        return INSIDE_AB
    if kind == "anchor":
        return f"{INSIDE_AB} AND r.ab_anchor = 1"
    return f"r.kind = '{RunKind(kind).value}'"  # a RunKind's own value: nothing from the caller reaches the SQL
