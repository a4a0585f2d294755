"""Where each page of the dashboard lives, so the site and the PR comment agree on the addresses."""

from __future__ import annotations

import hashlib
import re

_UNSAFE = re.compile(r"[^a-z0-9]+")


def case_page(case_id: str) -> str:
    """case/<readable part>-<hash>.html: stable across builds, safe in any URL and on any file system."""
    readable = _UNSAFE.sub("-", case_id.rsplit("/", 1)[-1].lower()).strip("-")[:60].strip("-") or "case"
    digest = hashlib.sha256(case_id.encode("utf-8", errors="surrogatepass")).hexdigest()[:12]
    return f"case/{readable}-{digest}.html"


def run_page(run_id: int) -> str:
    return f"run/{int(run_id)}.html"


def case_url(site_url: str, case_id: str) -> str:
    """The case page's absolute address under a published site (e.g. https://owner.github.io/repo)."""
    return f"{site_url.rstrip('/')}/{case_page(case_id)}"
