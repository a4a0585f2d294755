"""The one interface the store talks to: a SQLite file (store/sqlite.py, the standard library's sqlite3) or a
PostgreSQL server (store/server.py, SQLAlchemy Core over psycopg 3).

Every statement the store runs is one text for both: named parameters (`:name`), standard SQL, and the few
places the two differ asked of `Dialect` (a JSON list as rows, string aggregation). A write is one
transaction (`transaction()`): SQLite's `BEGIN IMMEDIATE` (writers queue for the lock before reading
anything), a server's ordinary transaction (writers proceed side by side; ids come from the server).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol

Params = Mapping[str, Any]


class Backend(enum.Enum):
    SQLITE = "sqlite"
    POSTGRESQL = "postgresql"


class Dialect:
    """The SQL fragments that differ between the backends (everything else is written once)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def json_values(self, param: str) -> str:
        """A JSON array parameter as rows of one text column `value`."""
        if self.backend is Backend.POSTGRESQL:
            return f"SELECT value FROM jsonb_array_elements_text(CAST(:{param} AS jsonb)) AS j(value)"
        return f"SELECT value FROM json_each(:{param})"

    def json_pairs(self, param: str) -> str:
        """A JSON object {text: integer} parameter as rows (key, value)."""
        if self.backend is Backend.POSTGRESQL:
            return f"SELECT key, CAST(value AS BIGINT) AS value FROM jsonb_each_text(CAST(:{param} AS jsonb)) AS j"
        return f"SELECT key, value FROM json_each(:{param})"

    def string_agg(self, expression: str, separator: str) -> str:
        name = "string_agg" if self.backend is Backend.POSTGRESQL else "group_concat"
        return f"{name}({expression}, {separator})"


class Database(Protocol):
    """One open connection to a history."""

    backend: Backend
    dialect: Dialect
    readonly: bool
    queries: int  # statements issued, and rows returned to Python: what tests of bounded reads count
    rows_read: int

    def rows(self, sql: str, params: Params | None = None) -> list[dict[str, Any]]: ...

    def tuples(self, sql: str, params: Params | None = None) -> Iterator[tuple[Any, ...]]: ...

    def execute(self, sql: str, params: Params | None = None) -> int:
        """Run one statement; the number of rows it changed."""
        ...

    def executemany(self, sql: str, rows: Iterable[Params]) -> None: ...

    def insert_id(self, sql: str, params: Params) -> int | None:
        """An INSERT of one row into a table with an `id` the database assigns: its id, or None when an
        ON CONFLICT ... DO NOTHING clause kept it out."""
        ...

    def transaction(self) -> AbstractContextManager[None]:
        """One write transaction: committed when the block ends, rolled back when it raises."""
        ...

    def size_bytes(self) -> int:
        """What the history takes on disk (a file with its write-ahead log; a server's tables and indexes)."""
        ...

    def describe_error(self, err: BaseException) -> str | None:
        """A driver error as the rest of a StoreError line (None: not this backend's error)."""
        ...

    def close(self) -> None: ...
