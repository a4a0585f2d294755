"""Applying the frozen migrations (store/schema.py), and the two SQL functions they call, frozen like them.

A migration runs in one IMMEDIATE transaction: concurrent openers queue and the second finds the work
done; a migration that refuses (a sample without its case) leaves the file as it was and says why in
one line naming the file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

from perfgate.errors import StoreError
from perfgate.store.schema import MIGRATIONS, SCHEMA_VERSION


class _Refusal:
    """What a migration's SQL refused: recorded (not raised inside SQLite, which would only say "function
    raised"), and checked after each statement, which then rolls the migration back."""

    def __init__(self) -> None:
        self.reason = ""

    def refuse(self, reason: object) -> None:
        self.reason = self.reason or str(reason)


class _PackF64:
    """perfgate_pack_f64(idx, value, where): one case's samples, ordered by idx, as little-endian float64.

    The indices must be exactly 0..n-1 and every value a number, or the migration stops: a packed array
    cannot say "sample 3 is missing", so a gap is refused rather than closed."""

    refusal: _Refusal

    def __init__(self) -> None:
        self.values: dict[int, float] = {}
        self.where = ""
        self.bad = ""

    def step(self, idx: object, value: object, where: object) -> None:
        self.where = str(where)
        if (
            isinstance(idx, bool)
            or not isinstance(idx, int)
            or isinstance(value, bool)
            or not isinstance(value, (int, float))
            or idx in self.values
        ):
            self.bad = self.bad or f"sample {idx!r} = {value!r}"
            return
        self.values[idx] = float(value)

    def finalize(self) -> bytes | None:
        if self.bad:
            self.refusal.refuse(f"{self.where}: a sample that cannot be packed ({self.bad})")
            return None
        if not self.values:
            return None
        n = len(self.values)
        if min(self.values) != 0 or max(self.values) != n - 1:
            self.refusal.refuse(f"{self.where}: samples are not numbered 0..{n - 1}")
            return None
        from perfgate.store.packed import pack_f64

        return pack_f64([self.values[i] for i in range(n)])


def schema_version(con: sqlite3.Connection, path: Path) -> int:
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    if "perfgate_meta" not in tables:
        if tables:
            raise StoreError(
                f"perfgate: history {path}: not a perfgate history (it has other tables and no "
                f"perfgate_meta); refusing to touch it"
            )
        return 0
    row = con.execute("SELECT value FROM perfgate_meta WHERE key = 'schema_version' LIMIT 1").fetchone()
    try:
        version = int(row[0]) if row else 0
    except (TypeError, ValueError):
        raise StoreError(f"perfgate: history {path}: unreadable schema version {row[0]!r}") from None
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"perfgate: history {path} has schema version {version}, newer than this perfgate "
            f"understands ({SCHEMA_VERSION}); upgrade perfgate"
        )
    if version < 0:
        raise StoreError(f"perfgate: history {path}: invalid schema version {version}")
    return version


def migrate(con: sqlite3.Connection, path: Path, target: int = SCHEMA_VERSION) -> int:
    """Bring the schema to `target` in one IMMEDIATE transaction; returns the version found."""
    refusal = _install_functions(con)
    con.execute("BEGIN IMMEDIATE")
    try:
        version = schema_version(con, path)
        for number in range(version, target):
            for statement in statements(MIGRATIONS[number]):
                con.execute(statement).fetchall()
                if refusal.reason:
                    raise StoreError(f"perfgate: history {path}: not migrated (nothing changed): {refusal.reason}")
            con.execute(
                "INSERT OR REPLACE INTO perfgate_meta (key, value) VALUES ('schema_version', ?)", (str(number + 1),)
            )
        con.execute("COMMIT")
    except BaseException:
        if con.in_transaction:  # not after SQLite rolled back itself (a full disk): keep its error
            con.execute("ROLLBACK")
        raise
    return version


def _install_functions(con: sqlite3.Connection) -> _Refusal:
    refusal = _Refusal()
    pack = type("PackF64", (_PackF64,), {"refusal": refusal})
    con.create_aggregate("perfgate_pack_f64", 3, pack)
    con.create_function("perfgate_refuse", 1, refusal.refuse)
    return refusal


def statements(script: str) -> Iterator[str]:
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            yield buffer.strip()
            buffer = ""
    if buffer.strip():
        raise ValueError("incomplete SQL statement in a migration")
