"""The baton: which side runs now, and what goes with it from one side to the next.

Only one side runs Python at a time. A side holds the baton while it runs and gives it back only while it
waits on its pipes (`released`, around every blocking read and write of protocol.WorkerEnd). With the baton
go the modules imported from the side's tree (a file under its root, outside site-packages, in a package
that was not already imported when the host started: they leave sys.modules when the side gives the baton
back and come back when it takes it again), sys.path, the working directory, the Python view of the
environment (environ.py), sys.stdout and sys.stderr (its own log), and the process-wide state of
handover.py. The contract (`Contract`) checks everything else: what a side changed that the baton does not
carry ends the shared comparison.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import sysconfig
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import IO, Any

from perfgate.ab.host import environ, fingerprint
from perfgate.ab.host.handover import Registry
from perfgate.ab.imports import SideTrees


@dataclass(frozen=True)
class SideBoot:
    """What one side's thread needs: its tree, where its session runs, its environment, its argv."""

    side: str
    tree: str
    cwd: str
    env: dict[str, str]  # this side's own keys (its build caches, its pipes), in its view of os.environ
    log: str
    args: list[str]
    write_fd: int  # its end of the pipe to the coordinator: closed when its session ends, however it ends
    origin: str = ""  # the checkout the environment's installs point into ("": its own tree)

    @staticmethod
    def encode(sides: Sequence[SideBoot], holder: Path, preload: Sequence[str] = ()) -> str:
        """The host's argument: its sides, the file that names the side running (read after a crash), what
        to import before any side starts."""
        return json.dumps({"holder": str(holder), "sides": [asdict(s) for s in sides], "preload": list(preload)})


def _site_roots() -> tuple[str, ...]:
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    for key in ("purelib", "platlib", "stdlib", "platstdlib"):
        with contextlib.suppress(KeyError):
            paths.add(sysconfig.get_paths()[key])
    return tuple(os.path.realpath(p) + os.sep for p in paths if p)


class Contract:
    """Deny by default: the fingerprint (fingerprint.py) when a side takes the baton and when it gives it
    back, with what the baton carries put back as the host had it; any difference, or a write to the C
    environment of a key the side does not own, ends the shared comparison (`ended`, which does not return:
    the host stops and the run is measured again in separate processes, the change named)."""

    def __init__(self, registry: Registry, ended: Callable[[str], None], host_threads: Callable[[], frozenset[Any]]):
        self.registry = registry
        self.ended = ended
        self.host_threads = host_threads
        self.writes = environ.Writes()
        self.watch = fingerprint.Watch(lambda fn: "")
        self.last: dict[str, Any] | None = None  # the fingerprint when the baton was last given back

    def _print(self) -> dict[str, Any]:
        self.watch.watch_torch()
        return fingerprint.take(frozenset(i.name for i in self.registry.items), self.host_threads(), self.watch)

    def taking(self, state: SideState) -> None:
        now = self._print()
        if self.last is not None:
            between = fingerprint.changes(self.last, now)
            if between:
                self.ended(f"process-wide state changed while no side ran: {_listed(between)}")
        state.taken, state.writes_from = now, self.writes.position

    def giving(self, state: SideState) -> None:
        now = self._print()
        found = [str(c) for c in fingerprint.changes(state.taken, now)]
        written = self.writes.by(threading.get_ident(), state.writes_from, state.owned)
        found += [
            f"the environment variable {key} (os.environ / putenv: every side's native code reads it)"
            for key in written
        ]
        self.last = now
        if found:
            self.ended(f"the {state.boot.side} side changed {_listed(found)}")


def _listed(items: Sequence[object]) -> str:
    shown = "; ".join(map(str, items[:3]))
    return shown + (f"; and {len(items) - 3} more" if len(items) > 3 else "")


class Baton:
    """Who runs now. `shared_tops` names the top-level packages imported before any side started: never a
    side's own (perfgate, pytest, and everything the boot imported)."""

    def __init__(
        self,
        shared_tops: frozenset[str],
        holder_fd: int | None = None,
        contract: Contract | None = None,
        registry: Registry | None = None,
    ) -> None:
        self.lock = threading.Lock()
        self.holder_fd = holder_fd  # names the running side, one pwrite per hand-over
        self.shared_tops = shared_tops
        self.site_roots = _site_roots()
        self.local = threading.local()
        self._owner_cache: dict[str, tuple[Any, str | None]] = {}  # name -> (module, tree root or None)
        self.sides: tuple[SideState, ...] = ()
        self.registry = contract.registry if contract is not None else registry or Registry()
        self.contract = contract

    def owner(self, name: str, module: Any) -> str | None:
        """The root of the tree a module was imported from, or None (shared)."""
        cached = self._owner_cache.get(name)
        if cached is not None and cached[0] is module:
            return cached[1]
        root = None
        if name.partition(".")[0] not in self.shared_tops and isinstance(module, ModuleType):
            root = self._root_of(module)
        self._owner_cache[name] = (module, root)  # a hand-over asks again for every module: once each
        return root

    def _root_of(self, module: ModuleType) -> str | None:
        try:  # modules may be odd objects (torch's `__path__` is a namespace of classes): what fails is shared
            files: list[object] = [module.__dict__.get("__file__")]
            path: Any = module.__dict__.get("__path__")
            if isinstance(path, (list, tuple)) or type(path).__name__ == "_NamespacePath":
                files += list(path)
        except Exception:  # noqa: BLE001
            return None
        for f in files:
            if not isinstance(f, str) or not f:
                continue
            real = os.path.realpath(f)
            if real.startswith(self.site_roots) or "site-packages" in real or "dist-packages" in real:
                return None
            # the deepest root: a base worktree may sit inside the head's checkout (worktree_dir = .perfgate/wt)
            roots = [state.root for state in self.sides if real.startswith(state.root)]
            if roots:
                return max(roots, key=len)
        return None

    def trees_now(self) -> SideTrees | None:
        """The trees of the side running in this thread (None: the host's own thread)."""
        state: SideState | None = getattr(self.local, "state", None)
        return state.trees if state is not None else None

    def tree_of(self, fn: Any) -> str:
        """The tree a callable's code lives in ("" outside every side's tree)."""
        module = sys.modules.get(str(getattr(fn, "__module__", "") or ""))
        return (self.owner(module.__name__, module) or "") if isinstance(module, ModuleType) else ""

    def _take(self, state: SideState) -> None:
        self.lock.acquire()
        try:
            if self.holder_fd is not None:
                os.pwrite(self.holder_fd, state.boot.side.encode().ljust(32), 0)
            if self.contract is not None:
                self.contract.taking(state)
            state.enter()
        except BaseException:
            self.lock.release()
            raise

    def _give(self, state: SideState) -> None:
        """Whatever leave() meets (a CUDA error in its synchronize), the other sides get the baton."""
        try:
            state.leave()
            if self.contract is not None:
                self.contract.giving(state)
        finally:
            self.lock.release()

    @contextlib.contextmanager
    def holding(self, state: SideState) -> Iterator[None]:
        self._take(state)
        self.local.state = state
        try:
            yield
        finally:
            self._give(state)

    @contextlib.contextmanager
    def released(self) -> Iterator[None]:
        """Around a wait on the pipes: the other sides may run meanwhile."""
        state: SideState | None = getattr(self.local, "state", None)
        if state is None:  # not a side's thread
            yield
            return
        self._give(state)
        try:
            yield
        finally:
            self._take(state)


class SideState:
    """One side's share of the process-wide state, kept while another side runs."""

    def __init__(
        self, boot: SideBoot, baton: Baton, path: list[str], env: dict[Any, Any], others: Sequence[str] = ()
    ) -> None:
        self.boot = boot
        self.baton = baton
        self.root = os.path.realpath(boot.tree) + os.sep
        self.trees = SideTrees.of(boot.tree, boot.origin, others)
        self.modules: dict[str, ModuleType] = {}
        self.path = [boot.tree, *self.trees.path(path)]
        self.cwd = boot.cwd
        self.env = environ.view_with(env, boot.env)  # os.environ as stored (environ.py)
        self.owned = frozenset(boot.env) | frozenset(environ.PYTEST_OWN)
        self.log: IO[str] = open(boot.log, "a", buffering=1, encoding="utf-8", errors="replace")  # noqa: SIM115
        self.stdout: Any = self.log
        self.stderr: Any = self.log
        self.outer: tuple[Any, Any] = (sys.stdout, sys.stderr)  # what the streams were before it entered
        self.settings: dict[str, Any] = {}  # its values of the handed-over state, while another side runs
        self.outer_env: dict[Any, Any] = {}  # the Python view of the environment before it entered
        self.taken: dict[str, Any] = {}  # the fingerprint when it took the baton
        self.writes_from = 0
        self.exitstatus = 3

    def enter(self) -> None:
        sys.modules.update(self.modules)
        self.modules = {}
        sys.path[:] = self.path
        try:
            os.chdir(self.cwd)
        except OSError:  # a test removed the directory it left the side in: the side's own cwd again
            os.chdir(self.boot.cwd)
        self.outer_env = environ.python_view()
        environ.use_view(self.env)
        self.outer = (sys.stdout, sys.stderr)
        sys.stdout, sys.stderr = self.stdout, self.stderr
        registry = self.baton.registry
        registry.put(self.settings, registry.pristine)  # what leave() left: the host's values

    def leave(self) -> None:
        """Its state kept, and what the baton carries put back as the host had it (the contract then sees
        only what nothing carries)."""
        try:
            _finish_gpu_work()
        finally:
            registry = self.baton.registry
            registry.refresh()
            self.settings = registry.read()
            registry.put({}, self.settings)
            self.path = list(sys.path)
            with contextlib.suppress(OSError):  # the directory is gone: enter() goes back to the side's own
                self.cwd = os.getcwd()
            self.env = environ.python_view()
            environ.use_view(self.outer_env)
            self.stdout, self.stderr = sys.stdout, sys.stderr
            sys.stdout, sys.stderr = self.outer
            for name, module in list(sys.modules.items()):
                if self.baton.owner(name, module) == self.root:
                    self.modules[name] = module
                    del sys.modules[name]


def _finish_gpu_work() -> None:
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and cuda.is_initialized():
        cuda.synchronize()
