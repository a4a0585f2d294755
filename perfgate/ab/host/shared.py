"""Base and head in one process: each tree's modules imported side by side, so whatever makes one process
of the same code steadily faster or slower than another (the 12 us add's 1-3% on the H100,
docs/evidence/ab-noise.md) is common to both sides and cancels in the ratio.

One host process runs a pytest session per side (base, head, the A/A twin), each in a thread of its own,
each speaking the ordinary worker protocol on its own pipes: the coordinator cannot tell them from
separate workers. Only one side runs Python at a time. A side holds the baton while it runs and hands it
over only while it waits on its pipes (`released`, around every blocking read and write of
protocol.WorkerEnd), and with the baton go the process-wide things that make a tree's code its own:

- sys.modules: the modules imported from the side's tree (a file under its root, outside site-packages,
  in a package that was not already imported when the host started) leave sys.modules when the side hands
  the baton over and come back when it takes it again. `import kernels` in the base's session finds the
  base's kernels, and so does a lazy import inside one of its functions;
- sys.path, the working directory, os.environ (its build caches and pipes), sys.stdout and sys.stderr
  (its own log).

Shared by all sides: what is installed (torch, Triton, pytest, perfgate itself), the CUDA context and its
caching allocator, the host process's place on the machine: the things a process offset comes from. A
side's pending GPU work is finished before the next side runs (no overlap a separate process would not
have either).

What cannot be shared: a tree's native code. Two copies of one extension module in one process clash in
their global registries (pybind11 types, torch custom ops), so `ab_process = "auto"` (the default) shares
only when neither tree lists a native source or binary (perfgate/ab/host/sharing.py). The process-wide settings
handed over besides modules, paths and streams are a registry: perfgate/ab/host/process_state.py.
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import os
import signal
import sys
import sysconfig
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import IO, Any

from perfgate.ab import imports
from perfgate.ab.host import process_state
from perfgate.ab.imports import SideTrees
from perfgate.ab.protocol import WorkerEnd

# pytest's fd-level capture is process-wide: two sessions would save and restore each other's descriptors.
# Each side's output goes to its own log instead (sys.stdout / sys.stderr swapped with the baton).
SHARED_PYTEST_ARGS = ("--capture=no", "-p", "no:faulthandler")
SIGNALS_NEED_SEPARATE = (
    'perfgate: A/B: set ab_process = "separate": {what} in the {side} side, and a shared process runs each '
    "side in a thread, where signal handlers cannot be set"
)


# --- the host process --------------------------------------------------------------------------------


@dataclass(frozen=True)
class SideBoot:
    """What one side's thread needs: its tree, where its session runs, its environment, its argv."""

    side: str
    tree: str
    cwd: str
    env: dict[str, str]  # added to the host's environment for this side (its build caches, its pipes)
    log: str
    args: list[str]
    write_fd: int  # its end of the pipe to the coordinator: closed when its session ends, however it ends
    origin: str = ""  # the checkout the environment's installs point into ("": its own tree)

    @staticmethod
    def encode(sides: Sequence[SideBoot], holder: Path) -> str:
        """The host's argument: its sides, and the file that names the side running (read after a crash)."""
        return json.dumps({"holder": str(holder), "sides": [asdict(s) for s in sides]})


def running_side(holder: Path) -> str:
    """Which side held the baton last (what was running when the process died); "" if unknown."""
    try:
        return holder.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""


def _site_roots() -> tuple[str, ...]:
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    for key in ("purelib", "platlib", "stdlib", "platstdlib"):
        with contextlib.suppress(KeyError):
            paths.add(sysconfig.get_paths()[key])
    return tuple(os.path.realpath(p) + os.sep for p in paths if p)


class Baton:
    """Who runs now. `shared_tops` names the top-level packages imported before any side started: never a
    side's own (perfgate, pytest, and everything the boot imported)."""

    def __init__(self, shared_tops: frozenset[str], holder_fd: int | None = None) -> None:
        self.lock = threading.Lock()
        self.holder_fd = holder_fd  # names the running side, one pwrite per hand-over
        self.shared_tops = shared_tops
        self.site_roots = _site_roots()
        self.local = threading.local()
        self._owner_cache: dict[str, tuple[ModuleType, str | None]] = {}  # name -> (module, tree root or None)
        self.sides: tuple[SideState, ...] = ()

    def owner(self, name: str, module: Any) -> str | None:
        """The root of the tree a module was imported from, or None (shared)."""
        cached = self._owner_cache.get(name)
        if cached is not None and cached[0] is module:
            return cached[1]
        root = None
        if name.partition(".")[0] not in self.shared_tops and isinstance(module, ModuleType):
            root = self._root_of(module)
            self._owner_cache[name] = (module, root)
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

    def _take(self, state: SideState) -> None:
        self.lock.acquire()
        try:
            if self.holder_fd is not None:
                os.pwrite(self.holder_fd, state.boot.side.encode().ljust(32), 0)
            state.enter()
        except BaseException:
            self.lock.release()
            raise

    def _give(self, state: SideState) -> None:
        """Whatever leave() meets (a CUDA error in its synchronize), the other sides get the baton."""
        try:
            state.leave()
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
        self, boot: SideBoot, baton: Baton, path: list[str], env: dict[str, str], others: Sequence[str] = ()
    ) -> None:
        self.boot = boot
        self.baton = baton
        self.root = os.path.realpath(boot.tree) + os.sep
        self.trees = SideTrees.of(boot.tree, boot.origin, others)
        self.modules: dict[str, ModuleType] = {}
        self.path = [boot.tree, *self.trees.path(path)]
        self.cwd = boot.cwd
        self.env = {**env, **boot.env}
        self.log: IO[str] = open(boot.log, "a", buffering=1, encoding="utf-8", errors="replace")  # noqa: SIM115
        self.stdout: Any = self.log
        self.stderr: Any = self.log
        self.outer: tuple[Any, Any] = (sys.stdout, sys.stderr)  # what the streams were before it entered
        self.settings: dict[str, Any] = {}  # its values of PROCESS_STATE, while another side runs
        self.exitstatus = 3

    def enter(self) -> None:
        sys.modules.update(self.modules)
        self.modules = {}
        sys.path[:] = self.path
        try:
            os.chdir(self.cwd)
        except OSError:  # a test removed the directory it left the side in: the side's own cwd again
            os.chdir(self.boot.cwd)
        _set_environ(self.env)
        self.outer = (sys.stdout, sys.stderr)
        sys.stdout, sys.stderr = self.stdout, self.stderr
        process_state.put_settings(self.settings)

    def leave(self) -> None:
        try:
            _finish_gpu_work()
        finally:
            self.settings = process_state.get_settings()
            self.path = list(sys.path)
            with contextlib.suppress(OSError):  # the directory is gone: enter() goes back to the side's own
                self.cwd = os.getcwd()
            self.env = dict(os.environ)
            self.stdout, self.stderr = sys.stdout, sys.stderr
            sys.stdout, sys.stderr = self.outer
            for name, module in list(sys.modules.items()):
                if self.baton.owner(name, module) == self.root:
                    self.modules[name] = module
                    del sys.modules[name]


def _set_environ(wanted: dict[str, str]) -> None:
    for key in [k for k in os.environ if k not in wanted]:
        del os.environ[key]
    for key, value in wanted.items():
        if os.environ.get(key) != value:
            os.environ[key] = value


def _finish_gpu_work() -> None:
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and cuda.is_initialized():
        cuda.synchronize()


_INSTALLED: list[Baton] = []  # the host's baton, once it runs: WorkerEnd's blocking I/O hands it over


def released() -> contextlib.AbstractContextManager[None]:
    """The baton handed over for a blocking wait in a shared host; nothing elsewhere."""
    return _INSTALLED[0].released() if _INSTALLED else contextlib.nullcontext()


def serve_sides(spec: str, session: Callable[[list[str]], int]) -> int:
    """The host process: a session per side (`session(argv)`: pytest.main), in threads, one at a time.
    Its status: the worst side's."""
    doc = json.loads(spec)
    boots = [SideBoot(**d) for d in doc["sides"]]
    sys.path[:] = [p for p in sys.path if p not in ("", ".")]  # each side's own path: SideTrees.path
    process_state.remember_boot_state()
    # one fault handler for the process, every thread's stack, into the host's log (pytest's own would
    # follow whichever session configured last): SHARED_PYTEST_ARGS turns the sessions' off
    faulthandler.enable(file=2, all_threads=True)
    signal.signal = _main_thread_only(signal.signal)
    holder_fd = os.open(doc["holder"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    baton = Baton(frozenset(name.partition(".")[0] for name in sys.modules), holder_fd)
    env = dict(os.environ)
    trees = [b.tree for b in boots]
    states = [SideState(b, baton, list(sys.path), env, trees) for b in boots]
    baton.sides = tuple(states)
    _INSTALLED[:] = [baton]
    imports.install(baton.trees_now)

    def run(state: SideState) -> None:
        try:
            with baton.holding(state):
                try:
                    state.exitstatus = int(session([*SHARED_PYTEST_ARGS, *state.boot.args]))
                except BaseException:  # noqa: BLE001 (a side's session ended by anything: said in its log)
                    traceback.print_exc()
        finally:
            with contextlib.suppress(OSError):
                os.close(state.boot.write_fd)  # the coordinator reads the end of this side, not a hang

    threads = [threading.Thread(target=run, args=(s,), name=f"perfgate-{s.boot.side}") for s in states]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return max((s.exitstatus for s in states), default=0)


def _main_thread_only(original: Callable[..., Any]) -> Callable[..., Any]:
    """signal.signal, with a message that says what to do when a side (a thread) calls it."""

    def guarded(signum: int, handler: Any) -> Any:
        if threading.current_thread() is threading.main_thread():
            return original(signum, handler)
        side = threading.current_thread().name.removeprefix("perfgate-")
        raise ValueError(SIGNALS_NEED_SEPARATE.format(side=side, what=f"signal.signal({signum}, ...)"))

    return guarded


def worker_end(value: str, gone: Callable[[], None]) -> WorkerEnd:
    """This worker's end of the pipes. In a shared host it hands the baton over while it waits, and the
    coordinator closing it calls `gone` (ending this side's session, not the process)."""
    if not _INSTALLED:
        return WorkerEnd.from_env(value)
    return WorkerEnd.from_env(value, released, gone)
