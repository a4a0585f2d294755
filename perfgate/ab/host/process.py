"""The host process: base, head and the A/A twin as pytest sessions, each in a thread of its own, each
speaking the ordinary worker protocol on its own pipes (the coordinator cannot tell them from separate
workers); one runs at a time (baton.py).

Before any side starts, the host imports what the trees import from the environment (torch, Triton: what
their own import changes is then the host's, the same for every side) and sets up the contract: the
handed-over state's values as the host has them (what a side that never set one finds), the watches
(atexit, os.putenv, the CUDA allocator's setters), the fingerprint. A side that breaks the contract ends the
host: the reason goes to a file the coordinator reads (`sharing_ended`), and the run is measured again in a
process per tree.
"""

from __future__ import annotations

import contextlib
import faulthandler
import importlib
import json
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from perfgate.ab import imports
from perfgate.ab.host import environ
from perfgate.ab.host.baton import Baton, Contract, SideBoot, SideState
from perfgate.ab.host.handover import Registry
from perfgate.ab.protocol import WorkerEnd

# pytest's fd-level capture is process-wide: two sessions would save and restore each other's descriptors.
# Each side's output goes to its own log instead (sys.stdout / sys.stderr swapped with the baton).
SHARED_PYTEST_ARGS = ("--capture=no", "-p", "no:faulthandler")
ENDED_STATUS = 86  # the host stopped itself: a side broke the contract (the reason is in `ended_path`)


def running_side(holder: Path) -> str:
    """Which side held the baton last (what was running when the process died); "" if unknown."""
    try:
        return holder.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""


def ended_path(holder: Path) -> Path:
    return holder.with_name("sharing-ended")


def sharing_ended(holder: Path) -> str:
    """Why the host ended the shared comparison itself; "" when it did not."""
    try:
        return ended_path(holder).read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""


def _preload(names: Sequence[str]) -> None:
    """What the trees import from the environment, imported by the host (and CUDA started) before any side."""
    for name in names:
        with contextlib.suppress(Exception):  # not installed: the sides will say so themselves
            importlib.import_module(name)
    torch = sys.modules.get("torch")
    if torch is not None:
        with contextlib.suppress(Exception):
            if torch.cuda.is_available():
                torch.cuda.init()


_INSTALLED: list[Baton] = []  # the host's baton, once it runs: WorkerEnd's blocking I/O hands it over


def released() -> contextlib.AbstractContextManager[None]:
    """The baton handed over for a blocking wait in a shared host; nothing elsewhere."""
    return _INSTALLED[0].released() if _INSTALLED else contextlib.nullcontext()


def serve_sides(spec: str, session: Callable[[list[str]], int]) -> int:
    """The host process: a session per side (`session(argv)`: pytest.main), in threads, one at a time.
    Its status: the worst side's."""
    doc = json.loads(spec)
    boots = [SideBoot(**d) for d in doc["sides"]]
    holder = Path(doc["holder"])
    sys.path[:] = [p for p in sys.path if p not in ("", ".")]  # each side's own path: SideTrees.path
    _preload(doc.get("preload", ()))
    # one fault handler for the process, every thread's stack, into the host's log (pytest's own would
    # follow whichever session configured last): SHARED_PYTEST_ARGS turns the sessions' off
    faulthandler.enable(file=2, all_threads=True)
    threads: list[threading.Thread] = []
    baton = _baton(holder, boots, lambda: frozenset(t.ident for t in [threading.main_thread(), *threads]))
    env = environ.python_view()
    trees = [b.tree for b in boots]
    states = [SideState(b, baton, list(sys.path), env, trees) for b in boots]
    baton.sides = tuple(states)

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

    threads += [threading.Thread(target=run, args=(s,), name=f"perfgate-{s.boot.side}") for s in states]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return max((s.exitstatus for s in states), default=0)


def _baton(holder: Path, boots: Sequence[SideBoot], host_threads: Callable[[], frozenset[Any]]) -> Baton:
    """The baton and its contract, the watches installed, the host's state remembered as every side's start."""
    holder_fd = os.open(holder, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    made: list[Baton] = []  # the finder goes in first: the import system every side starts from holds it
    imports.install(lambda: made[0].trees_now() if made else None)
    contract = Contract(Registry(), lambda why: _end(holder, why), host_threads)
    baton = Baton(frozenset(name.partition(".")[0] for name in sys.modules), holder_fd, contract)
    made.append(baton)
    contract.watch.from_a_tree = baton.tree_of
    contract.watch.install()
    contract.writes.install()
    signal.signal = _main_thread_only(signal.signal, holder)
    _INSTALLED[:] = [baton]
    return baton


def _end(holder: Path, why: str) -> NoReturn:
    """The shared comparison is over: why, for the coordinator (workers.SharedHost), then the host stops."""
    with contextlib.suppress(OSError):
        ended_path(holder).write_text(why + "\n", encoding="utf-8")
    sys.stderr.flush()
    os._exit(ENDED_STATUS)


def _main_thread_only(original: Callable[..., Any], holder: Path) -> Callable[..., Any]:
    """signal.signal: a side (a thread) cannot set a handler, and one handler could not be each side's own."""

    def guarded(signum: int, handler: Any) -> Any:
        if threading.current_thread() is threading.main_thread():
            return original(signum, handler)
        side = threading.current_thread().name.removeprefix("perfgate-")
        _end(
            holder,
            f"the {side} side set a signal handler (signal.signal({signum}, ...)), which one process "
            "cannot keep per side",
        )

    return guarded


def end_sharing(why: str) -> None:
    """A side's own finding that one process cannot measure it as its own would (nothing outside a shared
    host): the host stops and the run is measured again in a process per tree."""
    if _INSTALLED and _INSTALLED[0].contract is not None:
        _INSTALLED[0].contract.ended(why)


def worker_end(value: str, gone: Callable[[], None]) -> WorkerEnd:
    """This worker's end of the pipes. In a shared host it hands the baton over while it waits, and the
    coordinator closing it calls `gone` (ending this side's session, not the process)."""
    if not _INSTALLED:
        return WorkerEnd.from_env(value)
    return WorkerEnd.from_env(value, released, gone)
