"""Readers of outside files check what values mean where data enters (issue 23): each class of input an
independent campaign found wrong, written from its description, against the real recorded files.
A result is either true (durations >= 0, sums within int64, shares within [0, 100], medians within
[min, max], names as text) or one clear line naming the file; never a traceback, never exit 0 with a
number that cannot be."""

import contextlib
import csv
import gzip
import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from perfgate.cli import main
from perfgate.errors import PerfgateError, ReportFileError

INT64_MAX = 2**63 - 1
KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"


def run_cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def analyze_json(path):
    code, out, err = run_cli("analyze", path, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def refused(*argv):
    """The command's one-line refusal (exit 2), naming the file."""
    code, _, err = run_cli(*argv)
    assert code == 2 and len(err.strip().splitlines()) == 1, (code, err)
    assert str(argv[1]) in err
    return err


@pytest.fixture
def export(tmp_path, h100_data):
    """The recorded H100 nsys export with SQL applied (constraints dropped first, as damage can)."""

    def make(*sql, loosen=()):
        path = tmp_path / "x.sqlite"
        shutil.copy(h100_data / "perfgate-nsys.sqlite", path)
        con = sqlite3.connect(path)
        for table in loosen:
            con.executescript(
                f"CREATE TABLE loose AS SELECT * FROM {table}; DROP TABLE {table}; ALTER TABLE loose RENAME TO {table};"
            )
        for statement in sql:
            con.execute(statement)
        con.commit()
        con.close()
        return path

    return make


def stats_are_true(row):
    assert 0 <= row["min_ns"] <= row["median_ns"] <= row["max_ns"], row
    assert row["min_ns"] <= row["avg_ns"] <= row["max_ns"], row
    assert row["max_ns"] <= row["total_ns"] <= INT64_MAX, row


# --- nsys exports --------------------------------------------------------------------------------------


def test_kernels_ending_before_they_start_are_dropped_and_counted_never_negative(export):
    path = export(f"UPDATE {KERNEL} SET start = end, end = start WHERE rowid % 5 = 0 AND end > start")
    swapped = sqlite3.connect(path).execute(f"SELECT count(*) FROM {KERNEL} WHERE end < start").fetchone()[0]
    doc = analyze_json(path)
    for k in doc["kernels"]:
        stats_are_true(k)
        assert 0 <= k["time_pct"] <= 100
    assert sum(k["time_pct"] for k in doc["kernels"]) == pytest.approx(100)
    assert 0 <= doc["gpu_idle"]["utilization_pct"] <= 100
    assert (
        f"{swapped:,} {KERNEL} rows with a missing, negative or non-integer start or end, ending before "
        "they start, or past 1e18 ns (31 years) ignored" in doc["notes"]
    )


def test_memsets_and_nvtx_ranges_ending_before_they_start_never_give_negative_time_or_bandwidth(export):
    doc = analyze_json(
        export(
            "UPDATE CUPTI_ACTIVITY_KIND_MEMSET SET start = end + 5000, end = start",
            "UPDATE NVTX_EVENTS SET start = end + 1, end = start WHERE rowid % 2 = 0",
        )
    )
    for row in doc["memory"] + doc["nvtx"]:
        stats_are_true(row)
    assert all(m["gbps"] is None or m["gbps"] >= 0 for m in doc["memory"])
    assert any("CUPTI_ACTIVITY_KIND_MEMSET" in n for n in doc["notes"])
    assert any("NVTX_EVENTS PushPop" in n for n in doc["notes"])


def test_kernel_durations_summing_past_int64_refuse_the_export_instead_of_wrapping(export):
    # each duration under the 1e18 ns bound (a longer one is dropped), their sum past int64
    path = export(f"UPDATE {KERNEL} SET end = start + 900000000000000000 WHERE rowid % 50 = 0")
    assert "past the int64 range" in refused("analyze", path, "--format", "json")


def test_an_nvtx_median_stays_within_min_and_max_when_durations_are_huge(export):
    path = export("UPDATE NVTX_EVENTS SET start = 0, end = 9223372036854775807 WHERE rowid = 1")
    for row in analyze_json(path)["nvtx"]:
        stats_are_true(row)


def test_string_table_values_that_are_not_text_reach_the_report_and_charts_as_text(export, tmp_path):
    path = export(
        f"UPDATE StringIds SET value = 12345 WHERE id = (SELECT demangledName FROM {KERNEL} LIMIT 1)",
        f"UPDATE StringIds SET value = x'00ff41' WHERE id = (SELECT max(demangledName) FROM {KERNEL})",
        "UPDATE StringIds SET value = CAST(x'c328ff' AS TEXT) WHERE id IN (SELECT nameId FROM "
        "CUPTI_ACTIVITY_KIND_RUNTIME)",
        loosen=("StringIds",),
    )
    out = tmp_path / "report"
    code, _, err = run_cli("analyze", path, "--output-dir", out)
    assert code == 0, err
    doc = json.loads((out / "analysis.json").read_text())["files"][0]
    names = [k["name"] for k in doc["kernels"]] + [a["name"] for a in doc["api"]]
    assert all(isinstance(n, str) for n in names) and "12345" in names
    assert (out / "report.md").is_file() and list(out.glob("*.png"))


def test_the_gate_timeline_drops_impossible_rows_with_a_note(export):
    from perfgate.parse.nsys_sqlite import read_nsys_sqlite

    path = export(
        f"UPDATE {KERNEL} SET start = end, end = start WHERE rowid % 3 = 0 AND end > start",
        f"UPDATE {KERNEL} SET registersPerThread = -1 WHERE rowid % 3 = 1",
    )
    timeline = read_nsys_sqlite(path)
    assert all(0 <= k.start_ns <= k.end_ns for k in timeline.kernels)
    assert all(k.registers_per_thread is None or k.registers_per_thread >= 0 for k in timeline.kernels)
    assert any(KERNEL in note and "ignored" in note for note in timeline.notes)


def test_a_timeline_past_its_row_budget_says_so_in_one_line(export, monkeypatch):
    from perfgate.parse import nsys_sqlite

    monkeypatch.setattr(nsys_sqlite, "MAX_TIMELINE_ROWS", 1000)
    with pytest.raises(ReportFileError, match="more than the 1,000 a timeline reads"):
        nsys_sqlite.read_nsys_sqlite(export())


FAKE_NSYS = """
import shutil, sys
out = next(a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--output="))
shutil.copy(sys.argv[-1].replace(".nsys-rep", ".recorded"), out)
"""


def test_analyze_of_an_nsys_report_never_overwrites_the_sqlite_beside_it(tmp_path, h100_data, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    nsys = bin_dir / "nsys"
    nsys.write_text(f"#!{sys.executable}\n{FAKE_NSYS}")
    nsys.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    report = tmp_path / "run.nsys-rep"
    shutil.copy(h100_data / "perfgate-nsys.nsys-rep", report)
    shutil.copy(h100_data / "perfgate-nsys.sqlite", tmp_path / "run.recorded")  # what the stand-in exports
    mine = tmp_path / "run.sqlite"
    mine.write_text("the user's own file")
    doc = analyze_json(report)
    assert doc["kernels"] and doc["source"] == str(report)
    assert mine.read_text() == "the user's own file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "run.nsys-rep", "run.recorded", "run.sqlite"]


# --- torch traces --------------------------------------------------------------------------------------


def trace(tmp_path, events, name="t.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def test_ten_torch_kernels_of_9_9e14_us_refuse_instead_of_wrapping_negative(tmp_path):
    path = trace(
        tmp_path,
        [
            {"ph": "X", "cat": "kernel", "name": "k", "ts": 1.0 + i, "dur": 9.9e14, "pid": 0, "tid": 0}
            for i in range(10)
        ],
    )
    assert "past the int64 range" in refused("analyze", path, "--format", "json")


@pytest.mark.parametrize("digits", [400, 5000])
def test_torch_timestamps_of_hundreds_of_digits_are_one_clear_line(tmp_path, digits):
    path = tmp_path / "t.json"
    path.write_text(
        '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": '
        + "1" * digits
        + ', "dur": 1}, {"ph": "X", "cat": "kernel", "name": "k", "ts": 5, "dur": 2}]}'
    )
    code, out, err = run_cli("analyze", path, "--format", "json")
    if code == 0:  # a timestamp that is not one is dropped and counted, the rest read
        doc = json.loads(out)
        assert [k["count"] for k in doc["kernels"]] == [1] and doc["notes"]
    else:
        assert code == 2 and len(err.strip().splitlines()) == 1 and str(path) in err


def test_torch_events_with_negative_durations_are_dropped_and_counted(tmp_path):
    path = trace(
        tmp_path,
        [
            {"ph": "X", "cat": "kernel", "name": "k", "ts": 10, "dur": -5, "pid": 0, "tid": 0},
            {"ph": "X", "cat": "kernel", "name": "k", "ts": 20, "dur": 3, "pid": 0, "tid": 0},
        ],
    )
    doc = analyze_json(path)
    assert [(k["count"], k["min_ns"]) for k in doc["kernels"]] == [(1, 3000)]
    assert doc["notes"] == ["1 kernel trace events whose ts/dur is not a number in [0, 1e+15) us ignored"]


def test_control_characters_in_names_never_reach_the_terminal(tmp_path):
    path = trace(tmp_path, [{"ph": "X", "cat": "kernel", "name": "k\x1b[2J\x1b]0;owned\x07", "ts": 1, "dur": 1}])
    code, out, _ = run_cli("analyze", path)
    assert code == 0 and "\x1b" not in out and "\x07" not in out and "k\ufffd[2J" in out


def test_a_corrupt_gzip_member_is_one_clear_line(tmp_path):
    events = [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1}] * 50
    packed = bytearray(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    packed[10] |= 0b110  # the first deflate block's type becomes 3: zlib says "invalid block type"
    path = tmp_path / "t.json.gz"
    path.write_bytes(bytes(packed))
    assert "cannot be read" in refused("analyze", path, "--format", "json")


# --- every JSON reader: integers that do not fit -----------------------------------------------------------

HUGE = "1" + "0" * 5000


def with_huge(text, key):
    """The first number after "key" replaced by a 5,000-digit integer."""
    return re.sub(rf'"{key}": -?[0-9.eE+-]+', f'"{key}": {HUGE}', text, count=1)


def _baseline(tmp_path, h100_data):
    from perfgate.baseline import load_baseline

    path = tmp_path / "b.json"
    path.write_text(with_huge((h100_data / "profiled_baseline.json").read_text(), "median_ms"))
    return lambda: load_baseline(path)


def _torch(tmp_path, h100_data):
    from perfgate.parse.torch_trace import read_torch_trace

    path = tmp_path / "t.json"
    path.write_text(with_huge((h100_data.parent / "torch_trace.json").read_text(), "stream"))
    return lambda: read_torch_trace(path)


def _benchmark(tmp_path, h100_data):
    from perfgate.parse.pytest_benchmark import read_pytest_benchmark

    path = tmp_path / "bench.json"
    path.write_text(with_huge((h100_data.parent / "pytest_benchmark.json").read_text(), "rounds"))
    return lambda: read_pytest_benchmark(path)


def _child(tmp_path, h100_data):
    from perfgate.measure.processes import parse_child_output

    path = tmp_path / "child.json"
    path.write_text(with_huge((h100_data.parent / "child_results.json").read_text(), "n_samples"))
    return lambda: parse_child_output(path, 0)


def _results(tmp_path, h100_data):
    path = tmp_path / "results.json"
    path.write_text(
        with_huge(gzip.decompress((h100_data / "gate_profiled_copy_run.json.gz").read_bytes()).decode(), "bytes_moved")
    )

    def annotate():
        code, _, err = run_cli("ci", "annotate", path)
        if code in (2, 4):
            raise PerfgateError(err.strip())
        return code

    return annotate


@pytest.mark.parametrize("reader", [_baseline, _torch, _benchmark, _child, _results])
def test_a_json_integer_of_5000_digits_is_one_clear_line_in_every_json_reader(tmp_path, h100_data, reader):
    read = reader(tmp_path, h100_data)
    with pytest.raises(PerfgateError) as err:
        read()
    assert "\n" not in str(err.value) and str(tmp_path) in str(err.value)


def test_import_benchmark_refuses_seconds_that_are_infinite_in_milliseconds(tmp_path, h100_data):
    doc = json.loads((h100_data.parent / "pytest_benchmark.json").read_text())
    doc["benchmarks"][0]["stats"].update(
        {k: 1e306 for k in ("min", "max", "mean", "median", "q1", "q3")},
        data=[1e306] * len(doc["benchmarks"][0]["stats"]["data"]),
    )
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(doc))
    db = tmp_path / "h.db"
    assert "finite in milliseconds" in refused("import-benchmark", path, "--db", db)
    assert not db.exists()  # every file is checked before anything is stored


def test_import_benchmark_refuses_a_median_above_the_maximum(tmp_path, h100_data):
    doc = json.loads((h100_data.parent / "pytest_benchmark.json").read_text())
    stats = doc["benchmarks"][1]["stats"]
    stats["median"] = stats["max"] * 2
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(doc))
    assert "is above stats.q3" in refused("import-benchmark", path, "--db", tmp_path / "h.db")


def test_a_child_result_with_its_median_above_its_maximum_is_refused(tmp_path, h100_data):
    from perfgate.measure.processes import parse_child_output

    doc = json.loads((h100_data.parent / "child_results.json").read_text())
    doc["results"][0]["timing"]["median_ms"] = 1e6
    path = tmp_path / "child.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(PerfgateError, match="timing.median_ms .* is above timing.q3_ms"):
        parse_child_output(path, 0)


def test_a_baseline_median_outside_its_process_medians_is_refused(tmp_path, h100_data):
    from perfgate.baseline import BaselineError, load_baseline

    doc = json.loads((h100_data.parent / "baseline_v1_h100.json").read_text())
    case = next(iter(doc["cases"].values()))
    case["median_ms"] = max(case["samples_ms"]) * 10
    path = tmp_path / "b.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(BaselineError, match="lies outside the range"):
        load_baseline(path)


# --- ncu -----------------------------------------------------------------------------------------------


def test_an_ncu_report_whose_last_kernel_lost_its_name_is_one_clear_line(tmp_path, ncu_rep):
    cut = tmp_path / "cut.ncu-rep"
    data = ncu_rep.read_bytes()
    cut.write_bytes(data[: int(len(data) * 0.99)])  # ncu_report reads 5 launches, the last without a name
    assert "has no kernel name" in refused("analyze", cut, "--format", "json")


def with_cell(line, column, value):
    cells = next(csv.reader([line]))
    cells[column] = value
    return ",".join(f'"{c}"' for c in cells)


def csv_with(tmp_path, h100_data, edit, name="x.csv"):
    lines = (h100_data / "perfgate-ncu_raw.csv").read_text().splitlines()
    path = tmp_path / name
    path.write_text("\n".join(edit(lines)) + "\n")
    return path


def test_a_blank_line_after_the_csv_header_reads_as_without_it(tmp_path, h100_data):
    from perfgate.parse.ncu_csv import read_ncu_csv

    path = csv_with(tmp_path, h100_data, lambda lines: [lines[0], ""] + lines[1:])
    launches = read_ncu_csv(path)
    assert [(la.launch_id, la.name, dict(la.metrics)) for la in launches] == [
        (la.launch_id, la.name, dict(la.metrics)) for la in read_ncu_csv(h100_data / "perfgate-ncu_raw.csv")
    ]


@pytest.mark.parametrize(
    "edit, problem",
    [
        (lambda ls: ls[:2] + ['"inf"' + ls[2][ls[2].index(",") :]] + ls[3:], "launch ID 'inf' is not a non-negative"),
        (lambda ls: ls[:2] + ['"1e30"' + ls[2][ls[2].index(",") :]] + ls[3:], "launch ID '1e30' is not a non-negative"),
        (
            lambda ls: [ls[0] + ',"ID"', ls[1] + ',""'] + [x + ',"0"' for x in ls[2:]],
            "column 'ID' appears more than once",
        ),
        (lambda ls: ls[:2] + [ls[2].replace(',"', ',"' + "x" * 200_000, 1)] + ls[3:], "field larger than field limit"),
        (lambda ls: ls[:2] + [with_cell(ls[2], 6, "")] + ls[3:], "has no kernel name"),
    ],
)
def test_csv_quirks_are_one_clear_line(tmp_path, h100_data, edit, problem):
    path = csv_with(tmp_path, h100_data, edit)
    assert problem in refused("analyze", path, "--format", "json")


def test_a_negative_ncu_duration_is_refused_naming_the_launch_and_metric(tmp_path):
    path = tmp_path / "raw.csv"
    path.write_text('"ID","Kernel Name","gpu__time_duration.sum"\n"","","us"\n"0","k","-15.6"\n')
    assert "launch 0: gpu__time_duration.sum = -15600 ns cannot be negative" in refused("analyze", path)


def test_an_ncu_percentage_the_diagnosis_reads_past_100_is_refused(tmp_path):
    path = tmp_path / "raw.csv"
    path.write_text(
        '"ID","Kernel Name","sm__throughput.avg.pct_of_peak_sustained_elapsed",'
        '"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"\n'
        '"","","%","%"\n"0","k","5000","30"\n'
    )
    assert "sm_sol_pct = 5000" in refused("analyze", path, "--format", "json")


def test_an_ncu_csv_past_the_in_memory_budget_streams_through_analyze(tmp_path, h100_data, monkeypatch, capsys):
    from perfgate.parse import ncu_values
    from perfgate.parse.ncu_csv import read_ncu_csv

    monkeypatch.setattr(ncu_values, "MAX_METRIC_VALUES", 2000)
    with pytest.raises(ReportFileError, match="more than 2,000 metric values"):  # all launches in memory
        read_ncu_csv(h100_data / "perfgate-ncu_raw.csv")
    assert main(["analyze", str(h100_data / "perfgate-ncu_raw.csv"), "--format", "json"]) == 0  # one at a time
    assert json.loads(capsys.readouterr().out)["launches"]


def test_analyze_holds_one_ncu_csv_launch_at_a_time(tmp_path, h100_data, monkeypatch):
    """Memory follows one launch, not the file: the launches alive at once are counted while the summary is
    read and while its JSON is written (before: every launch of the file, 369 MB at 10,000 launches)."""
    import weakref

    from perfgate.analyze import readers
    from perfgate.parse import ncu_csv

    lines = (h100_data / "perfgate-ncu_raw.csv").read_text().splitlines()
    path = tmp_path / "big.csv"
    path.write_text(
        "\n".join(lines[:2] + [f'"{i}"' + lines[2 + i % 6][lines[2 + i % 6].index(",") :] for i in range(300)])
    )
    made: list[weakref.ref[object]] = []
    most = [0]
    real = ncu_csv._launch

    def counted(*args):
        launch = real(*args)
        made.append(weakref.ref(launch))
        most[0] = max(most[0], sum(1 for r in made if r() is not None))
        return launch

    monkeypatch.setattr(ncu_csv, "_launch", counted)
    doc = readers.reader_for(path).summarize(path, "ncu-csv", False)
    written = sum(1 for _ in doc.as_stream()["launches"])
    assert (len(doc.diagnosis), written) == (300, 300)
    assert most[0] <= 3, most[0]


MEASURE = """
import os, resource, subprocess, sys
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(proc.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss // 1024)
"""


def test_a_large_ncu_csv_is_summarised_in_bounded_memory(tmp_path, h100_data):
    """600 launches x 759 metrics (the recorded export, replicated): the first version held every launch
    as dicts and pretty-printed the JSON in pure Python (397 MB peak RSS here, 3.6 GB at 6,000)."""
    lines = (h100_data / "perfgate-ncu_raw.csv").read_text().splitlines()
    body = [lines[2 + i % 6] for i in range(600)]
    path = tmp_path / "big.csv"
    path.write_text("\n".join(lines[:2] + [f'"{i}"' + r[r.index(",") :] for i, r in enumerate(body)]) + "\n")
    analyze = [
        sys.executable,
        "-m",
        "perfgate",
        "analyze",
        str(path),
        "--output-dir",
        str(tmp_path / "out"),
        "--no-charts",
    ]
    code, rss_mb = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(MEASURE), *analyze], capture_output=True, text=True, check=True
    ).stdout.split()
    assert code == "0"
    assert int(rss_mb) < 150, f"peak RSS {rss_mb} MB"
    doc = json.loads((tmp_path / "out" / "analysis.json").read_text())
    assert len(doc["files"][0]["launches"]) == 600


def test_an_event_whose_category_is_not_text_is_skipped(tmp_path):
    """Found by the fuzz campaign in CI (seed 8460075): a list as "cat" raised TypeError (unhashable)."""
    path = trace(
        tmp_path,
        [
            {"ph": "X", "cat": ["kernel"], "name": "k", "ts": 1, "dur": 1},
            {"ph": "X", "cat": {"kernel": 1}, "name": "k", "ts": 1, "dur": 1},
            {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1},
        ],
    )
    code, out, _ = run_cli("analyze", path, "--format", "json")
    assert code == 0 and [k["count"] for k in json.loads(out)["kernels"]] == [1]
