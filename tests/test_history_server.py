"""Every command that reads or writes the history, on both backends (a SQLite file and a PostgreSQL server,
`history_target`), and what only a server brings: runners writing side by side without losing or
duplicating a run, SQLite files merged into it, and a URL's password never shown, logged or stored."""

from __future__ import annotations

import json
import multiprocessing
from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.cli import main
from perfgate.errors import StoreError
from perfgate.store import open_store
from perfgate.store.merge import merge_histories
from perfgate.store.target import ServerUrl, history_target
from tests.backends import db_arg, server_history, server_unavailable
from tests.helpers import gate_json, make_run, perf_project

PROJECT = "[tool.perfgate]\nmin_samples = 5\nmax_samples = 10\nbudget_ms = 30\nwarmup_ms = 1\nconfirm_runs = 0\n"
TESTS = (
    "from perfgate.measure import clock\n"
    "def test_a(perfgate):\n    perfgate(clock.current().sleep, 0.001)\n"
    "def test_b(perfgate):\n    perfgate(clock.current().sleep, 0.002)\n"
)


def _cli(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_every_command_reads_and_writes_the_history_on_each_backend(pytester, monkeypatch, capsys, history_target):
    perf_project(pytester, monkeypatch, TESTS, PROJECT, PERFGATE_DB=db_arg(history_target))
    for _ in range(3):  # the first writes the baseline; the later ones read the noise window from the history
        assert gate_json(pytester).ret == 0
    db = db_arg(history_target)
    root = str(pytester.path)
    with open_store(history_target, readonly=True) as store:
        assert len(store.run_ids()) == 3
        assert store.load_verdicts(3) is not None
    code, out, _ = _cli(capsys, "compare", "--db", db, "--rootdir", root, "--run", "3")
    assert code == 0 and "run 3" in out
    code, out, _ = _cli(capsys, "history", "--db", db, "--rootdir", root, "--format", "json")
    assert code == 0 and [r["run_id"] for r in json.loads(out)] == [1, 2, 3]
    code, out, _ = _cli(capsys, "history", "--db", db, "--rootdir", root, "--case", "*test_a", "--format", "json")
    assert code == 0 and len(json.loads(out)) == 3
    code, out, _ = _cli(capsys, "history", "--changes", "--db", db, "--rootdir", root)
    assert code == 0 and "change point" in out
    code, out, err = _cli(capsys, "report", "--html", str(pytester.path / "site"), "--db", db, "--rootdir", root)
    assert code == 0, err
    assert (pytester.path / "site" / "index.html").exists()
    import perfgate

    frame = perfgate.history(db=db, case="*test_b")
    assert len(frame) == 3 and set(frame["kind"]) == {"gate"}


def _store_runs(args):
    target, writer, n = args
    from perfgate.store import open_store
    from tests.helpers import make_run

    with open_store(target) as store:
        for i in range(n):
            run = make_run({f"case{j}": [1.0 + i, 2.0, 3.0] for j in range(20)})
            run = replace(run, info=replace(run.info, run_uid=f"w{writer}-r{i}"))
            store.save_run(run)
            store.save_run(run)  # a retry after a lost answer: the same identity adds nothing


def test_eight_writers_at_once_lose_and_duplicate_no_run(history_target):
    with multiprocessing.get_context("spawn").Pool(8) as pool:
        pool.map(_store_runs, [(history_target, w, 6) for w in range(8)])
    with open_store(history_target, readonly=True) as store:
        uids = [r["run_uid"] for r in store.query("SELECT run_uid FROM runs ORDER BY id")]
        cases = store.query("SELECT count(*) AS n FROM cases")[0]["n"]
    assert sorted(uids) == sorted(f"w{w}-r{i}" for w in range(8) for i in range(6))
    assert cases == 48 * 20


def test_sqlite_files_of_several_runners_merge_into_the_history(tmp_path, history_target):
    runners = []
    for r in range(3):
        path = tmp_path / f"runner{r}.db"
        with open_store(path) as store:
            for i in range(2):
                store.save_run(make_run({"a": [1.0 + r + i, 2.0]}))
        runners.append(path)
    assert [c.added for c in merge_histories(history_target, runners)] == [2, 2, 2]
    assert [c.added for c in merge_histories(history_target, runners)] == [0, 0, 0]
    with open_store(history_target, readonly=True) as store:
        assert len(store.run_ids()) == 6


# --- the server's own behaviour -----------------------------------------------------------------------


@pytest.fixture
def server():
    why = server_unavailable()
    if why:
        pytest.skip(why)
    with server_history() as url:
        yield url


def test_the_password_is_never_shown_logged_written_or_stored(pytester, monkeypatch, capsys, server):
    secret = server.password
    assert secret and secret not in str(server) and secret not in repr(server)
    perf_project(pytester, monkeypatch, TESTS, PROJECT)
    # given on the command line (stored with the run as its argv), and again through the environment
    first = gate_json(pytester, "--perfgate-db", server.url, "--perfgate-summary", "summary.md")
    monkeypatch.setenv("PERFGATE_DB", server.url)
    second = gate_json(pytester, "--perfgate-summary", "summary.md", "--perfgate-report-dir", "report")
    shown = "\n".join(str(line) for r in (first, second) for line in (*r.outlines, *r.errlines))
    assert "stored run 2 in postgresql" in shown and "***@127.0.0.1" in shown
    code, out, err = _cli(capsys, "history", "--db", server.url, "--rootdir", str(pytester.path), "--format", "json")
    assert code == 0
    shown += out + err
    written = "".join(p.read_text(errors="replace") for p in pytester.path.rglob("*") if p.is_file())
    with open_store(server, readonly=True) as store:
        stored = json.dumps(
            [store.query(f"SELECT * FROM {t}") for t in ("runs", "cases", "perfgate_meta")], default=str
        )
    for where, text in (("output", shown), ("files", written), ("history", stored)):
        assert secret not in text, where


def test_a_command_line_naming_the_server_is_stored_without_its_password(history_target):
    run = make_run({"a": [1.0, 2.0]})
    argv = "pytest --perfgate --perfgate-db postgresql://fleet:hunter2@db.example/perf -k a"
    with open_store(history_target) as store:
        rid = store.save_run(replace(run, info=replace(run.info, argv=argv)))
        assert store.load_run(rid).info.argv == argv.replace("hunter2", "***")


def test_a_wrong_password_is_one_line_without_the_password(server, capsys):
    wrong = ServerUrl(server.url.replace(f":{server.password}@", ":not-the-password-42@"))
    with pytest.raises(StoreError) as raised:
        open_store(wrong)
    message = str(raised.value)
    assert "cannot connect" in message and "not-the-password-42" not in message and "\n" not in message
    code, _, err = _cli(capsys, "history", "--db", wrong.url)
    assert code == 2 and "not-the-password-42" not in err and "cannot connect" in err


def test_a_url_that_is_not_postgresql_is_refused_by_name(tmp_path, capsys):
    with pytest.raises(ValueError, match="SQLite path or a postgresql:// URL"):
        history_target("mysql://u:hunter2@db/x")
    with pytest.raises(SystemExit) as exited:  # argparse's own error line
        main(["history", "--db", "mysql://u:hunter2@db/x", "--rootdir", str(tmp_path)])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "postgresql:// URL" in err and "hunter2" not in err


def test_a_server_schema_differing_from_the_frozen_one_is_refused(server):
    open_store(server).close()
    with open_store(server) as store:
        store.db.execute("ALTER TABLE cases ADD COLUMN surprise TEXT")
    with pytest.raises(StoreError, match="never made: \\['surprise'\\]"):
        open_store(server, readonly=True)


def test_a_server_without_a_history_is_no_history_to_read_and_is_created_by_a_write(server):
    from perfgate.store import history_exists

    assert not history_exists(server)
    with pytest.raises(StoreError, match="no history at postgresql"):
        open_store(server, readonly=True)
    open_store(server).close()
    assert history_exists(server)
    with open_store(server, readonly=True) as store:
        assert store.run_ids() == []


def test_runners_opening_a_new_server_together_migrate_it_once(server):
    with multiprocessing.get_context("spawn").Pool(6) as pool:
        pool.map(_open_and_close, [server] * 6)
    with open_store(server, readonly=True) as store:
        from perfgate.store.schema import SCHEMA_VERSION

        assert store.query("SELECT value FROM perfgate_meta WHERE key = 'schema_version'") == [
            {"value": str(SCHEMA_VERSION)}
        ]


def _open_and_close(target):
    from perfgate.store import open_store

    open_store(target).close()


def test_a_path_stays_a_path_and_a_url_keeps_its_text(tmp_path):
    assert history_target(str(tmp_path / "h.db")) == tmp_path / "h.db"
    url = history_target("postgresql://fleet:s3cret@db.example:5432/perf")
    assert isinstance(url, ServerUrl) and str(url) == "postgresql://fleet:***@db.example:5432/perf"
    assert Path("postgresql:/x") == history_target("postgresql:/x")  # not a URL: no //


def test_a_server_of_an_older_version_is_migrated_with_its_ab_runs_recognised(server):
    """Migrations after 6 are one text for both backends: a server at version 9 (before A/B runs had kinds of
    their own) is brought to the current one, migration 10's `LIKE 'ab: %'` included."""
    from perfgate.store.schema import SCHEMA_VERSION
    from perfgate.store.server import ServerDatabase, _connect, migrate_server

    db = ServerDatabase(_connect(server), server, readonly=False)
    try:
        assert migrate_server(db, server, target=9) == 0
        for uid in ("p1-base", "p1-head", "plain"):
            db.execute(
                "INSERT INTO runs (run_uid, kind, git_commit, profile_settings, started_at, finished_at) "
                "VALUES (:uid, 'gate', 'c', :settings, '2026-01-01T00:00:00+00:00', '2026-01-01T00:01:00+00:00')",
                {"uid": uid, "settings": "ab: 20 rounds, seed 1" if uid.startswith("p1") else "100% of it"},
            )
    finally:
        db.close()
    with open_store(server) as store:
        rows = store.query("SELECT kind, ab_pair FROM runs ORDER BY id")
        version = store.query("SELECT value FROM perfgate_meta WHERE key = 'schema_version'")[0]["value"]
    assert [(r["kind"], r["ab_pair"]) for r in rows] == [("ab-base", "p1"), ("ab-head", "p1"), ("gate", None)]
    assert version == str(SCHEMA_VERSION)
