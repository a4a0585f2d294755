"""Time and size of the dashboard (`perfgate report --html`) and how fast its pages load in Chromium.

    python scripts/site_bench.py recorded
    python scripts/site_bench.py synthetic --cases 1000 --runs 1000 [--db /tmp/h.db]   # builds the history once
    python scripts/site_bench.py synthetic --cases 10000 --runs 2

Histories come from tests/site_histories.py: the recorded H100 one, or a synthetic one (one H100, process
noise, bimodal cases, steps, speedups, memory, GPU state; the first six runs calibrate the baseline). The
site is written by the command's own function in this process; wall and CPU seconds are both printed (CPU
is the steadier number on a shared machine). Page loads: headless Chromium (Debian's, via Playwright) opens
the overview and the largest case page from file:// and reads the Navigation Timing entry (the load event
comes after the page scripts have built the table and drawn the charts). Results: docs/dashboard.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.site_histories import recorded_h100_history, synthetic_history  # noqa: E402


def build_site(db: Path, baselines: Path, out: Path) -> dict[str, float]:
    from perfgate.config.project import project_settings
    from perfgate.report.site.write import write_site
    from perfgate.store import open_store

    settings = project_settings(out.parent, {"db_path": db, "baseline_dir": baselines})
    wall, cpu = time.perf_counter(), time.process_time()
    with open_store(db, readonly=True) as store:
        report = write_site(store, out, settings)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    cases = sorted((out / "case").glob("*.html"), key=lambda p: p.stat().st_size)
    runs = sorted((out / "run").glob("*.html"), key=lambda p: p.stat().st_size)
    return {
        "series": report.cases,
        "runs": report.runs,
        "files": report.files,
        "mb": report.total_bytes / 1e6,
        "wall_s": wall,
        "cpu_s": cpu,
        "index_kb": (out / "index.html").stat().st_size / 1e3,
        "case_median_kb": cases[len(cases) // 2].stat().st_size / 1e3 if cases else 0.0,
        "case_max_kb": cases[-1].stat().st_size / 1e3 if cases else 0.0,
        "run_max_kb": runs[-1].stat().st_size / 1e3 if runs else 0.0,
        "change_points": report.change_points,
    }


def page_loads(site: Path) -> dict[str, float]:
    """Milliseconds to the load event (scripts done) for the overview and the largest case page."""
    chromium = Path("/usr/bin/chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return {}
    if not chromium.exists():
        return {}
    largest = max((site / "case").glob("*.html"), key=lambda p: p.stat().st_size, default=None)
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            profile,
            executable_path=str(chromium),
            headless=True,
            viewport={"width": 1280, "height": 800},
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        page = ctx.new_page()
        for name, path in (("overview_ms", site / "index.html"), ("case_ms", largest)):
            if path is None:
                continue
            best = float("inf")
            for _ in range(3):  # the best of three: the machine is shared
                page.goto(path.resolve().as_uri())
                best = min(best, float(page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd")))
            out[name] = best
        ctx.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("history", choices=("recorded", "synthetic"))
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--db", type=Path, help="synthetic: reuse (or build once) the history here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="perfgate-site-bench-") as tmp:
        t = Path(tmp)
        if args.history == "recorded":
            db, baselines = recorded_h100_history(t / "history.db", t / "baselines")
        else:
            db = args.db or t / "history.db"
            baselines = db.with_name(db.stem + "-baselines")
            if not db.exists():
                started = time.perf_counter()
                synthetic_history(db, baselines, args.cases, args.runs)
                print(
                    f"history: {args.cases} cases x {args.runs} runs built in {time.perf_counter() - started:.0f} s, "
                    f"{db.stat().st_size / 1e6:.0f} MB"
                )
        result = build_site(db, baselines, t / "site")
        result.update(page_loads(t / "site"))
    print(" | ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in result.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
