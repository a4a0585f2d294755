"""The options of the profilers and of the charts made from their metrics: rows of the one option table
(options.py).
"""

from __future__ import annotations

from perfgate.config import validate as v
from perfgate.config.option import Option
from perfgate.errors import ConfigError


def parse_profile_list(value: object, where: str) -> frozenset[str]:
    """ "nsys", "ncu", "nsys,ncu" or any registered profiler's name (or an already parsed set) -> the profilers
    to run (measure/profiler_registry.py knows which exist)."""
    if isinstance(value, frozenset):
        return value
    from perfgate.measure.profiler_registry import profilers_named

    tools = frozenset(t.strip() for t in v.text(value, where).split(",") if t.strip())
    if not tools:
        raise ConfigError(f"perfgate: {where}: name at least one profiler")
    try:
        profilers_named(tools)
    except ConfigError as err:
        raise ConfigError(f"{err} ({where})") from err
    return tools


PROFILES: tuple[Option, ...] = (
    # --- profilers ---------------------------------------------------------------------------------------
    Option(
        "profile",
        "also run the cases under profilers, comma-separated: nsys, ncu, nsys,ncu, or a profiler "
        "installed under the perfgate.profilers entry-point group",
        parse_profile_list,
        flag="--perfgate-profile",
        metavar="TOOLS",
    ),
    Option("fail_on_profile_error", "a profiler failure fails the gate", v.boolean, key="fail_on_profile_error"),
    Option("ncu_sections", "Nsight Compute sections to collect", v.text_list, key="ncu_sections"),
    Option(
        "ncu_metrics",
        "extra Nsight Compute metrics to collect (and allow in metric thresholds)",
        v.text_list,
        key="ncu_metrics",
    ),
    Option("ncu_set", "an Nsight Compute section set (e.g. full) instead of ncu_sections", v.text, key="ncu_set"),
    Option(
        "profile_timeout_s", "time limit for one profiler run (s)", v.number(1.0, 86_400.0), key="profile_timeout_s"
    ),
    # --- charts ------------------------------------------------------------------------------------------
    Option(
        "peak_tflops",
        "roofline compute ceiling (TFLOP/s; default: the device's spec sheet)",
        v.POSITIVE,
        key="peak_tflops",
    ),
    Option(
        "peak_gbps", "roofline memory ceiling (GB/s; default: the device's spec sheet)", v.POSITIVE, key="peak_gbps"
    ),
)
