"""HTML for the dashboard's pages. Every value from the history is escaped here or travels as JSON in a
`<script type="application/json">` block (never executed) that the page scripts read with JSON.parse and
insert as text. A Content-Security-Policy allows scripts and styles from the site's own files only, so
even markup that slipped through could not run.
"""

from __future__ import annotations

import json
import math
from html import escape
from typing import Any

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'"
)


def embed_json(value: object) -> str:
    """JSON that cannot end its <script> element or open a comment: <, > and & as \\u escapes. A non-finite
    number (readers refuse stored ones; arithmetic on huge ones can still overflow) is null: a gap in a chart."""
    text = json.dumps(_finite_only(value), separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    return (
        text.replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _finite_only(value: object) -> object:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite_only(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_only(v) for v in value]
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


def nav(root: str, here: str) -> str:
    return (
        f'<nav><a href="{escape(root)}index.html" id="home">perfgate dashboard</a>'
        f'<span class="here">{escape(here)}</span></nav>'
    )


def overview_body(heading: str, notes: list[str]) -> str:
    note_html = "".join(f'<p class="note">{escape(n)}</p>' for n in notes)
    return (
        f"{nav('', 'overview')}<main><h1>{escape(heading)}</h1>{note_html}"
        '<div class="filters" role="search">'
        '<label>case <input id="filter-name" type="search" placeholder="name contains"></label>'
        '<label>verdict <select id="filter-verdict"><option value="">any</option></select></label>'
        '<label>device <select id="filter-device"><option value="">any</option></select></label>'
        '<span id="shown"></span></div>'
        "<noscript><p>The table needs JavaScript; the data is in this page as JSON.</p></noscript>"
        '<table id="cases" class="cases"><thead><tr>'
        '<th data-key="case">case</th><th data-key="device">device</th><th data-key="rank">verdict</th>'
        '<th data-key="change" class="num">change vs baseline</th><th data-key="detects" class="num">detects</th>'
        '<th data-key="speedup" class="num">speedup</th><th data-key="peak" class="num">peak memory</th>'
        '<th>trend</th><th data-key="changes" class="num">change points</th><th data-key="run">latest run</th>'
        "</tr></thead><tbody></tbody></table></main>"
    )


def case_body(case_id: str, devices: list[str]) -> str:
    sections = "".join(
        f'<section class="device" data-device="{i}"><h2>{escape(d or "unknown device")}</h2></section>'
        for i, d in enumerate(devices)
    )
    return (
        f'{nav("../", "case")}<main><h1 class="case-id">{escape(case_id)}</h1>'
        '<p class="note">Each point is one run (its first process); click a point, or use the table, to open '
        "the run. Hollow markers: calibration processes; small dots: confirmation processes; the band is "
        "the baseline centre +/- what the case detects; dashed lines: change points.</p>"
        f'<div id="tooltip" class="tooltip" hidden></div>{sections}</main>'
    )


def run_body(title: str, facts: list[tuple[str, str]], summary_html: str, note: str) -> str:
    rows = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in facts)
    note_html = f'<p class="note">{escape(note)}</p>' if note else ""
    return (
        f'{nav("../", "run")}<main><h1>{escape(title)}</h1><table class="facts">{rows}</table>'
        f'{note_html}<section class="summary">{summary_html}</section></main>'
    )
