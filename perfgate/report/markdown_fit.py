"""Markdown cut to a size limit at section boundaries, never mid-line, and still valid Markdown.

GitHub refuses a comment over 65,536 characters and a job summary over 1 MiB; a summary cut at the
limit's byte loses whatever comes last and can leave a table or a `<details>` block open. Here a text is
read as sections: what precedes the first heading (the headline), then one section per heading or
top-level `<details>` block (or `---` rule, which separates GPUs in a combined comment). Sections are
kept in order while they fit. Inside a section only runs of table rows or list items may be shortened;
a shortened run ends with `… and N more` in its own syntax (a table row of the table's width, or a list
item). A section that does not fit even so is left out, and one closing line names what was left out.
A renderer that puts what failed first therefore keeps it first, whatever the limit.

Every step is one pass over the lines: linear in the text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

Size = Callable[[str], int]

COMMENT_LIMIT = 65_536  # GitHub: "Body is too long (maximum is 65536 characters)"
STEP_SUMMARY_LIMIT = 1024 * 1024  # GitHub: a step's $GITHUB_STEP_SUMMARY is refused over 1 MiB
_HEADING = re.compile(r"^ {0,3}#{1,6}(?:\s|$)")
_RULE = re.compile(r"^ {0,3}(?:-{3,}|\*{3,}|_{3,})\s*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"^( {0,3})([-*+]|\d{1,9}[.)])\s")
_MORE = re.compile(r"… and ([\d,]+) more")
_NAMED = 3  # left-out sections named in the closing line


def utf8_bytes(text: str) -> int:
    """What a file limit counts ($GITHUB_STEP_SUMMARY)."""
    return len(text.encode("utf-8"))


def utf16_units(text: str) -> int:
    """At least the characters GitHub counts in a comment, whichever way it counts an emoji."""
    return len(text.encode("utf-16-le")) // 2


@dataclass(frozen=True)
class _Run:
    """Lines of a section: fixed, or a run of table rows / list items that may lose its tail."""

    lines: tuple[str, ...]  # as written
    items: tuple[tuple[str, ...], ...] = ()  # each item's lines (a list item may continue on indented lines)
    more: str = ""  # the `… and N more` line with `{n}` for the count; "" for fixed lines
    already_more: int = 0  # a run that already ended in "… and N more" (the renderer's own cap)


@dataclass(frozen=True)
class _Section:
    title: str
    runs: tuple[_Run, ...]


def fit_markdown(text: str, limit: int, size: Size = utf8_bytes, where: str = "") -> str:
    """`text` if it fits `limit` (as `size` counts), else its sections in order that fit, shortened runs
    ending in "… and N more", and one line naming what was left out (`where`: where the rest is). Below
    the room the closing line needs, the headline's lines that fit, without it."""
    if size(text) <= limit:
        return text
    sections = _sections(text.splitlines())
    note_room = size(_note(["x" * 60] * _NAMED, 10**6, where)) + 2
    lines, left_out, shortened = _fit_sections(sections, limit - note_room - 1, size)
    if any(line.strip() for line in lines):
        out = "\n".join(lines).rstrip() + "\n"
        if left_out or shortened:
            out += "\n" + _note(left_out, len(left_out), where) + "\n"
        return _hard_cap(out, limit, size)
    lines = _head_lines([line for run in sections[0].runs for line in run.lines], limit - 1, size)
    return _hard_cap("\n".join(lines).rstrip() + "\n", limit, size) if lines else ""


def _fit_sections(sections: list[_Section], room: int, size: Size) -> tuple[list[str], list[str], bool]:
    """(lines kept, titles of sections left out, whether a section was shortened)."""
    kept: list[str] = []
    left_out: list[str] = []
    shortened = False
    for i, section in enumerate(sections):
        fitted = _fit_section(section, room, size, first=i == 0)
        if fitted is None:
            left_out.append(section.title)
            continue
        lines, cut = fitted
        shortened |= cut
        room -= _cost(lines, size)
        kept += lines
    return kept, left_out, shortened


def fit_each(
    texts: Sequence[str], limit: int, size: Size = utf16_units, separator: str = "\n\n---\n\n", where: str = ""
) -> list[str]:
    """Several summaries in one limit (one per GPU in one comment): each gets an equal share, and what a
    short one does not use goes to the others, so every summary keeps its first sections."""
    room = limit - size(separator) * max(0, len(texts) - 1)
    sizes = [size(t) for t in texts]
    shares = [0] * len(texts)
    left, pending = room, len(texts)
    for i in sorted(range(len(texts)), key=sizes.__getitem__):
        shares[i] = min(sizes[i], left // pending)
        left -= shares[i]
        pending -= 1
    return [fit_markdown(t, share, size, where) for t, share in zip(texts, shares)]


def _note(left_out: list[str], count: int, where: str) -> str:
    named = ", ".join(f"“{t}”" for t in left_out[:_NAMED])
    more = f" and {count - _NAMED} more" if count > _NAMED else ""
    parts = [f"{count} section(s) left out ({named}{more})"] if count else []
    parts.append("lists shortened to fit GitHub's size limit")
    return f"_… {'; '.join(parts)}{'; ' + where if where else ''}._"


def _cost(lines: Sequence[str], size: Size) -> int:
    return sum(size(line) + 1 for line in lines)


def _fit_section(section: _Section, room: int, size: Size, first: bool) -> tuple[list[str], bool] | None:
    """(lines, shortened): the whole section, or its fixed lines with as many items as fit; None when not
    even one item fits (the first section, the headline, keeps the lines that fit instead)."""
    whole = [line for run in section.runs for line in run.lines]
    if _cost(whole, size) <= room:
        return whole, False
    fixed = sum(
        _cost(run.lines, size) if not run.more else size(run.more.format(n="9,999,999")) + 1 for run in section.runs
    )
    if fixed > room or not any(run.items for run in section.runs):
        return (_head_lines(whole, room, size), True) if first else None
    budget = room - fixed
    out: list[str] = []
    taken_total = 0
    for run in section.runs:
        if not run.more:
            out += run.lines
            continue
        taken = 0
        for item in run.items:
            cost = _cost(item, size)
            if cost > budget:
                break
            out += item
            budget -= cost
            taken += 1
        dropped = len(run.items) - taken + run.already_more
        if dropped:
            out.append(run.more.format(n=f"{dropped:,}"))
        taken_total += taken
    if taken_total == 0 and not first:
        return None
    return out, True


def _head_lines(lines: list[str], room: int, size: Size) -> list[str]:
    out: list[str] = []
    for line in lines:
        cost = size(line) + 1
        if cost > room:
            break
        out.append(line)
        room -= cost
    return out


def _hard_cap(text: str, limit: int, size: Size) -> str:
    """The last guard: whole lines from the end until it fits (a limit smaller than the note)."""
    if size(text) <= limit:
        return text
    lines = text.splitlines()
    while lines and size("\n".join(lines) + "\n") > limit:
        lines.pop()
    return "\n".join(lines) + "\n" if lines else ""


def _sections(lines: list[str]) -> list[_Section]:
    """Split at headings, top-level `<details>` and `---` rules, outside code fences."""
    groups: list[list[str]] = [[]]
    fence = ""
    depth = 0
    for line in lines:
        if fence:
            if line.strip().startswith(fence):
                fence = ""
        elif (m := _FENCE.match(line)) is not None:
            fence = m.group(1)
        else:
            opens_details = line.lstrip().startswith("<details")
            if depth == 0 and (_HEADING.match(line) or opens_details or _RULE.match(line)) and groups[-1]:
                groups.append([])
            depth = max(0, depth + line.count("<details") - line.count("</details>"))
        groups[-1].append(line)
    return [_Section(_title(g), tuple(_runs(g))) for g in groups if g]


def _title(lines: list[str]) -> str:
    first = next((line for line in lines if line.strip()), "")
    if "<summary>" in first:
        first = first.split("<summary>", 1)[1].split("</summary>", 1)[0]
    title = first.lstrip("#").strip() or "text"
    return title if len(title) <= 60 else title[:59] + "…"


def _runs(lines: list[str]) -> list[_Run]:
    """Fixed lines, table bodies (after the header and delimiter rows) and list items, in order."""
    runs: list[_Run] = []
    fixed: list[str] = []
    i, fence = 0, ""
    while i < len(lines):
        line = lines[i]
        if fence or _FENCE.match(line):
            if fence and line.strip().startswith(fence):
                fence = ""
            elif not fence:
                fence = _FENCE.match(line).group(1)  # type: ignore[union-attr]
            fixed.append(line)
            i += 1
            continue
        if _is_table_start(lines, i):
            fixed += lines[i : i + 2]
            j = i + 2
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                j += 1
            cells = lines[i + 1].count("|") - 1
            more = "| … and {n} more |" + " |" * max(0, cells - 1)
            runs += [_Run(tuple(fixed)), _items_run([[row] for row in lines[i + 2 : j]], more)]
            fixed, i = [], j
            continue
        m = _LIST_ITEM.match(line)
        if m is not None:
            items: list[list[str]] = []
            while i < len(lines) and (
                _LIST_ITEM.match(lines[i]) or (items and lines[i][:1] in (" ", "\t") and lines[i].strip())
            ):
                if _LIST_ITEM.match(lines[i]):
                    items.append([lines[i]])
                else:
                    items[-1].append(lines[i])
                i += 1
            bullet = m.group(2) if not m.group(2)[0].isdigit() else "-"
            runs += [_Run(tuple(fixed)), _items_run(items, f"{m.group(1)}{bullet} … and {{n}} more")]
            fixed = []
            continue
        fixed.append(line)
        i += 1
    runs.append(_Run(tuple(fixed)))
    return [r for r in runs if r.lines]


def _is_table_start(lines: list[str], i: int) -> bool:
    return (
        lines[i].lstrip().startswith("|")
        and i + 1 < len(lines)
        and re.fullmatch(r"\s*\|?(\s*:?-+:?\s*\|)+\s*:?-*:?\s*", lines[i + 1]) is not None
    )


def _items_run(items: list[list[str]], more: str) -> _Run:
    """The run as written (a renderer's own "… and N more" last item included), and its items without it."""
    flat = tuple(line for item in items for line in item)
    already = 0
    if items and len(items[-1]) == 1 and (m := _MORE.search(items[-1][0])) is not None:
        already = int(m.group(1).replace(",", ""))
        items = items[:-1]
    return _Run(flat, tuple(tuple(item) for item in items), more, already)
