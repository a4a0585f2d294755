"""What one push costs the dashboard: a full build of a synthetic history, then the build after one more run
(a push that measured every case, and one that measured a few), incremental against full.

    python scripts/site_incremental_bench.py --cases 300 --runs 100 [--touched 5]

The history is tests/site_histories.py's synthetic one (one H100; the first six runs calibrate the baseline).
CPU seconds of this process (the steadier number on a shared machine) and wall seconds; pages written by
each build. Results: docs/dashboard.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.site_histories import synthetic_history  # noqa: E402


def build(db: Path, baselines: Path, out: Path) -> tuple[float, float, int, bool]:
    from perfgate.config.project import project_settings
    from perfgate.report.site.write import write_site
    from perfgate.store import open_store

    settings = project_settings(out.parent, {"db_path": db, "baseline_dir": baselines})
    wall, cpu = time.perf_counter(), time.process_time()
    with open_store(db, readonly=True) as store:
        report = write_site(store, out, settings)
    return time.perf_counter() - wall, time.process_time() - cpu, report.pages_written, report.full


def push(db: Path, run_id: int, touched: int | None) -> None:
    """One more run: run `run_id` again under a new identity, with `touched` of its cases (None: all)."""
    from perfgate.store import open_store

    with open_store(db) as store:
        last = store.load_run(run_id)
        results = last.results if touched is None else last.results[:touched]
        info = replace(last.info, run_uid=f"{last.info.run_uid}-push-{time.perf_counter_ns()}")
        store.save_run(replace(last, info=info, results=results))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--touched", type=int, default=5, help="cases the small push measured")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="perfgate-site-inc-") as tmp:
        db, baselines = synthetic_history(Path(tmp) / "h.db", Path(tmp) / "b", args.cases, args.runs)
        site = Path(tmp) / "site"
        rows = [("full build", *build(db, baselines, site))]
        push(db, args.runs, args.touched)
        rows.append((f"a push measuring {args.touched} case(s)", *build(db, baselines, site)))
        push(db, args.runs, None)
        rows.append((f"a push measuring all {args.cases} cases", *build(db, baselines, site)))
        rows.append(("full build of the same history", *build(db, baselines, Path(tmp) / "fresh")))
    print(f"{args.cases} cases x {args.runs} runs")
    print("| build | wall s | CPU s | pages written | full |")
    print("|---|---:|---:|---:|---|")
    for name, wall, cpu, written, full in rows:
        print(f"| {name} | {wall:.2f} | {cpu:.2f} | {written} | {'yes' if full else 'no'} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
