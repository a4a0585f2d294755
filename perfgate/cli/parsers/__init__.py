"""The `perfgate` command line's parsers, one module per command group (gate, ab, data, ci), beside the
handlers they name; this module holds what every group builds its commands with.

Building a parser imports no handler: each command's handler is named by module and function and imported
only when it runs (`lazy`), so `perfgate --help` and `perfgate --version` stay instant.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

Handler = Callable[[argparse.Namespace], int]


def examples_text(*lines: str) -> str:
    """A --help epilog listing example command lines."""
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def command(
    sub: Any, name: str, help_text: str, examples: tuple[str, ...], description: str | None = None
) -> argparse.ArgumentParser:
    """A subcommand whose --help ends with its examples."""
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=help_text,
        description=description or help_text,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=examples_text(*examples),
    )
    parser.set_defaults(command_parser=parser)  # its own usage for its errors (cli._parse)
    return parser


def settings_options(p: argparse.ArgumentParser, *attrs: str) -> None:
    """The project root plus the named settings' flags, from the one option table (config/options.py); the
    handler reads them back with cli.settings.command_settings."""
    from perfgate.config.options import add_cli_options

    p.add_argument(
        "--rootdir",
        type=Path,
        help="project root (default: found from the current directory as pytest finds its rootdir)",
    )
    add_cli_options(p, attrs)
    p.set_defaults(settings_attrs=attrs)


def lazy(module: str, name: str) -> Handler:
    """Import a command's module only when it runs: `perfgate --version` stays instant."""

    def run(args: argparse.Namespace) -> int:
        import importlib

        handler: Handler = getattr(importlib.import_module(module), name)
        return handler(args)

    return run
