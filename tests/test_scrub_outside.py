"""The outside review of issue 32: secrets that reached an output past the scrubber, and identifiers it changed."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from perfgate.cli import main
from perfgate.report.scrub import Scrubber, export_scrubber, scrub_secrets, secret_env_values
from tests.test_ci_report import FakeGitHub

# not under tests/data: test_secret_formats checks that no recorded id there holds a secret
DATA = Path(__file__).parent / "inputs_outside32"
TOKEN = "ghp_" + "1234567890abcdefghijABCDEFGHIJ123456"


@pytest.mark.parametrize(
    ("argv", "kept"),
    [
        ("pytest --perfgate --token=hunter2hunter2", "pytest --perfgate --token=***"),
        ("pytest --perfgate --token hunter2hunter2 -q", "pytest --perfgate --token *** -q"),
        ("pytest -v --x --api-key=hunter2hunter2 --perfgate", "pytest -v --x --api-key=*** --perfgate"),
        ("pytest --verbose --password hunter2hunter2", "pytest --verbose --password ***"),
        ("pytest --token --perfgate", "pytest --token --perfgate"),  # a flag after it is not its value
    ],
)
def test_a_secret_flag_after_a_valueless_flag_is_masked(argv, kept):
    assert scrub_secrets(argv) == kept


def test_the_published_argv_holds_no_secret_flag_value():
    argv = "/venv/bin/pytest --perfgate --token=hunter2hunter2 --perfgate-json out.json"
    assert "hunter2hunter2" not in Scrubber(None).text(argv)


def test_history_masks_a_token_in_the_branch_and_in_case_ids(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "h.db"
    assert main(["import-benchmark", str(DATA / "bench_secret_branch.json"), "--db", str(db)]) == 0
    for argv in (["history", "--db", str(db)], ["history", "--db", str(db), "--case", "*"]):
        capsys.readouterr()
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert "ghp_" not in out and "***" in out, out
    assert main(["history", "--db", str(db), "--case", "*", "--format", "json"]) == 0
    assert "ghp_" not in capsys.readouterr().out


@pytest.mark.parametrize("command", ["verdict", "annotate"])
def test_a_ci_refusal_masks_the_token_in_its_case_id(command, capsys):
    assert main(["ci", command, str(DATA / "results_secret_case_id.json")]) == 4
    err = capsys.readouterr().err
    assert "t.py::t[***]" in err and "ghp_" not in err, err


@pytest.mark.parametrize(
    "environ",
    [
        {"CACHE_KEY": "test_sorted_cache"},
        {"SORT_KEY": "test_sorted_cache"},
        {"PASS_THROUGH": "test_sorted_cache"},
        {"API_KEY": "test_sorted_cache"},  # a name is no secret, whatever the variable is called
        {"CACHE_KEY": "test_matmul", "API_KEY": "kernels/tests"},
    ],
)
def test_an_environment_value_that_is_a_name_never_changes_a_case_id(environ):
    s = export_scrubber(None, False, environ)
    for case_id in ("test_a.py::test_sorted_cache", "kernels/tests/test_perf.py::test_matmul[fp16]"):
        assert s.case_id(case_id) == case_id


def test_a_key_variable_is_masked_only_when_its_value_looks_random_and_a_secret_name_always():
    values = secret_env_values(
        {"CACHE_KEY": "matmul-fp16-large", "SIGNING_KEY": "x8Kd92jf0Q2lzPqW", "DB_PASSWORD": "hunter2-correct-horse"}
    )
    assert set(values) == {"x8Kd92jf0Q2lzPqW", "hunter2-correct-horse"}


@pytest.mark.parametrize("literal", ["t.py::t[***]", "t.py::t[***2]"])
def test_a_literal_mask_in_an_id_published_after_a_masked_id_keeps_both_apart(literal):
    s = Scrubber(None)
    masked_ids = [s.case_id(f"t.py::t[{TOKEN}]"), s.case_id(f"t.py::t[{TOKEN.replace('1', '9')}]")]
    published = s.case_id(literal)
    assert len({*masked_ids, published}) == 3, (masked_ids, published)
    assert "ghp_" not in published and published.startswith("t.py::t[")


def test_a_batch_publishes_every_literal_id_unchanged_whatever_order_its_cases_come_in():
    ids = [f"t.py::t[{TOKEN}]", "t.py::t[***]", "t.py::t[***2]", f"t.py::t[{TOKEN.replace('1', '9')}]"]
    for order in (ids, ids[::-1]):
        s = Scrubber(None)
        s.reserve(order)
        published = [s.case_id(i) for i in order]
        assert len(set(published)) == 4 and "t.py::t[***]" in published and "t.py::t[***2]" in published
        assert not any("ghp_" in p for p in published)


def test_a_run_publishes_its_literal_mask_id_unchanged_and_its_secret_id_apart(tmp_path):
    from tests.helpers import make_run

    run = make_run({f"t.py::t[{TOKEN}]": [1.0, 1.1], "t.py::t[***]": [1.0, 1.1]})
    published = [r.case_id for r in Scrubber(None).run(run).results]
    assert published[1] == "t.py::t[***]" and published[0] != "t.py::t[***]" and "ghp_" not in published[0]


def test_db_export_keeps_a_literal_mask_id_and_a_secret_id_apart(tmp_path, monkeypatch):
    from perfgate.store import open_store
    from tests.helpers import make_run

    # the secret id sorts before the literal one ("#" < "*"): the history hands it to the export first
    monkeypatch.setenv("PERFGATE_TEST_TOKEN", "#hunter2hunter2")
    run = make_run({"t.py::t[#hunter2hunter2]": [1.0, 1.1], "t.py::t[***]": [2.0, 2.1]}, uid="r1")
    with open_store(tmp_path / "h.db") as store:
        store.save_run(run)
    results = tmp_path / "out.json"
    results.write_text(json.dumps({"run": {"run_uid": "r1"}}))
    argv = ["db", "export", str(tmp_path / "up.db"), "--db", str(tmp_path / "h.db"), "--results", str(results)]
    assert main(argv) == 0
    with open_store(tmp_path / "up.db", readonly=True) as up:
        rows = {r["case_id"]: r["median_ms"] for r in up.query("SELECT case_id, median_ms FROM cases")}
    assert len(rows) == 2 and rows["t.py::t[***]"] > 1.5 and not any("hunter2" in c for c in rows), rows


# finding 03b: a results file another job wrote holds `password: ...` in a finding's text. Token formats were
# masked where it is published; a secret-named key's value was not.
FINDING = DATA / "results_secret_finding.json"


@pytest.fixture
def github(monkeypatch):
    import urllib.request

    fake = FakeGitHub()
    monkeypatch.setattr(urllib.request, "urlopen", fake)
    monkeypatch.setenv("GITHUB_TOKEN", "t0ken")
    return fake


def test_ci_annotate_masks_a_secret_named_keys_value_in_a_foreign_finding(capsys):
    assert main(["ci", "annotate", str(FINDING)]) == 0
    out = capsys.readouterr().out
    assert "password: ***" in out and "hunter2hunter2" not in out and "ghp_" not in out, out


def test_ci_comment_masks_a_secret_named_keys_value_in_results_and_in_summaries(github, tmp_path):
    summary = tmp_path / "s.md"
    summary.write_text("## perfgate\n\nrun with `api_key=hunter2hunter2` on `t.py::t[***]`\n")
    api = ("--repo", "o/r", "--pr", "7", "--api-url", "https://api.example.test")
    assert main(["ci", "comment", "--results", str(FINDING), *api]) == 0
    assert main(["ci", "comment", str(summary), *api, "--marker", "summary"]) == 0
    bodies = [c["body"] for c in github.comments.values()] + [str(b) for _, _, b in github.requests]
    assert not any("hunter2hunter2" in b or "ghp_" in b for b in bodies), bodies
    assert any("password: ***" in b for b in bodies) and any("`t.py::t[***]`" in b for b in bodies)


@pytest.mark.parametrize("name", ["results_secret_finding.json", "results_secret_case_id.json", "forged kind"])
def test_ci_report_publishes_no_secret_in_its_status_comment_or_log(github, name, tmp_path):
    path = DATA / name
    if name == "forged kind":  # refused: the refusal quotes it
        doc = json.loads(FINDING.read_text())
        doc["findings"][0]["kind"] = "password: hunter2hunter2"
        path = tmp_path / "forged.json"
        path.write_text(json.dumps(doc))
    out = io.StringIO()
    argv = ["ci", "report", "--results", str(path), "--repo", "o/r", "--sha", "a" * 40, "--pr", "7"]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        main([*argv, "--api-url", "https://api.example.test"])
    published = [out.getvalue()] + [json.dumps(b) for _, _, b in github.requests]
    assert not any("hunter2hunter2" in t or "ghp_" in t for t in published), published
    assert github.statuses and github.comments


def test_ci_verdict_refusing_a_forged_finding_kind_masks_the_secret_it_quotes(tmp_path, capsys):
    doc = json.loads(FINDING.read_text())
    doc["findings"][0]["kind"] = "password: hunter2hunter2"
    (tmp_path / "forged.json").write_text(json.dumps(doc))
    assert main(["ci", "verdict", str(tmp_path / "forged.json")]) == 2
    err = capsys.readouterr().err
    assert "findings[0]" in err and "hunter2hunter2" not in err, err
