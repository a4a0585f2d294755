"""Passwords out of every text perfgate shows or keeps: a history URL comes from a CI secret, and no error
line, log, output or stored command line may repeat its password (perfgate/store/target.py)."""

from __future__ import annotations

import functools
import re

MASK = "***"


@functools.cache
def _patterns() -> tuple[re.Pattern[str], ...]:
    return (
        # scheme://user:password@host: the password, whatever the scheme
        re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s:/@?#]*:)([^\s@/]*)(@)"),
        # password=... in a query string or a libpq keyword string
        re.compile(r"(?i)\b(pass(?:word)?\s*=\s*)('[^']*'|[^\s&;]+)()"),
    )


def mask_credentials(text: str) -> str:
    """`text` with every password of a URL (scheme://user:pw@host) or `password=` value shown as ***."""
    if "@" not in text and "pass" not in text.lower():  # the common case: nothing to look for
        return text
    for pattern in _patterns():
        text = pattern.sub(lambda m: f"{m.group(1)}{MASK}{m.group(3)}", text)
    return text
