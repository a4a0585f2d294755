"""A large JSON document read a window at a time: the members of its top-level object, and the elements
of one array member handed over one by one, each decoded by json's C scanner.

`json.loads` of a 260 MB torch trace holds the file's bytes, its text and a million dicts at once
(1.4 GB). Here the text is decoded in chunks into a window that only ever holds what is not consumed
yet, so memory is the window plus the element being read. An element that ends (or fails) near the
window's end is read again once more text has arrived: "0" may be the start of "0.5e3".

Bounded: at most `max_bytes` are read in all, and no single member, element or run of whitespace may
hold more than MAX_VALUE_CHARS characters (a 1.5 GB string in one member would otherwise be held whole,
and a 1.5 MB gzip member can decompress to that). Past either bound: JsonTooLarge.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from typing import Any, BinaryIO

CHUNK_CHARS = 4 << 20
MAX_VALUE_CHARS = 64 << 20  # one trace event is under a few KB; a header member under a few MB
_WS = re.compile(r"[ \t\n\r]*")
_CUT = 64  # an error this close to the window's end may only be the end of the window


class JsonStreamError(ValueError):
    """Not valid JSON, or not the expected shape; the message says where (a character offset)."""


class JsonTooLarge(JsonStreamError):
    """More text than the reader's budget: in all, or in one value."""


def _no_constants(name: str) -> Any:
    raise JsonStreamError(f"{name} is not valid JSON")


class _Window:
    def __init__(self, source: BinaryIO, max_bytes: int, max_value_chars: int) -> None:
        self.source, self.max_bytes, self.read_bytes = source, max_bytes, 0
        # drop() keeps at most CHUNK_CHARS consumed characters and a fill adds at most one chunk: a window
        # longer than this holds one value (or one run of whitespace) past max_value_chars
        self.max_window = max_value_chars + 2 * CHUNK_CHARS
        self.max_value_chars = max_value_chars
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")()
        self.text, self.base, self.eof = "", 0, False
        self.json = json.JSONDecoder(parse_constant=_no_constants)

    def fill(self) -> bool:
        """More text at the end; False at the end of the file."""
        if self.eof:
            return False
        if len(self.text) > self.max_window:
            raise JsonTooLarge(
                f"one value longer than {self.max_value_chars:,} characters (from about character {self.base:,})"
            )
        raw = self.source.read(CHUNK_CHARS)
        self.read_bytes += len(raw)
        if self.read_bytes > self.max_bytes:
            raise JsonTooLarge(f"more than {self.max_bytes:,} bytes")
        self.eof = not raw
        self.text += self.decoder.decode(raw, final=self.eof)
        return True

    def drop(self, i: int) -> int:
        """Forget the text before i (consumed); the same position in the shorter window."""
        if i > CHUNK_CHARS:
            self.text, self.base = self.text[i:], self.base + i
            return 0
        return i

    def skip(self, i: int) -> int:
        while True:
            match = _WS.match(self.text, i)
            i = match.end() if match else i
            if i < len(self.text) or not self.fill():
                return i

    def char(self, i: int) -> str:
        i = self.skip(i)
        return self.text[i : i + 1]

    def value(self, i: int) -> tuple[Any, int]:
        """The JSON value at i and the position after it, reading more text while it may be cut."""
        while True:
            try:
                value, end = self.json.raw_decode(self.text, i)
            except json.JSONDecodeError as err:
                cut = err.pos >= len(self.text) - _CUT or err.msg.startswith("Unterminated string")
                if cut and self.fill():
                    continue
                raise JsonStreamError(f"{err.msg} at character {self.base + err.pos:,}") from err
            if len(self.text) - end >= _CUT or not self.fill():  # "0" of "0.5", "tru" of "true"...
                return value, end

    def error(self, i: int, expected: str) -> JsonStreamError:
        return JsonStreamError(f"expecting {expected} at character {self.base + i:,}")


def object_members(
    source: BinaryIO, max_bytes: int, stream_key: str, max_value_chars: int | None = None
) -> Iterator[tuple[str, Any]]:
    """(key, value) for each member of the top-level object, in file order; the array under
    `stream_key` comes as an iterator over its elements, to be consumed before the next member.
    JsonStreamError for invalid JSON, a top level that is not an object, or `stream_key` not an array;
    JsonTooLarge past max_bytes in all or max_value_chars (default MAX_VALUE_CHARS) in one value."""
    w = _Window(source, max_bytes, MAX_VALUE_CHARS if max_value_chars is None else max_value_chars)
    i = w.skip(0)
    if w.char(i) != "{":
        raise JsonStreamError("the top level is not an object" if w.char(i) else "the file is empty")
    i = w.skip(i + 1)
    more = w.char(i) != "}"
    while more:
        i = w.skip(i)
        if w.char(i) != '"':
            raise w.error(i, "a property name in double quotes")
        key, i = w.value(i)
        i = w.skip(i)
        if w.char(i) != ":":
            raise w.error(i, "':'")
        i = w.skip(i + 1)
        if key == stream_key:
            if w.char(i) != "[":
                raise JsonStreamError(f"{stream_key} is not an array")
            elements = _Elements(w, i)
            yield key, iter(elements)
            i = elements.end
        else:
            value, i = w.value(i)
            yield key, value
        i = w.skip(i)
        if w.char(i) == ",":
            i += 1
        elif w.char(i) == "}":
            more = False
        else:
            raise w.error(i, "',' or '}'")
        i = w.drop(i)
    if w.skip(i + 1) < len(w.text):
        raise w.error(w.skip(i + 1), "the end of the file")


class _Elements:
    """The elements of the array at `start` (its '['); `end` is the position past its ']' once read."""

    def __init__(self, window: _Window, start: int) -> None:
        self.w, self.end = window, start

    def __iter__(self) -> Iterator[Any]:
        w = self.w
        i = w.skip(self.end + 1)
        more = w.char(i) != "]"
        while more:
            value, i = w.value(w.skip(i))
            yield value
            i = w.skip(i)
            if w.char(i) == ",":
                i = w.drop(i + 1)
            elif w.char(i) == "]":
                more = False
            else:
                raise w.error(i, "',' or ']'")
        self.end = w.skip(i) + 1
