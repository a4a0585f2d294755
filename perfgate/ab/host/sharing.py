"""Whether A/B mode runs base and head in one process (perfgate/ab/host/) or a process per tree.

Two copies of one extension module in one process clash in their global registries (pybind11 types, torch
custom ops), so `ab_process = "auto"` (the default) shares only when neither tree lists native code.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from perfgate.errors import ToolFailed, ToolMissing
from perfgate.model import AbProcess

NATIVE_SUFFIXES = (
    ".c",
    ".cc",
    ".cpp",
    ".cxx",
    ".c++",
    ".h",
    ".hh",
    ".hpp",
    ".hxx",
    ".cu",
    ".cuh",
    ".hip",
    ".pyx",
    ".pxd",
    ".f",
    ".f90",
    ".so",
    ".pyd",
    ".dylib",
    ".a",
)
NATIVE_NAME = re.compile(r"\.so(\.\d+)+$")  # libfoo.so.1
# Python that builds native code at run time (torch.utils.cpp_extension.load / load_inline)
NATIVE_BUILD_PATTERN = r"cpp_extension|load_inline"
LISTED_NATIVE = 3  # files named in the message


def native_files(tree: Path, timeout_s: float = 60.0) -> list[str]:
    """The tree's native sources and binaries (tracked, submodules included, or untracked and not ignored),
    and its Python files that build native code at run time. ToolFailed when git cannot list the tree."""
    from perfgate.measure.tools import run_tool

    git = ["git", "-C", str(tree)]
    listed = run_tool([*git, "ls-files", "-z", "--cached", "--recurse-submodules"], timeout_s).stdout.split("\0")
    listed += run_tool([*git, "ls-files", "-z", "--others", "--exclude-standard"], timeout_s).stdout.split("\0")
    found = {n for n in listed if n.lower().endswith(NATIVE_SUFFIXES) or NATIVE_NAME.search(n.lower())}
    grep = run_tool([*git, "grep", "-z", "-l", "-I", "-E", NATIVE_BUILD_PATTERN, "--", "*.py"], timeout_s, check=False)
    found |= {n for n in grep.stdout.split("\0") if n} if grep.returncode == 0 else set()
    return sorted(found)


@dataclass(frozen=True)
class Sharing:
    shared: bool
    why: str  # the message line: which way, and why


def decide(wanted: AbProcess, trees: Sequence[tuple[str, Path]]) -> Sharing:
    """Shared or separate processes for these (side, tree) pairs."""
    if wanted is AbProcess.SEPARATE:
        return Sharing(False, 'a process per tree (ab_process = "separate")')
    if wanted is AbProcess.SHARED:
        return Sharing(True, 'base and head in one process (ab_process = "shared")')
    for side, tree in trees:
        try:
            found = native_files(tree)
        except (ToolFailed, ToolMissing) as err:
            return Sharing(False, f"a process per tree: the {side}'s files could not be listed ({err})")
        if found:
            named = ", ".join(found[:LISTED_NATIVE]) + (
                f" and {len(found) - LISTED_NATIVE} more" if len(found) > LISTED_NATIVE else ""
            )
            return Sharing(
                False,
                f"a process per tree: the {side} holds native code ({named}), which two copies in one process "
                'cannot hold apart (ab_process = "shared" to share anyway)',
            )
    return Sharing(True, "base and head in one process, each tree's modules side by side (no native code in either)")


# installed packages a tree's Python imports at top level: the shared host imports them before any side runs
PRELOADED = ("torch", "triton")
PRELOAD_PATTERN = r"^\s*(import|from)\s+(torch|triton)\b"


def preloads(trees: Sequence[Path], timeout_s: float = 60.0) -> tuple[str, ...]:
    """Which of PRELOADED the trees' Python files import (git grep; none when a tree cannot be listed)."""
    from perfgate.measure.tools import run_tool

    found: set[str] = set()
    for tree in trees:
        argv = ["git", "-C", str(tree), "grep", "-h", "-o", "-I", "-E", PRELOAD_PATTERN, "--", "*.py"]
        try:
            out = run_tool(argv, timeout_s, check=False).stdout
        except (ToolFailed, ToolMissing):
            continue
        found |= {name for name in PRELOADED if re.search(rf"\b{name}\b", out)}
    return tuple(name for name in PRELOADED if name in found)
