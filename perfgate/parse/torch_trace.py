"""Read a torch.profiler (Kineto) Chrome trace. `ts`/`dur` are microseconds (floats); we keep nanoseconds.

`TraceStream` reads the file once, a window at a time, and hands over its complete ("X") events one at
a time (parse/json_stream.py), so a million-event trace never exists as its whole text or a million
dicts at once; readers keep what they need.
`read_torch_trace` builds a Timeline whose kernels carry the innermost `user_annotation`
(record_function) range of the launching thread, found through the launch call's correlation id and a
sort-and-sweep interval join (parse/intervals.py), as NVTX ranges are for nsys. analyze/torch_summary.py
groups the same events without per-event records.

An event of a kind perfgate reads whose ts/dur is not a number in [0, MAX_US) or whose size is negative
is dropped and counted in the notes, not refused: Chrome traces are also merged and edited by hand, and
one broken event should not hide the rest; the note keeps it visible. Numbers are parsed without a Python
hook per number (one made json.loads 75 % slower on a 200,000-event trace), so every number used is
range-checked here (parse/invariants.py: a 400-digit integer is no finite float).
"""

from __future__ import annotations

import gzip
import zlib
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from perfgate.errors import ReportFileError
from perfgate.inputs import MAX_JSON_BYTES, check_regular_file
from perfgate.parse.intervals import Span, enclosing
from perfgate.parse.invariants import IMPOSSIBLE_TRANSFER, DropCount, as_finite, as_int64, plausible_transfer, printable
from perfgate.parse.json_stream import JsonStreamError, JsonTooLarge, object_members
from perfgate.parse.records import ApiCall, KernelLaunch, MemoryOp, NvtxRange, Timeline

LAUNCH_CATS = ("cuda_runtime", "cuda_driver")
MEMORY_CATS = {"gpu_memcpy": None, "gpu_memset": "memset"}
READ_CATS = frozenset({"kernel", "user_annotation", *LAUNCH_CATS, *MEMORY_CATS})
GPU_CATS = frozenset({"kernel", *MEMORY_CATS})
COPY_KINDS = {"HtoD": "Host-to-Device", "DtoH": "Device-to-Host", "DtoD": "Device-to-Device", "PtoP": "Peer-to-Peer"}
MAX_US = 1e15  # 31 years of microseconds: anything larger is not a timestamp (and 1e18 ns fits int64)
MAX_TRACE_BYTES = MAX_JSON_BYTES * 4  # decompressed, too: a small .gz can hold gigabytes
# A gzip trace may decompress to at most MAX_GZIP_RATIO times its size (and never past MAX_TRACE_BYTES),
# with GZIP_FLOOR_BYTES allowed whatever the ratio. Real traces compress 9:1 (the recorded one) to 85:1
# (100,000 identical events, indented); deflate's ceiling is about 1,030:1, where bombs sit.
MAX_GZIP_RATIO = 400
GZIP_FLOOR_BYTES = 64 << 20


# Other producers' names for the categories perfgate reads: Kineto before PyTorch 1.11 wrote "Kernel",
# "Runtime", "Memcpy" and "Memset"; case varies between tools that re-export traces
CATEGORY_ALIASES = {"runtime": "cuda_runtime", "memcpy": "gpu_memcpy", "memset": "gpu_memset"}
MAX_OPEN_BEGINS = 10_000  # Chrome "B" events open at once on one thread: deeper is no call stack
MAX_CATEGORIES_KEPT = 64  # distinct categories counted for the message of a trace perfgate cannot use


def _category(e: dict[str, Any]) -> str | None:
    """An event's category, in perfgate's names, when it is text (a damaged trace can hold a list there)."""
    cat = e.get("cat")
    if not isinstance(cat, str):
        return None
    lowered = cat.lower()
    return CATEGORY_ALIASES.get(lowered, lowered) if lowered in READ_CATS or lowered in CATEGORY_ALIASES else cat


@dataclass
class _Begins:
    """Chrome's duration events as begin/end pairs ("B" ... "E" on one thread, nested), made into the
    complete events ("X") the readers take. An "E" closes the last "B" open on its thread."""

    path: Path
    dropped: DropCount
    open: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)

    def complete(self, raw: Any) -> dict[str, Any] | None:
        """A complete event: an "X" as it is, an "E" with its "B"; None for anything else (a "B" waits)."""
        if not isinstance(raw, dict):
            return None
        phase = raw.get("ph")
        if phase == "B":
            self.begin(raw)
            return None
        if phase == "E":
            return self.end(raw)
        return raw if phase == "X" else None

    def begin(self, e: dict[str, Any]) -> None:
        stack = self.open.setdefault(_thread(e), [])
        if len(stack) >= MAX_OPEN_BEGINS:
            raise ReportFileError(self.path, f"more than {MAX_OPEN_BEGINS:,} begin events open on one thread")
        stack.append(e)

    def end(self, e: dict[str, Any]) -> dict[str, Any] | None:
        """The complete event this end closes, or None (an end without a begin is dropped and counted)."""
        stack = self.open.get(_thread(e))
        if not stack:
            self.dropped.add("end trace events without a begin event on their thread")
            return None
        begin = stack.pop()
        ts, end_ts = as_finite(begin.get("ts")), as_finite(e.get("ts"))
        dur: object = end_ts - ts if ts is not None and end_ts is not None else None
        return {**begin, "ph": "X", "dur": dur, "args": {**args_of(begin), **args_of(e)}}

    def unclosed(self) -> None:
        left = sum(len(stack) for stack in self.open.values())
        self.dropped.add("begin trace events never ended", left)


@dataclass
class TraceStream:
    """One pass over a trace's complete events; `gpu_name`, `schema_version` and `notes` are known once
    `events()` is exhausted (the header may follow the events in the file). The file is read a window
    at a time (parse/json_stream.py): memory holds the events a reader keeps, never the whole text."""

    path: Path
    gpu_name: str = ""
    schema_version: str = ""
    dropped: DropCount = field(default_factory=DropCount)

    def events(self) -> Iterator[dict[str, Any]]:
        """Complete events of the kinds perfgate reads, with a valid ts/dur; others are skipped."""
        st = check_regular_file(self.path, ReportFileError)
        if st.st_size > MAX_TRACE_BYTES:
            raise ReportFileError(self.path, f"too large ({st.st_size:,} bytes; at most {MAX_TRACE_BYTES:,})")
        packed, limit = False, MAX_TRACE_BYTES
        try:
            with _open(self.path) as (source, packed):
                if packed:
                    limit = min(MAX_TRACE_BYTES, max(MAX_GZIP_RATIO * st.st_size, GZIP_FLOOR_BYTES))
                yield from self._events(source, limit)
        except JsonTooLarge as err:
            problem = str(err)
            if packed and problem.startswith("more than"):
                problem = (
                    f"decompresses to more than {limit:,} bytes (at most {MAX_GZIP_RATIO}x the file's "
                    f"size, and {MAX_TRACE_BYTES:,})"
                )
            raise ReportFileError(self.path, f"{problem}: not a profiler trace") from err
        except JsonStreamError as err:
            problem = str(err)
            if problem == "the file is empty":
                raise ReportFileError(self.path, problem) from err
            if problem.startswith(("the top level", "traceEvents is not")):
                raise ReportFileError(self.path, "not a torch profiler trace (no traceEvents list)") from err
            raise ReportFileError(self.path, f"not valid JSON ({problem})") from err
        except (OSError, EOFError, zlib.error) as err:  # a corrupt gzip member: BadGzipFile is an OSError
            raise ReportFileError(self.path, f"cannot be read ({err})") from err
        except UnicodeDecodeError as err:
            raise ReportFileError(self.path, f"not UTF-8 text ({err.reason})") from err
        except RecursionError as err:
            raise ReportFileError(self.path, "nested too deeply to read") from err
        except ValueError as err:  # an integer past Python's int-string conversion limit
            raise ReportFileError(self.path, f"not valid JSON ({str(err)[:100]})") from err

    def _events(self, source: BinaryIO, max_bytes: int) -> Iterator[dict[str, Any]]:
        seen_events = False
        for key, value in object_members(source, max_bytes, "traceEvents"):
            if key != "traceEvents":
                self._header(key, value)
                continue
            if seen_events:
                raise ReportFileError(self.path, "two traceEvents lists")  # json.loads would keep the last
            seen_events = True
            yield from self._complete(value)
        if not seen_events:
            raise ReportFileError(self.path, "not a torch profiler trace (no traceEvents list)")

    def _complete(self, events: Iterator[Any]) -> Iterator[dict[str, Any]]:
        """The complete events of the categories perfgate reads ("X", or "B"/"E" pairs), categories in
        perfgate's names; a trace that holds none refuses the file, naming what it holds instead."""
        begins, others, read = _Begins(self.path, self.dropped), Counter[str](), 0
        seen: set[int] = set()
        for raw in events:
            e = begins.complete(raw)
            if e is None:
                continue
            cat = _category(e)
            if cat not in READ_CATS:
                if len(others) < MAX_CATEGORIES_KEPT or cat in others:
                    others[str(cat)[:40]] += 1
                continue
            read += 1
            e["cat"] = cat
            if span_ns(e) is None:
                self.dropped.add(f"{cat} trace events whose ts/dur is not a number in [0, {MAX_US:.0e}) us")
                continue
            if cat in GPU_CATS:
                self._check_new(e, seen)
            yield e
        begins.unclosed()
        if not read:
            raise ReportFileError(self.path, _nothing_to_read(others))

    def _check_new(self, e: dict[str, Any], seen: set[int]) -> None:
        """A GPU event repeating another exactly (name, start, duration, process, thread, stream, correlation id)
        is a copied trace, as a copied table is in an nsys export: refused, never counted twice. A 64-bit hash
        per GPU event (~50 bytes each in the set) keeps memory well under the trace's own size."""
        a = args_of(e)
        fields = (e["cat"], e.get("name"), e.get("ts"), e.get("dur"), e.get("pid"), e.get("tid"))
        key = hash(tuple(str(v)[:200] for v in fields) + tuple(str(a.get(k))[:40] for k in ("correlation", "stream")))
        if key in seen:
            raise ReportFileError(
                self.path,
                f"{e['cat']} event {name_of(e)[:80]!r} at ts {str(e.get('ts'))[:40]} us repeats another exactly "
                f"(same start, duration, stream and correlation id): a copied trace would be counted twice",
            )
        seen.add(key)

    def _header(self, key: str, value: Any) -> None:
        if key == "deviceProperties" and isinstance(value, list) and value and isinstance(value[0], dict):
            name = value[0].get("name", "")
            self.gpu_name = name if isinstance(name, str) else ""
        elif key == "schemaVersion" and isinstance(value, (str, int)) and not isinstance(value, bool):
            self.schema_version = str(value)[:40]

    @property
    def notes(self) -> tuple[str, ...]:
        return self.dropped.notes()


def _nothing_to_read(others: Counter[str]) -> str:
    if not others:
        return "the trace holds no complete or begin/end events: nothing to summarise"
    held = ", ".join(f"{cat!r} ({n:,})" for cat, n in others.most_common(5))
    return (
        f"no kernel, copy, runtime-call or annotation events (categories kernel, gpu_memcpy, gpu_memset, "
        f"cuda_runtime, cuda_driver, user_annotation, or Kernel/Memcpy/Memset/Runtime); it holds {held}"
    )


@contextmanager
def _open(path: Path) -> Iterator[tuple[BinaryIO, bool]]:
    """The file's bytes, decompressed on the fly when it is gzip (by content, not by name), and whether
    it was."""
    with path.open("rb") as fh:
        if fh.read(2) == b"\x1f\x8b":
            fh.seek(0)
            with gzip.GzipFile(fileobj=fh) as gz:
                yield gz, True  # type: ignore[misc]
        else:
            fh.seek(0)
            yield fh, False


def span_ns(e: dict[str, Any]) -> tuple[int, int] | None:
    """(start, end) in ns, or None unless ts and dur are numbers in [0, MAX_US) (dur absent: 0)."""
    ts, dur = as_finite(e.get("ts")), as_finite(e.get("dur", 0))
    if ts is None or dur is None or not (0 <= ts < MAX_US and 0 <= dur < MAX_US):
        return None
    start = round(ts * 1000)
    return start, start + round(dur * 1000)


def copy_kind(name: str) -> str:
    for short, long in COPY_KINDS.items():
        if short in name:
            return long
    return name


def args_of(e: dict[str, Any]) -> dict[str, Any]:
    a = e.get("args")
    return a if isinstance(a, dict) else {}


def name_of(e: dict[str, Any]) -> str:
    name = e.get("name", "")
    return printable(name if isinstance(name, str) else str(name)[:200])


def count(value: Any) -> int | None:
    """A launch attribute or size (registers, bytes, stream): a non-negative integer below 2**63 (a
    finite whole float is accepted: Kineto writes some as floats), else None."""
    number = as_int64(value)
    if number is None and isinstance(value, float) and as_finite(value) is not None and value.is_integer():
        number = as_int64(int(value))
    return number if number is not None and number >= 0 else None


def memory_bytes(e: dict[str, Any]) -> int | None:
    """A transfer's size: absent is 0 (unknown); present but not a count is None (the event is dropped)."""
    raw = args_of(e).get("bytes")
    return 0 if raw is None else count(raw)


def read_torch_trace(path: Path) -> Timeline:
    trace = TraceStream(Path(path))
    kernels, mem_ops, api, ranges = [], [], [], []
    for e in trace.events():
        cat = e["cat"]
        if cat == "kernel":
            kernels.append(e)
        elif cat in MEMORY_CATS:
            start, end = span_ns(e) or (0, 0)
            size = memory_bytes(e)
            if size is None or not plausible_transfer(size, end - start):
                why = "with a negative or non-integer size" if size is None else IMPOSSIBLE_TRANSFER
                trace.dropped.add(f"{cat} trace events {why}")
                continue
            kind = MEMORY_CATS[cat] or copy_kind(name_of(e))
            mem_ops.append(MemoryOp(kind=kind, bytes=size, start_ns=start, end_ns=end))
        elif cat in LAUNCH_CATS:
            api.append(e)
        else:
            ranges.append(e)
    annotations = _annotations(kernels, api, ranges)
    return Timeline(
        source=trace.path,
        kind="torch",
        kernels=tuple(sorted((_kernel(e, a) for e, a in zip(kernels, annotations)), key=lambda k: k.start_ns)),
        memory_ops=tuple(sorted(mem_ops, key=lambda m: m.start_ns)),
        api_calls=tuple(sorted((ApiCall(name_of(e), *_span(e)) for e in api), key=lambda a: a.start_ns)),
        nvtx_ranges=tuple(NvtxRange(name_of(e), *_span(e), style="PushPop") for e in ranges),
        gpu_name=trace.gpu_name,
        meta={"schemaVersion": trace.schema_version},
        notes=trace.notes,
    )


def _span(e: dict[str, Any]) -> tuple[int, int]:
    return span_ns(e) or (0, 0)  # events() hands over only events with a valid span


def _annotations(kernels: list[dict[str, Any]], api: list[dict[str, Any]], ranges: list[dict[str, Any]]) -> list[str]:
    """The innermost annotation on the launching thread around each kernel's launch call."""
    launches = {corr: e for e in api if (corr := as_int64(args_of(e).get("correlation"))) is not None}
    calls = [
        launches.get(corr) if (corr := as_int64(args_of(k).get("correlation"))) is not None else None for k in kernels
    ]
    present = [call for call in calls if call is not None]
    spans = [Span(_thread(r), *_span(r)) for r in ranges]
    found = iter(enclosing([Span(_thread(call), *_span(call)) for call in present], spans))
    out = []
    for call in calls:
        idx = next(found) if call is not None else ()
        out.append(name_of(ranges[idx[-1]]) if idx else "")  # innermost: the last opened
    return out


def _thread(e: dict[str, Any]) -> tuple[str, str]:
    return (str(e.get("pid"))[:100], str(e.get("tid"))[:100])


def _dims(value: Any) -> tuple[int, int, int]:
    if isinstance(value, list) and len(value) == 3:
        dims = [count(v) for v in value]
        if all(d is not None for d in dims):
            return (dims[0] or 0, dims[1] or 0, dims[2] or 0)
    return (0, 0, 0)


def _kernel(e: dict[str, Any], annotation: str) -> KernelLaunch:
    a = args_of(e)
    start, end = _span(e)
    return KernelLaunch(
        name=name_of(e),
        start_ns=start,
        end_ns=end,
        grid=_dims(a.get("grid")),
        block=_dims(a.get("block")),
        registers_per_thread=count(a.get("registers per thread")),
        shared_mem_bytes=count(a.get("shared memory")),
        stream=count(a.get("stream")),
        device=count(a.get("device")),
        nvtx_range=annotation,
    )
