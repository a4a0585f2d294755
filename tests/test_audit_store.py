"""What an outside review of the history commands found: an old history that prunes, a lock message only for a
real lock, out-of-range numbers refused by the parser, and a merge that never adds a run twice."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from perfgate.cli import main
from perfgate.errors import StoreError
from perfgate.store import open_store
from tests.conftest import DATA

COMPAT = DATA / "compat"
OLD_RUNS = 4


@pytest.fixture
def old_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A schema-v2 history with 4 KB pages, as the old version left it (a copy: the fixture stays as it is)."""
    monkeypatch.delenv("PERFGATE_DB", raising=False)
    shutil.copy(COMPAT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copy(COMPAT / "history.db", tmp_path / "v2.db")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "v2.db"


def _runs(path: Path) -> int:
    with sqlite3.connect(path) as con:
        count: int = con.execute("SELECT count(*) FROM runs").fetchone()[0]
    return count


def test_an_old_history_prunes_and_compacts_to_the_new_page_size(old_history, capsys):
    code = main(["db", "prune", "--db", str(old_history), "--keep-runs", "0", "--older-than", "0"])
    captured = capsys.readouterr()
    assert (code, captured.err) == (0, "")
    assert f"removed {OLD_RUNS} of {OLD_RUNS} run(s)" in captured.out
    assert _runs(old_history) == 0
    with sqlite3.connect(old_history) as con:
        assert con.execute("PRAGMA page_size").fetchone()[0] == 16384
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_table_locked_by_the_same_connection_is_not_called_another_process(old_history):
    with open_store(old_history) as store:
        with pytest.raises(StoreError) as raised, store.errors("read it"):
            cur = store.db.con.execute("SELECT id FROM runs")
            cur.fetchone()  # a statement still open on this connection: DROP TABLE gets SQLITE_LOCKED
            store.db.con.execute("DROP TABLE pinned_runs")
    assert "database table is locked" in str(raised.value)
    assert "another process" not in str(raised.value)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["db", "prune", "--older-than", "nan"], "argument --older-than: must be a finite number >= 0 and <= 36500"),
        (["db", "prune", "--older-than", "inf"], "argument --older-than: must be a finite number"),
        (["db", "prune", "--older-than", "1e20"], "argument --older-than: must be a finite number"),
        (["db", "prune", "--keep-runs", "-1"], "argument --keep-runs: must be an integer >= 0"),
        (["history", "--last", "99999999999999999999999"], "argument --last: must be an integer >= 0 and <= 92"),
        (["compare", "--run", "99999999999999999999999"], "argument --run: must be an integer >= 1 and <= 92"),
        (["db", "pin", "99999999999999999999999", "--reason", "x"], "argument RUN: must be an integer >= 1"),
    ],
)
def test_an_out_of_range_number_is_one_parser_error_and_changes_nothing(old_history, capsys, argv, says):
    before = old_history.read_bytes()
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--db", str(old_history)])
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert says in err.splitlines()[-1]
    assert "Traceback" not in err
    assert old_history.read_bytes() == before


def _clear_uid(path: Path, run_id: int) -> None:
    with sqlite3.connect(path) as con:
        con.execute("UPDATE runs SET run_uid = NULL WHERE id = ?", (run_id,))


def test_a_run_whose_uid_was_cleared_is_matched_by_content_not_added_twice(old_history, capsys):
    cleared = old_history.with_name("cleared.db")
    shutil.copy(old_history, cleared)
    _clear_uid(cleared, 3)
    assert main(["db", "merge", str(old_history), str(cleared)]) == 0
    assert "0 run(s) added, 4 already" in capsys.readouterr().out
    assert _runs(old_history) == OLD_RUNS


def test_a_run_merged_under_a_derived_uid_is_not_added_again_under_its_real_one(old_history, capsys):
    cleared, out = old_history.with_name("cleared.db"), old_history.with_name("out.db")
    shutil.copy(old_history, cleared)
    _clear_uid(cleared, 3)
    assert main(["db", "merge", str(out), str(cleared)]) == 0  # run 3 lands in OUT as "derived-..."
    assert main(["db", "merge", str(out), str(old_history)]) == 0
    assert "0 run(s) added, 4 already" in capsys.readouterr().out.splitlines()[-1]
    assert _runs(out) == OLD_RUNS
