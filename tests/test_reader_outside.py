"""The outside review of issue 32: what the trace readers accepted, crashed on or left behind."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from perfgate.cli import main

DATA = Path(__file__).parent / "inputs_outside32"


def test_a_kernel_name_with_a_lone_surrogate_is_shown_replaced_and_analyze_writes_everything(tmp_path, capsys):
    trace = DATA / "torch_lone_surrogate.json"  # "add\ud800kernel": valid JSON, no UTF-8 writer encodes it
    assert main(["analyze", str(trace), "--format", "md"]) == 0
    assert "add\ufffdkernel" in capsys.readouterr().out
    out = tmp_path / "rep"
    assert main(["analyze", str(trace), "--output-dir", str(out), "--no-charts"]) == 0
    assert {p.name for p in out.iterdir()} >= {"analysis.json", "report.md"}


def test_analyze_leaves_nothing_beside_a_wal_mode_nsys_export(tmp_path, capsys):
    export = tmp_path / "w.sqlite"
    shutil.copyfile(Path(__file__).parent / "data" / "h100" / "perfgate-nsys.sqlite", export)
    con = sqlite3.connect(export)
    con.execute("PRAGMA journal_mode=wal")
    con.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.sqlite"]
    assert main(["analyze", str(export), "--format", "json"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.sqlite"]


@pytest.mark.parametrize("cell", ["n/a", "nan", "inf", "15 648"])
def test_an_ncu_duration_written_but_unreadable_is_refused_in_one_line(tmp_path, capsys, cell):
    csv = tmp_path / "r.csv"
    csv.write_text((DATA / "ncu_na_duration.csv").read_text().replace('"n/a"', f'"{cell}"'))
    assert main(["analyze", str(csv), "--format", "json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "gpu__time_duration.sum" in err and "is not a duration" in err, err


@pytest.mark.parametrize(
    ("cells", "field"),
    [('"0","128","4096"', "duration_ns"), ('"1000","1e300","4096"', "block_size"), ('"1000","128","0"', "grid_size")],
)
def test_an_impossible_ncu_launch_is_refused_in_one_line(tmp_path, capsys, cells, field):
    csv = tmp_path / "r.csv"
    csv.write_text((DATA / "ncu_zero_duration.csv").read_text().replace('"0","1e300","1e300"', cells))
    assert main(["analyze", str(csv), "--format", "json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{field} = " in err, err


# finding 09b: --output-dir was written a file at a time into the directory itself; a failure midway (a disk
# full, a chart that cannot be drawn) left analysis.json without report.md. Now all or nothing.
def _fail_at_report_md(monkeypatch):
    """The disk fills up at the last file analyze writes (after analysis.json and the charts)."""
    import errno

    import perfgate.report.outputs as outputs

    def full(path, text):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(outputs, "atomic_write_text", full)


def test_analyze_output_dir_that_fails_midway_leaves_no_directory_behind(tmp_path, capsys, monkeypatch):
    _fail_at_report_md(monkeypatch)
    out = tmp_path / "rep"
    assert main(["analyze", str(DATA / "torch_lone_surrogate.json"), "--output-dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "No space left on device" in err, err
    assert f"{out}/report.md" in err and "nothing written" in err and "staging" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_analyze_output_dir_that_fails_midway_leaves_the_previous_report_whole(tmp_path, capsys, monkeypatch):
    out = tmp_path / "rep"
    assert main(["analyze", str(DATA / "torch_lone_surrogate.json"), "--output-dir", str(out)]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert {"analysis.json", "report.md"} <= set(before)
    (out / "notes.txt").write_text("the user's own file")
    _fail_at_report_md(monkeypatch)
    trace = tmp_path / "other.json"
    trace.write_text((DATA / "torch_lone_surrogate.json").read_text().replace("add", "mul"))
    assert main(["analyze", str(trace), "--output-dir", str(out)]) == 2
    after = {p.name: p.read_bytes() for p in out.iterdir()}
    assert after == before | {"notes.txt": b"the user's own file"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.json", "rep"]


def test_analyze_output_dir_replaces_the_previous_report_and_keeps_other_files(tmp_path, capsys):
    out = tmp_path / "rep"
    out.mkdir()
    (out / "notes.txt").write_text("the user's own file")
    (out / "report.md").write_text("an older report")
    assert main(["analyze", str(DATA / "torch_lone_surrogate.json"), "--output-dir", str(out)]) == 0
    assert (out / "notes.txt").read_text() == "the user's own file"
    assert "older" not in (out / "report.md").read_text() and (out / "analysis.json").is_file()
    assert not [p for p in tmp_path.rglob(".*")]  # no staging directory left
