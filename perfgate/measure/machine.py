"""Which host CPU a run was timed on: its name (what keys a host baseline) and what else decides whether two
runs' times are comparable (core count, caches, architecture, OS), read through py-cpuinfo.

py-cpuinfo (the py-cpuinfo2 distribution, which pytest-benchmark also uses) reads the brand string where each
OS keeps it (/proc/cpuinfo and lscpu on Linux, sysctl on macOS, the registry on Windows, CPUID last), where
/proc/cpuinfo's "model name" alone called every Apple Silicon or Linux/aarch64 machine "arm" or "aarch64".
A brand that names no model ("Intel(R) Xeon(R) Processor", "AMD EPYC": what many virtual machines show)
covers CPUs of many generations, so the name adds the family and model (or, on ARM, the
implementer and part): such machines no longer share one baseline.
"""

from __future__ import annotations

import functools
import os
import platform
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_DIGIT = re.compile(r"\d")


@dataclass(frozen=True)
class HostMachine:
    brand: str  # the CPU's brand string: "Intel(R) Xeon(R) Platinum 8480+", "Apple M2 Pro", "" when unknown
    # "family 6 model 143" (x86: one microarchitecture, whose steppings share a baseline),
    # "implementer 0x41 part 0xd0c" (ARM), or ""
    model_id: str
    arch: str  # "x86_64", "aarch64", "arm64"
    logical_cores: int
    l2_cache_bytes: int  # 0 when unknown
    l3_cache_bytes: int
    os_release: str  # "Linux 6.8.0", "Darwin 23.4.0"

    @property
    def name(self) -> str:
        """What keys the host baseline (device_name): the brand, with the model id where the brand names
        no model, the architecture and model id where there is no brand."""
        if not self.brand:
            return f"{self.arch} CPU ({self.model_id})" if self.model_id else f"{self.arch or 'unknown'} CPU"
        if _DIGIT.search(self.brand) or not self.model_id:
            return self.brand
        return f"{self.brand} ({self.model_id})"

    @property
    def caches(self) -> str:
        """ "L2 2 MiB, L3 32 MiB" (what is known)."""
        parts = [f"{lvl} {_size(n)}" for lvl, n in (("L2", self.l2_cache_bytes), ("L3", self.l3_cache_bytes)) if n]
        return ", ".join(parts)


def _size(n: int) -> str:
    return f"{n // 2**20} MiB" if n % 2**20 == 0 else f"{n // 2**10} KiB"


@functools.lru_cache(maxsize=1)
def host_machine() -> HostMachine:
    """This host, read once per process (py-cpuinfo takes ~0.1 s; every case of a run is on one host)."""
    return machine_from(_cpu_info(), _proc_cpuinfo())


def machine_from(info: dict[str, Any], proc: dict[str, str]) -> HostMachine:
    """The machine described by py-cpuinfo's dict and /proc/cpuinfo's first processor block (pure)."""
    brand = str(info.get("brand_raw") or "").strip()
    if brand.lower() in ("", "arm", "aarch64", "x86_64", "unknown"):
        brand = ""
    return HostMachine(
        brand=brand,
        model_id=_model_id(info, proc),
        arch=str(info.get("arch_string_raw") or platform.machine() or ""),
        logical_cores=_int(info.get("count")) or (os.cpu_count() or 0),
        l2_cache_bytes=_int(info.get("l2_cache_size")),
        l3_cache_bytes=_int(info.get("l3_cache_size")),
        os_release=f"{platform.system()} {platform.release()}".strip(),
    )


def _model_id(info: dict[str, Any], proc: dict[str, str]) -> str:
    if "family" in info and "model" in info:
        return f"family {info['family']} model {info['model']}"
    implementer, part = proc.get("CPU implementer", ""), proc.get("CPU part", "")
    return f"implementer {implementer} part {part}" if implementer and part else ""


def _int(value: Any) -> int:
    """py-cpuinfo's counts and sizes: ints, or strings such as "2048 KiB" from older sources."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(value, 0)
    m = re.fullmatch(r"\s*(\d+)\s*(KiB|KB|K|MiB|MB|M)?\s*", str(value or ""))
    if not m:
        return 0
    unit = (m.group(2) or "").upper()[:1]
    return int(m.group(1)) * {"": 1, "K": 2**10, "M": 2**20}[unit]


def _cpu_info() -> dict[str, Any]:
    try:
        import cpuinfo  # type: ignore[import-untyped]
    except ImportError:  # a broken install: the name still comes from /proc/cpuinfo or platform
        return _fallback_info()
    try:
        info: dict[str, Any] = cpuinfo.get_cpu_info()
    except Exception:  # noqa: BLE001  (py-cpuinfo probes many OS tools; identity must never fail a run)
        return _fallback_info()
    return info


def _fallback_info() -> dict[str, Any]:
    proc = _proc_cpuinfo()
    return {"brand_raw": proc.get("model name") or platform.processor(), "count": os.cpu_count() or 0}


def _proc_cpuinfo() -> dict[str, str]:
    """/proc/cpuinfo's first processor block as a dict (empty where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    fields: dict[str, str] = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    return fields
