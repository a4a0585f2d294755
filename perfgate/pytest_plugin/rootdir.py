"""The project directory perfgate works in, when pytest's rootdir moved because of a perfgate path option.

pytest settles its rootdir before it loads plugins, so it does not yet know `--perfgate-db` takes a value:
in `--perfgate-db /elsewhere/history.db` (a space, not `=`) it reads the value as a test path, and when
that path exists outside the project the rootdir becomes a common ancestor. Every node id then gains a
prefix, every case would be new against the baseline, and baselines would be written one directory up.

A plugin cannot move pytest's rootdir back (pytest has already read its configuration from the wrong
place), so perfgate asks pytest's own rule what the rootdir would have been without those values, works
in that directory (its pyproject, baselines and history), strips the prefix from the node ids it turns
into case ids, and says so in one line naming the option and the `=` form that avoids it.
"""

from __future__ import annotations

import itertools
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfgate.config.layout import Found, Invocation
from perfgate.config.options import path_flags
from perfgate.errors import ConfigError


@dataclass(frozen=True)
class ProjectRoot:
    path: Path  # the directory perfgate treats as the project
    nodeid_prefix: str = ""  # what pytest's node ids carry in front of ids relative to `path`
    warning: str = ""


def project_root(config: Any) -> ProjectRoot:
    """pytest's rootdir, or the one it would have chosen without perfgate's option values (with a warning)."""
    rootpath = Path(config.rootpath).resolve()
    values = spaced_path_values([*shlex.split(os.environ.get("PYTEST_ADDOPTS", "")), *config.invocation_params.args])
    if not values:
        return ProjectRoot(rootpath)
    expected = _rootdir_for(config, [str(a) for a in (config.getoption("file_or_dir") or [])])
    if expected is None or expected == rootpath:
        return ProjectRoot(rootpath)
    try:
        relative = expected.relative_to(rootpath).as_posix()
    except ValueError:
        return ProjectRoot(rootpath)
    option, value = values[0]
    warning = (
        f"perfgate: pytest read `{option} {value}` as a test path and moved its rootdir to {rootpath} "
        f"(the project is {expected}); perfgate keeps case ids, baselines and history relative to "
        f"{expected}. Write `{option}={value}` to leave pytest's rootdir alone."
    )
    return ProjectRoot(expected, relative + "/", warning)


def spaced_path_values(args: Sequence[str]) -> list[tuple[str, str]]:
    """(option, value) for each perfgate path option written with a space whose value names an existing
    path: the ones pytest counted among the test paths when it chose its rootdir."""
    out = []
    for option, value in itertools.pairwise(args):
        if option in path_flags() and not value.startswith("-") and Path(value.split("::")[0]).exists():
            out.append((option, value))
    return out


def pytest_rootdir(
    invocation_dir: Path, args: Sequence[str] = (), rootdir_arg: str | None = None, inifile: str | None = None
) -> Found:
    """pytest's own rootdir rule (`_pytest.config.findpaths.determine_setup`, whose signature differs between
    pytest versions) for test paths `args` (absolute, or relative to `invocation_dir`), `--rootdir` and `-c`.
    The same function answers for the working tree and for a commit's files (config/layout.py), so a pull
    request's root is resolved exactly as its base's. ConfigError when pytest refuses the arguments."""
    import inspect

    from _pytest.config.findpaths import determine_setup

    def absolute(path: str) -> str:  # pytest makes them absolute against the process's directory
        return str(path if Path(path).is_absolute() else invocation_dir / path)

    offered: dict[str, Any] = {
        "inifile": absolute(inifile) if inifile else None,
        "args": [absolute(a) for a in args],
        "rootdir_cmd_arg": absolute(rootdir_arg) if rootdir_arg else None,
        "invocation_dir": invocation_dir,
        "config": None,
        "override_ini": None,
    }
    wanted = inspect.signature(determine_setup).parameters
    try:
        found = determine_setup(**{k: v for k, v in offered.items() if k in wanted})
    except Exception as err:
        raise ConfigError(f"perfgate: pytest cannot place the root of {invocation_dir}: {err}") from err
    confcutdir = found[2].get("confcutdir") if isinstance(found[2], dict) else None
    confcutdir = getattr(confcutdir, "value", confcutdir)  # pytest 9 wraps ini values (ConfigValue)
    return Found(
        Path(found[0]).resolve(),
        Path(found[1]).resolve() if found[1] else None,
        None if confcutdir is None else str(confcutdir),
    )


def _rootdir_for(config: Any, args: list[str]) -> Path | None:
    """pytest's own rootdir rule on the real test paths; None when it cannot be asked."""
    try:
        return pytest_rootdir(**_invocation_values(config, args)).rootdir
    except ConfigError:
        return None


def _invocation_values(config: Any, args: list[str]) -> dict[str, Any]:
    """`--rootdir` and `-c` as the command line and PYTEST_ADDOPTS give them: in a configuration file's
    addopts they come after pytest has placed its root, and a pull request's file must not place the base's."""
    given = [*shlex.split(os.environ.get("PYTEST_ADDOPTS", "")), *map(str, config.invocation_params.args)]
    return {
        "invocation_dir": Path(config.invocation_params.dir),
        "args": args,
        "rootdir_arg": _last_value(given, ("--rootdir",)),
        "inifile": _last_value(given, ("-c", "--config-file", "--inifile")),
    }


def _last_value(args: Sequence[str], names: tuple[str, ...]) -> str | None:
    found = None
    for i, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if name in names and eq:
            found = value
        elif arg in names and i + 1 < len(args):
            found = args[i + 1]
        elif arg.startswith("-c") and "-c" in names and len(arg) > 2 and not arg.startswith("--"):
            found = arg[2:]
    return found


def invocation_of(config: Any) -> Invocation:
    """How this pytest run was asked to find its root: the real test paths (perfgate's own option values left
    out), where it ran, `--rootdir` and `-c`; config/layout.py places a commit's root from it."""
    values = _invocation_values(config, [str(a) for a in (config.getoption("file_or_dir") or [])])
    return Invocation(Path(values["invocation_dir"]), tuple(values["args"]), values["rootdir_arg"], values["inifile"])
