"""The dashboard builds incrementally: a push that stores a few runs rewrites only the pages those runs touch.

The site keeps a manifest (`.perfgate-manifest.json`): the runs it has pages for, per case its overview rows
and regressions (so the overview is rebuilt from it without reading unchanged cases again), the A/B
comparisons it has pages for, and a key over everything every page depends on (perfgate's version and the
site's assets, the settings, the committed baselines, the project). The next build asks the history what
changed since (`changes_since`): the runs stored since, and the cases they measured. Only those cases'
pages, the new runs' pages and data files, and the new A/B comparisons' pages are written; the overview,
the regressions list and the choosers are rewritten from the manifest. Anything else is a full build: no
manifest or another key, or a run the manifest knows that the history no longer holds (`db prune`).

`changes_since` is the one place that reads what changed. Today it asks main's store with two queries (every
run id, which is an index read, then the cases of the new runs); store/changes.py on the `store` branch
(`changed_since(store, BuildMark)`: runs since a mark, with pending ids for concurrent writers on a server,
and the (case, device) series they touch) answers the same question and can replace its body.
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

MANIFEST = ".perfgate-manifest.json"
FORMAT = 1
_CHUNK = 500  # run ids per IN (...) list


@dataclass(frozen=True)
class Manifest:
    key: str
    runs: frozenset[int]  # runs with a page and a data file
    cases: dict[str, list[dict[str, Any]]]  # case id -> its digests (case_data.CaseDigest as JSON)
    ab_pairs: frozenset[str] = frozenset()  # A/B comparisons with a page

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
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def changes_since(store: Store, manifest: Manifest | None, key: str) -> SiteChanges:
    if manifest is None:
        return SiteChanges(True, reason="no earlier build")
    if manifest.key != key:
        return SiteChanges(True, reason="perfgate, the settings, the baselines or the project changed")
    stored = {int(r["id"]) for r in store.query("SELECT id FROM runs")}
    if not manifest.runs <= stored:
        return SiteChanges(True, reason="runs were removed from the history")
    new = tuple(sorted(stored - manifest.runs))
    cases: set[str] = set()
    for i in range(0, len(new), _CHUNK):
        chunk = new[i : i + _CHUNK]
        listed = store.dialect.json_values("ids")  # one statement text on SQLite and on a server
        rows = store.query(
            f"SELECT DISTINCT case_id FROM cases WHERE run_id IN (SELECT CAST(value AS BIGINT) FROM ({listed}) AS v)",
            {"ids": json.dumps(list(chunk))},
        )
        cases.update(str(r["case_id"]) for r in rows)
    return SiteChanges(False, new, frozenset(cases))


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
