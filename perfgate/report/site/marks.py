"""Verdict marks without an emoji font: the summary's Markdown is shared with GitHub (where its emoji render),
but a dashboard page may be opened on a machine with no emoji font, where they are empty boxes. Each emoji
the summary writes becomes a CSS mark (a coloured dot, or a short word on a coloured badge): plain text and
CSS, readable in any font."""

from __future__ import annotations

import re

# emoji -> (css class, text shown, what it means)
MARKS: dict[str, tuple[str, str, str]] = {
    "\U0001f534": ("dot bad", "", "regressed"),
    "\U0001f7e2": ("dot good", "", "improved"),
    "\u26aa": ("dot plain", "", "unchanged"),
    "\U0001f7e1": ("dot warn", "", "inconclusive"),
    "\U0001f195": ("badge plain", "new", "new"),
    "\u2754": ("badge plain", "?", "missing"),
    "\u2796": ("badge plain", "-", "missing"),
    "\u26d4": ("badge warn", "n/c", "not comparable"),
    "\u26a0": ("badge warn", "!", "warning"),
    "\u274c": ("badge bad", "FAIL", "failed"),
    "\u2705": ("badge good", "PASS", "passed"),
    "\U0001f512": ("badge plain", "locked", "clocks locked"),
    "\u2139": ("badge plain", "i", "note"),
}
_ANY = re.compile("(" + "|".join(re.escape(k) for k in MARKS) + ")\ufe0f?")


def css_marks(html: str) -> str:
    """`html` with every summary emoji replaced by its mark (the emoji are perfgate's own, never user text:
    user text reaches the summary escaped, and an emoji in a case name becomes a mark too, harmlessly)."""

    def mark(m: re.Match[str]) -> str:
        cls, text, meaning = MARKS[m.group(1)]
        return f'<span class="mark {cls}" role="img" aria-label="{meaning}" title="{meaning}">{text}</span>'

    # text between tags only: a mark inside an attribute value (a link title) would break the markup
    parts = _TAG.split(html)
    return "".join(p if p.startswith("<") else _ANY.sub(mark, p) for p in parts)


_TAG = re.compile(r"(<[^>]*>)")


EMOJI = re.compile("[\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff\ufe0f]")  # what a test says is absent
