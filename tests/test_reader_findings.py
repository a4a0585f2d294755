"""Issue 32's reader and command findings, one test each, written from the review's description: a locale's
number in an ncu CSV, a duplicated launch ID, a transfer faster than any memory, pytest-benchmark statistics
that contradict their data, torch traces with other producers' category names and Chrome begin/end pairs,
histories from elsewhere (terminal escapes, a forged `::error::` line, a time that is none), a damaged
history, outputs that cannot be written, a full disk, read-only commands that left -wal/-shm files, and
chart work that grew with the launches. Each is one clear line (file and problem) or a true result."""

from __future__ import annotations

import csv
import json
import random
import shutil
import sqlite3

import pytest

from perfgate.errors import PerfgateError
from tests.helpers import make_run
from tests.test_reader_invariants import analyze_json, csv_with, refused, run_cli, trace, with_cell

DURATION = "gpu__time_duration.sum"


def _column(h100_data, name):
    return next(csv.reader([(h100_data / "perfgate-ncu_raw.csv").read_text().splitlines()[0]])).index(name)


# --- ncu CSV ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cell", ["1,5", "1.234,5", "0,000001", "1,2,3", "12,34"])
def test_an_ncu_number_in_another_locales_format_is_refused_not_read_as_another(tmp_path, h100_data, cell):
    j = _column(h100_data, DURATION)
    path = csv_with(tmp_path, h100_data, lambda ls: ls[:2] + [with_cell(ls[2], j, cell)] + ls[3:])
    err = refused("analyze", path, "--format", "json")
    assert f"line 3: {DURATION} = {cell!r} is not a number as ncu writes one" in err


def test_ncu_thousands_separators_still_read(tmp_path, h100_data):
    j = _column(h100_data, DURATION)
    path = csv_with(tmp_path, h100_data, lambda ls: ls[:2] + [with_cell(ls[2], j, "1,234.5")] + ls[3:])
    doc = analyze_json(path)
    assert doc["launches"][0]["metrics"][DURATION] == pytest.approx(1_234_500.0)  # us -> ns


def test_a_duplicated_ncu_launch_id_is_refused(tmp_path, h100_data):
    path = csv_with(tmp_path, h100_data, lambda ls: ls[:3] + [with_cell(ls[3], 0, "0")] + ls[4:])
    assert "line 4: launch ID 0 appears again (first on line 3)" in refused("analyze", path, "--format", "json")


def test_a_launch_id_in_another_locales_format_is_refused(tmp_path, h100_data):
    path = csv_with(tmp_path, h100_data, lambda ls: ls[:2] + [with_cell(ls[2], 0, "1,5")] + ls[3:])
    assert "launch ID '1,5' is not a non-negative integer" in refused("analyze", path, "--format", "json")


# --- transfers faster than any memory -----------------------------------------------------------------------

MEMCPY_FROM_MEMSETS = (
    "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY AS SELECT start, end, deviceId, streamId, correlationId, globalPid, "
    "bytes, 1 AS copyKind FROM CUPTI_ACTIVITY_KIND_MEMSET"
)


def test_a_copy_faster_than_any_memory_is_ignored_and_noted_in_nsys(export):
    from perfgate.parse.nsys_sqlite import read_nsys_sqlite

    fast = "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET bytes = 1100000000000000, end = start + 1"  # 1.1e15 GB/s
    path = export(MEMCPY_FROM_MEMSETS, fast)
    doc = analyze_json(path)
    copies = [m for m in doc["memory"] if m["kind"] != "memset"]
    assert all(m["gbps"] is None or m["gbps"] <= 100_000 for m in doc["memory"]) and not copies
    assert any("CUPTI_ACTIVITY_KIND_MEMCPY rows faster than 100 TB/s" in n for n in doc["notes"])
    timeline = read_nsys_sqlite(path)
    assert not [m for m in timeline.memory_ops if m.kind != "memset"]
    assert any("faster than 100 TB/s" in n for n in timeline.notes)


def test_a_copy_faster_than_any_memory_is_ignored_and_noted_in_torch(tmp_path):
    from perfgate.parse.torch_trace import read_torch_trace

    fast = {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "ts": 1, "dur": 0.001, "args": {"bytes": 10**15}}
    fine = {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "ts": 5, "dur": 1, "args": {"bytes": 4096}}
    path = trace(tmp_path, [fast, fine])
    doc = analyze_json(path)
    assert [(m["bytes"], m["count"]) for m in doc["memory"]] == [(4096, 1)]
    assert any("faster than 100 TB/s" in n for n in doc["notes"])
    assert [m.bytes for m in read_torch_trace(path).memory_ops] == [4096]


@pytest.fixture
def export(tmp_path, h100_data):
    def make(*sql):
        path = tmp_path / "x.sqlite"
        shutil.copy(h100_data / "perfgate-nsys.sqlite", path)
        con = sqlite3.connect(path)
        for statement in sql:
            con.execute(statement)
        con.commit()
        con.close()
        return path

    return make


# --- pytest-benchmark statistics ---------------------------------------------------------------------------


def _benchmark_file(tmp_path, h100_data, edit, keep_data=True):
    from tests.mutations import DATA

    doc = json.loads((DATA / "pytest_benchmark.json").read_text())
    for b in doc["benchmarks"]:
        if not keep_data:
            b["stats"].pop("data", None)
    edit(doc["benchmarks"][0]["stats"])
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(
    ("edit", "keep_data", "problem"),
    [
        (lambda s: s.update(median=s["median"] * 1.001), True, "stats.median is"),
        (lambda s: s.update(mean=s["mean"] * 0.98), True, "stats.mean is"),
        (lambda s: s.update(stddev=s["stddev"] / 10), True, "stats.stddev is"),
        (lambda s: s.update(q3=s["q3"] * 1.01), True, "stats.q3 is"),
        (lambda s: s.update(ops=s["ops"] * 2), False, "stats.ops is"),
        (lambda s: s.update(total=s["total"] * 3), False, "stats.total is"),
        (lambda s: s.update(iqr=s["iqr"] * 2), False, "stats.iqr is"),
        (lambda s: s.update(stddev=s["max"] * 10), False, "stats.stddev"),
    ],
)
def test_pytest_benchmark_statistics_that_contradict_their_data_are_refused(
    tmp_path, h100_data, edit, keep_data, problem
):
    path = _benchmark_file(tmp_path, h100_data, edit, keep_data)
    err = refused("import-benchmark", path, "--db", tmp_path / "h.db")
    assert f"benchmarks[0]: {problem}" in err
    assert not (tmp_path / "h.db").exists()  # nothing stored half


@pytest.mark.parametrize("rounds", [1, 2, 3, 4, 5, 6, 7, 30, 101])
def test_statistics_pytest_benchmark_computed_itself_are_accepted(rounds):
    from pytest_benchmark.stats import Stats

    from perfgate.parse.pytest_benchmark_stats import contradictions

    rng = random.Random(rounds)
    stats = Stats()
    for _ in range(rounds):
        stats.update(rng.lognormvariate(-10, 0.3))
    doc = {k: getattr(stats, k) for k in ("min", "max", "mean", "stddev", "median", "q1", "q3", "iqr", "total", "ops")}
    doc["rounds"] = rounds
    assert contradictions(doc, stats.data) == []
    assert contradictions(doc, []) == []  # without its data: consistent with itself


# --- torch traces from other producers ----------------------------------------------------------------------


def _event(ph, cat, name, pid, tid, ts, dur=None, **args):
    e = {"ph": ph, "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "args": args}
    return e if dur is None else {**e, "dur": dur}


def _end(pid, tid, ts):
    return {"ph": "E", "pid": pid, "tid": tid, "ts": ts}


OLD_KINETO = [  # PyTorch 1.8-1.10 named the categories "Kernel", "Runtime", "Memcpy", "Memset"
    _event("X", "Kernel", "gemm", 0, 7, 10, 5, correlation=3),
    _event("X", "Runtime", "cudaLaunchKernel", 1, 2, 9, 0.5, correlation=3),
    _event("X", "Memcpy", "Memcpy HtoD", 0, 7, 20, 1, bytes=4096),
    _event("X", "Memset", "Memset", 0, 7, 30, 1, bytes=64),
]
BEGIN_END = [  # Chrome's duration events as begin/end pairs
    _event("B", "user_annotation", "step", 1, 2, 0),
    _event("B", "cuda_runtime", "cudaLaunchKernel", 1, 2, 0.5, correlation=5),
    _end(1, 2, 0.8),
    _event("B", "kernel", "softmax", 0, 7, 1, correlation=5),
    _end(0, 7, 4),
    _end(1, 2, 5),
]


def test_old_kineto_category_names_are_read(tmp_path):
    doc = analyze_json(trace(tmp_path, OLD_KINETO))
    assert [(k["name"], k["total_ns"]) for k in doc["kernels"]] == [("gemm", 5000)]
    assert sorted(m["kind"] for m in doc["memory"]) == ["Host-to-Device", "memset"]
    assert [a["name"] for a in doc["api"]] == ["cudaLaunchKernel"]


def test_chrome_begin_end_pairs_are_read_with_their_annotation(tmp_path):
    from perfgate.parse.torch_trace import read_torch_trace

    path = trace(tmp_path, BEGIN_END)
    doc = analyze_json(path)
    assert [(k["name"], k["total_ns"]) for k in doc["kernels"]] == [("softmax", 3000)]
    assert [r["range"] for r in doc["nvtx"]] == ["step"]
    assert [(k.name, k.nvtx_range) for k in read_torch_trace(path).kernels] == [("softmax", "step")]


def test_unmatched_begin_and_end_events_are_counted(tmp_path):
    events = [*BEGIN_END, _end(9, 9, 1), _event("B", "kernel", "k", 0, 8, 1)]
    doc = analyze_json(trace(tmp_path, events))
    assert "1 begin trace events never ended ignored" in doc["notes"]
    assert "1 end trace events without a begin event on their thread ignored" in doc["notes"]


@pytest.mark.parametrize(
    ("events", "problem"),
    [
        ([{"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 1, "dur": 2}] * 3, "it holds 'cpu_op' (3)"),
        ([{"ph": "X", "cat": "Operator", "name": "add", "ts": 1, "dur": 2}], "it holds 'Operator' (1)"),
        ([], "holds no complete or begin/end events"),
    ],
)
def test_a_trace_with_nothing_perfgate_reads_is_one_clear_line_not_an_empty_summary(tmp_path, events, problem):
    assert problem in refused("analyze", trace(tmp_path, events), "--format", "json")


# --- histories from elsewhere --------------------------------------------------------------------------------


@pytest.fixture
def history(tmp_path):
    from perfgate.store import open_store

    path = tmp_path / "h.db"
    with open_store(path) as store:
        store.save_run(make_run({"k.py::t": [1.0, 1.1, 0.9]}))
    return path


def _edit(path, sql, *params):
    con = sqlite3.connect(path)
    con.execute(sql, params)
    con.commit()
    con.close()


FORGED = "main\x1b[31mRED\n::error::forged by a history"


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_run_texts_from_elsewhere_print_no_escape_and_no_workflow_command(history, fmt):
    sql = "UPDATE runs SET git_branch = ?, git_commit = ?, argv = ?"
    _edit(history, sql, FORGED, "a\x1b]0;x\x07", "p\n::warning::x")
    for extra in ([], ["--case", "*"]):
        argv = ["history", "--db", history, "--format", fmt, *extra]
        code, out, err = run_cli(*argv)
        assert code == 0, err
        assert "\x1b" not in out and "\x07" not in out
        assert not [line for line in out.splitlines() if line.lstrip().startswith("::")]


def test_a_run_whose_started_at_is_no_time_is_one_clear_line(history):

    _edit(history, "UPDATE runs SET started_at = ?", "2024-01-01\n::error file=x::fake")
    for argv in (["history"], ["history", "--case", "*"], ["compare"]):
        code, _, err = run_cli(*argv, "--db", history)
        assert code == 2 and len(err.strip().splitlines()) == 1, (argv, err)
        assert "started_at" in err and "is not an ISO 8601 time" in err


def test_the_dashboard_shows_run_texts_from_elsewhere_escaped(history, tmp_path):
    _edit(history, "UPDATE runs SET git_branch = ?", FORGED)
    assert run_cli("report", "--html", tmp_path / "site", "--db", history)[0] == 0
    pages = "".join(p.read_text() for p in (tmp_path / "site").rglob("*.html"))
    assert "\x1b" not in pages and "main\ufffd[31mRED" in pages


# --- a damaged history, outputs that cannot be written, a full disk --------------------------------------------


def _damaged_index(src, tmp_path):
    """The history with a byte of a case id in the (case_id, run_id) index made invalid UTF-8."""
    con = sqlite3.connect(src)
    page_size = con.execute("PRAGMA page_size").fetchone()[0]
    root = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'idx_cases_case_id_run_id'").fetchone()[0]
    con.close()
    data = bytearray(src.read_bytes())
    page = data[(root - 1) * page_size : root * page_size]
    at = (root - 1) * page_size + page.index(b"k.py::t") + 2
    data[at] = 0xFF
    out = tmp_path / "damaged.db"
    out.write_bytes(bytes(data))
    return out


def test_a_damaged_history_is_one_clear_line_from_history_case_and_the_api(history, tmp_path):
    import perfgate

    damaged = _damaged_index(history, tmp_path)
    code, _, err = run_cli("history", "--db", damaged, "--case", "*")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "damaged.db" in err
    with pytest.raises(PerfgateError, match="damaged.db"):
        perfgate.history(damaged, case="*")


@pytest.mark.parametrize("target", ["file", "file/sub", "/proc/perfgate-x"])
def test_an_output_directory_that_cannot_be_written_is_one_clear_line(history, tmp_path, h100_data, target):
    (tmp_path / "file").write_text("x")
    out = target if target.startswith("/") else tmp_path / target
    for argv in (
        ["report", "--html", out, "--db", history],
        ["analyze", h100_data / "perfgate-nsys.sqlite", "--output-dir", out],
    ):
        code, _, err = run_cli(*argv)
        assert code == 2 and len(err.strip().splitlines()) == 1 and str(out) in err, (argv, err)


def test_a_full_disk_is_said_so_and_stores_nothing(tmp_path):
    from perfgate.errors import StoreError
    from perfgate.store import open_store

    store = open_store(tmp_path / "h.db")
    pages = store.con.execute("PRAGMA page_count").fetchone()[0]
    store.con.execute(f"PRAGMA max_page_count = {pages + 2}")  # SQLITE_FULL, as a full disk gives it
    with pytest.raises(StoreError) as raised:
        store.save_run(make_run({f"c{i}": [1.0] * 200 for i in range(300)}))
    assert "the disk is full" in str(raised.value) and "rollback" not in str(raised.value)
    assert store.con.execute("SELECT count(*) FROM runs").fetchone() == (0,)
    assert store.con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    store.close()


def test_commands_that_only_read_create_no_file_beside_the_history(history, tmp_path):
    import perfgate

    before = sorted(p.name for p in history.parent.iterdir())
    assert any(name.endswith("-wal") for name in before) is False
    for argv in (
        ["history", "--db", history],
        ["history", "--db", history, "--case", "*"],
        ["history", "--db", history, "--changes"],
        ["compare", "--db", history],
        ["report", "--html", tmp_path / "site", "--db", history],
    ):
        run_cli(*argv)
        assert sorted(p.name for p in history.parent.iterdir() if p.name != "site") == before, argv
    perfgate.history(history)
    assert sorted(p.name for p in history.parent.iterdir() if p.name != "site") == before


def test_a_reader_sees_what_a_writer_has_committed_but_not_checkpointed(history):
    from perfgate.store import open_store
    from perfgate.store.query import list_runs

    writer = sqlite3.connect(history)
    writer.execute("PRAGMA wal_autocheckpoint = 0")  # the second run stays in the -wal while the reader reads
    with open_store(history) as store:
        store.con.execute("PRAGMA wal_autocheckpoint = 0")
        store.save_run(make_run({"k.py::t": [1.0, 1.2, 0.8]}))
        with open_store(history, readonly=True) as reader:
            assert len(list_runs(reader, 10)) == 2
    writer.close()


# --- bounded chart work ----------------------------------------------------------------------------------------


def test_per_launch_charts_draw_at_most_the_longest_launches(tmp_path):
    from perfgate.analyze.ncu_diagnosis import Diagnosis
    from perfgate.report import analyze_charts as charts

    fields = {f: None for f in Diagnosis.__dataclass_fields__ if f not in ("reasons", "recommendations")}
    values = {"sm_sol_pct": 50.0, "memory_sol_pct": 40.0, "achieved_occupancy_pct": 30.0, "dram_pct": 20.0}
    diags = [
        Diagnosis(**{**fields, **values, "name": f"k{i}", "launch_id": i, "nvtx": (), "duration_ns": float(i),
                     "theoretical_occupancy_pct": 50.0, "bottleneck": "unknown", "pipes": (), "top_stalls": ()})
        for i in range(300)
    ]  # fmt: skip
    for figure in (charts.gpu_utilization_figure, charts.occupancy_figure, charts.memory_performance_figure):
        fig = figure(diags)
        ax = fig.axes[0]
        assert len(ax.get_yticks()) == charts.MAX_CHART_LAUNCHES
        assert "the 40 longest of 300 launches" in ax.get_title()
        assert fig.get_size_inches()[1] < 40
    scatter = charts.bottleneck_figure(diags).axes[0]
    assert len(scatter.texts) == charts.MAX_CHART_LAUNCHES


# --- found by the semantic mutation campaign (tests/semantic.py) ------------------------------------------------


def test_a_copied_torch_kernel_event_is_refused_not_counted_twice(tmp_path):
    kernel = _event("X", "kernel", "gemm", 0, 7, 10, 5, correlation=3, stream=7)
    path = trace(tmp_path, [kernel, dict(kernel)])
    assert "repeats another exactly" in refused("analyze", path, "--format", "json")


def test_an_ncu_rate_faster_than_any_memory_is_refused(tmp_path, h100_data):
    j = _column(h100_data, "dram__bytes.sum.per_second")
    path = csv_with(
        tmp_path, h100_data, lambda ls: [ls[0], with_cell(ls[1], j, "byte/s"), with_cell(ls[2], j, "3000000000000000")]
    )
    assert "faster than any memory moves" in refused("analyze", path, "--format", "json")


def test_an_ncu_number_with_two_dots_is_refused_not_dropped(tmp_path, h100_data):
    j = _column(h100_data, DURATION)
    path = csv_with(tmp_path, h100_data, lambda ls: ls[:2] + [with_cell(ls[2], j, "1.980.000")] + ls[3:])
    assert "'1.980.000' is not a number as ncu writes one" in refused("analyze", path, "--format", "json")


def _timing(doc):
    return doc["results"][0]["timing"]


def _child_file(tmp_path, edit):
    from tests.mutations import DATA

    doc = json.loads((DATA / "child_results.json").read_text())
    edit(doc)
    path = tmp_path / "child.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda d: d["results"].append(dict(d["results"][0])), "appears twice"),
        (lambda d: _timing(d).update(median_ms=_timing(d)["q3_ms"]), "timing.median_ms"),
        (lambda d: _timing(d).update(mean_ms=_timing(d)["mean_ms"] * 1.01), "timing.mean_ms"),
    ],
)
def test_a_child_result_that_contradicts_its_samples_or_repeats_a_case_is_refused(tmp_path, edit, problem):
    from perfgate.measure.processes import parse_child_output

    with pytest.raises(PerfgateError, match=problem):
        parse_child_output(_child_file(tmp_path, edit), 0)


def test_a_text_value_keeps_its_columns_base_unit_whatever_the_prefix(tmp_path, h100_data):
    from perfgate.parse.ncu_csv import read_ncu_csv

    name = "sass__inst_executed_register_spilling_mem_shared"  # "no data" in every launch, in byte
    j = _column(h100_data, name)
    path = csv_with(tmp_path, h100_data, lambda ls: [ls[0], with_cell(ls[1], j, "Kbyte"), *ls[2:]])
    assert {la.metrics[name].unit for la in read_ncu_csv(path)} == {"byte"}
