"""The windowed JSON reader (parse/json_stream.py) reads what json.loads reads, whatever the window size:
elements cut at the window's end are read again, never half-read; invalid JSON is an error, never a
partial document."""

import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfgate.parse import json_stream
from perfgate.parse.json_stream import JsonStreamError, object_members
from tests.conftest import DATA

TRACE = (DATA / "torch_trace.json").read_bytes()


def streamed(data: bytes, key: str = "traceEvents") -> dict:
    out = {}
    for k, v in object_members(io.BytesIO(data), 1 << 30, key):
        out[k] = list(v) if k == key else v
    return out


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64, 4096])
def test_the_recorded_trace_reads_as_json_loads_reads_it_for_any_window(monkeypatch, chunk):
    monkeypatch.setattr(json_stream, "CHUNK_CHARS", chunk)
    assert streamed(TRACE) == json.loads(TRACE)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(st.text(max_size=8), json_values, max_size=4),
    st.lists(json_values, max_size=8),
    st.integers(1, 12),
    st.sampled_from(["", " ", "\n  "]),
)
def test_any_document_reads_as_json_loads_reads_it(members, events, chunk, ws):
    doc = {**members, "traceEvents": events}
    text = json.dumps(doc, indent=ws or None).encode()
    json_stream.CHUNK_CHARS, old = chunk, json_stream.CHUNK_CHARS
    try:
        assert streamed(text) == json.loads(text)
    finally:
        json_stream.CHUNK_CHARS = old


@settings(max_examples=60, deadline=None)
@given(st.integers(0, len(TRACE) - 2), st.integers(1, 9))
def test_a_cut_trace_is_an_error_never_a_partial_document(cut, chunk):
    json_stream.CHUNK_CHARS, old = chunk * 97, json_stream.CHUNK_CHARS
    try:
        with pytest.raises(JsonStreamError):
            streamed(TRACE[:cut])
    finally:
        json_stream.CHUNK_CHARS = old


@pytest.mark.parametrize(
    "text",
    [
        b'{"traceEvents": [1, 2,]}',
        b'{"a": 1,}',
        b'{"traceEvents": [1] "x": 2}',
        b'{"traceEvents": [1]} trailing',
        b'{"traceEvents": [NaN]}',
        b"[1, 2]",
        b"  ",
    ],
)
def test_invalid_json_is_an_error(text):
    with pytest.raises(JsonStreamError):
        streamed(text)
