"""Read a torch.profiler (Kineto) Chrome trace. `ts`/`dur` are microseconds (floats); we keep nanoseconds.

`load_events` validates and returns the complete ("X") events once; `read_torch_trace` builds a Timeline
whose kernels carry the innermost `user_annotation` (record_function) range of the launching thread,
found through the launch call's correlation id and a sort-and-sweep interval join (parse/intervals.py),
as NVTX ranges are for nsys. analyze/torch_summary.py groups the same events without per-event records.
"""

from __future__ import annotations

import gzip
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfgate.errors import ReportFileError
from perfgate.inputs import MAX_JSON_BYTES, check_regular_file, parse_json
from perfgate.parse.intervals import Span, enclosing
from perfgate.parse.records import ApiCall, KernelLaunch, MemoryOp, NvtxRange, Timeline

LAUNCH_CATS = ("cuda_runtime", "cuda_driver")
MEMORY_CATS = {"gpu_memcpy": None, "gpu_memset": "memset"}
COPY_KINDS = {"HtoD": "Host-to-Device", "DtoH": "Device-to-Host", "DtoD": "Device-to-Device", "PtoP": "Peer-to-Peer"}


@dataclass(frozen=True)
class TraceEvents:
    path: Path
    events: list[dict[str, Any]]  # complete events with a valid ts/dur
    gpu_name: str
    schema_version: str


def load_events(path: Path) -> TraceEvents:
    path = Path(path)
    st = check_regular_file(path, ReportFileError)
    if st.st_size > MAX_JSON_BYTES * 4:
        raise ReportFileError(path, f"too large ({st.st_size:,} bytes)")
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except (OSError, EOFError, gzip.BadGzipFile, ValueError) as err:
        raise ReportFileError(path, f"cannot be read ({err})") from err
    if not raw.strip():
        raise ReportFileError(path, "the file is empty")
    data = parse_json(raw, path, ReportFileError, unique_keys=False)
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise ReportFileError(path, "not a torch profiler trace (no traceEvents list)")
    events = [e for e in data["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X" and _timed(e)
              and isinstance(e.get("cat", ""), str)]
    props = data.get("deviceProperties")
    gpu = props[0].get("name", "") if isinstance(props, list) and props and isinstance(props[0], dict) else ""
    return TraceEvents(path, events, str(gpu), str(data.get("schemaVersion", "")))


MAX_US = 1e15  # 31 years of microseconds: anything larger is not a timestamp


def _timed(e: dict[str, Any]) -> bool:
    ts, dur = e.get("ts"), e.get("dur", 0)
    return (all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and abs(v) < MAX_US
                for v in (ts, dur)) and dur >= 0)


def span_ns(e: dict[str, Any]) -> tuple[int, int]:
    start = round(float(e["ts"]) * 1000)
    return start, start + round(float(e.get("dur", 0)) * 1000)


def copy_kind(name: str) -> str:
    for short, long in COPY_KINDS.items():
        if short in name:
            return long
    return name


def args_of(e: dict[str, Any]) -> dict[str, Any]:
    a = e.get("args")
    return a if isinstance(a, dict) else {}


def read_torch_trace(path: Path) -> Timeline:
    trace = load_events(path)
    kernels, mem_ops, api, ranges = [], [], [], []
    for e in trace.events:
        cat = e.get("cat")
        if cat == "kernel":
            kernels.append(e)
        elif cat in MEMORY_CATS:
            start, end = span_ns(e)
            kind = MEMORY_CATS[str(cat)] or copy_kind(str(e.get("name", "")))
            mem_ops.append(MemoryOp(kind=kind, bytes=finite_int(args_of(e).get("bytes")) or 0, start_ns=start,
                                    end_ns=end))
        elif cat in LAUNCH_CATS:
            api.append(e)
        elif cat == "user_annotation":
            ranges.append(e)
    annotations = _annotations(kernels, api, ranges)
    return Timeline(source=trace.path, kind="torch",
                    kernels=tuple(sorted((_kernel(e, a) for e, a in zip(kernels, annotations)),
                                         key=lambda k: k.start_ns)),
                    memory_ops=tuple(sorted(mem_ops, key=lambda m: m.start_ns)),
                    api_calls=tuple(sorted((ApiCall(str(e.get("name", "")), *span_ns(e)) for e in api),
                                           key=lambda a: a.start_ns)),
                    nvtx_ranges=tuple(NvtxRange(str(e.get("name", "")), *span_ns(e), style="PushPop") for e in ranges),
                    gpu_name=trace.gpu_name, meta={"schemaVersion": trace.schema_version})


def _annotations(kernels: list[dict[str, Any]], api: list[dict[str, Any]], ranges: list[dict[str, Any]]) -> list[str]:
    """The innermost annotation on the launching thread around each kernel's launch call."""
    launches = {c: e for e in api if isinstance(c := args_of(e).get("correlation"), int)}
    calls = [launches.get(c) if isinstance(c := args_of(k).get("correlation"), int) else None for k in kernels]
    present = [c for c in calls if c is not None]
    spans = [Span(_thread(r), *span_ns(r)) for r in ranges]
    found = iter(enclosing([Span(_thread(c), *span_ns(c)) for c in present], spans))
    out = []
    for c in calls:
        idx = next(found) if c is not None else ()
        out.append(str(ranges[idx[-1]].get("name", "")) if idx else "")  # innermost: the last opened
    return out


def _thread(e: dict[str, Any]) -> tuple[str, str]:
    return (str(e.get("pid")), str(e.get("tid")))


def finite_int(value: Any) -> int | None:
    """An int from a finite JSON number (trace arguments are untrusted: inf, strings, lists); else None."""
    return int(value) if isinstance(value, (int, float)) and not isinstance(value,
                                                                            bool) and math.isfinite(value) else None


def _dims(value: Any) -> tuple[int, int, int]:
    if isinstance(value, list) and len(value) == 3 and all(finite_int(v) is not None for v in value):
        return (int(value[0]), int(value[1]), int(value[2]))
    return (0, 0, 0)


def _kernel(e: dict[str, Any], annotation: str) -> KernelLaunch:
    a = args_of(e)
    start, end = span_ns(e)
    return KernelLaunch(name=str(e.get("name", "")), start_ns=start, end_ns=end, grid=_dims(a.get("grid")),
                        block=_dims(a.get("block")), registers_per_thread=finite_int(a.get("registers per thread")),
                        shared_mem_bytes=finite_int(a.get("shared memory")), stream=finite_int(a.get("stream")),
                        device=finite_int(a.get("device")), nvtx_range=annotation)
