"""The dashboard builds incrementally (issue 33 requirement 3): a rebuild after a push rewrites the pages of the
cases its new runs measured, the new runs' pages and nothing else, and the site it leaves is the site a
full build writes. Anything the manifest cannot vouch for is a full build: no manifest, other settings or
baselines, a run gone from the history."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from perfgate.cli import main
from perfgate.report.site.incremental import MANIFEST
from perfgate.report.site.links import case_page, run_page
from perfgate.store import open_store
from tests.helpers import make_run, noisy
from tests.site_showcase import MATMUL, NORM, SOFTMAX, showcase_history
from tests.test_site import page_data


@pytest.fixture(autouse=True)
def _no_ci_repository(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_SERVER_URL", raising=False)
    monkeypatch.delenv("GITHUB_REPOSITORY", raising=False)


@pytest.fixture
def history(tmp_path: Path) -> tuple[Path, Path]:
    return showcase_history(tmp_path / "history.db", tmp_path / "baselines")


def build(tmp_path: Path, history: tuple[Path, Path], out: str, capsys: pytest.CaptureFixture[str]) -> str:
    db, baselines = history
    argv = ["report", "--html", str(tmp_path / out), "--db", str(db), "--baseline-dir", str(baselines)]
    assert main([*argv, "--rootdir", str(tmp_path), "--repo-url", "https://github.com/o/r"]) == 0
    return capsys.readouterr().out


def add_run(db: Path, cases: dict[str, float]) -> None:
    from dataclasses import replace

    from tests.site_showcase import ENV

    run = make_run({cid: noisy(t, n=20, seed=7) for cid, t in cases.items()}, env=ENV)
    run = replace(run, info=replace(run.info, started_at="2026-11-03T00:00:00+00:00", git_commit="f" * 40))
    with open_store(db) as store:
        store.save_run(run)


def files(site: Path) -> dict[str, bytes]:
    return {str(p.relative_to(site)): p.read_bytes() for p in sorted(site.rglob("*")) if p.is_file()}


def test_a_push_rewrites_only_the_pages_its_runs_touch(
    tmp_path: Path, history: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    site = tmp_path / "site"
    assert "full build (no earlier build)" in build(tmp_path, history, "site", capsys)
    before = {p: (site / p).stat().st_ino for p in (case_page(MATMUL), case_page(NORM), run_page(3))}
    add_run(history[0], {SOFTMAX: 0.05})
    out = build(tmp_path, history, "site", capsys)
    assert "incremental: 2 page(s) written" in out  # the softmax's page and the new run's
    # pages of cases the push did not measure are the last build's files (hard links), not rewritten
    assert {p: (site / p).stat().st_ino for p in before} == before
    assert (site / run_page(43)).is_file() and (site / "data" / "run-43.js").is_file()
    assert page_data(site / "compare.html")["runs"][-1]["id"] == 43  # the chooser offers it


def test_an_incremental_build_leaves_the_site_a_full_build_writes(
    tmp_path: Path, history: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    build(tmp_path, history, "site", capsys)
    add_run(history[0], {SOFTMAX: 0.06, MATMUL: 0.8})
    assert "incremental" in build(tmp_path, history, "site", capsys)
    assert "full build" in build(tmp_path, history, "fresh", capsys)
    assert files(tmp_path / "site") == files(tmp_path / "fresh")


def test_the_last_builds_files_are_never_written_through(
    tmp_path: Path, history: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """A reader holding the old site (a copy being uploaded) sees it whole while the next one is built."""
    build(tmp_path, history, "site", capsys)
    old = tmp_path / "old"
    shutil.copytree(tmp_path / "site", old, copy_function=os.link)  # shares the files, as the build does
    snapshot = files(old)
    add_run(history[0], {SOFTMAX: 0.07})
    build(tmp_path, history, "site", capsys)
    assert files(old) == snapshot


def test_what_the_manifest_cannot_vouch_for_is_a_full_build(
    tmp_path: Path, history: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    site = tmp_path / "site"
    build(tmp_path, history, "site", capsys)
    assert "incremental: 0 page(s)" in build(tmp_path, history, "site", capsys)
    baseline = next(history[1].glob("*.json"))
    baseline.write_text(baseline.read_text().replace('"reason"', '"reason" '), encoding="utf-8")
    assert "full build (perfgate, the settings, the baselines or the project changed)" in build(
        tmp_path, history, "site", capsys
    )
    from perfgate.store.prune import remove_runs

    with open_store(history[0]) as store:
        remove_runs(store, [2])  # what `perfgate db prune` does
    assert "full build (runs were removed from the history)" in build(tmp_path, history, "site", capsys)
    assert not (site / run_page(2)).exists()
    (site / MANIFEST).write_text("{not json", encoding="utf-8")
    assert "full build (no earlier build)" in build(tmp_path, history, "site", capsys)


def test_no_secret_reaches_the_new_pages_or_the_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A secret value in case ids, a branch and an A/B comparison: masked in every file of the site, the
    compare data, the A/B pages and the manifest included (they are published with it)."""
    from dataclasses import replace

    from perfgate.model import RunKind
    from tests.site_showcase import ENV

    secret = "s3cr3t-value-0123456789"
    monkeypatch.setenv("DEPLOY_TOKEN", secret)
    db = tmp_path / "h.db"
    cases = {f"t.py::test_x[{secret}]": 1.0, "t.py::plain": 2.0}
    with open_store(db) as store:
        for i in range(8):
            run = make_run({c: noisy(t * (1.5 if i >= 4 else 1), n=20, seed=i) for c, t in cases.items()}, env=ENV)
            store.save_run(replace(run, info=replace(run.info, git_branch=f"feature/{secret}", run_uid=f"r{i}")))
        for kind in (RunKind.AB_BASE, RunKind.AB_HEAD):
            run = make_run({c: noisy(t, n=20) for c, t in cases.items()}, env=ENV)
            store.save_run(replace(run, info=replace(run.info, kind=kind, ab_pair="pair-1", run_uid=kind.value)))
    out = tmp_path / "site"
    assert main(["report", "--html", str(out), "--db", str(db), "--rootdir", str(tmp_path)]) == 0
    published = files(out)
    assert {"compare.html", "ab.html", "regressions.html", MANIFEST, "data/run-1.js"} <= set(published)
    assert [name for name, data in published.items() if secret.encode() in data] == []
    pair_page = next(name for name in published if name.startswith("ab/"))
    assert b"t.py::test_x[***" in published["data/run-1.js"] and b"t.py::test_x[***" in published[pair_page]


def test_a_new_ab_pair_built_incrementally_leaves_the_site_a_full_build_writes(
    tmp_path: Path, history: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from dataclasses import replace

    from perfgate.model import RunKind
    from tests.site_showcase import ENV

    build(tmp_path, history, "site", capsys)
    with open_store(history[0]) as store:
        for kind, t in ((RunKind.AB_BASE, 0.05), (RunKind.AB_HEAD, 0.07)):
            run = make_run({SOFTMAX: noisy(t, n=20, seed=3)}, env=ENV)
            info = replace(run.info, started_at="2026-11-04T00:00:00+00:00", kind=kind, ab_pair="pr-43-attempt-1")
            store.save_run(replace(run, info=info))
    assert "incremental" in build(tmp_path, history, "site", capsys)
    assert "full build" in build(tmp_path, history, "fresh", capsys)
    assert files(tmp_path / "site") == files(tmp_path / "fresh")


def test_a_site_built_from_another_history_is_rebuilt_in_full(
    tmp_path: Path, history: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    build(tmp_path, history, "site", capsys)
    other = tmp_path / "other.db"
    showcase_history(other, tmp_path / "other-baselines")  # the same run ids, other run identities
    with open_store(other) as store:
        store.db.execute("UPDATE runs SET run_uid = run_uid || '-elsewhere'")
    shutil.copyfile(other, history[0])  # behind the same path (a server's history recreated, a restored file)
    assert "full build (another history)" in build(tmp_path, history, "site", capsys)
