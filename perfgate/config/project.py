"""The project root and its `pyproject.toml`, found the way pytest finds its rootdir.

The plugin gets the root from pytest; the command line finds the same directory from the current one,
so `perfgate compare` in a subdirectory reads the same `[tool.perfgate]` and the same relative paths
as `pytest --perfgate` at the root.
"""

from __future__ import annotations

import configparser
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perfgate.config.settings import Settings, settings_from_config
from perfgate.errors import ConfigError
from perfgate.inputs import read_bytes

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


def _pytest_config_in(directory: Path) -> bool:
    """pytest's first pass: a file in this directory that holds pytest configuration."""
    for name in ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini"):
        if (directory / name).is_file():
            return True
    pyproject = directory / "pyproject.toml"
    if pyproject.is_file() and _toml_has(pyproject, ("tool", "pytest", "ini_options")):
        return True
    for name, section in (("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        if (directory / name).is_file() and _ini_has(directory / name, section):
            return True
    return False


def _toml_has(path: Path, keys: tuple[str, ...]) -> bool:
    try:
        node: Any = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


def _ini_has(path: Path, section: str) -> bool:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except (OSError, UnicodeDecodeError, configparser.Error):
        return False
    return parser.has_section(section)


def find_root(start: Path) -> Path:
    """pytest's rootdir rules for no arguments: the nearest ancestor with pytest configuration, else with a
    pyproject.toml (pytest's last resort), else with a setup.py, else `start` itself. The command line's
    rule, without importing pytest; the plugin asks pytest itself (tests/test_settings.py checks they agree)."""
    start = start.resolve()
    ancestors = [start, *start.parents]
    for test in (_pytest_config_in, lambda d: (d / "pyproject.toml").is_file(), lambda d: (d / "setup.py").is_file()):
        for directory in ancestors:
            if test(directory):
                return directory
    return start


def read_pyproject(rootdir: Path) -> tuple[dict[str, Any], Path]:
    """The `[tool.perfgate]` table of rootdir/pyproject.toml ({} when there is none) and the file's path."""
    path = rootdir / "pyproject.toml"
    if not path.exists() and not path.is_symlink():
        return {}, path
    try:
        data = tomllib.loads(read_bytes(path, _config_error, max_bytes=16 * 1024 * 1024).decode("utf-8"))
    except UnicodeDecodeError as err:
        raise ConfigError(f"perfgate: cannot read {path}: not UTF-8 text") from err
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"perfgate: {path}: not valid TOML ({err})") from err
    tool = data.get("tool", {})
    table = tool.get("perfgate", {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict):
        raise ConfigError(f"perfgate: {path}: [tool.perfgate] must be a table")
    return table, path


def _config_error(path: Path, problem: str) -> ConfigError:
    return ConfigError(f"perfgate: cannot read {path}: {problem}")


def project_settings(rootdir: Path | None = None, overrides: Mapping[str, Any] | None = None) -> Settings:
    """Settings as the plugin would resolve them for this project: its root (found like pytest's), its
    `[tool.perfgate]`, then the command-line values given by Settings attribute (paths as typed, relative
    to the current directory)."""
    from dataclasses import replace

    root = (rootdir or find_root(Path.cwd())).resolve()
    table, pyproject = read_pyproject(root)
    here = Path.cwd()
    resolved = {
        k: (here / value if isinstance(value, Path) and not value.is_absolute() else value)
        for k, value in (overrides or {}).items()
    }
    settings = settings_from_config(table, where=f"{pyproject} [tool.perfgate]", rootdir=root, overrides=resolved)
    return replace(settings, pyproject=pyproject if pyproject.is_file() else None)
