"""Committed baseline files: one JSON file per device model, read and validated here.

A baseline decides what "slower" means, so a malformed one must never be read as "nothing to compare":
every median is a finite positive number, every sample list non-empty and finite, every field of the
right type, or the file is refused with one line naming it and the field. Version 1 files (before
calibration) still read; they are uncalibrated.

A calibrated case's verdict reads only its process medians; its samples serve the change interval shown
beside the verdict and the distribution chart. So a calibrated case with many samples is written as a
summary: `samples_ms` holds SAMPLE_SUMMARY_POINTS quantiles (minimum to maximum, equally spaced
probabilities) and `sample_count` the number of samples they summarise; reading expands them back into
that many samples with the same quantiles (`expand_quantiles`). Files with every sample (today's and
older ones, and uncalibrated cases, whose rank test needs them) read as before; a reader that does not
know `sample_count` reads the points as samples.
"""

from __future__ import annotations

import re
from pathlib import Path

from perfgate.baseline.read import load_baseline, parse_baseline
from perfgate.baseline.records import (
    FORMAT,
    MAX_MCYCLES,
    MAX_SAMPLE_COUNT,
    MAX_UPDATES_KEPT,
    MIN_CALIBRATION_PROCESSES,
    READABLE_VERSIONS,
    SAMPLE_SUMMARY_POINTS,
    VERSION,
    Baseline,
    BaselineCase,
    Update,
    expand_quantiles,
    summary_points,
)
from perfgate.errors import BaselineError
from perfgate.model import Environment

__all__ = [
    "FORMAT",
    "MAX_MCYCLES",
    "MAX_SAMPLE_COUNT",
    "MAX_UPDATES_KEPT",
    "MIN_CALIBRATION_PROCESSES",
    "READABLE_VERSIONS",
    "SAMPLE_SUMMARY_POINTS",
    "VERSION",
    "Baseline",
    "BaselineCase",
    "BaselineError",
    "Update",
    "baseline_path",
    "expand_quantiles",
    "load_baseline",
    "parse_baseline",
    "slug",
    "summary_points",
]


def slug(device_name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", device_name.lower()).strip("-") or "unknown-device"


def baseline_path(baseline_dir: Path, env: Environment) -> Path:
    """baselines/nvidia-h100-80gb-hbm3.json; host-timed runs get a host- prefix. A host whose name now adds
    its CPU's model id to a brand that names none keeps the baseline perfgate <= 0.2.0 wrote under the bare
    brand (host-amd-epyc.json), where there is one and none under today's name."""
    prefix = "" if env.device_kind == "cuda" else "host-"
    path = Path(baseline_dir) / f"{prefix}{slug(env.device_name)}.json"
    if env.device_kind == "host" and env.cpu_brand and env.cpu_brand != env.device_name and not path.exists():
        legacy = Path(baseline_dir) / f"{prefix}{slug(env.cpu_brand)}.json"
        if legacy.is_file():
            return legacy
    return path
