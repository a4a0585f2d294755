"""The history at scale (issue 21 requirements 1-2, issue 17's noise window), for scripts/bench_scale.py:
bytes per case-run beside a plain SQLite table and a numpy file of the same samples, prune + VACUUM,
the composite action's post-step at 1k and 10k stored runs, and the noise-window query at 1,000 cases x
1,000 runs. Every history is built through the store's own API (save_runs); every timed command runs in
a fresh interpreter, as CI runs it, and its wall time is what the row shows.

    python scripts/bench_history.py [--runs 1000,10000] [--out history.md]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
REPEATS = 5

BUILD = """
import numpy as np
from dataclasses import replace
from pathlib import Path
from perfgate.model import Verdict
from perfgate.store import open_store
from perfgate.store.verdicts import MetricVerdict, RunVerdicts
from tests.helpers import make_run
rng = np.random.default_rng(SEED)
ids = [f"kernels/tests/test_kernels.py::test_kernel[{i}-float16-4096]" for i in range(CASES)]
passed = RunVerdicts(False, tuple(MetricVerdict(c, "median_ms", "", Verdict.UNCHANGED, 0.1, 3.0) for c in ids))
plain = []
with open_store(Path(DB)) as store:
    batch = []
    for r in range(RUNS):
        values = rng.normal(1.0, 0.01, (CASES, SAMPLES))
        run = make_run({c: row.tolist() for c, row in zip(ids, values)})
        when = f"2026-{1 + r * 12 // RUNS:02d}-01T00:00:00+00:00"
        run = replace(run, info=replace(run.info, git_branch="main", started_at=when, finished_at=when,
                                        git_commit=f"{r:040x}"))
        batch.append((run, passed))
        if PLAIN:
            plain.append(values)
        if len(batch) == 200:
            store.save_runs(batch)
            batch = []
    if batch:
        store.save_runs(batch)
    uid = store.load_run().info.run_uid
Path(DB + ".json").write_text('{"run": {"run_uid": "%s"}}' % uid)
if PLAIN:  # the same samples, plain: one packed blob per (run, case) in SQLite, and one numpy file
    import sqlite3
    con = sqlite3.connect(DB + ".plain")
    con.execute("CREATE TABLE samples (run_id INTEGER, case_id TEXT, samples BLOB, PRIMARY KEY (run_id, case_id))")
    con.executemany("INSERT INTO samples VALUES (?, ?, ?)",
                    ((r, c, v.astype("<f8").tobytes()) for r, values in enumerate(plain) for c, v in zip(ids, values)))
    con.commit()
    con.execute("VACUUM")
    con.close()
    np.save(DB + ".npy", np.asarray(plain))
"""

WINDOW = """
import time
from pathlib import Path
from perfgate.store import open_store
from perfgate.store.window import recent_passing_gate_medians
from tests.helpers import ENV
t0 = time.perf_counter()
with open_store(Path(DB), readonly=True) as store:
    opened = time.perf_counter()
    ids = [r["case_id"] for r in store.query("SELECT DISTINCT case_id FROM cases WHERE run_id = 1")]
    t1 = time.perf_counter()
    window = recent_passing_gate_medians(store, ENV.comparability_key(), "main", 30, ids)
    t2 = time.perf_counter()
    assert len(window) == len(ids) and all(len(v) == 30 for v in window.values()), "window short"
    plain = store.query("SELECT case_id, median_ms FROM cases WHERE run_id > (SELECT max(id) - 30 FROM runs)")
    t3 = time.perf_counter()
    assert len(plain) == 30 * len(ids)
print(t2 - t1, t3 - t2, opened - t0)
"""

PLAIN_EXPORT = """
import sqlite3, sys
con = sqlite3.connect(OUT)
con.execute("ATTACH DATABASE ? AS src", (SRC,))
con.execute("CREATE TABLE samples AS SELECT * FROM src.samples WHERE run_id = (SELECT max(run_id) FROM src.samples)")
con.commit()
"""

PLAIN_PRUNE = """
import sqlite3
con = sqlite3.connect(SRC)
con.execute("DELETE FROM samples WHERE run_id < (SELECT max(run_id) FROM samples) - ? + 1", (KEEP,))
con.commit()
con.execute("VACUUM")
"""


def define(code: str, **names: object) -> str:
    return "\n".join(f"{k} = {v!r}" for k, v in names.items()) + "\n" + textwrap.dedent(code)


def run(argv: list[str], src: Path, cwd: Path | None = None) -> tuple[float, str]:
    """Wall seconds and stdout of a fresh interpreter (perfgate from `src`)."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    t0 = time.perf_counter()
    proc = subprocess.run([PY, *argv], capture_output=True, text=True, env=env, cwd=cwd, check=False, timeout=3600)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[:3]} failed: {proc.stderr[-2000:]}")
    return wall, proc.stdout


def build(db: Path, runs: int, cases: int, samples: int, src: Path, plain: bool = False) -> float:
    wall, _ = run(
        ["-c", define(BUILD, DB=str(db), RUNS=runs, CASES=cases, SAMPLES=samples, SEED=runs, PLAIN=plain)], src, cwd=src
    )
    return wall


def size_rows(src: Path, tmp: Path, runs: int = 1000, cases: int = 20, samples: int = 200) -> list[dict[str, object]]:
    db = tmp / f"size-{runs}.db"
    build(db, runs, cases, samples, src, plain=True)
    run(["-m", "perfgate", "db", "prune", "--db", str(db), "--keep-runs", str(runs)], src, cwd=tmp)  # VACUUM
    n = runs * cases
    ours = db.stat().st_size / n
    plain_sql = Path(f"{db}.plain").stat().st_size / n
    npy = Path(f"{db}.npy").stat().st_size / n
    return [
        {
            "measure": f"bytes per case-run, {samples} samples ({runs:,} runs x {cases} cases)",
            "perfgate": f"{ours:,.0f} B",
            "reference": f"{plain_sql:,.0f} B (SQLite blob table) / {npy:,.0f} B (.npy)",
            "ratio": f"{ours / plain_sql:.2f}x",
        }
    ]


def action_rows(src: Path, tmp: Path, sizes: list[int], cases: int = 20, samples: int = 200) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    points: dict[str, list[tuple[int, float]]] = {"post-step": [], "prune": [], "plain prune": []}
    for runs in sizes:
        db = tmp / f"action-{runs}.db"
        build(db, runs, cases, samples, src, plain=True)
        posts, refs = [], []
        for i in range(REPEATS):  # the median of several: a whole command is a fraction of a second
            out = tmp / f"job-{runs}-{i}.db"
            post, text = run(
                ["-m", "perfgate", "db", "export", str(out), "--db", str(db), "--results", f"{db}.json"], src, cwd=tmp
            )
            assert "exported 1 run(s)" in text, text
            posts.append(post)
            refs.append(
                run(["-c", define(PLAIN_EXPORT, OUT=str(tmp / f"plain-job-{runs}-{i}.db"), SRC=f"{db}.plain")], src)[0]
            )
        post, ref = statistics.median(posts), statistics.median(refs)
        size_mb = (
            db.stat().st_size + Path(f"{db}-wal").stat().st_size if Path(f"{db}-wal").exists() else db.stat().st_size
        ) / 1e6
        rows.append(
            {
                "measure": f"action post-step (db export of this run), {runs:,} stored runs ({size_mb:,.0f} MB), "
                f"median of {REPEATS}",
                "perfgate": f"{post:.2f} s",
                "reference": f"{ref:.2f} s (ATTACH + INSERT SELECT, plain table)",
                "ratio": f"{post / ref:.2f}x",
                "artifact": f"{out.stat().st_size:,} B",
            }
        )
        points["post-step"].append((runs, post))
        keep = runs // 10
        prune, text = run(["-m", "perfgate", "db", "prune", "--db", str(db), "--keep-runs", str(keep)], src, cwd=tmp)
        ref, _ = run(["-c", define(PLAIN_PRUNE, SRC=f"{db}.plain", KEEP=keep)], src)
        rows.append(
            {
                "measure": f"db prune --keep-runs {keep:,} + VACUUM, {runs:,} runs",
                "perfgate": f"{prune:.2f} s",
                "reference": f"{ref:.2f} s (DELETE + VACUUM, plain table)",
                "ratio": f"{prune / ref:.2f}x",
            }
        )
        points["prune"].append((runs, prune))
        points["plain prune"].append((runs, ref))
        for p in db.parent.glob(f"{db.name}*"):
            p.unlink()
    for name, pts in points.items():
        if len(pts) >= 2:
            (x0, y0), (x1, y1) = pts[0], pts[-1]
            rows.append(
                {
                    "measure": f"fitted exponent, {name} ({x0:,} -> {x1:,} runs)",
                    "perfgate": f"{math.log(y1 / y0) / math.log(x1 / x0):.2f}",
                    "reference": "",
                    "ratio": "",
                }
            )
    return rows


def window_rows(
    src: Path, tmp: Path, runs: int = 1000, cases: int = 1000, samples: int = 20
) -> list[dict[str, object]]:
    db = tmp / "window.db"
    build(db, runs, cases, samples, src)
    _, out = run(["-c", define(WINDOW, DB=str(db))], src, cwd=src)
    ours, plain, opened = (float(x) for x in out.split())
    return [
        {
            "measure": f"noise window, W=30, {cases:,} cases x {runs:,} runs (one query)",
            "perfgate": f"{ours:.2f} s",
            "reference": f"{plain:.2f} s (SELECT the last 30 runs' medians, no filters)",
            "ratio": f"{ours / plain:.2f}x",
            "artifact": f"open + verify {opened:.3f} s",
        }
    ]


def render(rows: list[dict[str, object]]) -> str:
    lines = ["| history | perfgate | plain SQLite / numpy | ratio | note |", "|---|---:|---:|---:|---|"]
    lines += [
        f"| {r['measure']} | {r['perfgate']} | {r['reference'] or '-'} | {r['ratio'] or '-'} | "
        f"{r.get('artifact', '')} |"
        for r in rows
    ]
    return "\n".join(lines) + "\n"


def history_scale_rows(src: Path, tmp: Path, sizes: list[int]) -> list[dict[str, object]]:
    return size_rows(src, tmp) + action_rows(src, tmp, sizes) + window_rows(src, tmp)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", default="1000,10000", help="stored runs for the post-step and prune rows")
    parser.add_argument("--perfgate-src", type=Path, default=ROOT)
    parser.add_argument("--only", default="size,action,window")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    sizes = [int(s) for s in args.runs.split(",")]
    only = set(args.only.split(","))
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="perfgate-history-scale-") as tmp:
        if "size" in only:
            rows += size_rows(args.perfgate_src, Path(tmp))
        if "action" in only:
            rows += action_rows(args.perfgate_src, Path(tmp), sizes)
        if "window" in only:
            rows += window_rows(args.perfgate_src, Path(tmp))
    text = render(rows)
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
