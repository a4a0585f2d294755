"""Writing the site's pages into a build directory: every page on a full build, on an incremental one only the
pages of the cases, runs and A/B comparisons that changed (incremental.SiteChanges); the overview, the
regressions list and the choosers always, from the manifest's digests of the cases left as they were."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from perfgate.config.settings import Settings
from perfgate.report.scrub import Scrubber, export_scrubber
from perfgate.report.site import ab_pages, compare, pages, regressions
from perfgate.report.site.case_data import CaseDigest, case_payload
from perfgate.report.site.history_data import RunMeta, case_ids, case_series, latest_runs_by_device, load_runs
from perfgate.report.site.incremental import MANIFEST, Manifest, SiteChanges
from perfgate.report.site.kernels_data import case_kernels
from perfgate.report.site.links import case_page
from perfgate.report.site.project import Project
from perfgate.report.site.run_pages import RunPageBuilder
from perfgate.store import Store
from perfgate.trends.changepoints import ChangePointSettings

MARKER = ".perfgate-site"
ASSETS = (
    "site.css",
    "overview.js",
    "case.js",
    "compare.js",
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
    ab_pairs: int = ab_pages.MAX_LISTED  # A/B comparisons listed (and given a page when new)


@dataclass(frozen=True)
class Built:
    rows: int  # (case, device model) rows on the overview
    runs: int
    change_points: int
    pages_written: int


class SiteBuild:
    def __init__(
        self, store: Store, build: Path, settings: Settings, options: SiteOptions, project: Project, key: str
    ) -> None:
        self.store, self.build, self.settings, self.options = store, build, settings, options
        self.project, self.key = project, key
        self.written = 0
        self.case_ids: list[str] = []
        # a site is published: scrubbed like every output (report/scrub.py; secret values from the environment)
        self.published = Published(export_scrubber(None, False, os.environ))

    def run(self, previous: Manifest | None, changes: SiteChanges) -> Built:
        runs = load_runs(self.store)
        self.case_ids = case_ids(self.store)
        self.published.scrubber.reserve(self.case_ids)  # a literal `t[***]` keeps its name, a masked id is apart
        for sub in ("case", "run", "data", "ab"):
            (self.build / sub).mkdir(exist_ok=True)
        pages.write_page(
            self.build / MARKER, "written by perfgate report --html; the next build replaces this directory\n"
        )
        copy_assets(self.build / "assets")
        kept = {} if changes.full or previous is None else previous.cases
        redo = None if changes.full else changes.cases
        cases = self._case_pages(runs, redo, kept)
        new_runs = sorted(runs) if changes.full or previous is None else list(changes.new_runs)
        self._run_pages(runs, new_runs)
        digests = [d for ds in cases.values() for d in ds]
        done = set() if changes.full or previous is None else set(previous.ab_pairs)
        pairs = self._ab_pages(done, frozenset(d["row"]["case"] for d in digests))
        self._overview(digests, runs)
        self._regressions(digests)
        self._compare(digests, runs)
        manifest = Manifest(self.key, frozenset(runs), cases, frozenset(pairs), changes.mark, changes.mark_uid)
        pages.write_page(self.build / MANIFEST, manifest.to_json())
        return Built(len(digests), len(runs), sum(d["change_points"] for d in digests), self.written)

    def _case_pages(
        self, runs: dict[int, RunMeta], redo: frozenset[str] | None, kept: dict[str, list[dict[str, Any]]]
    ) -> dict[str, list[dict[str, Any]]]:
        """Each case's digests (JSON-ready): written anew for the cases in `redo` (all when None), else kept."""
        self.run_pages = RunPageBuilder(self.store, runs, self.settings, self.options.summaries, self.project)
        latest = {
            (cid, runs[rid].device_name): rid
            for cid, rid in latest_runs_by_device(self.store)
            if redo is None or cid in redo
        }
        latest_rows = self.run_pages.latest_rows(latest)
        out: dict[str, list[dict[str, Any]]] = {}  # keyed by case_key: the manifest is published too
        for cid in self.case_ids:
            key = case_key(cid)
            if redo is not None and cid not in redo and key in kept:
                out[key] = kept[key]
                continue
            series = case_series(self.store, cid, runs)
            if not series:
                continue
            payload, case_digests = case_payload(
                cid,
                series,
                runs,
                latest_rows,
                latest,
                self.run_pages.baseline_case,
                self.options.changepoints,
                self.options.spark_points,
                case_kernels(self.store, cid, runs),
            )
            shown = self.published.scrubber.case_id(cid)
            payload = self.published.value(payload, cid) | {"repo": self.project.repo_url}
            body = pages.case_body(shown, [s.device_name for s in series], self.project.name)
            styles = ("vendor/uPlot.min.css",)
            page = pages.page(
                self.project.title(shown), "../", body, ("vendor/uPlot.iife.min.js", "case.js"), payload, styles
            )
            self._write(self.build / case_page(shown), page)
            out[key] = [self.published.value(_digest_json(d), cid) for d in case_digests]
        return out

    def _run_pages(self, runs: dict[int, RunMeta], new_runs: list[int]) -> None:
        for run_id in new_runs:
            self.run_pages.write(self.build, run_id)
            compare.write_run_data(self.store, self.build, run_id, runs[run_id], self.published.scrubber)
            self.written += 1

    def _ab_pages(self, done: set[str], paged: frozenset[str]) -> set[str]:
        from perfgate.store.ab_pairs import ab_comparisons

        text = self.published.scrubber.identifier
        listed = [
            replace(
                r, head_commit=text(r.head_commit), base_commit=text(r.base_commit), device_name=text(r.device_name)
            )
            for r in ab_comparisons(self.store, self.options.ab_pairs)
        ]
        nav = pages.nav("../", "A/B comparison", self.project.name)
        for row in listed:
            if row.pair in done:
                continue
            record = ab_pages.load_pair(self.store, row.pair)
            if record is not None:
                page = pages.page(
                    self.project.title("A/B comparison"),
                    "../",
                    ab_pages.pair_body(
                        nav, row, ab_pages.scrubbed(record, self.published.scrubber), self.project, paged
                    ),
                )
                self._write(self.build / ab_pages.ab_page(row.pair), page)
        body = ab_pages.list_body(pages.nav("", "A/B", self.project.name), listed, self.project)
        pages.write_page(self.build / "ab.html", pages.page(self.project.title("A/B comparisons"), "", body))
        return done | {row.pair for row in listed}

    def _overview(self, digests: list[dict[str, Any]], runs: dict[int, RunMeta]) -> None:
        rows = [d["row"] for d in digests]
        devices = sorted({r["device"] for r in rows})
        if not runs:
            heading, notes = "No runs in the history yet", ["Run the gate (pytest --perfgate) to store one."]
        else:
            heading = f"{len({r['case'] for r in rows})} case(s) on {len(devices)} device model(s)"
            notes = [
                f"{len(runs)} run(s) in the history. Regressions and change points first; click a column "
                f"to sort. Verdicts are the latest run's, re-gated against the committed baselines."
            ]
        ordered = sorted(rows, key=lambda r: (r["rank"], -abs(r["change"] or 0.0), r["case"]))
        data = {"devices": devices, "cases": ordered, "repo": self.project.repo_url}
        body = pages.overview_body(heading, notes, self.project.name)
        page = pages.page(self.project.title("dashboard"), "", body, ("overview.js",), data)
        pages.write_page(self.build / "index.html", page)

    def _regressions(self, digests: list[dict[str, Any]]) -> None:
        entries = [e for d in digests for e in d["regressions"]]
        body = regressions.body(pages.nav("", "regressions", self.project.name), entries, self.project.repo_url)
        pages.write_page(self.build / "regressions.html", pages.page(self.project.title("regressions"), "", body))

    def _compare(self, digests: list[dict[str, Any]], runs: dict[int, RunMeta]) -> None:
        detects: dict[str, float | None] = {}
        for d in digests:  # a case on several device models: the largest threshold (the least it claims)
            value = d["row"]["detects"]
            if value is not None and (detects.get(d["row"]["case"]) or 0.0) < value:
                detects[d["row"]["case"]] = value
        data = compare.compare_data(runs, detects, self.project.repo_url, self.published.scrubber)
        body = compare.body(pages.nav("", "compare", self.project.name))
        page = pages.page(self.project.title("compare"), "", body, ("compare.js",), data)
        pages.write_page(self.build / "compare.html", page)

    def _write(self, path: Path, text: str) -> None:
        pages.write_page(path, text)
        self.written += 1


def case_key(case_id: str) -> str:
    """A case's key in the manifest: a hash, so that no secret in a case id reaches the published site."""
    return hashlib.sha256(case_id.encode("utf-8", errors="surrogatepass")).hexdigest()[:24]


class Published:
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


def _digest_json(d: CaseDigest) -> dict[str, Any]:
    return {"row": d.row, "change_points": d.change_points, "regressions": list(d.regressions)}


def copy_assets(dest: Path) -> None:
    source = resources.files("perfgate.report.site") / "assets"
    for name in ASSETS:
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)  # a hard link to the last build's file: replaced, never written through
        target.write_bytes((source / name).read_bytes())
