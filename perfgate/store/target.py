"""Where the history is: a SQLite file (the embedded default) or a PostgreSQL server named by a URL.

`--perfgate-db`, `PERFGATE_DB` and `[tool.perfgate] db` take either. A URL is kept as a `ServerUrl`, whose
text (str, repr, f-strings, every message) shows the password as `***`: the URL comes from a CI secret, and
nothing perfgate prints, writes or stores may repeat it. `mask_credentials` does the same to any text
(a command line stored with a run, a driver's error line).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

from perfgate.credentials import MASK, mask_credentials

# SQLAlchemy's names for PostgreSQL (psycopg 3 is the driver whatever the scheme says: store/server.py)
SERVER_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")


@dataclass(frozen=True)
class ServerUrl:
    """A PostgreSQL history. `url` is the only place the password is; everything else sees `masked`."""

    url: str = field(repr=False)

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme.lower() not in SERVER_SCHEMES:
            raise ValueError(f"not a PostgreSQL URL ({parts.scheme}://); use postgresql://user@host/database")
        if not parts.hostname and not parts.query:
            raise ValueError(f"{self.masked}: name the server (postgresql://user@host:port/database)")

    @property
    def masked(self) -> str:
        return mask_credentials(self.url)

    @property
    def password(self) -> str:
        return unquote(urlsplit(self.url).password or "")

    def scrub(self, text: str) -> str:
        """`text` without this URL's password in any spelling a driver or a log could use."""
        secret = self.password
        text = mask_credentials(text)
        if secret:
            for spelling in {secret, quote(secret, safe=""), quote(secret)}:
                text = text.replace(spelling, MASK)
        return text

    def __str__(self) -> str:
        return self.masked

    def __repr__(self) -> str:
        return f"ServerUrl({self.masked!r})"


HistoryTarget = Path | ServerUrl


def is_server_url(text: str) -> bool:
    scheme, sep, _ = text.strip().partition("://")
    return bool(sep) and scheme.lower() in SERVER_SCHEMES


def history_target(value: str | Path | ServerUrl) -> HistoryTarget:
    """A path, or a ServerUrl for a `postgresql://` URL (ValueError for a URL of another kind: a typo must
    not become a file named `mysql:/host`)."""
    if isinstance(value, (Path, ServerUrl)):
        return value
    text = value.strip()
    if is_server_url(text):
        return ServerUrl(text)
    scheme, sep, _ = text.partition("://")
    if sep and re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", scheme):
        raise ValueError(f"{mask_credentials(text)}: perfgate's history is a SQLite path or a postgresql:// URL")
    return Path(value)


def describe(target: HistoryTarget) -> str:
    """How messages name the history (a URL without its password)."""
    return str(target)
