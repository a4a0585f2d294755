"""Each option is declared once (perfgate/config/options.py): pytest's flags, `[tool.perfgate]`, the markers,
the commands' flags and the README are all made from that table, so none of them can drift from it."""

from __future__ import annotations

import argparse
from dataclasses import fields
from pathlib import Path

import pytest

from perfgate.cli import _parser
from perfgate.config import options as opts
from perfgate.config.docs import render_flags_markdown, render_keys_markdown
from perfgate.config.settings import MeasureOptions, Settings, marker_options, settings_from_config
from perfgate.errors import ConfigError

README = Path(__file__).parents[1] / "README.md"


def _between(text: str, name: str) -> str:
    return text.split(f"<!-- {name}:start -->\n", 1)[1].split(f"<!-- {name}:end -->", 1)[0]


def test_the_readme_tables_are_the_option_table():
    text = README.read_text(encoding="utf-8")
    assert _between(text, "options") == render_flags_markdown(), "regenerate with perfgate.config.docs"
    assert _between(text, "keys") == render_keys_markdown(), "regenerate with perfgate.config.docs"


def test_no_option_is_declared_twice_across_its_groups():
    # the rows live in one module per group (config/*_options.py): a second row for an attribute, key or flag
    # would silently win in by_attr, or leave a key read twice
    for spelling in ("attr", "key", "flag", "cli"):
        names = [getattr(o, spelling) for o in opts.OPTIONS if getattr(o, spelling)]
        assert len(names) == len(set(names)), [n for n in set(names) if names.count(n) > 1]


def test_every_option_names_a_real_settings_field():
    settings_fields = {f.name for f in fields(Settings)}
    measure_fields = {f.name for f in fields(MeasureOptions)}
    for opt in opts.OPTIONS:
        assert opt.attr in (measure_fields if opt.measure else settings_fields), opt.attr
    assert len({o.attr for o in opts.OPTIONS}) == len(opts.OPTIONS)
    assert measure_fields == {o.attr for o in opts.OPTIONS if o.measure}


def test_every_pytest_flag_is_registered_with_its_help(pytester):
    result = pytester.runpytest("--help")
    for opt in opts.OPTIONS:
        if opt.flag:
            result.stdout.fnmatch_lines([f"*{opt.flag}*"])


def test_every_pyproject_key_is_read_and_a_misspelt_one_is_refused():
    s = settings_from_config({"min_samples": 7, "chart_url": "https://x", "confirm_runs": 1})
    assert (s.measure.min_samples, s.chart_url, s.confirm_runs) == (7, "https://x", 1)
    with pytest.raises(ConfigError, match="unknown key.*'min_sample'"):
        settings_from_config({"min_sample": 7})


def test_a_misspelt_override_attribute_is_an_error_not_ignored():
    with pytest.raises(ConfigError, match="unknown setting 'db'"):
        settings_from_config({}, overrides={"db": Path("x.db")})


def test_a_command_naming_an_unknown_setting_cannot_even_build_its_parser():
    with pytest.raises(KeyError):
        opts.add_cli_options(argparse.ArgumentParser(), ["baseline_dirr"])


@pytest.mark.parametrize("value", [10**400, 1e300, float("inf"), -1])
def test_a_threshold_beyond_its_bounds_is_one_line_not_a_gate_that_passes_everything(value):
    with pytest.raises(ConfigError, match="threshold_pct: must be a finite number >= 0 and <= 100"):
        marker_options({"threshold_pct": value}, "t::x")
    with pytest.raises(ConfigError, match="threshold_pct"):
        settings_from_config({"threshold_pct": value})


@pytest.mark.parametrize(
    "key,value",
    [("alpha", 1e-12), ("alpha", 1e-17), ("confirm_alpha", 0.9), ("min_effect_pct", 1e12), ("min_speedup", 1e300)],
)
def test_the_decision_settings_have_sane_bounds(key, value):
    with pytest.raises(ConfigError, match=key):
        settings_from_config({key: value})


def _subcommands(
    parser: argparse.ArgumentParser,
    prefix: str = "perfgate",
) -> list[tuple[str, argparse.ArgumentParser]]:
    out = [(prefix, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out += _subcommands(sub, f"{prefix} {name}")
    return out


def test_every_command_argument_has_help_and_every_command_shows_examples():
    for name, parser in _subcommands(_parser()):
        assert parser.epilog and parser.epilog.startswith("examples:"), name
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)):
                continue
            assert action.help, f"{name}: {action.option_strings or action.dest} has no help"
        assert "perfgate " in parser.format_help().rstrip().splitlines()[-1], name
