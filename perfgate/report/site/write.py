"""`perfgate report --html DIR`: the history -> a static site (overview, a page per case, a page per run).

The site is built in a fresh directory beside DIR and moved into place whole, so a reader never sees half
a site, and DIR is replaced only when it is empty or a site this command wrote (it holds `.perfgate-site`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from perfgate.atomic import make_dir
from perfgate.config.settings import Settings
from perfgate.errors import PerfgateError
from perfgate.report.scrub import Scrubber, export_scrubber
from perfgate.report.site import pages
from perfgate.report.site.case_data import CaseDigest, case_payload
from perfgate.report.site.history_data import RunMeta, case_ids, case_series, latest_runs_by_device, load_runs
from perfgate.report.site.links import case_page
from perfgate.report.site.run_pages import RunPageBuilder
from perfgate.store import Store
from perfgate.trends.changepoints import ChangePointSettings

MARKER = ".perfgate-site"
ASSETS = (
    "site.css",
    "overview.js",
    "case.js",
    "vendor/uPlot.iife.min.js",
    "vendor/uPlot.min.css",
    "vendor/LICENSE-uPlot.txt",
    "vendor/README.txt",
)


@dataclass(frozen=True)
class SiteOptions:
    summaries: int = 100  # run pages that carry the gate summary: the latest N runs (re-gating costs time)
    spark_points: int = 30
    changepoints: ChangePointSettings = field(default_factory=ChangePointSettings)


@dataclass(frozen=True)
class SiteReport:
    out_dir: Path
    cases: int  # (case, device model) rows on the overview
    runs: int
    files: int
    total_bytes: int
    change_points: int
    seconds: float


def write_site(
    store: Store,
    out_dir: Path,
    settings: Settings,
    options: SiteOptions = SiteOptions(),
    clock: Callable[[], float] = time.perf_counter,
) -> SiteReport:
    """Build the whole site from the history; PerfgateError (one line) when DIR cannot be used."""
    started = clock()
    out_dir = Path(out_dir)
    _check_target(out_dir)
    make_dir(out_dir.parent, f"--html {out_dir}")
    try:
        build = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    except OSError as err:  # /proc, a read-only file system
        raise PerfgateError(f"perfgate: --html {out_dir}: cannot write a site there: {err.strerror or err}") from err
    try:
        digests, runs = _build(store, build, settings, options)
        _replace(build, out_dir)
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise
    files = [p for p in out_dir.rglob("*") if p.is_file()]
    return SiteReport(
        out_dir,
        len(digests),
        runs,
        len(files),
        sum(p.stat().st_size for p in files),
        sum(d.change_points for d in digests),
        clock() - started,
    )


def _check_target(out_dir: Path) -> None:
    if out_dir.exists() and not out_dir.is_dir():
        raise PerfgateError(f"perfgate: --html {out_dir}: exists and is not a directory")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not (out_dir / MARKER).is_file():
        raise PerfgateError(
            f"perfgate: --html {out_dir}: the directory holds other files and no {MARKER}; "
            f"name an empty or new directory (the site replaces the directory's contents)"
        )


def _replace(build: Path, out_dir: Path) -> None:
    old = None
    if out_dir.exists():
        old = out_dir.with_name(f".{out_dir.name}.old-{build.name}")
        out_dir.rename(old)
    build.rename(out_dir)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _build(store: Store, build: Path, settings: Settings, options: SiteOptions) -> tuple[list[CaseDigest], int]:
    runs = load_runs(store)
    (build / "case").mkdir()
    (build / "run").mkdir()
    (build / MARKER).write_text(
        "written by perfgate report --html; the next build replaces this directory\n", encoding="utf-8"
    )
    _copy_assets(build / "assets")
    run_pages = RunPageBuilder(store, runs, settings, options.summaries)
    latest = {(cid, runs[rid].device_name): rid for cid, rid in latest_runs_by_device(store)}
    latest_rows = run_pages.latest_rows(latest)
    digests: list[CaseDigest] = []
    published = _Published(export_scrubber(None, False, os.environ))  # a site is published: scrubbed like every output
    for cid in case_ids(store):
        series = case_series(store, cid, runs)
        if not series:
            continue
        payload, case_digests = case_payload(
            cid, series, runs, latest_rows, latest, run_pages.baseline_case, options.changepoints, options.spark_points
        )
        shown = published.scrubber.case_id(cid)
        payload = published.value(payload, cid)
        case_digests = [replace(d, row=published.value(d.row, cid)) for d in case_digests]
        body = pages.case_body(shown, [s.device_name for s in series])
        _write(
            build / case_page(shown),
            pages.page(
                f"{shown}: perfgate",
                "../",
                body,
                ("vendor/uPlot.iife.min.js", "case.js"),
                payload,
                ("vendor/uPlot.min.css",),
            ),
        )
        digests += case_digests
    for run_id in runs:
        run_pages.write(build, run_id)
    _write(build / "index.html", _overview(digests, runs))
    return digests, len(runs)


class _Published:
    """What a case's page data becomes on the site: its id as published (scrub.py), every other text with
    its secrets masked, and the links to its page under the published id (the PR comment links there)."""

    def __init__(self, scrubber: Scrubber) -> None:
        self.scrubber = scrubber

    def value(self, value: Any, case_id: str) -> Any:
        if isinstance(value, str):
            if value == case_id:
                return self.scrubber.case_id(case_id)
            if value == case_page(case_id):
                return case_page(self.scrubber.case_id(case_id))
            return self.scrubber.identifier(value)
        if isinstance(value, dict):
            return {k: self.value(v, case_id) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(v, case_id) for v in value]
        return value


def _overview(digests: list[CaseDigest], runs: Mapping[int, RunMeta]) -> str:
    devices = sorted({d.row["device"] for d in digests})
    if not runs:
        heading, notes = "No runs in the history yet", ["Run the gate (pytest --perfgate) to store one."]
    else:
        heading = f"{len({d.row['case'] for d in digests})} case(s) on {len(devices)} device model(s)"
        notes = [
            f"{len(runs)} run(s) in the history. Regressions and change points first; click a column "
            f"to sort. Verdicts are the latest run's, re-gated against the committed baselines."
        ]
    ordered = sorted((d.row for d in digests), key=lambda r: (r["rank"], -abs(r["change"] or 0.0), r["case"]))
    data = {"devices": devices, "cases": ordered}
    return pages.page("perfgate dashboard", "", pages.overview_body(heading, notes), ("overview.js",), data)


def _copy_assets(dest: Path) -> None:
    source = resources.files("perfgate.report.site") / "assets"
    for name in ASSETS:
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((source / name).read_bytes())


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as err:
        raise PerfgateError(f"perfgate: cannot write {path}: {err.strerror or err}") from err
