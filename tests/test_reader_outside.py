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


# finding 07b: the CSV reader refuses a duration written but unreadable; the .ncu-rep reader dropped a NaN or
# infinite duration as a metric ncu could not compute, so the kernel lost its time without a word. No ncu
# here: a stand-in for NVIDIA's ncu_report module serves one launch whose duration is the value given.
class _Metric:
    def __init__(self, value, unit):
        self.value, self._unit = value, unit

    def kind(self):
        return 1  # a number (ValueKind_STRING is 2)

    def as_double(self):
        return self.value

    def unit(self):
        return self._unit


class _Action:
    def __init__(self, metrics):
        self.metrics = metrics

    def metric_names(self):
        return list(self.metrics)

    def metric_by_name(self, name):
        return self.metrics.get(name)

    def name(self, base):
        return "add_kernel"

    def nvtx_state(self):
        return None


def _fake_ncu_report(monkeypatch, duration):
    import sys
    import types

    action = _Action(
        {"gpu__time_duration.sum": _Metric(duration, "ns"), "dram__bytes_read.sum": _Metric(4096.0, "byte")}
    )
    rng = types.SimpleNamespace(num_actions=lambda: 1, action_by_idx=lambda a: action)
    ctx = types.SimpleNamespace(num_ranges=lambda: 1, range_by_idx=lambda r: rng)
    module = types.SimpleNamespace(load_report=lambda path: ctx, IAction=types.SimpleNamespace(NameBase_DEMANGLED=1))
    monkeypatch.setitem(sys.modules, "ncu_report", module)


@pytest.mark.parametrize("duration", [float("nan"), float("inf"), -float("inf")])
def test_an_ncu_rep_duration_that_is_not_a_number_is_refused_in_one_line(tmp_path, monkeypatch, duration):
    from perfgate.errors import ReportFileError
    from perfgate.parse.ncu_report_file import read_in_process

    _fake_ncu_report(monkeypatch, duration)
    with pytest.raises(ReportFileError, match=r"launch 0: gpu__time_duration.sum = .* is not a duration") as err:
        read_in_process(tmp_path / "r.ncu-rep")
    assert "r.ncu-rep" in str(err.value) and "\n" not in str(err.value)


def test_an_ncu_rep_duration_that_is_a_number_is_read(tmp_path, monkeypatch):
    from perfgate.parse.ncu_report_file import read_in_process

    _fake_ncu_report(monkeypatch, 15648.0)
    (launch,) = read_in_process(tmp_path / "r.ncu-rep")
    assert launch.value("gpu__time_duration.sum") == 15648.0 and launch.value("dram__bytes_read.sum") == 4096.0


def test_the_report_readers_value_check_refuses_a_nan_duration_it_is_handed(tmp_path):
    from perfgate.errors import ReportFileError
    from perfgate.parse.ncu_report_file import _build

    raw = ("k", ("gpu__time_duration.sum",), (float("nan"),), ("ns",), ())
    with pytest.raises(ReportFileError, match="launch 0: gpu__time_duration.sum = 'nan' is not a duration"):
        _build(tmp_path / "r.ncu-rep", [raw])


def test_a_new_analyze_output_dir_has_the_mode_any_new_directory_gets(tmp_path, capsys):
    (tmp_path / "plain").mkdir()
    assert main(["analyze", str(DATA / "torch_lone_surrogate.json"), "--output-dir", str(tmp_path / "rep")]) == 0
    assert (tmp_path / "rep").stat().st_mode == (tmp_path / "plain").stat().st_mode  # not a temporary's 0700
