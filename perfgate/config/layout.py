"""Where a tree's own files place a pytest run's root: the working tree's, or a commit's (a pull request's base).

The project root decides everything a gate reads: `[tool.perfgate]` (its pyproject.toml), the baseline
directory and the case ids. pytest picks it from configuration files (pytest.toml, pytest.ini, pyproject.toml,
tox.ini, setup.cfg, setup.py) near the test paths, so a pull request that adds `tests/perf/pytest.ini` and a
`tests/perf/baselines/<device>.json` moves the root and brings its own baseline. To ask what the base commit's
files would have made of the same invocation, the configuration files along the invocation's paths are
copied out of the tree into an empty directory of the same shape, and pytest's own rule answers there (the
plugin passes it in: pytest_plugin/rootdir.py): one rule, asked the same way of both trees, whatever pytest
version is installed. Directories above the repository are outside both trees and are not consulted.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

# every file pytest's rule reads to place the root (pytest 9: the TOML files first), and setup.py
CONFIG_NAMES = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
ROOT_MARKERS = (*CONFIG_NAMES, "setup.py")
MAX_CONFIG_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Invocation:
    """How a pytest run was asked to find its root."""

    invocation_dir: Path  # where it ran (absolute)
    args: tuple[str, ...] = ()  # the test paths as given (relative to invocation_dir, or absolute)
    rootdir_arg: str | None = None  # --rootdir
    inifile: str | None = None  # -c / --config-file


@dataclass(frozen=True)
class Placed:
    """A root as a tree's files place it, relative to the repository ("" is its top; None: outside it)."""

    root: str | None
    inifile: str | None  # the configuration file that placed it (None: none did)
    confcutdir: str | None  # its `confcutdir`, as written

    def describe(self) -> str:
        where = "outside the repository" if self.root is None else (self.root or ".")
        return f"{where} ({self.inifile or 'no pytest configuration file'})"


@dataclass(frozen=True)
class Found:
    """What pytest's rule answers: the root, the configuration file that placed it, its `confcutdir`."""

    rootdir: Path
    inifile: Path | None = None
    confcutdir: str | None = None


class RootRule(Protocol):
    """pytest's own rootdir rule (the plugin's pytest_plugin/rootdir.py asks pytest: the library imports no
    pytest): test paths (absolute), `--rootdir`, `-c`. ConfigError when pytest refuses them."""

    def __call__(
        self, invocation_dir: Path, args: Sequence[str], rootdir_arg: str | None, inifile: str | None
    ) -> Found: ...


class Tree(Protocol):
    """Read access to one version of the repository, by paths relative to its top."""

    def kind(self, rel: str) -> str | None:
        """'file', 'dir', or None when the tree has no such path."""

    def read(self, rel: str) -> bytes | None:
        """A file's bytes (None: none there)."""


class WorkingTree:
    """The checkout as it is on disk."""

    def __init__(self, top: Path) -> None:
        self.top = top

    def kind(self, rel: str) -> str | None:
        path = self.top / rel
        return "dir" if path.is_dir() else "file" if path.is_file() else None

    def read(self, rel: str) -> bytes | None:
        path = self.top / rel
        if not path.is_file() or path.stat().st_size > MAX_CONFIG_BYTES:
            return None
        return path.read_bytes()


def place_root(tree: Tree, top: Path, invocation: Invocation, rule: RootRule) -> Placed:
    """Where `tree`'s files place the root of `invocation`, by `rule`. ConfigError when pytest refuses the
    arguments."""
    paths = _Paths(top, invocation)
    skeleton = Path(tempfile.mkdtemp(prefix="perfgate-layout-")).resolve()
    try:
        _build(tree, paths, skeleton)
        found = rule(
            skeleton / paths.invocation_dir,
            [paths.outside.get(a) or str(skeleton / paths.rel[a]) for a in paths.args],
            str(skeleton / paths.rel[invocation.rootdir_arg]) if invocation.rootdir_arg else None,
            str(skeleton / paths.rel[invocation.inifile]) if invocation.inifile else None,
        )
        return Placed(_back(found.rootdir, skeleton), _back(found.inifile, skeleton), found.confcutdir)
    finally:
        shutil.rmtree(skeleton, ignore_errors=True)


class _Paths:
    """The invocation's paths relative to the repository's top (outside ones kept absolute)."""

    def __init__(self, top: Path, inv: Invocation) -> None:
        self.invocation_dir = _relative(inv.invocation_dir.resolve(), top) or ""
        self.inifile = inv.inifile
        self.args = [a.split("::", 1)[0] for a in inv.args]
        self.rel: dict[str, str] = {}
        self.outside: dict[str, str] = {}
        for given in (*self.args, inv.rootdir_arg, inv.inifile):
            if not given:
                continue
            expanded = os.path.expandvars(given) if given == inv.rootdir_arg else given  # as pytest does
            absolute = Path(os.path.normpath(inv.invocation_dir / expanded))
            rel = _relative(absolute, top)
            if rel is None:
                self.outside[given] = str(absolute)
            else:
                self.rel[given] = rel

    def dirs(self) -> set[str]:
        """Every directory whose configuration files pytest's rule may read: the paths and their ancestors."""
        out: set[str] = set()
        for rel in (self.invocation_dir, *self.rel.values()):
            parts = Path(rel).parts
            out.update(Path(*parts[:n]).as_posix() if n else "" for n in range(len(parts) + 1))
        return out


def _build(tree: Tree, paths: _Paths, skeleton: Path) -> None:
    for rel in sorted(paths.dirs()):
        if tree.kind(rel) != "dir":
            continue
        (skeleton / rel).mkdir(parents=True, exist_ok=True)
        for name in ROOT_MARKERS:
            text = tree.read(f"{rel}/{name}" if rel else name)
            if text is not None:
                (skeleton / rel / name).write_bytes(text)
    for given, rel in paths.rel.items():  # the paths themselves: a test file's existence counts, -c's text
        target = skeleton / rel
        kind = tree.kind(rel)
        if kind == "dir":
            target.mkdir(parents=True, exist_ok=True)
        elif kind == "file" and not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes((tree.read(rel) or b"") if given == paths.inifile else b"")
    (skeleton / paths.invocation_dir).mkdir(parents=True, exist_ok=True)


def _relative(path: Path, top: Path) -> str | None:
    try:
        rel = path.relative_to(top).as_posix()
    except ValueError:
        return None
    return "" if rel == "." else rel


def _back(path: Path | None, skeleton: Path) -> str | None:
    return None if path is None else _relative(path, skeleton)
