"""Read a torch.profiler (Kineto) Chrome trace into a Timeline. `ts`/`dur` are microseconds (floats).

Kernels are attributed to the innermost `user_annotation` (record_function) range on the launching
thread, found through the launch call's correlation id, as NVTX ranges are for nsys.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from perfgate.errors import ReportFileError
from perfgate.parse.records import ApiCall, KernelLaunch, MemoryOp, NvtxRange, Timeline

_KINDS = {"gpu_memcpy": None, "gpu_memset": "memset"}


def read_torch_trace(path: Path) -> Timeline:
    path = Path(path)
    events, meta = _load(path)
    launches = {e["args"]["correlation"]: e for e in events
                if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    ranges = [e for e in events if e.get("cat") == "user_annotation"]
    kernels, mem_ops = [], []
    for e in events:
        cat = e.get("cat")
        if cat == "kernel":
            kernels.append(_kernel(e, _annotation(launches.get(e.get("args", {}).get("correlation")), ranges)))
        elif cat in _KINDS:
            kind = _KINDS[cat] or _copy_kind(e["name"])
            start, end = _span(e)
            mem_ops.append(MemoryOp(kind=kind, bytes=int(e.get("args", {}).get("bytes", 0)), start_ns=start, end_ns=end))
    api = [ApiCall(e["name"], *_span(e)) for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")]
    nvtx = [NvtxRange(e["name"], *_span(e), style="PushPop") for e in ranges]
    gpu = meta.get("deviceProperties", [{}])
    return Timeline(source=path, kind="torch", kernels=tuple(sorted(kernels, key=lambda k: k.start_ns)),
                    memory_ops=tuple(sorted(mem_ops, key=lambda m: m.start_ns)),
                    api_calls=tuple(sorted(api, key=lambda a: a.start_ns)), nvtx_ranges=tuple(nvtx),
                    gpu_name=str(gpu[0].get("name", "")) if gpu else "",
                    meta={"schemaVersion": str(meta.get("schemaVersion", ""))})


def _load(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    if not path.is_file():
        raise ReportFileError(path, "no such file")
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        if not raw.strip():
            raise ReportFileError(path, "the file is empty")
        data = json.loads(raw)
    except (OSError, EOFError, gzip.BadGzipFile) as err:
        raise ReportFileError(path, f"cannot be read ({err})") from err
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ReportFileError(path, f"not valid JSON, truncated? ({err})") from err
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise ReportFileError(path, "not a torch profiler trace (no traceEvents list)")
    events = [e for e in data["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X"]
    return events, data


def _span(e: dict[str, Any]) -> tuple[int, int]:
    start = round(float(e["ts"]) * 1000)
    return start, start + round(float(e.get("dur", 0)) * 1000)


def _kernel(e: dict[str, Any], annotation: str) -> KernelLaunch:
    a = e.get("args", {})
    start, end = _span(e)
    grid, block = a.get("grid", [0, 0, 0]), a.get("block", [0, 0, 0])
    return KernelLaunch(name=e["name"], start_ns=start, end_ns=end, grid=tuple(grid), block=tuple(block),
                        registers_per_thread=a.get("registers per thread"), shared_mem_bytes=a.get("shared memory"),
                        stream=a.get("stream"), device=a.get("device"), nvtx_range=annotation)


def _annotation(launch: dict[str, Any] | None, ranges: list[dict[str, Any]]) -> str:
    if launch is None:
        return ""
    start, end = _span(launch)
    enclosing = [r for r in ranges if r.get("tid") == launch.get("tid") and r.get("pid") == launch.get("pid")
                 and _span(r)[0] <= start and _span(r)[1] >= end]
    return max(enclosing, key=lambda r: _span(r)[0])["name"] if enclosing else ""


def _copy_kind(name: str) -> str:
    for kind in ("HtoD", "DtoH", "DtoD", "PtoP"):
        if kind in name:
            return {"HtoD": "Host-to-Device", "DtoH": "Device-to-Host", "DtoD": "Device-to-Device",
                    "PtoP": "Peer-to-Peer"}[kind]
    return name
