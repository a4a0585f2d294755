"""Where the code each side measured came from, recorded and checked (A/B mode).

Which tree a module belongs to used to be inferred from file paths, and an editable install's import hook
made the base run the head's code unseen. Now each side records what it actually ran, and the coordinator
judges it instead of assuming it:

- the worker (serve.py), at every case: the measured callable's and the reference's source files (through
  functools.partial, bound methods, `__wrapped__` (functools.wraps, torch.compile), torch.compile's
  `_orig_mod`, a Triton JITFunction's or autotuner's `fn`, an nn.Module's `forward`, a callable object's
  `__call__`, and the kernels a `kernel[grid]` launcher closes over), and the project's modules the side
  imported since its last case (file and the loader or import hook that served them). The project's
  modules: those in any of the checkouts, and installed ones whose top-level name the side's tree provides
  (a `pip install .` copy);
- the coordinator: paths made relative to the checkout holding them (`tree`: base, head, or the checkout
  perfgate runs in) for the JSON and the history, then `judge`: a case is not comparable when a side ran
  code from another side's checkout (its callable, or any project module: then every case of that side), or
  when both sides ran the same file outside their trees (an installed copy) that the diff between base and
  head changes.

Installed libraries (torch, Triton) are shared by design: a case that measures `torch.nn.functional.conv2d`
directly is comparable, and says where that torch came from.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import FunctionType, MethodType, ModuleType
from typing import Any

from perfgate.ab.imports import SERVED_BY, Place, SideTrees, root
from perfgate.ab.protocol import Side
from perfgate.model import CaseResult, CodeRole, CodeSource

UNWRAP_DEPTH = 12  # wrappers followed from a measured callable to the functions it runs
SIDE_TREE = {Side.BASE: "base", Side.AA: "base", Side.HEAD: "head"}

# --- the worker: what a case ran ----------------------------------------------------------------------


def callable_code(obj: Any, role: CodeRole) -> list[CodeSource]:
    """The functions a measured callable runs, each with its source file (absolute; "" for built-in code)."""
    return [
        CodeSource(role, f"{_module_of(fn)}:{_qualname(fn)}", _source_file(fn), loader=_loader(_module(fn)))
        for fn in _functions(obj)
    ]


def _module(fn: Any) -> ModuleType | None:
    module = sys.modules.get(_module_of(fn))
    return module if isinstance(module, ModuleType) else None


def _functions(obj: Any) -> Iterator[Any]:
    """The innermost functions behind a callable; a built-in (torch.add) stands for itself."""
    seen: set[int] = set()
    todo = [obj]
    while todo and len(seen) < UNWRAP_DEPTH:
        item = todo.pop(0)
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        inner = _inner(item)
        if inner:
            todo.extend(inner)
        elif isinstance(item, FunctionType):
            yield item
            todo.extend(_kernels_closed_over(item))
        elif callable(item):
            yield item  # a built-in: torch.add, a C extension's function


# attributes that hold what a wrapper runs: functools.wraps (torch.compile's and most decorators'), torch.compile's
# original callable and module, a Triton JITFunction's / autotuner's / heuristics' function
WRAPPED_ATTRS = ("__wrapped__", "_torchdynamo_orig_callable", "_orig_mod", "fn")


def _inner(item: Any) -> list[Any]:
    """What a wrapper wraps; [] for a plain function or a built-in."""
    if isinstance(item, functools.partial):
        return [item.func]
    if isinstance(item, MethodType):
        return [item.__func__]
    d = getattr(item, "__dict__", None)
    found = [d[a] for a in WRAPPED_ATTRS if isinstance(d, dict) and callable(d.get(a))][:1]
    if found or isinstance(item, (FunctionType, type)) or inspect.isbuiltin(item):
        return found
    # an nn.Module runs its forward; another callable object of a Python class, its __call__
    method = next((m for m in (getattr(type(item), n, None) for n in ("forward", "__call__")) if _is_fn(m)), None)
    return [method] if method is not None else []


def _is_fn(value: object) -> bool:
    return isinstance(value, FunctionType)


def _kernels_closed_over(fn: FunctionType) -> list[Any]:
    """`kernel[grid]` is a lambda in Triton that closes over the kernel: follow such cells (objects with a
    Python `fn`), not every value a closure holds."""
    cells = fn.__closure__ or ()
    out = []
    for cell in cells:
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if isinstance(getattr(value, "fn", None), FunctionType):
            out.append(value)
    return out


def _module_of(fn: Any) -> str:
    return str(getattr(fn, "__module__", None) or "")


def _qualname(fn: Any) -> str:
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__)


def _source_file(fn: Any) -> str:
    """The file a function's code was compiled from; for a built-in, its module's file; "" when none."""
    code = getattr(fn, "__code__", None)
    name = getattr(code, "co_filename", "") if code is not None else ""
    if not name or name.startswith("<"):
        module = sys.modules.get(_module_of(fn))
        name = str(getattr(module, "__file__", None) or "")
    return os.path.realpath(name) if name else ""


def new_modules(trees: SideTrees, seen: set[str], skip_tops: frozenset[str]) -> list[CodeSource]:
    """The project's modules imported since the last call (`seen` updated): those in any checkout, and
    installed ones whose top-level name the side's tree provides. `skip_tops`: top-level names imported
    before the tree joined (perfgate itself, pytest), never the project's."""
    provided = _provided(trees.tree, tuple(sys.path))
    out = []
    for name, module in list(sys.modules.items()):
        if name in seen:
            continue
        seen.add(name)
        top = name.partition(".")[0]
        if top in skip_tops or not isinstance(module, ModuleType):
            continue
        path = _module_file(module)
        if path and (trees.place(path)[0] is not Place.OUTSIDE or top in provided):
            out.append(CodeSource(CodeRole.MODULE, name, os.path.realpath(path), loader=_loader(module)))
    return out


def _module_file(module: ModuleType) -> str:
    try:  # modules may be odd objects (torch.classes): what cannot be read has no file
        spec = module.__dict__.get("__spec__")
        origin = getattr(spec, "origin", None) if getattr(spec, "has_location", False) else None
        path = origin or module.__dict__.get("__file__")
        if not path:
            locations = list(getattr(spec, "submodule_search_locations", None) or [])
            path = next((p for p in locations if os.path.isabs(p)), "")
    except Exception:  # noqa: BLE001
        return ""
    return str(path) if isinstance(path, str) else ""


def _loader(module: ModuleType | None) -> str:
    if module is None:
        return ""
    spec = module.__dict__.get("__spec__")
    served = getattr(spec, SERVED_BY, None)
    if served:
        return str(served)
    loader = getattr(spec, "loader", None)
    return type(loader).__name__ if loader is not None else ""


@functools.cache
def _provided(tree: str, path: tuple[str, ...]) -> frozenset[str]:
    """Top-level module names the tree provides: at its root, under src/, and under its sys.path entries."""
    dirs = {tree, os.path.join(tree, "src")} | {p for p in path if os.path.isabs(p) and root(p).startswith(tree)}
    names: set[str] = set()
    for d in dirs:
        try:
            entries = os.listdir(d)
        except OSError:
            continue
        for entry in entries:
            stem = entry.partition(".")[0]
            is_module = entry.endswith((".py", ".so", ".pyd")) or os.path.isdir(os.path.join(d, entry))
            if is_module and stem.isidentifier():
                names.add(stem)
    return frozenset(names)


def checkout_code(fn: Any, reference: Any, test_file: str, tree: str, seen: set[str]) -> tuple[CodeSource, ...]:
    """Baseline mode's record of the same (gate/untouched.py reads it): the callables, the test module, and
    the project's modules (in `tree`, the checkout perfgate runs in) imported since the last case. Paths in
    `tree` relative to it (`tree` "checkout": a history read on another runner or checkout still matches
    them), others absolute."""
    code = callable_code(fn, CodeRole.MEASURED)
    if reference is not None:
        code += callable_code(reference, CodeRole.REFERENCE)
    if test_file:
        code.append(CodeSource(CodeRole.TEST, os.path.basename(test_file), os.path.realpath(test_file)))
    roots = [(root(tree), "checkout")]
    return tuple(_locate(c, roots) for c in code + new_modules(SideTrees.of(tree), seen, frozenset()))


# --- the coordinator: where, and whether it can be compared --------------------------------------------


def located(results: Mapping[tuple[Side, str], CaseResult], checkouts: Mapping[str, Path]) -> dict[Any, CaseResult]:
    """Each result's code with paths relative to the checkout holding them (`tree` its name: base, head,
    checkout); the deepest checkout decides (a base worktree may sit inside the head's)."""
    roots = sorted(((root(p), name) for name, p in checkouts.items()), key=lambda rn: -len(rn[0]))
    out: dict[Any, CaseResult] = {}
    for key, result in results.items():
        out[key] = replace(result, code=tuple(_locate(c, roots) for c in result.code)) if result.code else result
    return out


def _locate(source: CodeSource, roots: Sequence[tuple[str, str]]) -> CodeSource:
    if not source.path or source.tree:
        return source
    for top, name in roots:
        if (source.path + os.sep).startswith(top):
            return replace(source, path=os.path.relpath(source.path, top), tree=name)
    return source


def judge(
    results: Mapping[tuple[Side, str], CaseResult], changed: frozenset[str], shared: bool = False
) -> dict[str, str]:
    """case id -> why it is not comparable, from where each side's code came from (see the module's doc);
    `shared`: both sides ran in one process, where the other side's code is an object one tree left behind."""
    reasons: dict[str, str] = {}
    by_side: dict[Side, list[CaseResult]] = {}
    for (side, _), result in results.items():
        by_side.setdefault(side, []).append(result)
    for side, side_results in by_side.items():
        own = SIDE_TREE[side]
        stray = [c for r in side_results for c in r.code if c.role is CodeRole.MODULE and c.tree not in ("", own)]
        for r in side_results:
            wrong = [c for c in r.code if c.role is not CodeRole.MODULE and c.tree not in ("", own)] + stray
            if wrong:
                reasons.setdefault(r.case_id, _misplaced(side, wrong[0], shared))
    for (side, case_id), head in results.items():
        base = results.get((Side.BASE, case_id))
        if side is not Side.HEAD or base is None or case_id in reasons:
            continue
        same = _same_installed(base, head, by_side, changed)
        if same is not None:
            reasons[case_id] = same
    return reasons


def _misplaced(side: Side, c: CodeSource, shared: bool) -> str:
    what = "imported" if c.role is CodeRole.MODULE else f"measured ({c.role.value})"
    where = "the checkout perfgate runs in" if c.tree == "checkout" else f"the {c.tree}'s tree"
    via = f", served by {c.loader}" if c.loader else ""
    # The other side's code reaching this side is process-wide state one tree left behind (a conftest's
    # module-level object, a registry filled at import): only separate processes keep the sides apart.
    hint = (
        '; the other side\'s object outlived its tree in the shared process: ab_process = "separate" gives '
        "each side its own processes"
        if shared and c.tree in ("base", "head") and c.role is not CodeRole.MODULE
        else ""
    )
    return f"provenance: the {side.value} side {what} {c.name} from {where} ({c.path}{via}){hint}"


def _same_installed(
    base: CaseResult, head: CaseResult, by_side: Mapping[Side, Sequence[CaseResult]], changed: frozenset[str]
) -> str | None:
    """Both sides ran one file outside their trees (an installed copy of the project) that the diff changes."""

    def outside(results: Sequence[CaseResult], roles: tuple[CodeRole, ...]) -> dict[str, CodeSource]:
        return {c.path: c for r in results for c in r.code if c.role in roles and not c.tree and c.path}

    callables = (CodeRole.MEASURED, CodeRole.REFERENCE)
    common = {**outside([base], callables), **outside(by_side.get(Side.BASE, ()), (CodeRole.MODULE,))}
    theirs = {**outside([head], callables), **outside(by_side.get(Side.HEAD, ()), (CodeRole.MODULE,))}
    for path, c in common.items():
        if path in theirs:
            touched = _touched(c, changed)
            if touched:
                return (
                    f"provenance: base and head both ran {c.name} from {path}, one file outside both trees, "
                    f"while the diff changes {touched}"
                )
    return None


def _touched(c: CodeSource, changed: frozenset[str]) -> str:
    """A changed path that is this file's module (mylib/core.py for mylib.core): "" when none is."""
    module = c.name.partition(":")[0] if c.role is not CodeRole.MODULE else c.name
    base = os.path.basename(c.path)
    parts = module.split(".")
    tail = "/".join([*parts, base] if base.startswith("__init__.") else [*parts[:-1], base])
    return next((p for p in sorted(changed) if p == tail or p.endswith("/" + tail)), "")


def changed_paths(repo: Path, base_commit: str, head_commit: str = "") -> frozenset[str]:
    """The files the diff from the base to the head touches (the working tree's changes and untracked files
    included when the head is the working tree), relative to the repository's top."""
    from perfgate.measure.tools import run_tool

    git = ["git", "-C", str(repo)]
    diff = [*git, "diff", "--name-only", "--no-renames", "-z", base_commit, *([head_commit] if head_commit else [])]
    names = run_tool(diff, 120.0).stdout.split("\0")
    if not head_commit:
        names += run_tool([*git, "ls-files", "-z", "--others", "--exclude-standard"], 120.0).stdout.split("\0")
    return frozenset(n for n in names if n)
