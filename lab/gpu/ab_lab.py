"""Shared by the A/B lab scripts (ab_accuracy.py, ab_cost.py, ab_bisect.py): throwaway git projects made
from this checkout's kernel suite, `perfgate ab` / `pytest --perfgate` / `perfgate bisect` run as the
user runs them, timed, with every log kept under $OUT. Nothing here needs the network.

The device's copy of the repository is not a git checkout, and A/B mode compares commits: each script
builds its own small repository under a scratch directory and commits the variants it compares.

$OUT takes few files: each script's logs and JSON go to a scratch folder, packed into $OUT/<script>.tgz
after every step (a command cut short still returns what it finished), and its summary is $OUT/<script>.md.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the perfgate checkout the scripts were sent with
OUT = Path(os.environ.get("OUT", "gpu-results"))
SCRATCH_ROOT = Path(tempfile.gettempdir()) / "perfgate-ab-lab"
SCRIPT = Path(sys.argv[0]).stem  # ab_accuracy, ab_cost, ab_bisect
LOGS = SCRATCH_ROOT / "logs" / SCRIPT
SUITE_FILES = ("kernels", "conftest.py", "pyproject.toml")


def log(line: str) -> None:
    print(line, flush=True)
    with open(LOGS / "lab.log", "a", encoding="utf-8") as fh:
        fh.write(line + "\n")


def archive() -> None:
    """Every log and JSON of this script so far, as $OUT/<script>.tgz."""
    with tarfile.open(OUT / f"{SCRIPT}.tgz", "w:gz") as tar:
        tar.add(LOGS, arcname=SCRIPT)


def write_summary(lines: list[str]) -> None:
    (OUT / f"{SCRIPT}.md").write_text("\n".join(lines) + "\n")
    archive()


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=120, check=True)
    return out.stdout.strip()


def new_project(path: Path, extra: dict[str, str] | None = None, files: tuple[str, ...] = SUITE_FILES) -> Path:
    """A git repository holding the kernel suite (copied from this checkout) plus `extra` {path: text}."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    for name in files:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, path / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(src, path / name)
    for rel, text in (extra or {}).items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    (path / ".gitignore").write_text(".perfgate/\n__pycache__/\n")
    git(path, "init", "-q", "-b", "main")
    for key, value in (("user.email", "lab@perfgate"), ("user.name", "perfgate lab"), ("commit.gpgsign", "false")):
        git(path, "config", key, value)
    return commit(path, "suite")


def commit(repo: Path, message: str, files: dict[str, str] | None = None) -> Path:
    for rel, text in (files or {}).items():
        (repo / rel).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return repo


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD")


def timed(name: str, argv: list[str], cwd: Path, env: dict[str, str], limit_s: float) -> tuple[int, float, str]:
    """Run argv, keep its output in $OUT/<name>.log; (exit status, wall seconds, output). Past `limit_s` it is
    interrupted (SIGINT: perfgate ab stops its workers, which lead their own sessions and would otherwise go
    on holding the GPU), and 20 s later its process group is killed: status 124."""
    started = time.monotonic()
    with subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    ) as proc:
        try:
            text, _ = proc.communicate(timeout=max(1.0, limit_s))
            code = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                text, _ = proc.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                text, _ = proc.communicate()
            code = 124
    wall = time.monotonic() - started
    (LOGS / f"{name}.log").write_text(text or "")
    log(f"{name}: exit {code}, {wall:.1f} s")
    archive()
    return code, wall, text or ""


def perfgate_ab(
    name: str,
    repo: Path,
    base: str,
    pytest_args: list[str],
    worktrees: Path,
    env: dict[str, str],
    limit_s: float,
    *extra: str,
) -> tuple[int, float, dict]:
    """`perfgate ab BASE --json ... -- PYTEST_ARGS` in `repo`: (status, wall seconds, the JSON results)."""
    out_json = LOGS / f"{name}.json"
    out_json.unlink(missing_ok=True)
    argv = [
        sys.executable,
        "-m",
        "perfgate",
        "ab",
        base,
        "--json",
        str(out_json),
        "--no-store",
        "--worktree-dir",
        str(worktrees),
        *extra,
        "--",
        "-p",
        "no:randomly",
        *pytest_args,
    ]
    code, wall, text = timed(name, argv, repo, env, limit_s)
    for line in text.splitlines():
        if line.startswith(("perfgate: A/B cost", "perfgate: A/B gate", "perfgate: A/B: base")):
            log(f"  {line}")
    doc = json.loads(out_json.read_text()) if out_json.is_file() else {}
    return code, wall, doc


def spins(repo: Path, cases_dir: str, module: str, levels: dict[str, float], host: bool = False) -> dict[str, dict]:
    """Each injected slot's spin, measured once in the project against the case itself (spin_calibration.py):
    {"<case>-<slot>": {"cycles" or "seconds", "case_ms", "measured_pct", "curve"}}."""
    names = sorted({key.rsplit("-", 1)[0] for key in levels})
    argv = [sys.executable, str(Path(__file__).with_name("spin_calibration.py")), cases_dir, module]
    argv += [json.dumps(names), json.dumps(levels), *(["--host"] if host else [])]
    out = subprocess.run(argv, cwd=repo, capture_output=True, text=True, timeout=300, check=False)
    (LOGS / "calibrate.log").write_text(out.stdout + out.stderr)
    if out.returncode != 0:
        raise SystemExit(f"lab: the spin calibration failed (exit {out.returncode}): {out.stderr[-2000:]}")
    found: dict[str, dict] = json.loads(out.stdout.strip().splitlines()[-1])
    for key, e in sorted(found.items()):
        size = f"{e['cycles']} cycles" if "cycles" in e else f"{1e6 * e['seconds']:.1f} us"
        log(f"lab: spin {key}: {size} after {1000 * e['case_ms']:.1f} us: measured {e['measured_pct']:+.2f}%")
    return found


def case_slot(case_id: str) -> tuple[str, str]:
    """`ab_cases/test_x.py::test_case[cublas_matmul-2a]` -> ("cublas_matmul", "2a")."""
    inner = case_id.rsplit("[", 1)[-1].rstrip("]")
    case, slot = inner.rsplit("-", 1)
    return case, slot


def env_with(**values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PERFGATE_DB", "GITHUB_STEP_SUMMARY")}
    env.update(values)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def check_tools(gpu: bool = True) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(LOGS, ignore_errors=True)
    LOGS.mkdir(parents=True)
    for tool in ("git", "nvidia-smi") if gpu else ("git",):
        if shutil.which(tool) is None:
            raise SystemExit(f"lab: {tool} is not on PATH")
    name = (
        subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout.strip()
        if gpu
        else "no GPU"
    )
    log(f"lab: {name}; python {sys.version.split()[0]}; checkout {ROOT}")
