"""`perfgate ci confine -- CMD`: run a pull request's code (the gate's pytest) away from the runner's command files.

The GitHub Actions runner gives each step a fresh set of files under `$RUNNER_TEMP/_runner_file_commands/`
(set_env_<id>, add_path_<id>, set_output_<id>, step_summary_<id>, save_state_<id>, artifacts_<id>, ...) and,
when the step ends, applies what they hold to every later step of the job: an environment variable such as
BASH_ENV or LD_PRELOAD, a directory in front of PATH, an output (actions/runner, FileCommandManager.cs).
Unsetting GITHUB_ENV and friends hides the file names, not the directory. Here:

- CMD runs with every variable that points into that directory removed, RUNNER_TEMP pointing at a private
  directory of its own, its own step summary file (copied into the step's afterwards, bounded), and no
  runner or OIDC token variables;
- the directory is made unreadable while CMD runs (the same user can undo that: it only stops the casual
  route);
- CMD starts in a session of its own under this process as a child subreaper (Linux): when it ends, every
  process it left behind, double-forked daemons included, is reparented here and killed, so none can write a
  later step's files;
- the directory's contents are read before and after: whatever CMD (or anything it started) changed there is
  put back as it was and named, and the command fails (`REFUSED`).

What stays out of reach of this: anything else the runner's user can write (the runner's Python, its
site-packages, the downloaded actions of later steps), and processes started through a service manager
(systemd --user, at, cron, a container daemon). Nothing a job that ran a pull request's code produces is
trusted for that reason: docs/github-actions.md.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REFUSED = 3  # the exit status when CMD changed the runner's command files (gate.sh: the gate never decided)
COMMAND_FILE_VARS = ("GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_PATH", "GITHUB_STATE", "GITHUB_STEP_SUMMARY")
TOKEN_VARS = (  # runner and OIDC tokens (the runner passes them to actions, not to scripts; never to PR code)
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_RUNTIME_URL",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_URL",
    "ACTIONS_CACHE_URL",
    "ACTIONS_RESULTS_URL",
    "GITHUB_TOKEN",
    "GH_TOKEN",
)
SHELL_STARTUP_VARS = ("BASH_ENV", "ENV")
STEP_SUMMARY_BYTES = 1024 * 1024  # the runner refuses a step summary larger than this
MAX_COMMAND_FILE_BYTES = 16 * 1024 * 1024
PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True)
class Confined:
    returncode: int  # CMD's, or REFUSED
    refused: tuple[str, ...]  # the command files CMD changed, one line each
    killed: int  # processes CMD left behind, killed when it ended
    subreaper: bool  # False: processes that left CMD's process group could not be found (not Linux)


def command_file_dirs(environ: Mapping[str, str]) -> tuple[Path, ...]:
    """The directories the runner's command files of this step live in (none outside GitHub Actions)."""
    found = {Path(environ[v]).parent for v in COMMAND_FILE_VARS if environ.get(v) and Path(environ[v]).parent.is_dir()}
    return tuple(sorted(found))


def confined_environment(environ: Mapping[str, str], dirs: Sequence[Path], temp: Path) -> dict[str, str]:
    """CMD's environment: nothing that points into `dirs`, no tokens or shell start-up files, its own
    RUNNER_TEMP and step summary."""
    inside = tuple(str(d) for d in dirs)
    env = {
        k: v
        for k, v in environ.items()
        if k not in (*COMMAND_FILE_VARS, *TOKEN_VARS, *SHELL_STARTUP_VARS) and not any(d in v for d in inside)
    }
    env["RUNNER_TEMP"] = str(temp)
    if environ.get("GITHUB_STEP_SUMMARY"):
        env["GITHUB_STEP_SUMMARY"] = str(temp / "step_summary.md")
    return env


def snapshot(dirs: Sequence[Path]) -> dict[Path, bytes]:
    """Every file in `dirs` and its bytes."""
    out = {}
    for d in dirs:
        for path in sorted(d.iterdir()):
            if path.is_file() and not path.is_symlink() and path.stat().st_size <= MAX_COMMAND_FILE_BYTES:
                out[path] = path.read_bytes()
            else:
                out[path] = b""
    return out


def put_back(dirs: Sequence[Path], before: Mapping[Path, bytes]) -> tuple[str, ...]:
    """Restore `dirs` to `before`; one line per file that differed."""
    lines = []
    now = {p for d in dirs for p in d.iterdir()}
    for path in sorted(now - set(before)):
        lines.append(f"{path.name}: created")
        _remove(path)
    for path, content in before.items():
        current = _read(path)
        if current == content:
            continue
        lines.append(f"{path.name}: {'removed' if current is None else _what(content, current)}")
        _remove(path)
        path.write_bytes(content)
    return tuple(lines)


def _read(path: Path) -> bytes | None:
    if path.is_symlink() or not path.exists():
        return None if not path.is_symlink() else b"<symlink>"
    if not path.is_file():
        return b"<not a file>"
    return path.read_bytes()[: MAX_COMMAND_FILE_BYTES + 1]


def _what(before: bytes, after: bytes) -> str:
    added = after[len(before) :] if after.startswith(before) else after
    lines = [line for line in added.decode("utf-8", errors="replace").splitlines() if line.strip()]
    shown = "; ".join(line.split("=", 1)[0].split("<<", 1)[0][:60] for line in lines[:3])
    return f"{len(lines)} line(s) written ({shown})" if lines else "changed"


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def become_subreaper() -> bool:
    """Orphans of CMD's processes are reparented here, not to init (Linux; False elsewhere)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def kill_leftovers(group: int) -> int:
    """Kill CMD's process group and every process reparented to this one; reap them. How many were left."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)
    killed: set[int] = set()
    for _ in range(200):  # a killed process's own orphans arrive here next
        children = _children(os.getpid())
        _reap()
        if not children:
            break
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
        time.sleep(0.01)
    _reap()
    return len(killed)


def _children(parent: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()  # after the command name, which may hold spaces
        if len(fields) > 1 and int(fields[1]) == parent and fields[0] != "Z":
            out.append(int(entry.name))
    return out


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def run_confined(argv: Sequence[str], environ: Mapping[str, str]) -> Confined:
    """Run argv away from the runner's command files (module docstring)."""
    dirs = command_file_dirs(environ)
    before = snapshot(dirs)
    temp = Path(tempfile.mkdtemp(prefix="perfgate-pr-temp-"))
    modes = {d: d.stat().st_mode & 0o7777 for d in dirs}
    subreaper = become_subreaper()
    for d in dirs:
        d.chmod(0)
    try:
        child = subprocess.Popen(list(argv), env=confined_environment(environ, dirs, temp), start_new_session=True)
        forward = _forward_signals(child)
        try:
            code = child.wait()
        finally:
            for sig, old in forward.items():
                signal.signal(sig, old)
            killed = kill_leftovers(child.pid)  # its group; with the subreaper, whatever left the group too
    finally:
        for d, mode in modes.items():
            d.chmod(mode)
    refused = put_back(dirs, before)
    _copy_summary(temp / "step_summary.md", environ.get("GITHUB_STEP_SUMMARY", ""))
    shutil.rmtree(temp, ignore_errors=True)
    return Confined(REFUSED if refused else code, refused, killed, subreaper)


def _forward_signals(child: subprocess.Popen[bytes]) -> dict[signal.Signals, Any]:
    """A cancelled job's SIGTERM / SIGINT reaches CMD's whole session."""

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signum)

    return {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT)}


def _copy_summary(source: Path, target: str) -> None:
    """CMD's step summary into the step's own, within what the runner accepts."""
    if not target or not source.is_file() or source.is_symlink():
        return
    room = STEP_SUMMARY_BYTES - (os.path.getsize(target) if os.path.isfile(target) else 0)
    if room > 0:
        with open(target, "ab") as out:
            out.write(source.read_bytes()[:room])
