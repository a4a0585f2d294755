"""The environment fingerprint and run metadata (git, host); cheap, and never fails a run."""

from __future__ import annotations

import getpass
import os
import platform
import socket
import subprocess
import sys
import uuid
from importlib import metadata
from typing import Any

from perfgate.measure.machine import host_machine
from perfgate.model import Environment


def package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return ""


def host_cpu_name() -> str:
    """The host CPU's name, which keys host baselines (measure/machine.py)."""
    return host_machine().name


def _host_fields() -> dict[str, str]:
    m = host_machine()
    return dict(
        cpu_brand=m.brand,
        cpu_model=m.model_id,
        cpu_cores=str(m.logical_cores) if m.logical_cores else "",
        cpu_caches=m.caches,
        os_release=m.os_release,
    )


def current_environment(use_cuda: bool) -> Environment:
    common: dict[str, str] = dict(
        torch_version=package_version("torch"),
        triton_version=package_version("triton"),
        python_version=platform.python_version(),
        perfgate_version=package_version("perfgate"),
        hostname=socket.gethostname(),
        platform=f"{platform.system()}-{platform.machine()}",
        **_host_fields(),
    )
    if not use_cuda:
        return Environment(device_kind="host", device_name=host_cpu_name(), **common)
    import torch

    idx = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(idx)
    return Environment(
        device_kind="cuda",
        device_name=props.name,
        device_uuid=_uuid(props),
        compute_capability=f"{props.major}.{props.minor}",
        driver_version=_driver_version(),
        cuda_version=str(torch.version.cuda or ""),
        **common,
    )


def _uuid(props: Any) -> str:
    """NVML's form, "GPU-<uuid>", from torch's device properties (str() of torch's _CUuuid is the bare
    UUID on torch 2.x; its repr is an object address, never the same twice)."""
    raw = getattr(props, "uuid", None)
    text = str(raw or "").strip().removeprefix("GPU-")
    try:
        return "GPU-" + str(uuid.UUID(text))
    except ValueError:
        return ""


def _driver_version() -> str:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else ""


def utc_now() -> str:
    """Now, as stored with a run: ISO 8601, UTC, whole seconds."""
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def command_line() -> str:
    return " ".join(sys.argv)


def who() -> str:
    """Who changed a baseline: the GitHub actor in CI, else the login name."""
    for var in ("GITHUB_ACTOR", "USER", "USERNAME"):
        if os.environ.get(var):
            return os.environ[var]
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"
