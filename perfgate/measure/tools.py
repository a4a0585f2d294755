"""Running external tools: argv lists, a timeout on every call, stderr kept in typed errors."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from perfgate.errors import ToolFailed, ToolMissing

# a profiler carries its own hint (measure/profilers.py); these are the other tools perfgate runs
INSTALL_HINTS = {"git": "install git to record the commit with each run"}


@dataclass(frozen=True)
class ToolOutput:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


def find_tool(name: str, install_hint: str = "") -> str:
    """Absolute path of a tool, or ToolMissing with how to get it."""
    found = shutil.which(name)
    if not found:
        raise ToolMissing(name, install_hint or INSTALL_HINTS.get(name, f"install {name}"))
    return found


def run_tool(
    argv: list[str],
    timeout_s: float,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    check: bool = True,
    pass_fds: tuple[int, ...] = (),
    input_text: str | None = None,
) -> ToolOutput:
    """Run argv; ToolFailed on timeout or (with check) a non-zero exit, with stderr's tail kept. `pass_fds`:
    descriptors the child inherits (every other one is closed in it); `input_text`: its stdin."""
    try:
        proc = subprocess.run(
            argv,
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            errors="replace",
            pass_fds=pass_fds,
            input=input_text,
        )
    except subprocess.TimeoutExpired as err:
        stderr = err.stderr.decode(errors="replace") if isinstance(err.stderr, bytes) else (err.stderr or "")
        raise ToolFailed(argv, None, tail(stderr), timed_out=True) from err
    except FileNotFoundError as err:
        raise ToolMissing(argv[0], INSTALL_HINTS.get(os.path.basename(argv[0]), f"install {argv[0]}")) from err
    if check and proc.returncode != 0:
        raise ToolFailed(argv, proc.returncode, tail(proc.stderr or proc.stdout))
    return ToolOutput(tuple(argv), proc.returncode, proc.stdout, proc.stderr)


def tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])
