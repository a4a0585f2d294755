"""The dashboard's comparison and regression views in a real browser (issue 29 requirement 8, issue 30
requirement 7, issue 34 requirement 1): headless Chromium over the site built from tests/site_showcase.py,
from file://, as tests/test_site_browser.py does (its Browser and fixtures).

Each view's test saves a screenshot to $PERFGATE_SCREENSHOT_DIR (CI's artifact; scripts/dashboard_screenshots.py
writes them into docs/images/), else to the test's tmp_path.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from perfgate.cli import main
from perfgate.report.site.ab_pages import ab_page
from perfgate.report.site.links import case_page, run_page
from perfgate.report.site.marks import EMOJI
from tests.site_showcase import AB_PAIR, MATMUL, NORM, REPO_URL, SOFTMAX, commit_of, showcase_history
from tests.test_site import HOSTILE
from tests.test_site_browser import Browser, _missing, context  # noqa: F401 (the module-scoped browser)

pytestmark = pytest.mark.skipif(bool(_missing()), reason=_missing() or "ok")
PROJECT = "kernels"
TITLE = f"{PROJECT} performance (perfgate)"
PHONE = {"width": 390, "height": 844}


def shots(tmp_path: Path) -> Path:
    out = Path(os.environ.get("PERFGATE_SCREENSHOT_DIR") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    return out


def screenshot(page: Any, tmp_path: Path, name: str) -> Path:
    path = shots(tmp_path) / name
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 5_000
    return path


@pytest.fixture(scope="module")
def showcase(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("showcase")
    (tmp / "pyproject.toml").write_text(f'[project]\nname = "{PROJECT}"\n', encoding="utf-8")
    db, baselines = showcase_history(tmp / "history.db", tmp / "baselines")
    out = tmp / "site"
    argv = ["report", "--html", str(out), "--db", str(db), "--baseline-dir", str(baselines), "--rootdir", str(tmp)]
    assert main([*argv, "--repo-url", REPO_URL + ".git"]) == 0
    return out


@pytest.fixture
def browser(context: Any) -> Iterator[Browser]:  # noqa: F811 (context: the shared browser)
    b = Browser(context)
    yield b
    b.page.close()


@pytest.fixture
def phone(context: Any) -> Iterator[Browser]:  # noqa: F811
    b = Browser(context)
    b.page.set_viewport_size(PHONE)
    yield b
    b.page.close()


def rows(page: Any, table: str) -> list[list[str]]:
    return list(
        page.eval_on_selector_all(
            f"{table} tbody tr", "trs => trs.map(tr => Array.from(tr.cells).map(td => td.textContent.trim()))"
        )
    )


def ready(page: Any) -> None:
    page.wait_for_selector("body[data-ready=true]", state="attached")


def test_compare_two_commits_marks_what_moved(showcase: Path, browser: Browser, tmp_path: Path) -> None:
    fast, slow = commit_of("commit 16"), commit_of("commit 15")  # the matmul fixed between them
    page = browser.open(showcase.joinpath("compare.html").resolve().as_uri() + f"?a={slow[:10]}&b={fast}")
    ready(page)
    by_case = {r[0]: r for r in rows(page, "#compare")}
    assert set(by_case) == {MATMUL, SOFTMAX, NORM}
    assert by_case[MATMUL][3].startswith("0.71") and by_case[MATMUL][4] == "faster"
    assert by_case[SOFTMAX][4] == "within detects"
    links = page.eval_on_selector_all("#commits a.commit", "as => as.map(a => a.href)")
    assert links == [f"{REPO_URL}/commit/{slow}", f"{REPO_URL}/commit/{fast}"]
    page.select_option("#run-b", "37")  # a run id: the RMS norm 100x slower
    page.wait_for_selector("#compare tbody tr:first-child td.case-name:has-text('rms_norm')")
    first = rows(page, "#compare")[0]
    assert first[0] == NORM and first[4] == "slower" and 99 < float(first[3].rstrip("x")) < 101
    screenshot(page, tmp_path, "dashboard-compare.png")
    assert browser.errors == []


def test_an_ab_comparison_is_shown_as_head_vs_base(showcase: Path, browser: Browser, tmp_path: Path) -> None:
    page = browser.open(showcase / "ab.html")
    [row] = rows(page, "#ab-pairs")
    assert row[2] == commit_of("commit 39")[:12] and row[3] == commit_of("pull request 42")[:12]
    assert row[4] == "3" and row[5] == "FAIL failed"
    page.click("#ab-pairs a")
    assert page.url.endswith(ab_page(AB_PAIR))
    by_case = {r[0]: r for r in rows(page, "#ab-cases")}
    assert by_case[MATMUL][3].startswith("1.12") and by_case[MATMUL][4:6] == ["regressed", "+12.0%"]
    assert by_case[SOFTMAX][4] == "unchanged"
    hrefs = page.eval_on_selector_all("table.facts a", "as => as.map(a => a.href)")
    assert f"{REPO_URL}/commit/{commit_of('pull request 42')}" in hrefs
    assert any(h.endswith(run_page(41)) for h in hrefs) and any(h.endswith(run_page(42)) for h in hrefs)
    screenshot(page, tmp_path, "dashboard-ab.png")


def test_regressions_page_lists_each_with_its_state_and_commit_range(
    showcase: Path, browser: Browser, tmp_path: Path
) -> None:
    page = browser.open(showcase / "regressions.html")
    found = rows(page, "#regressions")
    assert [(r[0], r[2]) for r in found] == [(NORM, "open"), (SOFTMAX, "open"), (MATMUL, "fixed")]
    matmul = found[2]
    assert matmul[3] == "+40.0%"
    assert matmul[4] == f"#6 {commit_of('calibrated')[:8]} .. #7 {commit_of('commit 6')[:8]}"
    assert matmul[5] == f"#16 {commit_of('commit 15')[:8]} .. #17 {commit_of('commit 16')[:8]}"
    commits = page.eval_on_selector_all("#regressions a.commit", "as => as.map(a => a.href)")
    assert f"{REPO_URL}/commit/{commit_of('commit 16')[:12]}" in commits
    assert page.text_content("#counts") == "2 open, 1 fixed, 0 accepted."
    screenshot(page, tmp_path, "dashboard-regressions.png")


def chart_info(page: Any) -> dict[str, dict[str, str]]:
    return {
        c["metric"]: c
        for c in page.eval_on_selector_all(
            ".chart",
            "cs => cs.map(c => ({metric: c.dataset.metric, scale: c.dataset.scale, "
            "x: c.dataset.xticks, y: c.dataset.yticks}))",
        )
    }


def test_case_page_log_scale_and_commits_on_the_x_axis(showcase: Path, browser: Browser, tmp_path: Path) -> None:
    page = browser.open(showcase / case_page(NORM))
    linear = chart_info(page)["time (run median)"]
    assert linear["scale"] == "linear" and linear["x"].startswith("#")
    page.check("#log-scale")
    page.select_option("#x-axis", "commit")
    log = chart_info(page)["time (run median)"]
    assert log["scale"] == "log"
    assert commit_of("commit 20")[:8] in log["x"].split(" | ") or any(
        commit_of(f"commit {i}")[:8] in log["x"] for i in range(6, 40)
    )
    decades = [t for t in log["y"].split(" | ") if t in ("10.00 us", "100.0 us", "1.000 ms", "10.00 ms")]
    assert len(decades) >= 2, log["y"]  # both levels readable: the step is 100x
    links = page.eval_on_selector_all("details.runs a.commit", "as => as.map(a => a.href)")
    assert f"{REPO_URL}/commit/{commit_of('commit 39')[:12]}" in links
    screenshot(page, tmp_path, "dashboard-case-log-commits.png")
    assert browser.errors == []


def test_case_page_shows_the_compiled_kernels_and_their_changes(
    showcase: Path, browser: Browser, tmp_path: Path
) -> None:
    page = browser.open(showcase / case_page(MATMUL))
    [kernel] = rows_plain(page, "table.kernels tr:not(:first-child)")
    assert kernel[0] == "_matmul_kernel" and kernel[1] == "128" and kernel[2] == "0 B"
    assert kernel[6] == "50 % (registers)" and kernel[7] == "a5a5cf3781047df0"
    changes = page.eval_on_selector_all("ul.kernel-changes li", "lis => lis.map(li => li.textContent)")
    assert len(changes) == 2
    assert changes[0].startswith("_matmul_kernel: registers 128 -> 168; occupancy 50 -> 37.5; sass a5a5cf3781047df0")
    assert changes[1].startswith("_matmul_kernel: registers 168 -> 128")
    page.locator("details.kernels").scroll_into_view_if_needed()
    screenshot(page, tmp_path, "dashboard-case-kernels.png")


def rows_plain(page: Any, selector: str) -> list[list[str]]:
    return list(
        page.eval_on_selector_all(selector, "trs => trs.map(tr => Array.from(tr.cells).map(td => td.textContent))")
    )


def test_every_page_fits_a_phone(showcase: Path, phone: Browser, tmp_path: Path) -> None:
    pages = [
        "index.html",
        "regressions.html",
        "compare.html",
        "ab.html",
        ab_page(AB_PAIR),
        case_page(MATMUL),
        run_page(37),
    ]
    for name in pages:
        page = phone.open(showcase / name)
        if name == "compare.html":
            ready(page)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], f"{name}: {width} px wide"
    screenshot(phone.open(showcase / "index.html"), tmp_path, "dashboard-phone-overview.png")
    screenshot(phone.open(showcase / case_page(MATMUL)), tmp_path, "dashboard-phone-case.png")


def test_verdict_marks_need_no_emoji_font(showcase: Path, browser: Browser, tmp_path: Path) -> None:
    page = browser.open(showcase / run_page(37))
    text = page.text_content("body")
    assert not EMOJI.search(text), EMOJI.findall(text)
    marks = page.eval_on_selector_all(
        "section.summary .mark", "ms => ms.map(m => [m.getAttribute('aria-label'), m.getBoundingClientRect().width])"
    )
    assert {"failed", "regressed"} <= {label for label, _ in marks}
    assert all(w > 4 for _, w in marks)  # drawn by CSS: a box of its own size in any font
    screenshot(page, tmp_path, "dashboard-run.png")
    for name in ("index.html", "regressions.html", "ab.html", ab_page(AB_PAIR)):
        assert not EMOJI.search(browser.open(showcase / name).text_content("body")), name


def test_the_project_is_named_on_every_page(showcase: Path, browser: Browser) -> None:
    for name in ("index.html", "regressions.html", "compare.html", "ab.html", case_page(NORM), run_page(1)):
        page = browser.open(showcase / name)
        assert page.title().endswith(TITLE), name
        assert page.text_content("#home") == f"{PROJECT} performance"


def test_stored_text_stays_text_in_the_new_views(browser: Browser, tmp_path: Path) -> None:
    """Hostile case names (and project name) through compare, regressions and an A/B comparison: shown as text."""
    from perfgate.model import Run, RunInfo, RunKind
    from perfgate.store import open_store
    from tests.helpers import make_run, noisy

    hostile_project = "<img src=x onerror=alert(1)>"
    (tmp_path / "pyproject.toml").write_text(f"[project]\nname = '{hostile_project}'\n", encoding="utf-8")
    db = tmp_path / "h.db"
    with open_store(db) as store:
        for i in range(12):
            store.save_run(make_run({n: noisy(1.0 * (2 if i >= 6 else 1), n=20, seed=i) for n in HOSTILE}))
        for kind in (RunKind.AB_BASE, RunKind.AB_HEAD):
            run = make_run({n: noisy(1.0, n=20) for n in HOSTILE})
            info = RunInfo("2026-11-22T00:00:00+00:00", "", "abc", kind=kind, ab_pair=HOSTILE[0])
            store.save_run(Run(info, run.environment, run.results))
    out = tmp_path / "site"
    assert main(["report", "--html", str(out), "--db", str(db), "--rootdir", str(tmp_path)]) == 0
    injected = "img, iframe, script:not([src]):not([type='application/json'])"
    for name in ("regressions.html", "compare.html", "ab.html", ab_page(HOSTILE[0])):
        page = browser.open(out / name)
        if name == "compare.html":
            ready(page)
        assert page.eval_on_selector_all(injected, "els => els.length") == 0, name
        assert hostile_project in page.title()
    page = browser.open(out / "compare.html")
    ready(page)
    assert sorted(r[0] for r in rows(page, "#compare")) == sorted(HOSTILE)
    page = browser.open(out / "regressions.html")
    assert sorted(r[0] for r in rows(page, "#regressions")) == sorted(HOSTILE)
    assert browser.dialogs == []


def test_links_of_the_new_views_resolve(showcase: Path, browser: Browser) -> None:
    """Every link of the new pages leads to a file of the site, or to a commit on the repository's site."""
    from urllib.parse import unquote, urlparse

    seen = 0
    for name in ("regressions.html", "compare.html", "ab.html", ab_page(AB_PAIR), case_page(MATMUL)):
        page = browser.open(showcase / name)
        if name == "compare.html":
            ready(page)
        for href in page.eval_on_selector_all("a[href]", "els => els.map(a => a.href)"):
            url = urlparse(href)
            if url.scheme == "file":
                assert Path(unquote(url.path)).is_file(), f"{name}: {href}"
            else:
                assert href.startswith(f"{REPO_URL}/commit/"), f"{name}: {href}"
            seen += 1
    assert seen > 100
