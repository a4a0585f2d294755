"""`perfgate report --html`: the site from a recorded H100 history, and from bad input (empty, one run, missing
metrics, hostile names, a version-1 history, a directory that is not a site). The browser checks are in
tests/test_site_browser.py."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from perfgate.cli import main
from perfgate.config.project import project_settings
from perfgate.model import Metric, Verdict
from perfgate.report.site.links import case_page, case_url, run_page
from perfgate.report.site.verdicts import case_verdict, gate_runs
from perfgate.store import open_store
from tests.helpers import make_run, noisy
from tests.site_histories import recorded_h100_history

DATA = Path(__file__).parent / "data"
HOSTILE = (
    '<img src=x onerror="document.title=1">',
    "<script>document.title='pwned'</script>::x",
    "**bold** [link](javascript:alert(1)) `tick` | pipe",
    "</script><!--",
)


@pytest.fixture(autouse=True)
def _no_ci_repository(monkeypatch: pytest.MonkeyPatch) -> None:
    """In GitHub Actions these name the repository the site links commits to; the tests name it themselves."""
    monkeypatch.delenv("GITHUB_SERVER_URL", raising=False)
    monkeypatch.delenv("GITHUB_REPOSITORY", raising=False)


def page_data(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    block = re.search(r'<script type="application/json" id="perfgate-data">(.*?)</script>', text, re.S)
    assert block is not None
    return json.loads(block.group(1))


def build(tmp_path: Path, db: Path, baselines: Path | None = None, *extra: str) -> Path:
    out = tmp_path / "site"
    argv = ["report", "--html", str(out), "--db", str(db), "--rootdir", str(tmp_path)]
    if baselines is not None:
        argv += ["--baseline-dir", str(baselines)]
    assert main([*argv, *extra]) == 0
    return out


@pytest.fixture(scope="module")
def recorded_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    tmp = tmp_path_factory.mktemp("recorded")
    db, baselines = recorded_h100_history(tmp / "history.db", tmp / "baselines")
    with pytest.MonkeyPatch.context() as env:  # what _no_ci_repository does for each test
        env.delenv("GITHUB_SERVER_URL", raising=False)
        env.delenv("GITHUB_REPOSITORY", raising=False)
        return build(tmp, db, baselines), db, baselines


def test_recorded_site_has_every_case_with_the_gates_verdict(recorded_site: tuple[Path, Path, Path]) -> None:
    site, db, baselines = recorded_site
    rows = page_data(site / "index.html")["cases"]
    settings = project_settings(site.parent, {"db_path": db, "baseline_dir": baselines})
    with open_store(db, readonly=True) as store:
        case_ids = [r["case_id"] for r in store.query("SELECT DISTINCT case_id FROM cases")]
        latest = {
            r["case_id"]: int(r["run_id"])
            for r in store.query("SELECT case_id, max(run_id) AS run_id FROM cases GROUP BY case_id")
        }
        gated = gate_runs(store, latest.values(), settings)
    assert sorted(r["case"] for r in rows) == sorted(case_ids) and len(rows) == 20
    for r in rows:
        expected = case_verdict(c for c in gated[latest[r["case"]]].gate.comparisons if c.case_id == r["case"])
        assert expected is not None and r["verdict"] == expected.value, r["case"]
    by_case = {r["case"].split("::")[-1]: r for r in rows}
    assert by_case["softmax"]["verdict"] == "regressed" and by_case["softmax"]["changes"] == 1
    assert by_case["test_layer_norm"]["verdict"] == "unchanged"
    assert [r["rank"] for r in rows] == sorted(r["rank"] for r in rows)  # regressions, change points first


def test_recorded_site_pages_and_links(recorded_site: tuple[Path, Path, Path]) -> None:
    site, _, _ = recorded_site
    rows = page_data(site / "index.html")["cases"]
    for r in rows:
        assert (site / r["href"]).is_file() and (site / r["runHref"]).is_file()
    case = page_data(site / case_page("kernels/tests/test_perf.py::test_softmax[bf16]"))
    (dev,) = case["devices"]
    assert dev["runs"]["id"] == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert dev["runs"]["calibration"] == [True] * 6 + [False] * 3
    assert dev["time"]["confirmations"][7]  # the de-tuned gate re-measured it in a fresh process
    assert dev["baseline"]["time"]["threshold"] == pytest.approx(1.0)
    assert dev["speedup"] and dev["memory"] and dev["counters"]  # run 9 was profiled
    run9 = (site / run_page(9)).read_text()
    assert "<table>" in run9 and "passed" in run9.lower() or "FAILED" in run9
    softmax = case_page("kernels/tests/test_perf.py::test_softmax[bf16]")
    assert f'href="../{softmax}"' in (site / run_page(8)).read_text()
    assert (site / "assets" / "vendor" / "LICENSE-uPlot.txt").read_text().startswith("The MIT License")


def test_case_urls_for_the_pr_comment() -> None:
    url = case_url("https://owner.github.io/repo/", "kernels/t.py::test_a[x]")
    assert url == "https://owner.github.io/repo/" + case_page("kernels/t.py::test_a[x]")
    assert re.fullmatch(r"case/t-py-test-a-x-[0-9a-f]{12}\.html", case_page("kernels/t.py::test_a[x]"))
    assert case_page("a/b::c") != case_page("a/b::C")


def one_run_db(tmp_path: Path, cases: dict[str, list[float]], metrics: tuple[Metric, ...] = ()) -> Path:
    db = tmp_path / "h.db"
    with open_store(db) as store:
        store.save_run(make_run(cases, metrics))
    return db


def test_empty_history_is_a_site_that_says_so(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    open_store(db).close()
    site = build(tmp_path, db)
    assert page_data(site / "index.html") == {"devices": [], "cases": [], "repo": ""}
    assert "No runs in the history yet" in (site / "index.html").read_text()


def test_one_run_with_missing_metrics(tmp_path: Path) -> None:
    """One run, no baseline, no speedup, memory, GPU state or profiler metrics: new cases, empty columns."""
    site = build(tmp_path, one_run_db(tmp_path, {"t.py::a": noisy(1.0), "t.py::b": noisy(2.0)}))
    rows = page_data(site / "index.html")["cases"]
    assert [(r["case"], r["verdict"], r["speedup"], r["peak"], r["change"]) for r in rows] == [
        ("t.py::a", "new", None, None, None),
        ("t.py::b", "new", None, None, None),
    ]
    dev = page_data(site / case_page("t.py::a"))["devices"][0]
    assert dev["speedup"] is None and dev["memory"] is None and dev["counters"] == [] and dev["baseline"] == {}


def test_html_and_markdown_in_names_are_data(tmp_path: Path) -> None:
    metric = (Metric("launch__registers_per_thread", 32.0, "register/thread", "ncu", HOSTILE[0]),)
    site = build(tmp_path, one_run_db(tmp_path, {name: noisy(1.0 + i) for i, name in enumerate(HOSTILE)}, metric))
    for page in [site / "index.html", site / run_page(1), *(site / case_page(n) for n in HOSTILE)]:
        text = page.read_text(encoding="utf-8")
        assert "<script>document" not in text and "<img src=x" not in text and "</script><!--" not in text, page
    assert sorted(r["case"] for r in page_data(site / "index.html")["cases"]) == sorted(HOSTILE)
    assert page_data(site / case_page(HOSTILE[1]))["case"] == HOSTILE[1]
    escaped = "&lt;script&gt;document.title=&#x27;pwned&#x27;&lt;/script&gt;::x"
    assert escaped in (site / case_page(HOSTILE[1])).read_text()


def test_version_1_history(tmp_path: Path) -> None:
    db = tmp_path / "v1.db"
    shutil.copyfile(DATA / "history_v1.db", db)
    site = build(tmp_path, db)
    assert {r["case"] for r in page_data(site / "index.html")["cases"]} == {"t.py::a", "t.py::b"}


def test_a_directory_that_is_not_a_site_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = one_run_db(tmp_path, {"t.py::a": noisy(1.0)})
    out = tmp_path / "site"
    out.mkdir()
    (out / "precious.txt").write_text("mine")
    assert main(["report", "--html", str(out), "--db", str(db), "--rootdir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds other files" in err
    assert (out / "precious.txt").read_text() == "mine"
    (out / "precious.txt").unlink()
    build(tmp_path, db)
    build(tmp_path, db)  # a site written before is replaced whole
    assert sorted(p.name for p in (tmp_path / "site" / "case").iterdir()) == [case_page("t.py::a")[5:]]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".site")]  # no build directory left


def test_missing_history_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["report", "--html", str(tmp_path / "s"), "--db", str(tmp_path / "none.db"), "--rootdir", str(tmp_path)])
        == 2
    )
    assert capsys.readouterr().err.strip().startswith("perfgate: no history at")


def test_run_pages_beyond_the_summaries_say_how_to_get_one(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    with open_store(db) as store:
        for i in range(3):
            store.save_run(make_run({"t.py::a": noisy(1.0, seed=i)}, uid=f"r{i}"))
    site = build(tmp_path, db, None, "--summaries", "1")
    assert "perfgate compare --run 1" in (site / run_page(1)).read_text()
    assert "<table>" in (site / run_page(3)).read_text()


def test_case_verdict_is_the_most_severe() -> None:
    from perfgate.model import Comparison, Direction

    rows = [
        Comparison("a", m, "ms", Direction.LOWER, v)
        for m, v in (("median_ms", Verdict.UNCHANGED), ("speedup", Verdict.REGRESSED))
    ]
    assert case_verdict(rows) is Verdict.REGRESSED
    assert case_verdict([]) is None


def test_summary_links_to_the_changed_cases_pages() -> None:
    from perfgate.model import Comparison, Direction, GateResult
    from perfgate.report.site.links import summary_links

    gate = GateResult(
        comparisons=tuple(
            Comparison(cid, "median_ms", "ms", Direction.LOWER, v)
            for cid, v in (
                ("t.py::slow", Verdict.REGRESSED),
                ("t.py::same", Verdict.UNCHANGED),
                ("t.py::fresh", Verdict.NEW),
            )
        )
    )
    links = summary_links(gate, "https://o.github.io/r/")
    assert [(c.name, c.href) for c in links] == [
        ("dashboard", "https://o.github.io/r/index.html"),
        ("t.py::slow: history", "https://o.github.io/r/" + case_page("t.py::slow")),
    ]


@pytest.mark.parametrize(
    ("given", "web"),
    [
        ("git@github.com:owner/repo.git", "https://github.com/owner/repo"),
        ("https://github.com/owner/repo.git", "https://github.com/owner/repo"),
        ("ssh://git@gitlab.example.com/group/repo.git", "https://gitlab.example.com/group/repo"),
        ("https://github.com/owner/repo/", "https://github.com/owner/repo"),
        ("https://user:token@github.com/owner/repo", ""),  # credentials never reach a page
        ("/srv/git/repo.git", ""),
        ("javascript:alert(1)//github.com/o/r", ""),
        ("https://github.com/o/r?x=<script>", ""),
    ],
)
def test_the_repository_url_from_a_remote_or_web_address(given: str, web: str) -> None:
    from perfgate.report.site.project import web_url

    assert web_url(given) == web


def test_commit_links_only_for_commit_ids() -> None:
    from perfgate.report.site.project import commit_url

    assert commit_url("https://github.com/o/r", "0123abcd") == "https://github.com/o/r/commit/0123abcd"
    assert commit_url("https://github.com/o/r", "c-calibrated") == ""  # a label, not a commit
    assert commit_url("", "0123abcd") == ""


def test_the_project_from_actions_then_the_git_remote_then_its_directory(tmp_path: Path) -> None:
    import subprocess

    from perfgate.report.site.project import project_for

    actions = {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "acme/kernels"}
    assert project_for(tmp_path, "", actions).repo_url == "https://github.com/acme/kernels"
    assert project_for(tmp_path, "", actions).name == "kernels"
    assert project_for(tmp_path, "https://example.org/x/y", actions).repo_url == "https://example.org/x/y"
    repo = tmp_path / "checkout"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=30)
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", "git@github.com:acme/ops.git"], check=True)
    assert project_for(repo, "", {}) == project_for(repo, "", {})
    assert project_for(repo, "", {}).repo_url == "https://github.com/acme/ops"
    (repo / "pyproject.toml").write_text('[project]\nname = "acme-ops"\n', encoding="utf-8")
    assert project_for(repo, "", {}).name == "acme-ops"
    assert project_for(tmp_path, "", {}).name == tmp_path.name and project_for(tmp_path, "", {}).repo_url == ""


def test_summary_emoji_become_css_marks_outside_tags_only() -> None:
    from perfgate.report.site.marks import EMOJI, css_marks

    html = '<p>\u274c gate failed</p><td>\U0001f534 regressed</td><a title="\U0001f534 x">\u26a0\ufe0f</a>'
    out = css_marks(html)
    assert not EMOJI.search(out.replace('title="\U0001f534 x"', ""))
    assert '<span class="mark badge bad" role="img" aria-label="failed" title="failed">FAIL</span>' in out
    assert '<span class="mark dot bad"' in out and 'title="\U0001f534 x"' in out  # an attribute is left whole


def test_an_unusable_repo_url_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "h.db"
    open_store(db).close()
    argv = ["report", "--html", str(tmp_path / "site"), "--db", str(db), "--rootdir", str(tmp_path)]
    assert main([*argv, "--repo-url", "https://user:token@github.com/o/r"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a repository's web address" in err and "token" not in err
    assert not (tmp_path / "site").exists()
