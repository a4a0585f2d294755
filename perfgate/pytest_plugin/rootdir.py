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

import inspect
import itertools
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfgate.config.options import path_flags


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


def _rootdir_for(config: Any, args: list[str]) -> Path | None:
    """pytest's own rootdir rule (`_pytest.config.findpaths.determine_setup`, whose signature differs
    between pytest versions) on the real test paths; None when it cannot be asked."""
    try:
        from _pytest.config.findpaths import determine_setup
    except ImportError:
        return None
    offered = {
        "inifile": config.getoption("inifilename"),
        "args": args,
        "rootdir_cmd_arg": config.getoption("rootdir") or None,
        "invocation_dir": Path(config.invocation_params.dir),
        "config": config,
        "override_ini": config.getoption("override_ini"),
    }
    try:
        wanted = inspect.signature(determine_setup).parameters
        result = determine_setup(**{k: v for k, v in offered.items() if k in wanted})
    except Exception:  # noqa: BLE001 (a pytest without this rule leaves the rootdir as pytest chose it)
        return None
    return Path(result[0]).resolve()
