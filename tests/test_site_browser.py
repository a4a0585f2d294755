"""The dashboard in a real browser: headless Chromium (Debian's package, /usr/bin/chromium) driven by Playwright
opens the site built from the recorded H100 history (tests/site_histories.py) from file://, as a user would.

Checks: the overview lists every case with the gate's verdict; filtering and sorting work; a case page draws
each chart (a painted canvas holding one point per run); every link resolves; no console error on any page;
names with HTML or Markdown stay text and never run. Screenshots of the overview and one case page are saved
to $PERFGATE_SCREENSHOT_DIR (CI's artifact; docs/images/ for the README). Skipped, with the reason, where
Chromium or Playwright is missing. Nothing here waits on the clock: page scripts are deferred, so they have
run when `goto` returns (the load event).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest

from perfgate.cli import main
from perfgate.report.site.links import case_page, run_page
from tests.site_histories import ACCURACY_PREFIX, recorded_h100_history
from tests.test_site import HOSTILE, one_run_db, page_data

CHROMIUM = Path(os.environ.get("PERFGATE_CHROMIUM", "/usr/bin/chromium"))
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SHOWCASE = ACCURACY_PREFIX + "softmax"  # calibration processes, a baseline band, a speedup, a change point


def _missing() -> str:
    if not CHROMIUM.exists():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium; or set PERFGATE_CHROMIUM)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install playwright)"
    return ""


pytestmark = pytest.mark.skipif(bool(_missing()), reason=_missing() or "ok")


class Browser:
    """One page at a time; every visit records console errors and uncaught exceptions."""

    def __init__(self, context: Any) -> None:
        self.page = context.new_page()
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.page.on(
            "console",
            lambda m: self.errors.append(f"console {m.type}: {m.text}") if m.type in ("error", "assert") else None,
        )
        self.page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))

    def open(self, path: Path | str) -> Any:
        url = path if isinstance(path, str) else path.resolve().as_uri()
        self.page.goto(url)
        assert self.page.evaluate("document.body.dataset.ready || 'static'") in ("true", "static"), url
        assert self.errors == [], self.errors
        return self.page

    def hrefs(self) -> list[str]:
        return list(self.page.eval_on_selector_all("a[href]", "els => els.map(a => a.href)"))


@pytest.fixture(scope="module")
def context() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="perfgate-chromium-")
    try:
        with sync_playwright() as p:
            ctx = p.chromium.launch_persistent_context(
                profile,
                executable_path=str(CHROMIUM),
                headless=True,
                args=FLAGS,
                viewport={"width": 1280, "height": 800},
            )
            yield ctx
            ctx.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def browser(context: Any) -> Iterator[Browser]:
    b = Browser(context)
    yield b
    b.page.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("browser-site")
    db, baselines = recorded_h100_history(tmp / "history.db", tmp / "baselines")
    out = tmp / "site"
    argv = ["report", "--html", str(out), "--db", str(db), "--baseline-dir", str(baselines), "--rootdir", str(tmp)]
    with pytest.MonkeyPatch.context() as env:  # in GitHub Actions these would add commit links to github.com
        env.delenv("GITHUB_SERVER_URL", raising=False)
        env.delenv("GITHUB_REPOSITORY", raising=False)
        assert main(argv) == 0
    return out


def table_rows(page: Any) -> list[list[str]]:
    return list(
        page.eval_on_selector_all(
            "#cases tbody tr", "trs => trs.map(tr => Array.from(tr.cells).map(td => td.textContent))"
        )
    )


def test_overview_lists_every_case_with_its_verdict(site: Path, browser: Browser) -> None:
    expected = {(r["case"], r["verdict"]) for r in page_data(site / "index.html")["cases"]}
    page = browser.open(site / "index.html")
    rows = table_rows(page)
    regressed = sum(verdict == "regressed" for _, verdict in expected)
    assert len(rows) == len(expected) == 20 and regressed >= 5
    assert {(r[0], r[2]) for r in rows} == expected
    assert [r[2] for r in rows[:regressed]] == ["regressed"] * regressed  # regressions first
    assert page.text_content("#shown") == "20 of 20 shown"


def test_filters_by_name_verdict_and_device(site: Path, browser: Browser) -> None:
    regressed = sum(r["verdict"] == "regressed" for r in page_data(site / "index.html")["cases"])
    page = browser.open(site / "index.html")
    page.fill("#filter-name", "softmax")
    assert sorted(r[0] for r in table_rows(page)) == [
        ACCURACY_PREFIX + "softmax",
        "kernels/tests/test_perf.py::test_softmax[bf16]",
        "kernels/tests/test_perf.py::test_softmax[fp32]",
    ]
    page.select_option("#filter-verdict", "regressed")
    assert [r[0] for r in table_rows(page)] == [ACCURACY_PREFIX + "softmax"]
    page.fill("#filter-name", "")
    assert len(table_rows(page)) == regressed and page.text_content("#shown") == f"{regressed} of 20 shown"
    page.select_option("#filter-verdict", "")
    page.select_option("#filter-device", "NVIDIA H100 80GB HBM3")
    assert len(table_rows(page)) == 20
    browser.open((site / "index.html").resolve().as_uri() + "?verdict=unchanged")
    assert {r[2] for r in table_rows(browser.page)} == {"unchanged"}


def test_sorting_by_a_column(site: Path, browser: Browser) -> None:
    page = browser.open(site / "index.html")
    page.click("th[data-key=case]")
    names = [r[0] for r in table_rows(page)]
    assert names == sorted(names)
    page.click("th[data-key=case]")
    assert [r[0] for r in table_rows(page)] == sorted(names, reverse=True)


def charts(page: Any) -> list[dict[str, Any]]:
    """Per chart: its metric, the points it was given, and how many canvas pixels were painted."""
    return list(
        page.evaluate("""() => Array.from(document.querySelectorAll('.chart')).map(c => {
        const cv = c.querySelector('canvas');
        const px = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
        let painted = 0;
        for (let i = 3; i < px.length; i += 4) if (px[i]) painted++;
        return {metric: c.dataset.metric, points: Number(c.dataset.points), painted: painted};
    })""")
    )


def test_case_page_draws_its_charts(site: Path, browser: Browser) -> None:
    runs = len(page_data(site / case_page(SHOWCASE))["devices"][0]["runs"]["id"])
    drawn = {c["metric"]: c for c in charts(browser.open(site / case_page(SHOWCASE)))}
    assert set(drawn) == {"time (run median)", "speedup vs torch"}
    assert all(c["points"] == runs == 28 and c["painted"] > 1000 for c in drawn.values())
    assert browser.page.text_content("ul.changes").startswith("slower +")
    kernel = {
        c["metric"]: c for c in charts(browser.open(site / case_page("kernels/tests/test_perf.py::test_softmax[bf16]")))
    }
    assert kernel["time (run median)"]["points"] == 9 and kernel["peak memory"]["points"] == 9
    assert set(kernel) == {"time (run median)", "speedup vs torch.softmax", "peak memory"}
    # one profiled run: its counters are a table, not one-point charts
    rows = browser.page.eval_on_selector_all("table.once tr", "trs => trs.length")
    assert rows > 10 and "registers/thread" in browser.page.text_content("table.once")


def test_links_resolve(site: Path, browser: Browser) -> None:
    pages = [site / "index.html", site / case_page(SHOWCASE), site / run_page(8), site / run_page(37)]
    seen = 0
    for p in pages:
        browser.open(p)
        for href in browser.hrefs():
            url = urlparse(href)
            assert url.scheme == "file", href
            assert Path(unquote(url.path)).is_file(), f"{p.name}: {href}"
            seen += 1
    assert seen > 80


def test_point_table_and_run_page(site: Path, browser: Browser) -> None:
    page = browser.open(site / case_page(SHOWCASE))
    page.click("details.runs summary")
    page.click("details.runs a >> nth=-1")
    assert page.url.endswith(run_page(37))
    assert page.text_content("h1") == "Run 37"
    assert page.eval_on_selector_all("section.summary table", "ts => ts.length") >= 1
    page.click(f"section.summary a[href$='{case_page(SHOWCASE)}']")
    assert page.url.endswith(case_page(SHOWCASE)) and browser.errors == []


def test_screenshots(site: Path, browser: Browser, tmp_path: Path) -> None:
    out = Path(os.environ.get("PERFGATE_SCREENSHOT_DIR") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    browser.open(site / "index.html").screenshot(path=str(out / "dashboard-overview.png"), full_page=True)
    browser.open(site / case_page(SHOWCASE)).screenshot(path=str(out / "dashboard-case.png"), full_page=True)
    assert (out / "dashboard-overview.png").stat().st_size > 10_000
    assert (out / "dashboard-case.png").stat().st_size > 10_000


def test_html_and_markdown_in_names_never_run(browser: Browser, tmp_path: Path) -> None:
    from perfgate.model import Metric

    metric = (Metric("launch__registers_per_thread", 32.0, "register/thread", "ncu", HOSTILE[0]),)
    db = one_run_db(tmp_path, {name: [1.0 + i, 1.01 + i, 0.99 + i] for i, name in enumerate(HOSTILE)}, metric)
    out = tmp_path / "site"
    project = "</title><script>document.title='pwned'</script>"
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "{project}"\n', encoding="utf-8")
    assert main(["report", "--html", str(out), "--db", str(db), "--rootdir", str(tmp_path)]) == 0
    page = browser.open(out / "index.html")
    assert sorted(page.eval_on_selector_all("a.case-link", "as => as.map(a => a.textContent)")) == sorted(HOSTILE)
    assert page.text_content("#home") == f"{project} performance"
    for name in HOSTILE:
        page = browser.open(out / case_page(name))
        assert page.text_content("h1") == name
        assert page.title() == f"{name}: {project} performance (perfgate)"
        assert (
            page.eval_on_selector_all("img, script:not([src]):not([type='application/json'])", "els => els.length") == 0
        )
    page = browser.open(out / run_page(1))
    assert page.title() == f"run 1: {project} performance (perfgate)"
    assert page.eval_on_selector_all("img", "els => els.length") == 0
    assert "document.title='pwned'" in page.text_content("section.summary")
    assert browser.dialogs == []


def test_empty_history_site_loads(browser: Browser, tmp_path: Path) -> None:
    from perfgate.store import open_store

    open_store(tmp_path / "h.db").close()
    assert (
        main(["report", "--html", str(tmp_path / "site"), "--db", str(tmp_path / "h.db"), "--rootdir", str(tmp_path)])
        == 0
    )
    page = browser.open(tmp_path / "site" / "index.html")
    assert page.text_content("h1") == "No runs in the history yet"
    assert table_rows(page) == []


def test_a_large_overview_shows_rows_in_pages(browser: Browser, tmp_path: Path) -> None:
    """300 cases: the first 250 rows are built at load, the rest on request; filters see every case."""
    db = one_run_db(tmp_path, {f"t.py::case_{i:03d}": [1.0, 1.01, 0.99] for i in range(300)})
    out = tmp_path / "site"
    assert main(["report", "--html", str(out), "--db", str(db), "--rootdir", str(tmp_path), "--summaries", "0"]) == 0
    page = browser.open(out / "index.html")
    assert len(table_rows(page)) == 250 and page.text_content("#shown") == "300 of 300 shown"
    page.click("#more")
    assert len(table_rows(page)) == 300 and page.is_hidden("#more")
    page.fill("#filter-name", "case_29")
    assert [r[0] for r in table_rows(page)] == [f"t.py::case_29{i}" for i in range(10)]
