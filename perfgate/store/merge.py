"""`perfgate db merge OUT IN...`: histories from several runners in one database.

Idempotent: runs are matched by their identity (run_uid), so merging the same inputs twice, or an output
into itself through another input, adds nothing. Each input run is copied whole, in one transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from perfgate.errors import StoreError
from perfgate.store import open_store


@dataclass(frozen=True)
class MergeCount:
    source: Path
    added: int
    already_there: int


def merge_histories(out: Path, inputs: list[Path]) -> list[MergeCount]:
    counts = []
    with open_store(out) as dst:
        for source in inputs:
            if source.resolve() == Path(out).resolve():
                raise StoreError(f"perfgate: cannot merge {source} into itself")
            added = skipped = 0
            with open_store(source, readonly=True) as src:
                for row in src.query("SELECT id, run_uid FROM runs ORDER BY id"):
                    if row["run_uid"] and dst.has_run_uid(row["run_uid"]):
                        skipped += 1
                        continue
                    dst.save_run(src.load_run(int(row["id"])))
                    added += 1
            counts.append(MergeCount(source, added, skipped))
    return counts
