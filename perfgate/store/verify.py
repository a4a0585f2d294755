"""A history is verified before it is trusted: its schema must be the one the frozen migrations make.

The expected schema is built once per process by applying store/schema.py's migrations to an empty
in-memory database, and every opened history is compared with it: each table with its columns (names,
types, primary key), each view with its SQL, the unique run identity index. An extra or missing column,
a foreign view or trigger, a table replaced by a view (which could return endless rows), duplicated run
uids: refused with one line naming the file and the problem, before any row is read or gated. Tables and
indexes of the user's own are left alone: they cannot change what perfgate reads.
"""

from __future__ import annotations

import functools
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from perfgate.errors import StoreError

if TYPE_CHECKING:
    from perfgate.store.database import Database
    from perfgate.store.target import ServerUrl

Column = tuple[str, str, int, int]  # name, declared type, not null, position in the primary key


@dataclass(frozen=True)
class Schema:
    tables: dict[str, tuple[Column, ...]]
    views: dict[str, str]  # name -> CREATE VIEW text, whitespace normalised
    unique_indexes: dict[str, tuple[str, tuple[str, ...]]]  # name -> (table, columns)


@functools.cache
def expected_schema() -> Schema:
    from perfgate.store.migrate import migrate

    con = sqlite3.connect(":memory:", isolation_level=None)
    try:
        migrate(con, Path(":memory:"))
        return read_schema(con)
    finally:
        con.close()


def read_schema(con: sqlite3.Connection) -> Schema:
    objects = con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")
    tables: dict[str, tuple[Column, ...]] = {}
    views: dict[str, str] = {}
    unique: dict[str, tuple[str, tuple[str, ...]]] = {}
    for kind, name, table, sql in objects.fetchall():
        if kind == "table":
            tables[name] = tuple(
                (r[1], str(r[2]).upper(), int(r[3]), int(r[5]))
                for r in con.execute(f"PRAGMA table_info({_quoted(name)})")
            )
        elif kind == "view":
            views[name] = _normal(sql)
        elif kind == "index" and sql and re.match(r"\s*CREATE\s+UNIQUE", sql, re.I):
            unique[name] = (table, tuple(r[2] for r in con.execute(f"PRAGMA index_info({_quoted(name)})")))
        elif kind == "trigger":
            views[f"trigger {name}"] = _normal(sql)
    return Schema(tables, views, unique)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _normal(sql: str | None) -> str:
    return " ".join((sql or "").split())


# Every table any version of the schema has: none may be a view (a recursive view returns rows without
# end, and the migrations read these tables before the full check can run).
TABLE_NAMES = (
    "runs",
    "cases",
    "samples",
    "metrics",
    "perfgate_meta",
    "gpu_state",
    "autotune",
    "speedups",
    "reference_samples",
    "unmeasured_tests",
    "verdicts",
    "pinned_runs",
    "compiled_cases",
    "kernels",
)


def precheck(con: sqlite3.Connection, path: Path) -> None:
    """What must hold before a migration or the version itself is read: perfgate's tables are tables and
    nothing runs behind perfgate's back (no trigger)."""
    for kind, name in con.execute("SELECT type, name FROM sqlite_master WHERE type IN ('view', 'trigger')"):
        if kind == "trigger":
            raise StoreError(f"perfgate: history {path}: trigger {name!r} is not perfgate's; refusing to read it")
        if name in TABLE_NAMES:
            raise StoreError(
                f"perfgate: history {path}: {name!r} is a view, not the table perfgate made; refusing to read it"
            )


def verify_schema(con: sqlite3.Connection, path: Path) -> None:
    """StoreError naming the file and the first difference from the frozen schema."""
    want, have = expected_schema(), read_schema(con)
    problem = _table_problem(want, have) or _view_problem(want, have)
    if not problem:
        problem = _index_problem(want, have)
    if problem.startswith("unique index"):
        # without its unique index the runs table may hold a run twice: name it (a scan of every run, paid
        # only by a damaged history; the tables are perfgate's, so reading them is bounded)
        duplicate = con.execute(
            "SELECT run_uid FROM runs WHERE run_uid IS NOT NULL GROUP BY run_uid HAVING count(*) > 1 LIMIT 1"
        ).fetchone()
        problem = f"run uid {duplicate[0]!r} is stored more than once" if duplicate else problem
    if problem:
        raise StoreError(f"perfgate: history {path}: {problem}; not a history this perfgate wrote, refusing to read it")


def _table_problem(want: Schema, have: Schema) -> str:
    for table, columns in want.tables.items():
        if table not in have.tables:
            if table in have.views:
                return f"{table!r} is a view, not the table perfgate made"
            return f"table {table!r} is missing"
        found = have.tables[table]
        if found == columns:
            continue
        names = [c[0] for c in columns]
        extra = [c[0] for c in found if c[0] not in names]
        missing = [n for n in names if n not in {c[0] for c in found}]
        if missing:
            return f"table {table!r} lacks column(s) {missing}"
        if extra:
            return f"table {table!r} has column(s) perfgate never made: {extra}"
        changed = [f[0] for f, w in zip(found, columns) if f != w]
        return f"table {table!r}: column(s) {changed or names} differ from perfgate's (type, order or key)"
    return ""


def _view_problem(want: Schema, have: Schema) -> str:
    for name, sql in have.views.items():
        what = name if name.startswith("trigger ") else f"view {name!r}"
        if name not in want.views:
            return f"{what} is not perfgate's"
        if sql != want.views[name]:
            return f"{what} differs from perfgate's"
    for name in want.views:
        if name not in have.views:
            return f"view {name!r} is missing"
    return ""


def _index_problem(want: Schema, have: Schema) -> str:
    for name, shape in want.unique_indexes.items():
        if have.unique_indexes.get(name) != shape:
            return f"unique index {name!r} on {shape[0]}({', '.join(shape[1])}) is missing"
    return ""


# --- a server's schema: the same tables, columns, keys and NOT NULLs, in PostgreSQL's types --------------

# a declared SQLite type -> the PostgreSQL types that hold what it holds (REAL is float8 there, INTEGER int8)
_SERVER_TYPES = {"INTEGER": ("bigint",), "REAL": ("double precision",), "TEXT": ("text",), "BLOB": ("bytea",)}


def verify_server_schema(db: Database, url: ServerUrl) -> None:
    """StoreError naming the server and the first difference from the frozen schema: every table with its
    columns in order (kind of type, primary key position, NOT NULL outside the key), every view by name and
    columns, the unique run identity index."""
    want = expected_schema()
    columns: dict[str, list[dict[str, object]]] = {}
    for r in db.rows(
        "SELECT c.table_name, c.column_name, c.data_type, c.is_nullable, t.table_type "
        "FROM information_schema.columns c JOIN information_schema.tables t "
        "ON t.table_schema = c.table_schema AND t.table_name = c.table_name "
        "WHERE c.table_schema = current_schema() ORDER BY c.table_name, c.ordinal_position"
    ):
        columns.setdefault(str(r["table_name"]), []).append(r)
    keys = {
        (str(r["table_name"]), str(r["column_name"])): int(r["ordinal_position"])
        for r in db.rows(
            "SELECT tc.table_name, k.column_name, k.ordinal_position FROM information_schema.table_constraints tc "
            "JOIN information_schema.key_column_usage k ON k.constraint_name = tc.constraint_name "
            "AND k.table_schema = tc.table_schema AND k.table_name = tc.table_name "
            "WHERE tc.constraint_type = 'PRIMARY KEY' AND tc.table_schema = current_schema()"
        )
    }
    problem = _server_table_problem(want, columns, keys) or _server_view_problem(want, columns)
    if not problem:
        unique = db.rows(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND indexname = 'idx_runs_run_uid'"
        )
        if not unique or "UNIQUE" not in str(unique[0]["indexdef"]) or "(run_uid)" not in str(unique[0]["indexdef"]):
            problem = "unique index 'idx_runs_run_uid' on runs(run_uid) is missing"
    if problem:
        raise StoreError(f"perfgate: history {url}: {problem}; not a history this perfgate wrote, refusing to read it")


def _server_table_problem(
    want: Schema, columns: dict[str, list[dict[str, object]]], keys: dict[tuple[str, str], int]
) -> str:
    for table, expected in want.tables.items():
        found = columns.get(table)
        if not found:
            return f"table {table!r} is missing"
        if found[0]["table_type"] != "BASE TABLE":
            return f"{table!r} is a view, not the table perfgate made"
        problem = _column_names_problem(table, [c[0] for c in expected], [str(c["column_name"]) for c in found])
        problem = problem or _server_column_problem(table, expected, found, keys)
        if problem:
            return problem
    return ""


def _column_names_problem(table: str, names: list[str], have: list[str]) -> str:
    if have == names:
        return ""
    missing = [n for n in names if n not in have]
    extra = [n for n in have if n not in names]
    if missing:
        return f"table {table!r} lacks column(s) {missing}"
    if extra:
        return f"table {table!r} has column(s) perfgate never made: {extra}"
    return f"table {table!r}: columns in another order than perfgate's"


def _server_column_problem(
    table: str, expected: tuple[Column, ...], found: list[dict[str, object]], keys: dict[tuple[str, str], int]
) -> str:
    for (name, kind, notnull, pk), col in zip(expected, found):
        if str(col["data_type"]) not in _SERVER_TYPES.get(kind, (kind.lower(),)):
            return f"table {table!r}: column {name!r} is {col['data_type']}, where perfgate made {kind}"
        if keys.get((table, name), 0) != pk:
            return f"table {table!r}: column {name!r} differs from perfgate's primary key"
        if not pk and bool(notnull) != (col["is_nullable"] == "NO"):
            return f"table {table!r}: column {name!r} differs from perfgate's NOT NULL"
    return ""


def _server_view_problem(want: Schema, columns: dict[str, list[dict[str, object]]]) -> str:
    expected_views = {name for name in want.views if not name.startswith("trigger ")}
    for name in expected_views:
        found = columns.get(name)
        if not found or found[0]["table_type"] != "VIEW":
            return f"view {name!r} is missing"
    return ""
