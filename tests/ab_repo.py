"""Small git repositories whose commits declare stand-in workers' times (tests/ab_standin.py), and the
launcher that starts those stand-ins: A/B mode and bisect tested end to end without a GPU or a clock."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from perfgate.ab.setup import AbRequest
from perfgate.ab.workers import WorkerSpec
from perfgate.config.settings import Settings
from perfgate.model import AbProcess

STANDIN = Path(__file__).with_name("ab_standin.py")


class StandinLauncher:
    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.launched: dict[str, int] = {}  # side -> workers started so far (a fresh pair is the second)
        self.started: list[WorkerSpec] = []  # every worker's spec, in the order they started

    def argv(self, spec: WorkerSpec) -> list[str]:
        self.started.append(spec)
        n = self.launched[spec.side.name] = self.launched.get(spec.side.name, -1) + 1
        seed = f"{self.seed}" if n == 0 else f"{self.seed}.{n}"
        return [sys.executable, str(STANDIN), str(spec.tree), spec.side.name, seed, "--", *spec.pytest_args]


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, timeout=60)
    return out.stdout.strip()


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "t@example.com")
    git(path, "config", "user.name", "t")
    git(path, "config", "commit.gpgsign", "false")
    return path


def commit(repo: Path, spec: dict[str, Any], message: str) -> str:
    """Write standin.json and commit it; the commit's sha."""
    (repo / "standin.json").write_text(json.dumps(spec, indent=1, sort_keys=True))
    git(repo, "add", "standin.json")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def cases(times: dict[str, float], **extra: Any) -> dict[str, Any]:
    """A stand-in spec: one perf test per case, each measuring its own case."""
    return {
        "tests": {f"test_perf.py::{name}": {f"test_perf.py::{name}": ms} for name, ms in times.items()},
        "noise_pct": 0.3,
        **extra,
    }


def request(repo: Path, ref: str, tmp: Path, seed: int = 1, **settings: Any) -> AbRequest:
    s = Settings(
        enabled=True,
        worktree_dir=tmp / "worktrees",
        db_path=tmp / "history.db",
        rootdir=repo,
        baseline_dir=repo / "baselines",  # as [tool.perfgate] resolves it: under the project root
        # stand-ins are a process per worker (tests/ab_standin.py); the shared host is tested with real
        # pytest workers (tests/test_ab_shared.py)
        **{"ab_rounds": 6, "ab_timeout_s": 60.0, "ab_process": AbProcess.SEPARATE, **settings},
    )
    return AbRequest(
        ref=ref, pytest_args=(), settings=s, invocation_dir=repo, launcher=StandinLauncher(seed), seed=seed
    )
