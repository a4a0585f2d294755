"""`perfgate report --html DIR`: the history -> a static site (overview, regressions, comparisons, a page per
case, per run and per A/B comparison); build.py writes the pages, incremental.py decides which.

The site is built in a fresh directory beside DIR and moved into place whole, so a reader never sees half
a site, and DIR is replaced only when it is empty or a site this command wrote (it holds `.perfgate-site`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from perfgate.atomic import make_dir
from perfgate.config.settings import Settings
from perfgate.errors import PerfgateError
from perfgate.report.site.build import MARKER, SiteBuild, SiteOptions
from perfgate.report.site.incremental import build_key, changes_since, read_manifest
from perfgate.report.site.project import Project, project_for
from perfgate.store import Store

__all__ = ["MARKER", "SiteOptions", "SiteReport", "write_site"]


@dataclass(frozen=True)
class SiteReport:
    out_dir: Path
    cases: int  # (case, device model) rows on the overview
    runs: int
    files: int
    total_bytes: int
    change_points: int
    seconds: float
    pages_written: int = 0  # case, run and A/B pages written by this build (the rest kept from the last)
    full: bool = True  # False: an incremental build (incremental.py)
    reason: str = ""  # why the build was full


def write_site(
    store: Store,
    out_dir: Path,
    settings: Settings,
    options: SiteOptions | None = None,
    clock: Callable[[], float] = time.perf_counter,
    project: Project | None = None,
) -> SiteReport:
    """Build the site from the history, only what changed since the last build where it can
    (incremental.py); PerfgateError (one line) when DIR cannot be used."""
    started = clock()
    options = options or SiteOptions()
    out_dir = Path(out_dir)
    _check_target(out_dir)
    make_dir(out_dir.parent, f"--html {out_dir}")
    project = project or project_for(settings.rootdir, settings.repo_url)
    key = build_key(_key_parts(settings, options, project), _baseline_files(settings))
    previous = read_manifest(out_dir) if (out_dir / MARKER).is_file() else None
    changes = changes_since(store, previous, key)
    try:
        build = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    except OSError as err:  # /proc, a read-only file system
        raise PerfgateError(f"perfgate: --html {out_dir}: cannot write a site there: {err.strerror or err}") from err
    try:
        if not changes.full:
            _link_copy(out_dir, build)
        built = SiteBuild(store, build, settings, options, project, key).run(previous, changes)
        _replace(build, out_dir)
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise
    files = [p for p in out_dir.rglob("*") if p.is_file()]
    return SiteReport(
        out_dir,
        built.rows,
        built.runs,
        len(files),
        sum(p.stat().st_size for p in files),
        built.change_points,
        clock() - started,
        built.pages_written,
        changes.full,
        changes.reason,
    )


def _key_parts(settings: Settings, options: SiteOptions, project: Project) -> list[str]:
    import perfgate

    return [str(perfgate.__version__), repr(settings), repr(options), repr(project)]


def _baseline_files(settings: Settings) -> list[Path]:
    files = list(settings.baseline_dir.glob("*.json")) if settings.baseline_dir.is_dir() else []
    return files + ([settings.baseline_file] if settings.baseline_file is not None else [])


def _link_copy(site: Path, build: Path) -> None:
    """The last build's files into the new one as hard links (a copy where links are refused): pages that
    did not change cost no write. Every write in the build replaces its file (pages.write_page)."""
    shutil.rmtree(build)
    try:
        shutil.copytree(site, build, copy_function=os.link)
    except OSError:
        shutil.rmtree(build, ignore_errors=True)
        shutil.copytree(site, build)


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
