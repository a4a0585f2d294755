"""CUPTI's launch callbacks (compiled/launch_hook.py) against a stand-in libcupti that makes the callbacks the
driver makes, with the parameter structs laid out as CUDA's generated_cuda_meta.h lays them out."""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import pytest

from perfgate.compiled import launch_hook, modules
from perfgate.compiled.launch_hook import DRIVER, ENTER, EXIT, RUNTIME, CallbackData, LaunchHookUnavailable

MULTIPLE_SUBSCRIBERS = 39


class CuLaunchKernelParams(ctypes.Structure):  # cuLaunchKernel_params
    _fields_ = [("f", ctypes.c_void_p), ("dims", ctypes.c_uint * 6), ("shared", ctypes.c_uint)]


class CuLaunchConfig(ctypes.Structure):  # CUlaunchConfig
    _fields_ = [("dims", ctypes.c_uint * 6), ("shared", ctypes.c_uint), ("stream", ctypes.c_void_p)]


class CuLaunchKernelExParams(ctypes.Structure):  # cuLaunchKernelEx_params
    _fields_ = [("config", ctypes.POINTER(CuLaunchConfig)), ("f", ctypes.c_void_p)]


class CudaLaunchKernelParams(ctypes.Structure):  # cudaLaunchKernel_v7000_params
    _fields_ = [
        ("func", ctypes.c_void_p),
        ("dims", ctypes.c_uint * 6),
        ("args", ctypes.c_void_p),
        ("shared", ctypes.c_size_t),
        ("stream", ctypes.c_void_p),
    ]


class FakeCupti:
    """The three entry points the hook uses; `fire` makes a callback as CUPTI would."""

    def __init__(self, subscribe_status: int = 0) -> None:
        self.subscribe_status = subscribe_status
        self.callback: Any = None
        self.enabled: set[tuple[int, int]] = set()
        self.unsubscribed = False
        self._keep: list[Any] = []

    def cuptiSubscribe(self, handle: Any, callback: Any, user: Any) -> int:  # noqa: N802 (CUPTI's name)
        self.callback = callback
        return self.subscribe_status

    def cuptiEnableCallback(self, enable: int, sub: Any, domain: int, cbid: int) -> int:  # noqa: N802
        self.enabled.add((domain, cbid))
        return 0

    def cuptiUnsubscribe(self, sub: Any) -> int:  # noqa: N802
        self.unsubscribed = True
        return 0

    def fire(self, domain: int, cbid: int, site: int, params: ctypes.Structure, symbol: bytes) -> None:
        if (domain, cbid) not in self.enabled:
            return
        data = CallbackData(callbackSite=site, functionParams=ctypes.addressof(params), symbolName=symbol)
        self._keep += [params, data]
        self.callback(None, domain, cbid, ctypes.addressof(data))


def _dims(*values: int) -> Any:
    return (ctypes.c_uint * 6)(*values)


def test_a_driver_launch_is_seen_with_its_grid_block_and_dynamic_shared_memory() -> None:
    cupti = FakeCupti()
    params = CuLaunchKernelParams(dims=_dims(16384, 1, 1, 512, 1, 1), shared=4096)
    launches = launch_hook.hooked_launches(lambda: cupti.fire(DRIVER, 307, ENTER, params, b"_Z3rmsPf"), cupti)
    assert launches == [launch_hook.HookedLaunch("_Z3rmsPf", (16384, 1, 1), (512, 1, 1), 4096)]
    assert cupti.unsubscribed


def test_a_runtime_launch_is_counted_once_not_again_for_the_driver_call_it_makes() -> None:
    cupti = FakeCupti()
    runtime = CudaLaunchKernelParams(dims=_dims(128, 2, 1, 256, 1, 1), shared=0)
    config = CuLaunchConfig(dims=_dims(128, 2, 1, 256, 1, 1), shared=0)
    driver = CuLaunchKernelExParams(config=ctypes.pointer(config))

    def call() -> None:
        cupti.fire(RUNTIME, 211, ENTER, runtime, b"_Z1kv")
        cupti.fire(DRIVER, 652, ENTER, driver, b"_Z1kv")
        cupti.fire(DRIVER, 652, EXIT, driver, b"_Z1kv")
        cupti.fire(RUNTIME, 211, EXIT, runtime, b"_Z1kv")
        cupti.fire(DRIVER, 652, ENTER, driver, b"_Z5otherv")  # a launch of the driver's own, after it

    launches = launch_hook.hooked_launches(call, cupti)
    assert [(h.symbol, h.grid, h.block) for h in launches] == [
        ("_Z1kv", (128, 2, 1), (256, 1, 1)),
        ("_Z5otherv", (128, 2, 1), (256, 1, 1)),
    ]


def test_a_taken_subscriber_slot_makes_the_hook_unavailable() -> None:
    cupti = FakeCupti(subscribe_status=MULTIPLE_SUBSCRIBERS)
    with pytest.raises(LaunchHookUnavailable, match="cuptiSubscribe returned 39"):
        launch_hook.hooked_launches(lambda: None, cupti)


def test_without_the_hook_the_launches_come_from_the_profiler(monkeypatch: pytest.MonkeyPatch) -> None:
    def unavailable(call: Any) -> Any:
        raise LaunchHookUnavailable("no libcupti found")

    profiled = [modules.ObservedLaunch("k", (1, 1, 1), (32, 1, 1), 28, 0)]
    monkeypatch.setattr(launch_hook, "hooked_launches", unavailable)
    monkeypatch.setattr(modules, "profiled_launches", lambda call: profiled)
    assert modules.launched_kernels(lambda: None) == profiled


def test_hooked_launches_carry_demangled_names_and_their_dynamic_shared_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hooked = [launch_hook.HookedLaunch("_Z3rmsPf", (4, 1, 1), (512, 1, 1), 64)]
    monkeypatch.setattr(launch_hook, "hooked_launches", lambda call: hooked)
    monkeypatch.setattr(modules, "demangled", lambda names: {n: "rms(float*)" for n in names})
    (launch,) = modules.launched_kernels(lambda: None)
    assert (launch.name, launch.grid, launch.block, launch.dynamic_shared_bytes) == (
        "rms(float*)",
        (4, 1, 1),
        (512, 1, 1),
        64,
    )


def test_the_cupti_this_process_loaded_is_tried_first(tmp_path: Path) -> None:
    maps = tmp_path / "maps"
    lib = "/opt/site/nvidia/cu13/lib/libcupti.so.13"
    maps.write_text(f"7f00-7f01 r-xp 00000000 08:01 1 {lib}\n7f02-7f03 r-xp 00000000 08:01 2 /usr/lib/libc.so.6\n")
    assert launch_hook.cupti_candidates(maps)[0] == Path(lib)
