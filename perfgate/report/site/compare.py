"""Compare any two runs, or two commits (their latest runs), on `compare.html`.

Each run's medians are a small script of their own (`data/run-<id>.js`: one call with the run's JSON, the
same escaping as every page's data), loaded by the page when the run is chosen: this works from file://
(where a page cannot fetch a JSON file) and a run's file never changes, so a later build writes only the
new runs' (incremental.py). The page embeds the list of runs and, per case, what it detects (the gate's
threshold on the overview), so a ratio beyond it is marked; a ratio of two run medians is no gate verdict,
and the page says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perfgate.report.scrub import Scrubber
from perfgate.report.site import pages
from perfgate.report.site.history_data import RunMeta
from perfgate.store import Store

MAX_RUNS = 5000  # the latest runs offered in the choosers (older ones: perfgate compare on the command line)


def run_data_file(run_id: int) -> str:
    return f"data/run-{int(run_id)}.js"


def write_run_data(store: Store, build: Path, run_id: int, meta: RunMeta, scrubber: Scrubber) -> None:
    """The run's medians by case id as published (secrets masked, as on every page)."""
    rows = store.query(
        "SELECT case_id, median_ms FROM cases WHERE run_id = :run_id ORDER BY case_id", {"run_id": run_id}
    )
    data = {
        "id": run_id,
        "commit": scrubber.identifier(meta.git_commit),
        "device": scrubber.identifier(meta.device_name),
        "cases": {scrubber.case_id(str(r["case_id"])): r["median_ms"] for r in rows},
    }
    (build / run_data_file(run_id)).write_text(f"perfgateRunLoaded({pages.embed_json(data)});\n", encoding="utf-8")


def compare_data(
    runs: Mapping[int, RunMeta], detects: Mapping[str, float | None], repo_url: str, scrubber: Scrubber
) -> dict[str, Any]:
    """The choosers' runs (texts as published: a secret in a branch name is masked) and each case's threshold."""
    shown = sorted(runs)[-MAX_RUNS:]
    text = scrubber.identifier
    return {
        "repo": repo_url,
        "runs": [
            {
                "id": i,
                "commit": text(runs[i].git_commit[:12]),
                "branch": text(runs[i].git_branch),
                "date": runs[i].started_at[:16].replace("T", " "),
                "device": text(runs[i].device_name),
                "kind": "calibration" if runs[i].calibration else (runs[i].kind or "gate"),
            }
            for i in shown
        ],
        "detects": dict(detects),
    }


def body(nav_html: str) -> str:
    return (
        f"{nav_html}<main><h1>Compare two runs or commits</h1>"
        '<p class="note">Pick a base and a head run (or give commits in the address: '
        "<code>compare.html?a=COMMIT&amp;b=COMMIT</code>, each the latest run of that commit; or run ids: "
        "<code>?a=12&amp;b=40</code>). Per case: both run medians and their ratio (head over base); a ratio "
        "beyond what the case detects (the gate's threshold) is marked slower or faster. This is a ratio of two "
        "medians, not a gate verdict: for one, <code>perfgate ab</code> or the gate.</p>"
        '<div class="filters" role="search"><label>base <select id="run-a"></select></label>'
        '<label>head <select id="run-b"></select></label><span id="shown"></span></div>'
        '<p class="note" id="commits"></p>'
        '<div class="wide"><table id="compare" class="cases"><thead><tr><th>case</th><th class="num">base</th>'
        '<th class="num">head</th><th class="num">ratio</th><th>marked</th><th class="num">detects</th>'
        "</tr></thead><tbody></tbody></table></div></main>"
    )
