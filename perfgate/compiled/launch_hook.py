"""The launches of one call from CUPTI's callback API: grid, block and dynamic shared memory as the call hands
them to the CUDA runtime or driver, with the kernel's symbol, and nothing instrumented on the GPU.

torch.profiler (compiled/modules.py's fallback) learns the same from CUPTI's activity API, whose start-up
instruments every loaded CUDA module: 7.1 s per process on the H100 for one call of the bundled suite's
rms_norm, cold and warm. A callback subscription costs milliseconds. It needs the one CUPTI subscriber slot
of the process and libcupti (the copy torch loaded, else the toolkit's): without them LaunchHookUnavailable
says why and the caller falls back to the profiler.

Only the launch entry points are enabled (cuLaunchKernel, cuLaunchKernelEx and their per-thread-stream
variants; cudaLaunchKernel and cudaLaunchKernelExC): a runtime launch is counted once, not again for the
driver call it makes. The layouts of their parameters are CUDA's generated_cuda_meta.h and
generated_cuda_runtime_api_meta.h (stable since CUDA 11.6).
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfgate.errors import PerfgateError

DRIVER, RUNTIME = 1, 2  # CUpti_CallbackDomain
ENTER, EXIT = 0, 1  # CUpti_ApiCallbackSite
# (domain, callback id) -> how its parameters hold the configuration (cupti_driver_cbid.h, cupti_runtime_cbid.h)
LAUNCH_CBIDS = {
    (DRIVER, 307): "cuLaunchKernel",
    (DRIVER, 442): "cuLaunchKernel",  # _ptsz
    (DRIVER, 652): "cuLaunchKernelEx",
    (DRIVER, 653): "cuLaunchKernelEx",  # _ptsz
    (RUNTIME, 211): "cudaLaunchKernel",
    (RUNTIME, 214): "cudaLaunchKernel",  # _ptsz
    (RUNTIME, 430): "cudaLaunchKernelExC",
    (RUNTIME, 431): "cudaLaunchKernelExC",  # _ptsz
}
CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p)


class LaunchHookUnavailable(PerfgateError):
    """CUPTI's callback API cannot be used in this process (no libcupti, the subscriber slot taken)."""


class CallbackData(ctypes.Structure):  # CUpti_CallbackData (cupti_callbacks.h)
    _fields_ = [
        ("callbackSite", ctypes.c_int),
        ("functionName", ctypes.c_char_p),
        ("functionParams", ctypes.c_void_p),
        ("functionReturnValue", ctypes.c_void_p),
        ("symbolName", ctypes.c_char_p),
        ("context", ctypes.c_void_p),
        ("contextUid", ctypes.c_uint32),
        ("correlationData", ctypes.c_void_p),
        ("correlationId", ctypes.c_uint32),
    ]


class _Dims(ctypes.Structure):  # grid, block and dynamic shared memory, as the driver's parameters lay them out
    _fields_ = [("dims", ctypes.c_uint * 6), ("shared", ctypes.c_uint)]


class _RuntimeDims(ctypes.Structure):  # dim3 gridDim, dim3 blockDim, (void** args), size_t sharedMem
    _fields_ = [("dims", ctypes.c_uint * 6), ("args", ctypes.c_void_p), ("shared", ctypes.c_size_t)]


class _RuntimeConfig(ctypes.Structure):  # cudaLaunchConfig_t: dim3 gridDim, dim3 blockDim, size_t dynamicSmemBytes
    _fields_ = [("dims", ctypes.c_uint * 6), ("shared", ctypes.c_size_t)]


@dataclass(frozen=True)
class HookedLaunch:
    """One launch as the call made it: the kernel's (mangled) symbol and its configuration."""

    symbol: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_shared_bytes: int


def configuration(kind: str, params: int) -> tuple[tuple[int, ...], int]:
    """(grid + block, dynamic shared bytes) from a launch call's parameter struct at address `params`."""
    pointer = ctypes.c_void_p
    if kind == "cuLaunchKernel":  # CUfunction f; unsigned gridDimX..blockDimZ, sharedMemBytes; ...
        d = _Dims.from_address(params + ctypes.sizeof(pointer))
        return tuple(d.dims), int(d.shared)
    if kind == "cuLaunchKernelEx":  # const CUlaunchConfig* config (its first 7 unsigned: dims, shared)
        d = _Dims.from_address(int(pointer.from_address(params).value or 0))
        return tuple(d.dims), int(d.shared)
    if kind == "cudaLaunchKernel":  # const void* func; dim3 gridDim; dim3 blockDim; void** args; size_t sharedMem
        r = _RuntimeDims.from_address(params + ctypes.sizeof(pointer))
        return tuple(r.dims), int(r.shared)
    c = _RuntimeConfig.from_address(int(pointer.from_address(params).value or 0))  # cudaLaunchKernelExC
    return tuple(c.dims), int(c.shared)


def hooked_launches(call: Callable[[], Any], cupti: Any = None) -> list[HookedLaunch]:
    """The launches `call` makes (synchronised before the hook goes off). LaunchHookUnavailable when CUPTI's
    callback API cannot be used here."""
    lib = cupti if cupti is not None else load_cupti()
    seen: list[HookedLaunch] = []
    runtime_depth = [0]  # inside a runtime launch: its driver call is the same launch

    def on_callback(_user: Any, domain: int, cbid: int, data: Any) -> None:
        kind = LAUNCH_CBIDS.get((domain, cbid))
        if kind is None or not data:
            return
        info = CallbackData.from_address(data)
        if domain == RUNTIME:
            runtime_depth[0] += 1 if info.callbackSite == ENTER else -1
        if info.callbackSite != ENTER or (domain == DRIVER and runtime_depth[0] > 0):
            return
        dims, shared = configuration(kind, int(info.functionParams or 0))
        symbol = (info.symbolName or b"").decode(errors="replace")
        seen.append(HookedLaunch(symbol, (dims[0], dims[1], dims[2]), (dims[3], dims[4], dims[5]), shared))

    callback = CALLBACK(on_callback)  # kept alive until unsubscribed
    subscriber = ctypes.c_void_p()
    _check(lib.cuptiSubscribe(ctypes.byref(subscriber), callback, None), "cuptiSubscribe")
    try:
        for domain, cbid in LAUNCH_CBIDS:
            _check(lib.cuptiEnableCallback(1, subscriber, domain, cbid), "cuptiEnableCallback")
        call()
        _synchronize()
    finally:
        lib.cuptiUnsubscribe(subscriber)
    return seen


def _check(status: int, what: str) -> None:
    if status != 0:  # 39: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (a profiler holds the slot)
        raise LaunchHookUnavailable(f"CUPTI {what} returned {status}")


def load_cupti() -> Any:
    """The libcupti this process already has mapped (torch's), else a wheel's, else the CUDA toolkit's."""
    for path in cupti_candidates():
        try:
            lib = ctypes.CDLL(str(path))
        except OSError:
            continue
        lib.cuptiSubscribe.argtypes = [ctypes.c_void_p, CALLBACK, ctypes.c_void_p]
        lib.cuptiEnableCallback.argtypes = [ctypes.c_uint32, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
        lib.cuptiUnsubscribe.argtypes = [ctypes.c_void_p]
        return lib
    raise LaunchHookUnavailable("no libcupti found (neither loaded in this process nor under CUDA_HOME)")


def cupti_candidates(maps: Path = Path("/proc/self/maps")) -> list[Path]:
    found: list[Path] = []
    try:
        for line in maps.read_text(errors="replace").splitlines():
            fields = line.split(None, 5)
            if len(fields) == 6 and Path(fields[5]).name.startswith("libcupti.so"):
                found.append(Path(fields[5]))
    except OSError:
        pass
    for site in sys.path:  # the wheels' copies (nvidia-cuda-cupti: nvidia/cuda_cupti/lib, nvidia/cu13/lib)
        found += sorted(Path(site or ".").glob("nvidia/*/lib/libcupti.so*"))
    home = Path(os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda")
    found += sorted((home / "extras" / "CUPTI" / "lib64").glob("libcupti.so*"))
    return list(dict.fromkeys(found))


def _synchronize() -> None:
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.synchronize()
