"""What changed in the history since a consumer last looked: the runs stored since, and the (case, device
model) series they add to, for a builder that redoes only those (the dashboard, per push).

A `BuildMark` is where the last look stood: the newest run id it saw, and the ids below it that were not
stored yet. On a server many runners write at once: ids are handed out when a run starts being written
and a run becomes visible when its transaction commits, so run 41 may appear after run 42 was seen; an
id missing below the newest is kept as pending and asked about again next time (until it is
PENDING_HORIZON ids old: a run rolled back, or pruned, never comes). Reading is bounded by what changed: runs through
their key from the mark on, their cases through (run_id, case_id).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from perfgate.store import Store
from perfgate.store.kinds import OUTSIDE_AB

# a missing id this far below the newest is taken as never coming (rolled back, or pruned): runs in flight
# are among the newest ids (a fleet's writers at once), so the pending list stays short
PENDING_HORIZON = 1_000


@dataclass(frozen=True)
class BuildMark:
    last_run_id: int = 0
    pending: tuple[int, ...] = ()  # ids at or below last_run_id that were not visible yet

    def to_json(self) -> str:
        return json.dumps({"last_run_id": self.last_run_id, "pending": list(self.pending)})

    @classmethod
    def from_json(cls, text: str) -> BuildMark:
        """A mark written by to_json; ValueError for anything else (the caller rebuilds from scratch)."""
        doc = json.loads(text)
        if not isinstance(doc, dict):
            raise ValueError("a build mark is a JSON object")
        last, pending = doc.get("last_run_id"), doc.get("pending", [])
        if (
            isinstance(last, bool)
            or not isinstance(last, int)
            or last < 0
            or not isinstance(pending, list)
            or not all(isinstance(p, int) and not isinstance(p, bool) and 0 < p <= last for p in pending)
        ):
            raise ValueError("a build mark holds last_run_id >= 0 and pending ids at or below it")
        return cls(last, tuple(sorted(set(pending))))


@dataclass(frozen=True)
class Changes:
    runs: tuple[int, ...]  # run ids stored since the mark, ascending
    series: tuple[tuple[str, str], ...]  # (case id, device model) of their cases (A/B runs' not), sorted
    mark: BuildMark  # where this look stands: pass it next time


def changed_since(store: Store, mark: BuildMark | None = None, series: bool = True) -> Changes:
    """The runs stored since `mark` (None: since the beginning) and the series they touch (not read
    without `series`: a full rebuild reads every series anyway and needs only the new mark)."""
    mark = mark or BuildMark()
    found = store.query(
        f"SELECT id FROM runs WHERE id > :last OR id IN "
        f"(SELECT CAST(value AS BIGINT) FROM ({store.dialect.json_values('pending')}) AS p) ORDER BY id",
        {"last": mark.last_run_id, "pending": json.dumps(list(mark.pending))},
    )
    runs = tuple(int(r["id"]) for r in found)
    newest = max([mark.last_run_id, *runs])
    seen = set(runs)
    floor = newest - PENDING_HORIZON
    gaps = {i for i in (*mark.pending, *range(max(mark.last_run_id + 1, floor + 1), newest)) if i not in seen}
    pending = tuple(sorted(i for i in gaps if i > floor))
    touched: tuple[tuple[str, str], ...] = ()
    if runs and series:
        rows = store.query(
            "SELECT DISTINCT c.case_id, coalesce(r.device_name, '') AS device_name FROM cases c "
            "JOIN runs r ON r.id = c.run_id WHERE c.run_id IN "
            f"(SELECT CAST(value AS BIGINT) FROM ({store.dialect.json_values('runs')}) AS n) "
            f"AND {OUTSIDE_AB}",  # an A/B run is no point of a case's series (store/kinds.py)
            {"runs": json.dumps(list(runs))},
        )
        touched = tuple(sorted((str(r["case_id"]), str(r["device_name"])) for r in rows))
    return Changes(runs, touched, BuildMark(newest, pending))
