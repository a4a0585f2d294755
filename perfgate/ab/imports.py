"""Each side imports its own tree's code, however the environment installed the project.

A worker runs in its tree (cwd and sys.path[0] there), but the environment may point into the checkout
perfgate was started from (the *origin*: the head's working tree, or the repository bisect runs in):

- a path entry: a `.pth` editable install (setuptools' src-layout `.pth`, hatch, flit, PDM), PYTHONPATH;
- an import hook: setuptools' `__editable___*_finder` in sys.meta_path (what `pip install -e` of a
  pyproject project makes when a plain path would expose more than its packages), hatch's `editables`.

Left alone, the base side found the head's code through either (a 3x slowdown read "unchanged"); taking
the paths away instead left both sides without the project (neither could collect). Both are redirected
here: a path entry inside the origin moves to the same place in the side's tree, and an import hook's answer
inside the origin becomes the same file in the side's tree, or "no module" when the side's tree has no such
file (what a checkout of its own would say). pytest's `pythonpath` needs nothing: each side's pytest reads
its own tree's configuration. What was actually imported is recorded and checked afterwards
(perfgate/ab/provenance.py): what this cannot redirect (a hook installed ahead of this one, a path computed
at run time) is seen, not assumed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from importlib.machinery import BuiltinImporter, FrozenImporter, ModuleSpec, PathFinder
from importlib.util import spec_from_file_location
from typing import Any

# set on a spec an import hook served (read back by provenance.py): which finder, and what it pointed to
SERVED_BY = "_perfgate_served_by"
STANDARD_FINDERS = (BuiltinImporter, FrozenImporter, PathFinder)


class Place(str, Enum):
    """Where a file lies, seen from one side."""

    OWN = "own tree"
    OTHER = "another side's tree"
    ORIGIN = "the checkout perfgate started in"
    OUTSIDE = "outside every tree"


def root(path: str | os.PathLike[str]) -> str:
    """A directory as a real path ending in the separator (so /a/b never contains /a/bc)."""
    return os.path.join(os.path.realpath(path), "")


@dataclass(frozen=True)
class SideTrees:
    """Where one side's code must come from, and the other checkouts it must not."""

    tree: str  # the side's checkout (root())
    origin: str  # the checkout the environment's installs point into (root()); == tree for the head
    others: tuple[str, ...] = ()  # the other sides' checkouts (root()), but the origin

    @classmethod
    def of(cls, tree: str, origin: str = "", others: Iterable[str] = ()) -> SideTrees:
        own = root(tree)
        home = root(origin) if origin else own
        return cls(own, home, tuple(dict.fromkeys(root(o) for o in others if o and root(o) not in (own, home))))

    def place(self, path: str) -> tuple[Place, str]:
        """Where `path` lies, and its path relative to that checkout (absolute when outside all). The deepest
        checkout holding it decides: a base worktree may sit inside the head's checkout."""
        real = os.path.realpath(path)
        candidates = [(self.tree, Place.OWN), *((o, Place.OTHER) for o in self.others), (self.origin, Place.ORIGIN)]
        holding = [(r, p) for r, p in candidates if (real + os.sep).startswith(r)]
        if not holding:
            return Place.OUTSIDE, real
        top, place = max(holding, key=lambda rp: len(rp[0]))
        if place is Place.ORIGIN and top == self.tree:
            place = Place.OWN
        return place, os.path.relpath(real, top) if real + os.sep != top else ""

    @property
    def redirects(self) -> bool:
        return self.origin != self.tree

    def moved(self, path: str) -> str | None:
        """The side's counterpart of a path inside the origin; None when `path` is not in the origin."""
        place, rel = self.place(path)
        if place is not Place.ORIGIN or not self.redirects:
            return None
        return os.path.join(self.tree, rel) if rel else self.tree.rstrip(os.sep)

    def path(self, entries: Sequence[str]) -> list[str]:
        """sys.path for this side: entries inside the origin moved to the side's tree, entries of another
        side's tree dropped, the current directory ("" and ".") dropped (sys.path[0] is the tree, set apart);
        relative entries and non-paths (setuptools' namespace placeholder) kept as they are."""
        out: list[str] = []
        for entry in entries:
            if entry in ("", "."):
                continue
            if os.path.isabs(entry):
                place, _ = self.place(entry)
                if place is Place.OTHER:
                    continue
            kept = (self.moved(entry) or entry) if os.path.isabs(entry) else entry
            if kept not in out:
                out.append(kept)
        return out


class TreeFinder:
    """First in sys.meta_path: asks the finders after it in turn, as the import system would, and when an
    import hook (any finder but the standard path, built-in and frozen ones) answers with a file inside the
    origin, answers with the same file in the side's tree instead. The standard PathFinder's answers stand:
    sys.path is the side's own (SideTrees.path), and a submodule is found through its package's own path.
    `trees()`: the side running now (None: not a side's import, nothing redirected)."""

    def __init__(self, trees: Callable[[], SideTrees | None]) -> None:
        self.trees = trees

    def find_spec(self, fullname: str, path: Sequence[str] | None = None, target: Any = None) -> ModuleSpec | None:
        trees = self.trees()
        if trees is None:
            return None
        for finder in _after(self):
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is None:
                continue
            if finder in STANDARD_FINDERS:
                return spec  # type: ignore[no-any-return]
            return _served(spec, trees, finder)
        return None

    def invalidate_caches(self) -> None:
        """Nothing cached here (importlib.invalidate_caches asks every finder)."""


def _after(me: object) -> list[Any]:
    try:
        return list(sys.meta_path[sys.meta_path.index(me) + 1 :])  # type: ignore[arg-type]
    except ValueError:
        return []


def finder_name(finder: object) -> str:
    cls = finder if isinstance(finder, type) else type(finder)
    return f"{cls.__module__}.{cls.__qualname__}"


def _served(spec: ModuleSpec, trees: SideTrees, finder: object) -> ModuleSpec:
    """An import hook's spec, moved to the side's tree when it points into the origin; marked with who served it."""
    by = finder_name(finder)
    if spec.origin is not None and spec.has_location:
        pointed = spec.origin
        moved = trees.moved(pointed)
        if moved is not None:
            if not os.path.isfile(moved):
                raise ModuleNotFoundError(
                    f"No module named {spec.name!r} in this side's tree {trees.tree} (the environment's import "
                    f"hook {by} installs it from {pointed})",
                    name=spec.name,
                )
            locations = spec.submodule_search_locations
            spec = spec_from_file_location(  # type: ignore[assignment]
                spec.name,
                moved,
                submodule_search_locations=None if locations is None else [trees.moved(p) or p for p in locations],
            )
            by += f", moved from {pointed}"
    elif spec.submodule_search_locations is not None:  # a namespace package: its directories, moved
        spec.submodule_search_locations = [trees.moved(p) or p for p in spec.submodule_search_locations]
    setattr(spec, SERVED_BY, by)
    return spec


# --- a worker process: which side runs now ---------------------------------------------------------------

_SIDE: list[Callable[[], SideTrees | None]] = []  # set once by the worker's boot: the side running now
_BOOT_TOPS: list[frozenset[str]] = []  # top-level modules imported before any tree joined


def install(trees: Callable[[], SideTrees | None]) -> None:
    """The redirecting finder first in sys.meta_path, and `trees` as this process's answer to "which side
    runs now" (a separate worker: always its own; the shared host: the side holding the baton)."""
    _SIDE[:] = [trees]
    _BOOT_TOPS[:] = [frozenset(name.partition(".")[0] for name in sys.modules)]
    sys.meta_path.insert(0, TreeFinder(trees))


def current() -> SideTrees | None:
    """The trees of the side running now; None outside an A/B worker."""
    return _SIDE[0]() if _SIDE else None


def boot_tops() -> frozenset[str]:
    """Top-level modules the worker imported before any tree joined: perfgate itself, pytest, the stdlib."""
    return _BOOT_TOPS[0] if _BOOT_TOPS else frozenset()


def boot_separate(tree: str, origin: str, others: Sequence[str]) -> None:
    """A separate worker (perfgate.ab.workers.BOOT): its sys.path (the tree first) and the finder."""
    trees = SideTrees.of(tree, origin, others)
    sys.path[:] = [tree, *trees.path(sys.path)]
    install(lambda: trees)
