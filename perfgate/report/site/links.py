"""Where each page of the dashboard lives, so the site and the PR comment agree on the addresses."""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from perfgate.model import GateResult
    from perfgate.report.markdown import ChartLink

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


def summary_links(gate: GateResult, site_url: str, limit: int = 20) -> list[ChartLink]:
    """Links for the summary and PR comment: the dashboard, then the case pages of the cases that changed
    (new cases have no page on a site built from the default branch yet)."""
    from perfgate.report.markdown import CHANGED, ChartLink

    changed = sorted({c.case_id for c in gate.comparisons if c.verdict in CHANGED})
    base = site_url.rstrip("/")
    return [
        ChartLink("dashboard", f"{base}/index.html"),
        *(ChartLink(f"{cid}: history", case_url(base, cid)) for cid in changed[:limit]),
    ]
