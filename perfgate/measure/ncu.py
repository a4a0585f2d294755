"""Nsight Compute: profile the launches between cudaProfilerStart/Stop of a child command."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from perfgate.errors import ToolFailed
from perfgate.measure.tools import find_tool, run_tool
from perfgate.metrics import CATALOGUE, NCU_DEFAULT_SECTIONS

INSTALL_HINT = "install Nsight Compute (https://developer.nvidia.com/nsight-compute) or put it on PATH"


@dataclass(frozen=True)
class NcuSettings:
    """Recorded with every result: clocks and cache policy change what the counters read."""

    sections: tuple[str, ...] = NCU_DEFAULT_SECTIONS
    metrics: tuple[str, ...] = ()
    named_set: str = ""
    clock_control: str = "none"  # the card's clocks are not ours to lock; also: defaults differ by version
    cache_control: str = "all"  # flush caches before each replay pass

    def describe(self, version: str) -> str:
        what = f"set={self.named_set}" if self.named_set else f"sections={','.join(self.sections)}"
        return (
            f"ncu {version}: clock-control={self.clock_control} cache-control={self.cache_control} "
            f"{what} extra-metrics={','.join(self.metrics) or '-'}"
        )


def ncu_argv(
    ncu: str, output: Path, settings: NcuSettings, command: list[str], extra_metrics: bool = True
) -> list[str]:
    argv = [
        ncu,
        "--profile-from-start",
        "off",
        "--nvtx",
        "--target-processes",
        "all",
        "--clock-control",
        settings.clock_control,
        "--cache-control",
        settings.cache_control,
        "--force-overwrite",
        "--export",
        str(output),
    ]
    if settings.named_set:
        argv += ["--set", settings.named_set]
    else:
        for section in settings.sections:
            argv += ["--section", section]
    # derived__* metrics are computed by section rules and cannot be requested with --metrics
    ncu_metrics = sorted({*settings.metrics, *(m for m in CATALOGUE if "__" in m and not m.startswith("derived__"))})
    if extra_metrics:
        argv += ["--metrics", ",".join(ncu_metrics)]
    return argv + command


def version() -> str:
    out = run_tool([find_tool("ncu", INSTALL_HINT), "--version"], 60)
    lines = [line for line in out.stdout.splitlines() if "Version" in line]
    return lines[-1].split("Version", 1)[1].strip() if lines else out.stdout.strip().splitlines()[-1]


NO_KERNELS = "No kernels were profiled"


def profile(
    command: list[str], output: Path, settings: NcuSettings, timeout_s: float, env: dict[str, str], cwd: Path
) -> Path | None:
    """The .ncu-rep written for the command, or None when ncu ran fine and found no kernel to profile
    (the cases only copied memory)."""
    ncu = find_tool("ncu", INSTALL_HINT)
    output.parent.mkdir(parents=True, exist_ok=True)
    rep = output.with_suffix(".ncu-rep")
    rep.unlink(missing_ok=True)  # a stale report would pass for this run's
    out = run_tool(ncu_argv(ncu, output, settings, command), timeout_s, cwd=cwd, env=env, check=False)
    if not rep.is_file() and "metric" in (out.stderr + out.stdout).lower() and not settings.metrics:
        # an ncu that rejects one of the catalogue's --metrics names: the sections still collect the
        # metrics that matter, so profile again without the explicit list rather than fail
        out = run_tool(
            ncu_argv(ncu, output, settings, command, extra_metrics=False), timeout_s, cwd=cwd, env=env, check=False
        )
    if not rep.is_file():
        if out.returncode == 0 and NO_KERNELS in out.stdout + out.stderr:
            return None
        raise ToolFailed(list(out.argv), out.returncode, out.stderr or out.stdout)
    return rep
