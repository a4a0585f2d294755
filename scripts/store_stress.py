"""Concurrency and crash evidence for the history (issue 8): nothing lost, no half run.

    python scripts/store_stress.py [--runs-per-process 10] [--kills 50] [--out store_stress.md]

1. 2, 4 and 8 processes store runs (20 cases x 200 samples each) to one history at the same time:
   runs stored vs attempted, failures, `PRAGMA integrity_check`.
2. `kill -9` of a process in the middle of storing (a random moment within a store of 400 cases),
   repeated --kills times on one history: after each kill the integrity check passes and every run that
   is visible is whole (all its cases, all their samples); a later store still works.

The store's contract is one `BEGIN IMMEDIATE` transaction per run in WAL mode (perfgate/store).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SAMPLES = 200


def _make_run(n_cases: int, seed: int) -> object:
    from tests.helpers import make_run

    rng = random.Random(seed)
    return make_run({f"test_case_{j}": [1.0 + rng.random() * 0.01 for _ in range(SAMPLES)] for j in range(n_cases)})


def _store_many(args: tuple[str, int, int]) -> tuple[int, list[str]]:
    """One worker: store `n` runs, count the ones that made it and the one-line errors of the others."""
    from perfgate.errors import PerfgateError
    from perfgate.store import open_store

    path, n, seed = args
    stored, errors = 0, []
    for i in range(n):
        try:
            with open_store(Path(path)) as store:
                store.save_run(_make_run(20, seed * 1000 + i))  # type: ignore[arg-type]
            stored += 1
        except PerfgateError as err:
            errors.append(str(err))
    return stored, errors


def concurrency(processes: int, runs_each: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="perfgate-stress-") as tmp:
        path = Path(tmp) / "history.db"
        t0 = time.perf_counter()
        with multiprocessing.get_context("spawn").Pool(processes) as pool:
            results = pool.map(_store_many, [(str(path), runs_each, p) for p in range(processes)])
        wall_s = time.perf_counter() - t0
        con = sqlite3.connect(path)
        runs = con.execute("SELECT count(*) FROM runs").fetchone()[0]
        cases = con.execute("SELECT count(*) FROM cases").fetchone()[0]
        integrity = con.execute("PRAGMA integrity_check").fetchone()[0]
        con.close()
    errors = [e for _, errs in results for e in errs]
    return {
        "processes": processes,
        "attempted": processes * runs_each,
        "stored": runs,
        "reported_stored": sum(s for s, _ in results),
        "cases": cases,
        "failures": len(errors),
        "first_error": errors[0] if errors else "",
        "integrity": integrity,
        "wall_s": wall_s,
    }


_CHILD = """
import sys
sys.path.insert(0, {root!r})
from pathlib import Path
from perfgate.store import open_store
sys.path.insert(0, {scripts!r})
from store_stress import _make_run
run = _make_run(400, {seed})
print("ready", flush=True)
with open_store(Path({path!r})) as store:
    while True:
        store.save_run(run)
"""


def _whole_runs(path: Path, n_cases: int) -> tuple[int, int, str]:
    """(runs visible, runs that are not whole, integrity) as a new reader sees the history."""
    con = sqlite3.connect(path)
    try:
        integrity = con.execute("PRAGMA integrity_check").fetchone()[0]
        runs = con.execute("SELECT count(*) FROM runs").fetchone()[0]
        per_run = con.execute("SELECT run_id, count(*) FROM cases GROUP BY run_id").fetchall()
        per_case = con.execute("SELECT run_id, case_id, count(*) FROM samples GROUP BY run_id, case_id").fetchall()
    finally:
        con.close()
    broken = sum(1 for _, n in per_run if n != n_cases) + (runs - len(per_run))
    broken += sum(1 for _, _, n in per_case if n != SAMPLES)
    return runs, broken, integrity


def kill_during_store(kills: int, seed: int) -> dict[str, object]:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="perfgate-kill-") as tmp:
        path = Path(tmp) / "history.db"
        worst: list[str] = []
        runs = broken = 0
        for k in range(kills):
            code = _CHILD.format(root=str(ROOT), scripts=str(ROOT / "scripts"), seed=k, path=str(path))
            child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
            assert child.stdout is not None
            child.stdout.readline()  # the run is built; storing starts now
            time.sleep(rng.uniform(0.05, 1.5))
            os.kill(child.pid, signal.SIGKILL)
            child.wait(timeout=30)
            runs, broken_now, integrity = _whole_runs(path, 400)
            broken = max(broken, broken_now)
            if integrity != "ok":
                worst.append(f"kill {k}: integrity {integrity}")
        # the history still takes a run after 50 kills
        stored, errors = _store_many((str(path), 1, 99))
        after, _, _ = _whole_runs(path, 400)
    return {
        "kills": kills,
        "runs_visible": runs,
        "half_runs": broken,
        "integrity_failures": len(worst),
        "store_after": f"{stored} stored, {len(errors)} errors",
        "runs_after": after,
    }


def _table(conc: list[dict[str, object]], kill: dict[str, object]) -> str:
    lines = [
        "| processes | runs attempted | runs stored | failures | cases stored | integrity | wall |",
        "|---:|---:|---:|---:|---:|---|---:|",
    ]
    for r in conc:
        lines.append(
            f"| {r['processes']} | {r['attempted']} | {r['stored']} | {r['failures']} | {r['cases']} | "
            f"{r['integrity']} | {r['wall_s']:.1f} s |"
        )
        if r["first_error"]:
            lines.append(f"|  | first error: {r['first_error']} | | | | | |")
    lines += [
        "",
        f"`kill -9` during a store (400 cases x {SAMPLES} samples per run), {kill['kills']} times on one "
        f"history: runs visible afterwards {kill['runs_visible']}, half runs visible {kill['half_runs']}, "
        f"integrity-check failures {kill['integrity_failures']}; a store after the last kill: "
        f"{kill['store_after']}.",
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs-per-process", type=int, default=10)
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    conc = [concurrency(p, args.runs_per_process) for p in (2, 4, 8)]
    kill = kill_during_store(args.kills, args.seed)
    text = _table(conc, kill)
    print(text)
    if args.out:
        args.out.write_text(text)
    lost = any(r["stored"] != r["attempted"] for r in conc)
    return 1 if lost or kill["half_runs"] or kill["integrity_failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
