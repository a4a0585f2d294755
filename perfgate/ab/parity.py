"""What strict A/B holds a pull request to beyond its measurements: the same as strict baseline mode.

The head is the pull request's code, and so are its configuration files, so nothing the head's tree says
may excuse it:
- which base cases may go unmeasured (`allow_missing`) is read from the BASE tree's [tool.perfgate];
- the head's project root and [tool.perfgate] (A/B's own knobs too: `min_effect_pct = 50` would let a 1.45x
  slowdown pass) are compared with the base commit's by baseline/base_ref.py, as in baseline mode, and the
  baseline files with the base tree's (A/B gates with none, but baseline mode gates main with them);
- pytest options that decide which tests run (addopts' -k/-m/--deselect/--ignore/-p/paths, testpaths,
  python_files, ...) are compared between the two trees.
A difference is a finding that fails strict mode unless the pull request states it is intended
(--perfgate-accept-baseline-change, which the workflow passes for a labelled pull request).
"""

from __future__ import annotations

import configparser
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from perfgate.baseline.base_ref import BaseCheck, check_against_base
from perfgate.config.settings import Settings
from perfgate.errors import ConfigError
from perfgate.model import AllowedMissing, Environment, Finding, FindingKind

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

# pytest's ini keys that decide which tests are collected
SELECTION_KEYS = ("testpaths", "python_files", "python_classes", "python_functions", "norecursedirs", "addopts")
# options (in addopts) that select or deselect tests, stop early or change what is collected; with a value
SELECTING = frozenset(
    {"-k", "-m", "--deselect", "--ignore", "--ignore-glob", "-p", "-c", "--rootdir", "--confcutdir", "-o"}
    | {"--override-ini", "--maxfail", "--config-file", "--inifile"}
)
SELECTING_FLAGS = frozenset({"--pyargs", "-x", "--exitfirst", "--lf", "--last-failed", "--sw", "--stepwise"})
# other options that take a value written apart from them (their value is not a test path)
VALUE_OPTIONS = frozenset(
    {"--tb", "--color", "-W", "--pythonwarnings", "--junitxml", "--junit-xml", "--log-level", "--log-cli-level"}
    | {"--log-file", "--basetemp", "--durations", "--capture", "--import-mode", "--show-capture", "-r", "-n"}
    | {"--dist", "--timeout", "--cov", "--cov-report", "--log-format", "--junit-prefix", "--durations-min"}
)


def base_allow_missing(base_root: Path, where: str) -> tuple[tuple[AllowedMissing, ...], str]:
    """The base tree's own `allow_missing` (and why it could not be read, "" when it could)."""
    from perfgate.config.project import read_pyproject
    from perfgate.config.settings import settings_from_config

    try:
        table, _ = read_pyproject(base_root)
        settings = settings_from_config(table, where=f"{where}:pyproject.toml [tool.perfgate]", rootdir=base_root)
    except ConfigError as err:
        return (), f"the base's [tool.perfgate] does not read ({err}): no base case may go unmeasured"
    return tuple(settings.allow_missing), ""


def base_check(base_commit: str, settings: Settings, env: Environment) -> BaseCheck:
    """The head's project root and [tool.perfgate] against the base commit's (baseline/base_ref.py, which
    the plugin asks with pytest's own root rule; `perfgate ab` has no pytest configuration to ask)."""
    return check_against_base(base_commit, settings, env, None)


def baseline_findings(head_dir: Path, base_dir: Path, ref: str, stated: bool) -> Iterator[Finding]:
    """One finding when the baseline files differ between the trees: A/B mode gates with none of them, but
    what a pull request changes there is what baseline mode gates main with once it is merged."""
    names = {p.name for d in (head_dir, base_dir) if d.is_dir() for p in d.glob("*.json")}
    changed = sorted(n for n in names if _bytes(head_dir / n) != _bytes(base_dir / n))
    if not changed:
        return
    what = f"baseline file(s) {', '.join(changed)} in {head_dir.name}/ differ from {ref}'s"
    if stated:
        yield Finding(FindingKind.BASELINE_CHANGE_STATED, f"{what}: stated as intended")
    else:
        yield Finding(
            FindingKind.BASELINE_CHANGED,
            f"{what}: a pull request that changes what it is gated with must say so "
            "(--perfgate-accept-baseline-change, which the workflow passes for a labelled pull request)",
        )


def _bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes() if path.is_file() else None
    except OSError:
        return b"<unreadable>"


def selection_findings(head_start: Path, base_start: Path, ref: str, stated: bool) -> Iterator[Finding]:
    """One finding when pytest's selection options differ between the trees (found from where each
    side's pytest starts, the way pytest finds its configuration)."""
    head, base = selection_options(head_start), selection_options(base_start)
    changed = sorted(k for k in {*head, *base} if head.get(k) != base.get(k))
    if not changed:
        return
    what = "; ".join(f"{k}: {_shown(base.get(k))} in {ref}, {_shown(head.get(k))} in the head" for k in changed)
    if stated:
        yield Finding(
            FindingKind.BASELINE_CHANGE_STATED, f"pytest's test selection changed ({what}): stated as intended"
        )
    else:
        yield Finding(
            FindingKind.SELECTION_CHANGED,
            f"pytest's test selection differs from {ref}'s ({what}): a pull request that changes which tests "
            "run must say so (--perfgate-accept-baseline-change, which the workflow passes for a labelled "
            "pull request)",
        )


def selection_options(start: Path) -> dict[str, tuple[str, ...]]:
    """The selection keys of the pytest configuration pytest would read from `start` (addopts reduced to
    what selects: a configuration that only changes output or warnings is not a change of selection)."""
    from perfgate.config.project import find_root

    root = find_root(start)
    for name, read in _READERS:
        table = read(root / name)
        if table is not None:
            out = {k: _values(table[k]) for k in SELECTION_KEYS if k in table}
            if "addopts" in out:
                out["addopts"] = selecting_args(out["addopts"])
            out["(file)"] = (name,)
            return {k: v for k, v in out.items() if v}
    return {}


def selecting_args(args: tuple[str, ...]) -> tuple[str, ...]:
    """The arguments that select tests: selection options with their values, and test paths."""
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        name = arg.split("=", 1)[0]
        takes_value = "=" not in arg and i + 1 < len(args)
        if name in SELECTING:
            out += [arg, args[i + 1]] if takes_value else [arg]
            i += 2 if takes_value else 1
        elif name in SELECTING_FLAGS or (arg[:2] in ("-k", "-m", "-p") and len(arg) > 2 and arg[1] != "-"):
            out.append(arg)
            i += 1
        elif name in VALUE_OPTIONS:
            i += 2 if takes_value else 1
        else:
            if not arg.startswith("-"):
                out.append(arg)  # a test path
            i += 1
    return tuple(out)


def _values(value: Any) -> tuple[str, ...]:
    if isinstance(value, list):
        return tuple(str(v) for v in value)
    text = str(value)
    try:
        return tuple(shlex.split(text))
    except ValueError:
        return tuple(text.split())


def _shown(value: tuple[str, ...] | None) -> str:
    return "none" if not value else repr(" ".join(value))


def _ini(section: str) -> Any:
    def read(path: Path) -> dict[str, str] | None:
        if not path.is_file():
            return None
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(path, encoding="utf-8")
        except (OSError, UnicodeDecodeError, configparser.Error):
            return {"(unreadable)": path.name}
        return dict(parser[section]) if parser.has_section(section) else None

    return read


def _toml(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data: Any = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {"(unreadable)": path.name}
    node: Any = data
    for key in ("tool", "pytest", "ini_options"):
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


# pytest's order: the first file that holds pytest configuration is the one it reads
_READERS = (
    ("pytest.ini", _ini("pytest")),
    (".pytest.ini", _ini("pytest")),
    ("pyproject.toml", _toml),
    ("tox.ini", _ini("pytest")),
    ("setup.cfg", _ini("tool:pytest")),
)
