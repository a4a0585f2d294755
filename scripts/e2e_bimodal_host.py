"""End to end on the host clock: a suite whose cases are bimodal between processes, calibrated and gated
as a user would, over several independent calibrations.

    python scripts/e2e_bimodal_host.py [--calibrations 3] [--gates 12] [--cases 16] [--out DIR]

Each fresh process lands each case in a slower mode (+GAP_PCT) a third of the time, as GPU kernels do when
a process draws another power state, allocation or autotune outcome; within a process the calls jitter
by 0.3%. Time is a manual clock (tests/manual_clock.py, installed through perfgate/measure/clock.py), so
a call takes exactly the time it declares, on an idle or a busy machine, and every process draws its
modes from its own seed (a counter in the project), so the run is the same every time. Per calibration:
`perfgate calibrate --runs 6`, then `--gates` unchanged `pytest --perfgate` runs (each stored in the
project's history: passing runs feed the noise window), then one run with SLOWED cases 30% slower, which
must fail naming exactly those.

Exit status 1 when more than one unchanged run in 12 failed, or a slowdown was missed or misnamed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GAP_PCT = 4.0
SLOWED = ("c03", "c07", "c11", "c15")
SLOWDOWN = 1.30
TIMEOUT_S = 600.0
# plugins the project never uses, kept out of its ~40 processes (hypothesis's import alone is ~0.8 s of CPU each)
LEAN_ADDOPTS = "-p no:hypothesispytest -p no:benchmark"

# the project's conftest: the manual clock (tests/manual_clock.py, as perfgate's own tests use it), modes
# drawn per process
CONFTEST = (
    (Path(__file__).resolve().parents[1] / "tests" / "manual_clock.py").read_text()
    + '''
import fcntl, os, random
from pathlib import Path

from perfgate.measure import clock

_replaced = []


def _process_index():
    """This process's number in the project: each fresh process (calibration, gate, confirmation) the next."""
    path = Path(__file__).with_name(".process-counter")
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        n = int(fh.read() or 0) + 1
        fh.seek(0)
        fh.truncate()
        fh.write(str(n))
    return n


def pytest_configure(config):
    _replaced.append(clock.install(ManualClock(tick_ns=1000)))
    rng = random.Random(int(os.environ["E2E_SEED"]) * 100_000 + _process_index())
    config.e2e_slow = {f"c{i:02d}": rng.random() < 1 / 3 for i in range(int(os.environ["E2E_CASES"]))}
    config.e2e_rng = rng


def pytest_unconfigure(config):
    clock.install(_replaced.pop())
'''
)

SUITE = """
import os, pytest

CASES = [f"c{i:02d}" for i in range(int(os.environ["E2E_CASES"]))]
SLOWED = set(os.environ.get("E2E_SLOWED", "").split(",")) - {""}


@pytest.mark.parametrize("name", CASES)
def test_case(perfgate, request, name):
    from perfgate.measure import clock

    config = request.config
    base_ms = 2.0 + 0.25 * CASES.index(name)
    mode = 1.0 + (GAP / 100 if config.e2e_slow[name] else 0.0)
    slow = SLOWDOWN if name in SLOWED else 1.0

    def work():
        clock.current().sleep(base_ms * mode * slow * (1 + 0.003 * config.e2e_rng.gauss(0, 1)) / 1e3)

    perfgate(work)
""".replace("GAP", repr(GAP_PCT)).replace("SLOWDOWN", repr(SLOWDOWN))

PYPROJECT = """
[tool.perfgate]
noise_branch = "*"   # this project is no git checkout: every run's branch is ""
warmup_ms = 1
min_samples = 10
max_samples = 20
budget_ms = 40
"""


def _pytest(project: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def one_calibration(root: Path, seed: int, gates: int, cases: int) -> dict[str, object]:
    project = root / f"calibration-{seed}"
    project.mkdir(parents=True)
    (project / "conftest.py").write_text(CONFTEST)
    (project / "test_suite.py").write_text(SUITE)
    (project / "pyproject.toml").write_text(PYPROJECT)
    env = {**os.environ, "E2E_SEED": str(seed), "E2E_CASES": str(cases), "PYTEST_ADDOPTS": LEAN_ADDOPTS}
    env.pop("PERFGATE_DB", None)
    env.pop("GITHUB_STEP_SUMMARY", None)
    cal = subprocess.run(
        [sys.executable, "-m", "perfgate", "calibrate", "--runs", "6", "--reason", "e2e"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    if cal.returncode != 0:
        raise SystemExit(f"calibration {seed} failed: {cal.stdout[-2000:]}{cal.stderr[-2000:]}")
    failed = []
    for i in range(gates):
        gate = _pytest(project, env, "--perfgate", "--perfgate-json", f"gate-{i}.json")
        if gate.returncode not in (0, 1):
            raise SystemExit(f"calibration {seed} gate {i}: pytest exited {gate.returncode}: {gate.stdout[-2000:]}")
        if gate.returncode == 1:
            failed.append(_failing(project / f"gate-{i}.json"))
    slowed = _pytest(project, {**env, "E2E_SLOWED": ",".join(SLOWED)}, "--perfgate", "--perfgate-json", "slowed.json")
    caught = sorted(_failing(project / "slowed.json")) if slowed.returncode == 1 else []
    return {
        "seed": seed,
        "unchanged_runs": gates,
        "failed_runs": len(failed),
        "failed_cases": failed,
        "slowed": list(SLOWED),
        "caught": caught,
    }


def _failing(path: Path) -> list[str]:
    doc = json.loads(path.read_text())
    return sorted(
        {
            c["case_id"].rsplit("[", 1)[-1].rstrip("]")
            for c in doc["comparisons"]
            if c.get("gated", True) and c["verdict"] in ("regressed", "below target")
        }
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calibrations", type=int, default=3, help="independent calibrations (a new project each)")
    p.add_argument("--gates", type=int, default=12, help="unchanged gate runs after each calibration")
    p.add_argument("--cases", type=int, default=16)
    p.add_argument("--out", type=Path, help="keep the projects here (default: a temporary directory)")
    args = p.parse_args(argv)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="perfgate-e2e-") as tmp:
        root = args.out or Path(tmp)
        results = [one_calibration(root, seed, args.gates, args.cases) for seed in range(1, args.calibrations + 1)]
    runs = sum(int(r["unchanged_runs"]) for r in results)  # type: ignore[call-overload]
    failures = sum(int(r["failed_runs"]) for r in results)  # type: ignore[call-overload]
    for r in results:
        print(
            f"calibration {r['seed']}: {r['failed_runs']}/{r['unchanged_runs']} unchanged runs failed "
            f"{r['failed_cases']}; slowed {r['slowed']} -> caught {r['caught']}"
        )
    missed = [r for r in results if r["caught"] != sorted(SLOWED)]
    print(
        f"e2e bimodal host suite: {failures}/{runs} unchanged runs failed (target <= {runs // 12}), "
        f"{len(results) - len(missed)}/{len(results)} slowdowns caught exactly, {time.monotonic() - started:.0f} s"
    )
    return 0 if failures <= runs // 12 and not missed else 1


if __name__ == "__main__":
    sys.exit(main())
