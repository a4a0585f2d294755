"""A history on a PostgreSQL server: SQLAlchemy Core over psycopg 3 (the `server` extra).

For a fleet: many runners store at once, each run one transaction, side by side (no file lock to queue
on); the server assigns run ids, and a run's identity (`run_uid`, unique) makes a retried store a no-op,
so nothing is lost or stored twice. The schema is the one SQLite's migrations make (store/server_schema.py
starts a server at version 6, later migrations are shared), migrated under an advisory lock so runners
that open a new server together queue and the second finds the work done. Every error is one line naming
the server without its password (the URL comes from a CI secret).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

from perfgate.errors import StoreError, require
from perfgate.store.database import Backend, Dialect, Params
from perfgate.store.migrate import statements
from perfgate.store.schema import MIGRATIONS, SCHEMA_VERSION
from perfgate.store.server_schema import BASE_6, BASE_VERSION, server_sql
from perfgate.store.target import ServerUrl

CONNECT_TIMEOUT_S = 30
LOCK_TIMEOUT_S = 120  # as long as SQLite's busy timeout: a writer waiting longer than this says so
MIGRATION_LOCK = 7_301_946_113  # pg_advisory_xact_lock key: perfgate's schema migrations


class ServerDatabase:
    backend = Backend.POSTGRESQL
    dialect = Dialect(Backend.POSTGRESQL)

    def __init__(self, conn: Any, url: ServerUrl, readonly: bool) -> None:
        self.conn = conn
        self.url = url
        self.readonly = readonly
        self.queries = 0
        self.rows_read = 0

    def _run(self, sql: str, params: Params | None) -> Any:
        from sqlalchemy import text

        self.queries += 1
        return self.conn.execute(text(sql), dict(params or {}))

    def rows(self, sql: str, params: Params | None = None) -> list[dict[str, Any]]:
        found = [dict(r) for r in self._run(sql, params).mappings().all()]
        self.rows_read += len(found)
        return found

    def tuples(self, sql: str, params: Params | None = None) -> Iterator[tuple[Any, ...]]:
        found = [tuple(r) for r in self._run(sql, params).all()]
        self.rows_read += len(found)
        return iter(found)

    def execute(self, sql: str, params: Params | None = None) -> int:
        count = int(self._run(sql, params).rowcount)
        return count

    def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        from sqlalchemy import text

        batch = [dict(r) for r in rows]
        if batch:
            self.queries += 1
            self.conn.execute(text(sql), batch)

    def insert_id(self, sql: str, params: Params) -> int | None:
        found = self._run(sql + " RETURNING id", params).scalar()
        return None if found is None else int(found)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        from sqlalchemy import text

        self.conn.execute(text("BEGIN"))  # autocommit session: the server's own transaction, begun here
        try:
            yield
            self.conn.execute(text("COMMIT"))
        except BaseException:
            with contextlib.suppress(Exception):  # a broken connection rolls back by itself
                self.conn.execute(text("ROLLBACK"))
            raise

    def size_bytes(self) -> int:
        found = self.rows(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) AS n FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'"
        )
        return int(found[0]["n"])

    def describe_error(self, err: BaseException) -> str | None:
        return describe_server_error(err, self.url)

    def close(self) -> None:
        with contextlib.suppress(Exception):  # a connection the server already dropped has nothing to close
            self.conn.close()


def describe_server_error(err: BaseException, url: ServerUrl) -> str | None:
    """The driver's first line, without the password; None for an error that is not the database's."""
    try:
        from sqlalchemy.exc import SQLAlchemyError
    except ImportError:
        return None
    if not isinstance(err, SQLAlchemyError):
        return None
    orig = getattr(err, "orig", None)
    sqlstate = getattr(orig, "sqlstate", None)
    if sqlstate == "55P03":  # lock_not_available: lock_timeout ran out
        return f"waited more than {LOCK_TIMEOUT_S} s for a lock another writer holds"
    first = str(orig if orig is not None else err).strip().splitlines()
    return url.scrub(first[0] if first else type(err).__name__)


def _connect(url: ServerUrl) -> Any:
    require("psycopg", "server", "a PostgreSQL history")
    sqlalchemy: Any = require("sqlalchemy", "server", "a PostgreSQL history")
    from sqlalchemy.pool import NullPool

    try:
        parsed = sqlalchemy.make_url(url.url).set(drivername="postgresql+psycopg")
        engine = sqlalchemy.create_engine(
            parsed,
            poolclass=NullPool,  # one connection per Store: nothing pooled outlives it
            connect_args={"connect_timeout": CONNECT_TIMEOUT_S, "application_name": "perfgate"},
        )
        # autocommit: a read is one round trip, a write is BEGIN ... COMMIT of our own (ServerDatabase.transaction)
        conn = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        conn.execute(sqlalchemy.text(f"SET lock_timeout = '{LOCK_TIMEOUT_S}s'"))
        return conn
    except (sqlalchemy.exc.SQLAlchemyError, ValueError) as err:  # a bad URL is a ValueError (ArgumentError)
        why = describe_server_error(err, url) or url.scrub(str(err).strip().splitlines()[0] if str(err) else repr(err))
        raise StoreError(f"perfgate: history {url}: cannot connect: {why}") from None


def server_has_history(url: ServerUrl) -> bool:
    conn = _connect(url)
    db = ServerDatabase(conn, url, readonly=True)
    try:
        with _errors(db, "read it"):
            return _version(db, url) > 0
    finally:
        db.close()


def open_server(url: ServerUrl, readonly: bool) -> ServerDatabase:
    """Connected, migrated (under the advisory lock; also for a read-only open, so the first command after
    an upgrade need not be a write) and verified. Read-only: the history must exist, and the session is
    read-only from then on."""
    from perfgate.store.verify import verify_server_schema

    db = ServerDatabase(_connect(url), url, readonly)
    try:
        with _errors(db, "open it"):
            version = _version(db, url)
            if readonly and version == 0:
                raise StoreError(
                    f"perfgate: no history at {url} yet (no perfgate tables; a gate that stores makes them)"
                )
            if version < SCHEMA_VERSION:
                migrate_server(db, url)
            verify_server_schema(db, url)
            if readonly:
                db.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
    except BaseException:
        db.close()
        raise
    return db


@contextlib.contextmanager
def _errors(db: ServerDatabase, doing: str) -> Iterator[None]:
    try:
        yield
    except StoreError:
        raise
    except Exception as err:
        why = db.describe_error(err)
        if why is None:
            raise
        raise StoreError(f"perfgate: history {db.url}: cannot {doing}: {why}") from None


def _version(db: ServerDatabase, url: ServerUrl) -> int:
    from perfgate.store.verify import TABLE_NAMES

    found = db.rows("SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")
    tables = {r["table_name"] for r in found}
    if "perfgate_meta" not in tables:
        if tables & set(TABLE_NAMES):
            raise StoreError(
                f"perfgate: history {url}: not a perfgate history (it has perfgate's table names and no "
                f"perfgate_meta); refusing to touch it"
            )
        return 0
    row = db.rows("SELECT value FROM perfgate_meta WHERE key = 'schema_version'")
    try:
        version = int(row[0]["value"]) if row else 0
    except (TypeError, ValueError):
        raise StoreError(f"perfgate: history {url}: unreadable schema version {row[0]['value']!r}") from None
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"perfgate: history {url} has schema version {version}, newer than this perfgate "
            f"understands ({SCHEMA_VERSION}); upgrade perfgate"
        )
    if 0 < version < BASE_VERSION or version < 0:
        raise StoreError(f"perfgate: history {url}: invalid schema version {version} for a server")
    return version


def migrate_server(db: ServerDatabase, url: ServerUrl, target: int = SCHEMA_VERSION) -> int:
    """Bring the server's schema to `target` in one transaction, under an advisory lock; returns the
    version found (after waiting: another runner may have done the work)."""
    with db.transaction():
        db.execute("SELECT pg_advisory_xact_lock(:key)", {"key": MIGRATION_LOCK})
        version = _version(db, url)
        if version == 0:
            for statement in statements(BASE_6):
                db.execute(statement)
        for number in range(max(version, BASE_VERSION), target):
            for statement in statements(MIGRATIONS[number]):
                db.execute(server_sql(statement))
        if version < target:
            db.execute(
                "INSERT INTO perfgate_meta (key, value) VALUES ('schema_version', :v) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                {"v": str(target)},
            )
    return version
