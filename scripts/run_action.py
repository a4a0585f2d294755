"""Run the composite action (action.yml) step by step on this machine, as the runner would, and report
each step: for trying the action on a GPU box without GitHub (tests/action_runner.py is the runner).

    python scripts/run_action.py RUNNER_DIR [--pytest-args "kernels/tests/test_perf.py"] [--input k=v ...]

RUNNER_DIR keeps the runner's tool cache (history, Triton and extension caches) between calls, so a
second call shows the warm cost. Prints one line per step (kind, exit status, seconds), the annotations,
and where the results are; then what the trusted report job would decide from them (`perfgate ci verdict
--require-strict`, the check `perfgate ci report` makes before it sets the commit status).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.action_runner import run_action  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runner_dir", type=Path)
    parser.add_argument("--pytest-args", default="kernels/tests/test_perf.py -p no:cacheprovider")
    parser.add_argument("--input", action="append", default=[], help="another action input, name=value")
    args = parser.parse_args()
    args.runner_dir.mkdir(parents=True, exist_ok=True)
    inputs = {
        "pytest-args": args.pytest_args,
        "python": sys.executable,
        "install": "false",
        **dict(item.split("=", 1) for item in args.input),
    }
    started = time.monotonic()
    job = run_action(inputs, ROOT, args.runner_dir, timeout_s=1500)
    wall = time.monotonic() - started
    for i, step in enumerate(job.steps):
        print(f"step {i}: {step.kind:7} rc={step.returncode} {step.uses}")
    print("\n".join(line for s in job.steps for line in s.stdout.splitlines() if line.startswith("::")))
    upload = next((s for s in job.steps if s.kind == "uses"), None)
    results = upload.with_["path"] if upload else "-"
    summary = args.runner_dir / f"job-summary-{int(time.time())}.md"
    summary.write_text((args.runner_dir / "summary").read_text())
    print(f"job {'failed' if job.failed else 'passed'} in {wall:.1f} s; results: {results}; job summary: {summary}")
    if upload is not None:
        import subprocess

        verdict = [sys.executable, "-I", "-m", "perfgate", "ci", "verdict", "--require-strict"]
        done = subprocess.run([*verdict, f"{results}/perfgate.json"], check=False, timeout=120)
        print(f"trusted report job: ci verdict exited {done.returncode} (0 success, 1 failure, else error)")
    return 1 if job.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
