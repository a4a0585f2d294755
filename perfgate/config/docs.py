"""The README's tables of options and `[tool.perfgate]` keys, made from the one option table (tests/test_options.py
keeps README.md equal to them)."""

from __future__ import annotations

import enum
from dataclasses import fields
from typing import Any

from perfgate.config.options import OPTIONS, Arg, Option, help_as
from perfgate.config.settings import MeasureOptions, Settings


def render_flags_markdown() -> str:
    """Every pytest flag with its help."""
    rows = ["| option | meaning |", "|---|---|"]
    for opt in OPTIONS:
        if opt.flag:
            value = f" {opt.metavar}" if opt.metavar and opt.arg not in (Arg.FLAG, Arg.NO_FLAG) else ""
            also = f" (`{opt.key}` in pyproject)" if opt.key else ""
            rows.append(f"| `{opt.flag}{value}` | {help_as(opt, 'flag')}{also} |")
    return "\n".join(rows) + "\n"


def render_keys_markdown() -> str:
    """Every `[tool.perfgate]` key with its default and help."""
    rows = ["| key | default | meaning |", "|---|---|---|"]
    for opt in OPTIONS:
        if opt.key:
            rows.append(f"| `{opt.key}` | {_default(opt)} | {help_as(opt, 'key')} |")
    rows.append("| `[tool.perfgate.metrics]` | catalogue | per-metric thresholds, % in the worse direction |")
    rows.append(
        "| `[[tool.perfgate.overrides]]` | - | `pattern` (shell pattern on case ids) with `threshold_pct`, "
        "`metrics`, `min_speedup`, `gated_measure`; later entries win |"
    )
    return "\n".join(rows) + "\n"


def _default(opt: Option) -> str:
    owner: Any = MeasureOptions if opt.measure else Settings
    value = {f.name: f.default for f in fields(owner)}[opt.attr]
    if value is None or value in ((), ""):
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return f'`"{value.value}"`'
    return f"`{value}`"
