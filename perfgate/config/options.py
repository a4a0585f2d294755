"""Every perfgate option, declared once: the one option table and what is made from it.

One row per setting (an `Option`, option.py): the Settings (or MeasureOptions) attribute it fills, how a value
is checked, its help, and where a user may set it: the `[tool.perfgate]` key, the pytest flag, the `perfgate`
command-line flag, the `@pytest.mark.perfgate(...)` marker. The rows are declared by group, each group in its
own module (run_options.py, output_options.py, decision_options.py, timing_options.py, ab_options.py,
profile_options.py), and OPTIONS joins them in the README's order. `pytest_addoption`, the settings loader,
the commands' argparse parsers and the README's options table are all made from this table
(tests/test_options.py checks the README, and that no option is declared twice), so a new option is one row
in its group and one field in Settings.

Precedence for a value: default < `[tool.perfgate]` < environment (PERFGATE_DB) < command line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from perfgate.config.ab_options import AB
from perfgate.config.decision_options import DECISION
from perfgate.config.option import Arg, Option
from perfgate.config.output_options import OUTPUTS
from perfgate.config.profile_options import PROFILES
from perfgate.config.run_options import RUN
from perfgate.config.timing_options import TIMING
from perfgate.errors import ConfigError
from perfgate.store.target import HistoryTarget, history_target

__all__ = ["OPTIONS", "Arg", "Option"]  # the record and the table, for every reader of options


OPTIONS: tuple[Option, ...] = (*RUN, *OUTPUTS, *DECISION, *TIMING, *AB, *PROFILES)  # in the README's order
TABLE_KEYS = ("metrics", "overrides")  # [tool.perfgate] sub-tables, read by settings.py
MARKER_TABLE_KEYS = ("metrics",)


def command_line_only_flags() -> dict[str, str]:
    """Settings attribute -> flag, for the options only pytest's own command line may give."""
    return {o.attr: o.flag for o in OPTIONS if o.command_line_only and o.flag}


def path_flags() -> tuple[str, ...]:
    """Every pytest flag that takes a path (a value pytest may mistake for a test path: pytest_plugin/rootdir.py)."""
    return tuple(o.flag for o in OPTIONS if o.flag and o.arg in (Arg.PATH, Arg.HISTORY))


def by_attr() -> dict[str, Option]:
    return {o.attr: o for o in OPTIONS}


def pyproject_keys() -> set[str]:
    return {o.key for o in OPTIONS if o.key} | set(TABLE_KEYS)


def marker_keys() -> set[str]:
    return {o.attr for o in OPTIONS if o.marker} | set(MARKER_TABLE_KEYS)


def help_as(opt: Option, spelling: str) -> str:
    """An option's help where options are spelt as `spelling` ("flag": pytest, "cli": a perfgate command, "key":
    pyproject): `{json_samples}` in a help names that option as this interface spells it, so a command's --help
    never names a pytest-only flag."""

    def spelt(m: re.Match[str]) -> str:
        other = by_attr()[m.group(1)]
        return str(getattr(other, spelling) or other.where)

    return re.sub(r"\{([a-z_]+)\}", spelt, opt.help)


def history_arg(text: str) -> HistoryTarget:
    """argparse's type for a history: its error names the problem, never the password of a URL."""
    import argparse

    try:
        return history_target(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def argparse_kwargs(opt: Option, spelling: str = "flag") -> dict[str, Any]:
    """What argparse (and pytest's parser, which mirrors it) needs for this option's flag. Every default is
    None: "not given" must not override the configured value."""
    kwargs: dict[str, Any] = {"help": help_as(opt, spelling), "default": None}
    if opt.arg is Arg.FLAG:
        kwargs["action"] = "store_true"
    elif opt.arg is Arg.NO_FLAG:
        kwargs["action"] = "store_false"
    else:
        kwargs["type"] = {Arg.PATH: Path, Arg.HISTORY: history_arg, Arg.INT: int, Arg.NUMBER: float, Arg.TEXT: str}[
            opt.arg
        ]
        if opt.metavar:
            kwargs["metavar"] = opt.metavar
    return kwargs


def add_pytest_options(addoption: Callable[..., Any]) -> None:
    """pytest_addoption: every option that has a pytest flag."""
    for opt in OPTIONS:
        if opt.flag:
            addoption(opt.flag, **argparse_kwargs(opt))


def pytest_values(getoption: Callable[[str], Any]) -> dict[str, Any]:
    """The pytest flags the user gave, by Settings attribute."""
    values = {o.attr: getoption(o.flag) for o in OPTIONS if o.flag}
    return {k: value for k, value in values.items() if value is not None}


def add_cli_options(parser: Any, attrs: Iterable[str]) -> None:
    """A command's flags for the named settings (a misspelt attribute is a KeyError when the parser is built:
    every CLI test fails on it)."""
    table = by_attr()
    for attr in attrs:
        opt = table[attr]
        if opt.cli is None:
            raise KeyError(f"option {attr!r} has no command-line flag")
        parser.add_argument(opt.cli, dest=attr, **argparse_kwargs(opt, "cli"))


def cli_values(args: Any, attrs: Iterable[str]) -> dict[str, Any]:
    """The command-line flags the user gave, by Settings attribute."""
    values = {attr: getattr(args, attr) for attr in attrs}
    return {k: value for k, value in values.items() if value is not None}


def check_overrides(values: Mapping[str, Any]) -> dict[str, Any]:
    """Command-line values checked by their option's parser; an attribute the table does not know is an error."""
    table = by_attr()
    out = {}
    for attr, value in values.items():
        opt = table.get(attr)
        if opt is None or opt.measure:
            raise ConfigError(f"perfgate: unknown setting {attr!r}")
        out[attr] = opt.parse(value, opt.where)
    return out
