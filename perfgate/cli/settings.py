"""The Settings a command runs with: the project's `[tool.perfgate]` under the flags the command was given
(each command declares which settings it takes, from the one option table)."""

from __future__ import annotations

import argparse
from typing import Any

from perfgate.config.options import cli_values
from perfgate.config.project import project_settings
from perfgate.config.settings import Settings


def command_settings(args: argparse.Namespace, **fixed: Any) -> Settings:
    """`fixed`: values the command itself sets (by Settings attribute), e.g. enabled=True."""
    given = cli_values(args, getattr(args, "settings_attrs", ()))
    return project_settings(args.rootdir, {**given, **fixed})
