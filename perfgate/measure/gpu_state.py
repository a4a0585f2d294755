"""NVML, read only: clocks, power, temperature and clocks-event ("throttle") reasons while a case runs.

perfgate never changes a GPU setting (no clock locking, power limits, persistence mode or resets): the
test GPUs are shared. It only watches, so it can put every case in the same power state before sampling
(measure/protocol.py), drop samples taken under a power or thermal cap, and record what it saw. Without
pynvml (package nvidia-ml-py) or a driver, everything here degrades to "no readings".
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from perfgate.measure import clock
from perfgate.model import GpuState

# nvmlClocksEventReason* bits
IDLE = 0x1
APPLICATIONS_CLOCKS = 0x2  # clocks held by an applications-clocks / locked-clocks setting
SW_POWER_CAP = 0x4
HW_SLOWDOWN = 0x8
SW_THERMAL = 0x20
HW_THERMAL = 0x40
HW_POWER_BRAKE = 0x80
PERF_LIMITING = SW_POWER_CAP | HW_SLOWDOWN | SW_THERMAL | HW_THERMAL | HW_POWER_BRAKE
POLL_INTERVAL_S = 0.005  # three NVML queries take ~27 us on the H100: polling costs nothing measurable


@dataclass(frozen=True)
class Reading:
    t_s: float  # clock.current() when read, in seconds
    sm_mhz: float | None
    mem_mhz: float | None
    power_w: float | None
    temperature_c: float | None
    reasons: int

    @property
    def limited(self) -> bool:
        return bool(self.reasons & PERF_LIMITING)


class NvmlDevice:
    """One GPU through pynvml; each query that the driver refuses reads as None, never as 0."""

    def __init__(self, nvml: Any, handle: Any) -> None:
        self._nv = nvml
        self._h = handle
        self.power_limit_w = self._try(lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0)
        self.clocks_locked_by_setting = self._app_clocks_changed()

    def _try(self, query: Any) -> Any:
        try:
            return query()
        except Exception:  # noqa: BLE001 - NVMLError_NotSupported and friends: the value is unknown
            return None

    def _app_clocks_changed(self) -> bool:
        nv, h = self._nv, self._h
        current = self._try(lambda: nv.nvmlDeviceGetApplicationsClock(h, nv.NVML_CLOCK_SM))
        default = self._try(lambda: nv.nvmlDeviceGetDefaultApplicationsClock(h, nv.NVML_CLOCK_SM))
        return current is not None and default is not None and current != default

    def read(self) -> Reading:
        nv, h = self._nv, self._h
        power = self._try(lambda: nv.nvmlDeviceGetPowerUsage(h))
        return Reading(
            t_s=clock.current().perf_counter_ns() / 1e9,
            sm_mhz=self._try(lambda: float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))),
            mem_mhz=self._try(lambda: float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM))),
            power_w=power / 1000.0 if power is not None else None,
            temperature_c=self._try(lambda: float(nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))),
            reasons=int(self._try(lambda: nv.nvmlDeviceGetCurrentClocksEventReasons(h)) or 0),
        )


def open_device(uuid: str = "", index: int = 0) -> NvmlDevice | None:
    """The NVML device with this UUID ("GPU-..."), else by index; None without NVML."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByUUID(uuid) if uuid else pynvml.nvmlDeviceGetHandleByIndex(index)
        return NvmlDevice(pynvml, handle)
    except Exception:  # noqa: BLE001 - no driver, no permission, unknown UUID: no readings, not a failure
        return None


class Sampler:
    """Polls a device every `interval_s` of the measurement clock while a case is sampled (on a thread with
    the system clock: pynvml calls release the GIL)."""

    def __init__(self, device: NvmlDevice, interval_s: float = POLL_INTERVAL_S) -> None:
        self.device = device
        self.interval_s = interval_s
        self.readings: list[Reading] = []
        self._polling: clock.Periodic | None = None

    def __enter__(self) -> Sampler:
        self._polling = clock.current().every(self.interval_s, self._poll)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._polling is not None:
            self._polling.stop()

    def _poll(self) -> None:
        self.readings.append(self.device.read())


def limited_between(readings: list[Reading], start_s: float, end_s: float) -> bool:
    """Was any poll in [start, end] under a performance-limiting reason?"""
    return any(r.limited for r in readings if start_s <= r.t_s <= end_s)


def summarize_state(readings: list[Reading], device: NvmlDevice, cooldown_ms: float, excluded_samples: int) -> GpuState:
    def med(values: list[float | None]) -> float | None:
        present = [v for v in values if v is not None]
        return float(statistics.median(present)) if present else None

    reasons = 0
    for r in readings:
        reasons |= r.reasons
    sm = [r.sm_mhz for r in readings if r.sm_mhz is not None]
    temps = [r.temperature_c for r in readings if r.temperature_c is not None]
    return GpuState(
        polls=len(readings),
        sm_clock_mhz=med([r.sm_mhz for r in readings]),
        sm_clock_min_mhz=min(sm) if sm else None,
        mem_clock_mhz=med([r.mem_mhz for r in readings]),
        temperature_max_c=max(temps) if temps else None,
        power_median_w=med([r.power_w for r in readings]),
        power_limit_w=device.power_limit_w,
        throttle_reasons=reasons,
        throttled_fraction=sum(r.limited for r in readings) / len(readings) if readings else 0.0,
        clocks_locked=device.clocks_locked_by_setting or bool(reasons & APPLICATIONS_CLOCKS),
        cooldown_ms=round(cooldown_ms, 1),
        excluded_samples=excluded_samples,
    )
