"""The history's two backends for the tests: a SQLite file, and a fresh schema on the PostgreSQL server named
by PERFGATE_TEST_PG_URL (.ci/run starts one with .ci/postgres.sh; a test that needs it skips, saying why,
where none is given or it cannot be reached)."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from urllib.parse import quote

from perfgate.store.target import ServerUrl

PG_ENV = "PERFGATE_TEST_PG_URL"
BACKENDS = ("sqlite", "postgresql")
_reachable: dict[str, str] = {}  # url -> "" when the server answered, else why not


def server_unavailable() -> str:
    """Why no server test can run here ("" when one can)."""
    url = os.environ.get(PG_ENV, "").strip()
    if not url:
        return f"no PostgreSQL server: set {PG_ENV} (bash .ci/postgres.sh start prints one)"
    if url not in _reachable:
        try:
            import psycopg  # noqa: F401
            import sqlalchemy

            engine = sqlalchemy.create_engine(_driver(url), poolclass=sqlalchemy.pool.NullPool)
            with engine.connect() as conn:
                conn.execute(sqlalchemy.text("SELECT 1"))
            _reachable[url] = ""
        except Exception as err:  # noqa: BLE001
            _reachable[url] = (
                f"the PostgreSQL server of {PG_ENV} cannot be used: {ServerUrl(url).scrub(str(err))[:200]}"
            )
    return _reachable[url]


def _driver(url: str) -> str:
    scheme, rest = url.split("://", 1)
    return f"postgresql+psycopg://{rest}" if scheme in ("postgresql", "postgres") else url


@contextlib.contextmanager
def server_history(prefix: str = "t") -> Iterator[ServerUrl]:
    """A URL whose connections use a schema of their own (created empty, dropped afterwards)."""
    import sqlalchemy

    base = os.environ[PG_ENV].strip()
    schema = f"{prefix}_{uuid.uuid4().hex[:12]}"
    engine = sqlalchemy.create_engine(_driver(base), poolclass=sqlalchemy.pool.NullPool)
    with engine.begin() as conn:
        conn.execute(sqlalchemy.text(f"CREATE SCHEMA {schema}"))
    sep = "&" if "?" in base else "?"
    try:
        yield ServerUrl(f"{base}{sep}options={quote(f'-csearch_path={schema}')}")
    finally:
        with engine.begin() as conn:
            conn.execute(sqlalchemy.text(f"DROP SCHEMA {schema} CASCADE"))
        engine.dispose()


def db_arg(target: object) -> str:
    """A history as a command line takes it (a URL with its password: the test's own server)."""
    return target.url if isinstance(target, ServerUrl) else str(target)
