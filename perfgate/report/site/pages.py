"""HTML for the dashboard's pages. Every value from the history is escaped here or travels as JSON in a
`<script type="application/json">` block (never executed) that the page scripts read with JSON.parse and
insert as text. A Content-Security-Policy allows scripts and styles from the site's own files only, so
even markup that slipped through could not run.
"""

from __future__ import annotations

import json
import math
from html import escape
from pathlib import Path
from typing import Any

from perfgate.errors import PerfgateError

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'"
)


def embed_json(value: object) -> str:
    """JSON that cannot end its <script> element or open a comment: <, > and & as \\u escapes. A non-finite
    number (readers refuse stored ones; arithmetic on huge ones can still overflow) is null: a gap in a chart."""
    text = json.dumps(finite_only(value), separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    return (
        text.replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def finite_only(value: object) -> object:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_only(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_only(v) for v in value]
    return value


def page(
    title: str, root: str, body: str, scripts: tuple[str, ...] = (), data: Any = None, styles: tuple[str, ...] = ()
) -> str:
    """A complete page; `root` is the relative path to the site's top ("" or "../")."""
    head_links = "".join(f'<link rel="stylesheet" href="{escape(root)}assets/{escape(s)}">' for s in styles)
    data_block = (
        f'<script type="application/json" id="perfgate-data">{embed_json(data)}</script>' if data is not None else ""
    )
    tags = "".join(f'<script src="{escape(root)}assets/{escape(s)}" defer></script>' for s in scripts)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{escape(title)}</title><link rel="stylesheet" href="{escape(root)}assets/site.css">'
        f"{head_links}{data_block}{tags}</head><body>{body}</body></html>\n"
    )


SECTIONS = (
    ("index.html", "overview"),
    ("regressions.html", "regressions"),
    ("compare.html", "compare"),
    ("ab.html", "A/B"),
)


def nav(root: str, here: str, project: str = "") -> str:
    """The bar on every page: the project's name, then the site's sections (the current one marked)."""
    name = f"{project} performance" if project else "perfgate dashboard"
    current = ' aria-current="page"'
    links = "".join(
        f'<a href="{escape(root)}{href}"{current if label == here else ""}>{escape(label)}</a>'
        for href, label in SECTIONS
    )
    shown = "" if here in {label for _, label in SECTIONS} else f'<span class="here">{escape(here)}</span>'
    return (
        f'<nav><a href="{escape(root)}index.html" id="home">{escape(name)}</a>'
        f'<span class="sections">{links}</span>{shown}</nav>'
    )


def table_wrap(table_html: str) -> str:
    """A wide table scrolls inside its box: the page itself never scrolls sideways (a 390 px phone)."""
    return f'<div class="wide">{table_html}</div>'


def overview_body(heading: str, notes: list[str], project: str = "") -> str:
    note_html = "".join(f'<p class="note">{escape(n)}</p>' for n in notes)
    return (
        f"{nav('', 'overview', project)}<main><h1>{escape(heading)}</h1>{note_html}"
        '<div class="filters" role="search">'
        '<label>case <input id="filter-name" type="search" placeholder="name contains"></label>'
        '<label>verdict <select id="filter-verdict"><option value="">any</option></select></label>'
        '<label>device <select id="filter-device"><option value="">any</option></select></label>'
        '<span id="shown"></span></div>'
        "<noscript><p>The table needs JavaScript; the data is in this page as JSON.</p></noscript>"
        '<div class="wide"><table id="cases" class="cases"><thead><tr>'
        '<th data-key="case">case</th><th data-key="device">device</th><th data-key="rank">verdict</th>'
        '<th data-key="change" class="num">change vs baseline</th><th data-key="detects" class="num">detects</th>'
        '<th data-key="speedup" class="num">speedup</th><th data-key="peak" class="num">peak memory</th>'
        '<th>trend</th><th data-key="changes" class="num">change points</th><th data-key="run">latest run</th>'
        "</tr></thead><tbody></tbody></table></div></main>"
    )


def case_body(case_id: str, devices: list[str], project: str = "") -> str:
    sections = "".join(
        f'<section class="device" data-device="{i}"><h2>{escape(d or "unknown device")}</h2></section>'
        for i, d in enumerate(devices)
    )
    return (
        f'{nav("../", "case", project)}<main><h1 class="case-id">{escape(case_id)}</h1>'
        '<p class="note">Each point is one run (its first process); click a point, or use the table, to open '
        "the run. Hollow markers: calibration processes; small dots: confirmation processes; the band is "
        "the baseline centre +/- what the case detects; dashed lines: change points.</p>"
        '<div class="filters chart-options"><label>x-axis <select id="x-axis"><option value="run">run</option>'
        '<option value="commit">commit</option><option value="date">date</option></select></label>'
        '<label><input id="log-scale" type="checkbox"> log scale</label></div>'
        f'<div id="tooltip" class="tooltip" hidden></div>{sections}</main>'
    )


def run_body(
    title: str,
    facts: list[tuple[str, str]],
    summary_html: str,
    note: str,
    project: str = "",
    links: dict[str, str] | None = None,
) -> str:
    """`links`: a fact's name -> the address its value links to (the commit on the repository's site)."""
    links = links or {}
    rows = "".join(f"<tr><th>{escape(k)}</th><td>{_linked(v, links.get(k, ''))}</td></tr>" for k, v in facts)
    note_html = f'<p class="note">{escape(note)}</p>' if note else ""
    return (
        f'{nav("../", "run", project)}<main><h1>{escape(title)}</h1><table class="facts">{rows}</table>'
        f'{note_html}<section class="summary">{summary_html}</section></main>'
    )


def _linked(text: str, href: str) -> str:
    return f'<a href="{escape(href)}" rel="noopener">{escape(text)}</a>' if href else escape(text)


def write_page(path: Path, text: str) -> None:
    """Write a file of the site. The build directory starts as hard links to the last build's files
    (incremental.py): the old file is unlinked first, so the last build's copy is never written through."""
    try:
        path.unlink(missing_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as err:
        raise PerfgateError(f"perfgate: cannot write {path}: {err.strerror or err}") from err
