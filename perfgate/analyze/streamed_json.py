"""Strict JSON written in pieces, for documents too large to build as one string.

`json.dumps(doc, indent=2)` runs json's pure-Python encoder (the C encoder has no indent): on an ncu
export of 6,000 launches x 759 metrics that was most of 184 s and 3.6 GB. Here the outer containers are
laid out by hand, one element per line, and every element is encoded whole by the C encoder; an
iterator in the document is consumed one element at a time, so a launch's dicts exist only while it is
written. Non-finite numbers are an error (readers never let them in).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any


def _default(value: Any) -> Any:
    if isinstance(value, Iterator):
        raise TypeError("an iterator below the laid-out levels")  # a bug here, never a silent "<generator>"
    return str(value)


_ENCODE = json.JSONEncoder(allow_nan=False, default=_default, separators=(", ", ": ")).encode


def write_json(doc: Any, write: Callable[[str], Any], depth: int = 2) -> None:
    """doc as strict JSON through write(); containers down to `depth` (and any that holds an iterator)
    one element per line."""
    for piece in _pieces(doc, depth, 0):
        write(piece)
    write("\n")


def _laid_out(value: Any, depth: int, level: int) -> bool:
    if isinstance(value, Iterator):
        return True
    if isinstance(value, Mapping):
        return level < depth or any(isinstance(v, Iterator) for v in value.values())
    return isinstance(value, (list, tuple)) and level < depth


def _pieces(value: Any, depth: int, level: int) -> Iterator[str]:
    if not _laid_out(value, depth, level):
        yield _ENCODE(value)
        return
    pad, inner = "  " * level, "  " * (level + 1)
    items: Iterable[tuple[str | None, Any]]
    if isinstance(value, Mapping):
        items, opening, closing = ((str(k), v) for k, v in value.items()), "{", "}"
    else:
        items, opening, closing = ((None, v) for v in value), "[", "]"
    first = True
    for key, item in items:
        yield (opening if first else ",") + "\n" + inner + ("" if key is None else _ENCODE(key) + ": ")
        yield from _pieces(item, depth, level + 1)
        first = False
    yield (opening + closing) if first else "\n" + pad + closing
