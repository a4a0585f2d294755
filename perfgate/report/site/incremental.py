"""The dashboard builds incrementally: a push that stores a few runs rewrites only the pages those runs touch.

The site keeps a manifest (`.perfgate-manifest.json`): the runs it has pages for, per case its overview rows
and regressions (so the overview is rebuilt from it without reading unchanged cases again), the A/B
comparisons it has pages for, and a key over everything every page depends on (perfgate's version and the
site's assets, the settings, the committed baselines, the project). The next build asks the history what
changed since (`changes_since`): the runs stored since, and the cases they measured. Only those cases'
pages, the new runs' pages and data files, and the new A/B comparisons' pages are written; the overview,
the regressions list and the choosers are rewritten from the manifest. Anything else is a full build: no
manifest or another key, or a run the manifest knows that the history no longer holds (`db prune`).

`changes_since` is the one place that reads what changed, through store/changes.py (`changed_since` from
the build mark the manifest keeps: the runs stored since, with the ids still pending on a server where
many runners write at once, and the series they touch), so a build reads in proportion to what changed. A
count of the runs at or below the mark tells a pruned history (a full build), and the newest run's
identity at the mark tells another history behind the same site directory.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from perfgate.store import Store
from perfgate.store.changes import BuildMark, changed_since

MANIFEST = ".perfgate-manifest.json"
FORMAT = 2  # 2: the build mark (store/changes.py) and the history's identity at it


@dataclass(frozen=True)
class Manifest:
    key: str
    runs: frozenset[int]  # runs with a page and a data file
    cases: dict[str, list[dict[str, Any]]]  # case id -> its digests (case_data.CaseDigest as JSON)
    ab_pairs: frozenset[str] = frozenset()  # A/B comparisons with a page
    mark: BuildMark = BuildMark()  # where the history stood when this build began (changes.changed_since)
    mark_uid: str = ""  # the run_uid of the mark's newest run: another history reads as a full build

    def to_json(self) -> str:
        from perfgate.report.site.pages import finite_only

        return json.dumps(
            finite_only(
                {
                    "format": FORMAT,
                    "key": self.key,
                    "runs": sorted(self.runs),
                    "cases": self.cases,
                    "ab_pairs": sorted(self.ab_pairs),
                    "mark": json.loads(self.mark.to_json()),
                    "mark_uid": self.mark_uid,
                }
            ),
            separators=(",", ":"),
            allow_nan=False,
        )


@dataclass(frozen=True)
class SiteChanges:
    full: bool  # rebuild everything
    new_runs: tuple[int, ...] = ()
    cases: frozenset[str] = field(default_factory=frozenset)  # cases measured by the new runs
    reason: str = ""  # why a build is full (said by `perfgate report`)
    mark: BuildMark = BuildMark()  # where the history stands now: the next build starts from here
    mark_uid: str = ""


def read_manifest(site: Path) -> Manifest | None:
    """The manifest of a site written before; None when there is none or it cannot be read (a full build)."""
    try:
        doc = json.loads((site / MANIFEST).read_text(encoding="utf-8"))
        if doc.get("format") != FORMAT:
            return None
        return Manifest(
            str(doc["key"]),
            frozenset(int(i) for i in doc["runs"]),
            {str(k): list(v) for k, v in doc["cases"].items()},
            frozenset(str(p) for p in doc.get("ab_pairs", [])),
            BuildMark.from_json(json.dumps(doc["mark"])),
            str(doc["mark_uid"]),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def changes_since(store: Store, manifest: Manifest | None, key: str) -> SiteChanges:
    """What the next build redoes: everything (with the reason) or the runs stored since the manifest's mark
    and the cases of the series they touch; with where the history stands now either way."""
    if manifest is None or manifest.key != key:
        now = changed_since(store, None, series=False)
        why = "no earlier build" if manifest is None else "perfgate, the settings, the baselines or the project changed"
        return SiteChanges(True, reason=why, mark=now.mark, mark_uid=_uid(store, now.mark))
    now = changed_since(store, manifest.mark)
    last = manifest.mark.last_run_id
    known = {i for i in (*manifest.runs, *now.runs) if i <= last}
    counted = store.query("SELECT count(*) AS n FROM runs WHERE id <= :last", {"last": last})[0]["n"]
    if int(counted) != len(known):
        now = changed_since(store, None, series=False)
        return SiteChanges(
            True, reason="runs were removed from the history", mark=now.mark, mark_uid=_uid(store, now.mark)
        )
    if last and _uid(store, manifest.mark) != manifest.mark_uid:
        now = changed_since(store, None, series=False)
        return SiteChanges(True, reason="another history", mark=now.mark, mark_uid=_uid(store, now.mark))
    cases = frozenset(case for case, _ in now.series)
    return SiteChanges(False, now.runs, cases, mark=now.mark, mark_uid=_uid(store, now.mark))


def _uid(store: Store, mark: BuildMark) -> str:
    found = store.query("SELECT run_uid FROM runs WHERE id = :id", {"id": mark.last_run_id})
    return str(found[0]["run_uid"]) if found else ""


def build_key(parts: Iterable[str], baseline_files: Iterable[Path]) -> str:
    """A hash of everything every page depends on: `parts` (versions, settings, project) and the contents of
    the baseline files and of the site's own assets."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8", errors="surrogatepass") + b"\0")
    for path in sorted(baseline_files):
        h.update(str(path).encode("utf-8", errors="surrogatepass") + b"\0")
        try:
            h.update(path.read_bytes())
        except OSError:
            h.update(b"<unreadable>")
    assets = resources.files("perfgate.report.site") / "assets"
    for name in sorted(p.name for p in assets.iterdir() if p.is_file()):
        h.update(name.encode() + (assets / name).read_bytes())
    return h.hexdigest()
