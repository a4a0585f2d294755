"""Inputs an outside auditor built against the readers (issue 23), each rebuilt from its description: bad
input is one line naming the file and the problem (exit 2), never exit 0 with a nonsense result, and the
work is bounded."""

import contextlib
import csv
import gzip
import io
import json
import shutil
import sqlite3
import zlib

import pytest

from perfgate.cli import main


def run_cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def refused(*argv, names=None):
    """The command's one-line refusal (exit 2), naming the file."""
    code, _, err = run_cli(*argv)
    assert code == 2 and len(err.strip().splitlines()) == 1, (code, err)
    assert str(names if names is not None else argv[1]) in err, err
    return err.strip()


def analyze_json(path):
    code, out, err = run_cli("analyze", path, "--format", "json")
    assert code == 0, err
    return json.loads(out)


KERNEL = {"ph": "X", "cat": "kernel", "name": "k", "ts": 1.0, "dur": 2.0, "pid": 0, "tid": 0}


# --- 1. gzip bombs and padding in torch traces ----------------------------------------------------------


def gzip_stream(*pieces, repeat=1):
    """A gzip file of pieces[0] + pieces[1] * repeat + pieces[2], compressed without building the text."""
    head, middle, tail = pieces
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = [packer.compress(head)]
    for _ in range(repeat):
        out.append(packer.compress(middle))
    out += [packer.compress(tail), packer.flush()]
    return b"".join(out)


def test_a_padded_member_past_the_value_bound_is_one_line_never_held_whole(tmp_path, monkeypatch):
    from perfgate.parse import json_stream

    monkeypatch.setattr(json_stream, "CHUNK_CHARS", 4096)
    monkeypatch.setattr(json_stream, "MAX_VALUE_CHARS", 100_000)
    path = tmp_path / "g1_bomb.json.gz"
    path.write_bytes(
        gzip_stream(
            b'{"traceEvents": [' + json.dumps(KERNEL).encode() + b'], "pad": "', b"A" * 10_000, b'"}', repeat=30
        )
    )
    assert "one value longer than 100,000 characters" in refused("analyze", path)


def test_whitespace_padding_past_the_value_bound_is_one_line(tmp_path, monkeypatch):
    from perfgate.parse import json_stream

    monkeypatch.setattr(json_stream, "CHUNK_CHARS", 4096)
    monkeypatch.setattr(json_stream, "MAX_VALUE_CHARS", 100_000)
    path = tmp_path / "t.json"
    path.write_text('{"traceEvents": [' + json.dumps(KERNEL) + "," + " " * 300_000 + json.dumps(KERNEL) + "]}")
    assert "one value longer than 100,000 characters" in refused("analyze", path)


def test_a_gzip_trace_decompressing_past_its_ratio_is_one_line(tmp_path, monkeypatch):
    from perfgate.parse import torch_trace

    monkeypatch.setattr(torch_trace, "GZIP_FLOOR_BYTES", 1000)
    monkeypatch.setattr(torch_trace, "MAX_GZIP_RATIO", 50)  # the events below compress about 290:1
    event = json.dumps(KERNEL).encode()
    path = tmp_path / "g1_bomb.json.gz"
    path.write_bytes(gzip_stream(b'{"traceEvents": [', event + b",", event + b"]}", repeat=20_000))
    size = path.stat().st_size
    assert f"decompresses to more than {50 * size:,} bytes (at most 50x the file's size" in refused("analyze", path)


def test_a_gzip_trace_within_its_ratio_reads_as_its_text(tmp_path):
    events = [dict(KERNEL, ts=float(i)) for i in range(200)]
    plain, packed = tmp_path / "t.json", tmp_path / "t.json.gz"
    plain.write_text(json.dumps({"traceEvents": events}))
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert analyze_json(packed)["kernels"] == analyze_json(plain)["kernels"]


# --- 2. ncu units perfgate cannot read ----------------------------------------------------------------


def ncu_csv_with_unit(tmp_path, h100_data, metric, unit):
    rows = list(csv.reader((h100_data / "perfgate-ncu_raw.csv").open(encoding="utf-8-sig")))
    rows[1][rows[0].index(metric)] = unit
    path = tmp_path / "raw.csv"
    with path.open("w", newline="") as fh:
        csv.writer(fh, quoting=csv.QUOTE_ALL).writerows(rows)
    return path


@pytest.mark.parametrize(
    "metric, unit, kind",
    [
        ("gpu__time_duration.sum", "furlongs", "a time"),
        ("dram__bytes_read.sum", "Gbit", "a size"),
        ("dram__bytes.sum.per_second", "Gbyte", "a rate"),
        ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "", "a percentage"),
        ("sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active", "permille", "a percentage"),
    ],
)
def test_an_ncu_metric_in_a_unit_of_the_wrong_kind_is_one_line_naming_metric_and_unit(
    tmp_path, h100_data, metric, unit, kind
):
    path = ncu_csv_with_unit(tmp_path, h100_data, metric, unit)
    assert f"metric {metric} is in unit {unit!r}, not {kind}" in refused("analyze", path)


def test_an_unknown_unit_of_a_count_perfgate_does_not_interpret_still_reads(tmp_path, h100_data):
    path = ncu_csv_with_unit(tmp_path, h100_data, "launch__occupancy_limit_warps", "wavefronts")
    assert analyze_json(path)["launches"]


def test_a_report_metric_in_a_unit_of_the_wrong_kind_is_one_line(tmp_path):
    from perfgate.errors import ReportFileError
    from perfgate.parse.ncu_report_file import _build

    names = ("gpu__time_duration.sum", "dram__bytes_read.sum")
    good = ("k", names, (1500.0, 4096.0), ("ns", "byte"), ())
    assert [la.value("gpu__time_duration.sum") for la in _build(tmp_path / "r.ncu-rep", [good])] == [1500.0]
    with pytest.raises(ReportFileError, match="metric gpu__time_duration.sum is in unit 'furlongs', not a time"):
        _build(tmp_path / "r.ncu-rep", [good, ("k", names, (1500.0, 4096.0), ("furlongs", "byte"), ())])


# --- 3, 4. nsys exports: copied kernel rows, overlapping kernels on one stream, dangling string ids -----

KERNELS = "CUPTI_ACTIVITY_KIND_KERNEL"


@pytest.fixture
def export(tmp_path, h100_data):
    """The recorded H100 nsys export with SQL applied."""

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


def test_a_kernel_table_inserted_into_itself_is_refused_never_counted_twice(export):
    from perfgate.errors import ReportFileError
    from perfgate.parse.nsys_sqlite import read_nsys_sqlite

    path = export(f"INSERT INTO {KERNELS} SELECT * FROM {KERNELS}")
    assert f"{KERNELS} holds 2,437 row(s) repeating another row exactly" in refused("analyze", path)
    with pytest.raises(ReportFileError, match="repeating another row exactly"):
        read_nsys_sqlite(path)


def test_one_copied_kernel_row_is_refused(export):
    path = export(f"INSERT INTO {KERNELS} SELECT * FROM {KERNELS} WHERE rowid = 100")
    assert "holds 1 row(s) repeating another row exactly" in refused("analyze", path, "--format", "json")


def test_kernels_overlapping_on_one_stream_are_noted_never_summed_silently(export):
    from perfgate.parse.nsys_sqlite import read_nsys_sqlite

    # the 100th kernel now starts 1 ms earlier, over the kernels before it on stream 7
    path = export(f"UPDATE {KERNELS} SET start = start - 1000000 WHERE rowid = 100")
    (note,) = [n for n in analyze_json(path)["notes"] if "overlap" in n]
    assert note.startswith("kernels on device 0 stream 7 overlap in time: their durations sum to")
    assert note in read_nsys_sqlite(path).notes


def test_the_recorded_export_has_no_stream_or_string_notes(h100_data):
    assert analyze_json(h100_data / "perfgate-nsys.sqlite")["notes"] == []


def test_kernels_naming_a_missing_string_id_are_named_so_and_counted(export):
    from perfgate.parse.nsys_sqlite import read_nsys_sqlite

    path = export(f"UPDATE {KERNELS} SET demangledName = 99999998, shortName = 99999998 WHERE rowid IN (1, 2, 3)")
    doc = analyze_json(path)
    assert {k["name"]: k["count"] for k in doc["kernels"]}["<unknown name id 99999998>"] == 3
    assert "99999998" not in {k["name"] for k in doc["kernels"]}
    note = (
        "1 string id(s) missing from StringIds (a damaged export), first 99999998: their rows are named "
        "<unknown name id 99999998>"
    )
    assert doc["notes"] == [note]
    timeline = read_nsys_sqlite(path)
    assert sum(k.name == "<unknown name id 99999998>" for k in timeline.kernels) == 3
    assert timeline.notes == (note,)


def test_runtime_calls_and_nvtx_ranges_naming_missing_string_ids_are_counted_too(export):
    path = export(
        "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET nameId = 99999997 WHERE rowid = 1",
        "UPDATE NVTX_EVENTS SET text = NULL, textId = 99999996 WHERE rowid = (SELECT min(rowid) FROM "
        "NVTX_EVENTS WHERE eventType = 59 AND end IS NOT NULL)",
    )
    doc = analyze_json(path)
    assert "<unknown name id 99999997>" in {a["name"] for a in doc["api"]}
    assert "<unknown name id 99999996>" in {r["range"] for r in doc["nvtx"]}
    assert doc["notes"][0].startswith("2 string id(s) missing from StringIds")


# --- 5. a zero duration written as -0.0 -------------------------------------------------------------------


@pytest.mark.parametrize("token", ["-0.0", "-0", "-0.0e0", "0.0"])
def test_a_kernel_lasting_minus_zero_us_is_a_zero_duration_kernel_in_both_readers(tmp_path, token):
    """-0.0 is zero, not a negative duration: read as 0 ns by analyze and by the gate's timeline reader,
    as a genuinely negative one (dropped, counted in the notes) is not."""
    from perfgate.parse.torch_trace import read_torch_trace

    events = [dict(KERNEL, ts=float(10 * i)) for i in range(3)]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}).replace('"dur": 2.0', f'"dur": {token}', 1))
    doc = analyze_json(path)
    assert [(k["count"], k["min_ns"], k["total_ns"]) for k in doc["kernels"]] == [(3, 0, 4000)]
    assert doc["notes"] == []
    timeline = read_torch_trace(path)
    assert [k.end_ns - k.start_ns for k in timeline.kernels] == [0, 2000, 2000] and timeline.notes == ()


# --- 6. the CI commands read the results file through one checked reader --------------------------------


def recorded_results(h100_data):
    return json.loads(gzip.decompress((h100_data / "gate_profiled_copy_run.json.gz").read_bytes()))


def results_file(tmp_path, doc):
    path = tmp_path / "perfgate.json"
    path.write_text(json.dumps(doc))
    return path


def _set(path, value):
    def edit(doc):
        *parents, last = path
        target = doc
        for key in parents:
            target = target[key]
        target[last] = value

    return edit


def _drop(key):
    return lambda doc: doc.pop(key)


def _improved_yet_slower(doc):
    """Found by the second outside check: a time 80% slower called improved passed `ci verdict`."""
    row = next(r for r in doc["comparisons"] if r["direction"] == "lower_is_better")
    row.update(verdict="improved", change_pct=80.0, ci_low_pct=70.0, ci_high_pct=90.0)


def _strict_and_empty(doc):
    doc["gate"]["strict"] = True
    doc["cases"], doc["comparisons"] = [], []


@pytest.mark.parametrize(
    "edit, problem",
    [
        (_set(("cases", 0, "timing", "median_ms"), -5), '"median_ms" = -5 cannot be below 0'),
        (_set(("comparisons",), []), "5 measured case(s) have no verdict"),
        (_set(("comparisons", 0, "current"), -0.09), '"current" = -0.09 cannot be below 0'),
        (_set(("comparisons", 0, "change_pct"), -250), '"change_pct" = -250 cannot be below -100'),
        (_set(("perfgate_json_version",), 999), "perfgate_json_version '999' is not one this perfgate reads"),
        (_drop("gate"), 'no "gate" object'),
        (_set(("comparisons", 0, "verdict"), "fine"), "verdict 'fine' is not perfgate's"),
        (_set(("comparisons", 0, "verdict"), {"a": 1}), "verdict \"{'a': 1}\" is not perfgate's"),
        (_set(("gate", "failed"), "no"), 'no "gate" object with booleans'),
        (_set(("findings",), [{"kind": "all good", "message": "m"}]), "kind 'all good' is not perfgate's"),
        (_set(("run", "started_at"), "yesterday"), '"started_at" must be an ISO 8601 time'),
        (_improved_yet_slower, "verdict 'improved' with a change of +80% on a lower_is_better metric"),
        (_strict_and_empty, "a strict gate that measured no case says it passed"),
    ],
)
@pytest.mark.parametrize("command", ["verdict", "annotate"])
def test_ci_commands_refuse_a_results_file_that_cannot_be_a_gates_in_one_line(
    tmp_path, h100_data, edit, problem, command
):
    doc = recorded_results(h100_data)
    edit(doc)
    assert problem in refused("ci", command, results_file(tmp_path, doc), names=tmp_path / "perfgate.json")


def test_ci_commands_read_the_recorded_results_file(tmp_path, h100_data):
    path = results_file(tmp_path, recorded_results(h100_data))
    assert run_cli("ci", "verdict", path)[:2] == (0, f"perfgate: {path}: gate passed\n")
    assert run_cli("ci", "annotate", path)[0] == 0


def _regressed_by_half(doc, **extra):
    """The first row regressed by 50%, its numbers (and its case's time) edited to agree (ci/recompute.py)."""
    row = doc["comparisons"][0]
    assert row["metric"] == "median_ms" and row["direction"] == "lower_is_better"
    row.update(verdict="regressed", current=row["baseline"] * 1.5, change_pct=50.0, **extra)
    timing = next(c for c in doc["cases"] if c["case_id"] == row["case_id"])["timing"]
    timing.update(median_ms=row["current"], max_ms=max(timing["max_ms"], row["current"]))


def test_a_regressed_row_fails_the_verdict_whatever_gate_failed_says(tmp_path, h100_data):
    doc = recorded_results(h100_data)
    _regressed_by_half(doc)
    assert run_cli("ci", "verdict", results_file(tmp_path, doc))[0] == 1


def test_a_regressed_row_the_gate_does_not_gate_on_is_a_warning_annotation(tmp_path, h100_data):
    doc = recorded_results(h100_data)
    _regressed_by_half(doc, gated=False)
    code, out, _ = run_cli("ci", "annotate", results_file(tmp_path, doc))
    assert code == 0 and "::warning" in out and "::error" not in out


# --- 10. a results file that is not this run's gate --------------------------------------------------------


def test_ci_verdict_refuses_a_results_file_from_before_this_run_or_without_strict_mode(tmp_path, h100_data):
    doc = recorded_results(h100_data)  # run.started_at 2026-11-22T07:06:37+00:00, strict
    path = results_file(tmp_path, doc)
    assert run_cli("ci", "verdict", path, "--not-before", "2026-11-22T07:06:37+00:00", "--require-strict")[0] == 0
    code, _, err = run_cli("ci", "verdict", path, "--not-before", "2026-11-22T07:06:38+00:00")
    assert code == 2 and "a stale file, not this run's gate" in err and str(path) in err
    doc["gate"]["strict"] = False
    code, _, err = run_cli("ci", "verdict", results_file(tmp_path, doc), "--require-strict")
    assert code == 2 and "without strict mode" in err
    del doc["run"]
    code, _, err = run_cli("ci", "verdict", results_file(tmp_path, doc), "--not-before", "2026-11-22T07:06:38+00:00")
    assert code == 2 and "no run.started_at" in err
    assert "--not-before must be an ISO 8601 time" in refused(
        "ci", "verdict", path, "--not-before", "soon", names="soon"
    )


# --- 7. pytest-benchmark metadata ---------------------------------------------------------------------------


def benchmark_file(tmp_path, h100_data, edit):
    doc = json.loads((h100_data.parent / "pytest_benchmark.json").read_text())
    edit(doc)
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(doc))
    return path


def test_control_characters_in_benchmark_metadata_are_replaced_before_storing_and_printing(tmp_path, h100_data):
    path = benchmark_file(tmp_path, h100_data, _set(("commit_info", "branch"), "main\x1b[2J\nforged: line"))
    db = tmp_path / "h.db"
    assert run_cli("import-benchmark", path, "--db", db)[0] == 0
    from perfgate.store import open_store

    with open_store(db) as store:
        (branch,) = [r["git_branch"] for r in store.query("SELECT git_branch FROM runs")]
    assert branch == "main\ufffd[2J\ufffdforged: line"
    code, out, _ = run_cli("history", "--db", db)
    assert code == 0 and "\x1b" not in out and "\nforged" not in out


@pytest.mark.parametrize("value", ["not a date", 20240101, None, "9999-12-31T23:59:59-01:00"])
def test_a_benchmark_datetime_that_is_not_an_iso_time_is_refused_and_nothing_stored(tmp_path, h100_data, value):
    path = benchmark_file(tmp_path, h100_data, _set(("datetime",), value))
    db = tmp_path / "h.db"
    assert '"datetime" must be an ISO 8601 time' in refused("import-benchmark", path, "--db", db)
    assert not db.exists()


def test_a_benchmark_datetime_is_stored_as_perfgate_stores_a_start(tmp_path, h100_data):
    from perfgate.parse.pytest_benchmark import read_pytest_benchmark

    naive = benchmark_file(tmp_path, h100_data, _set(("datetime",), "2024-03-01T12:00:05.123"))
    assert read_pytest_benchmark(naive).info.started_at == "2024-03-01T12:00:05+00:00"
    assert (
        read_pytest_benchmark(h100_data.parent / "pytest_benchmark.json").info.started_at == "2026-11-24T03:26:53+00:00"
    )


def test_a_benchmark_file_without_benchmarks_is_refused(tmp_path, h100_data):
    path = benchmark_file(tmp_path, h100_data, _set(("benchmarks",), []))
    assert "no benchmarks in it" in refused("import-benchmark", path, "--db", tmp_path / "h.db")


# --- 8, 9. history --changes matches and verifies as history --case does ------------------------------------

BRACKETED = "tests/test_perf.py::test_enum[BaseConverter]"


def bracketed_history(tmp_path):
    from perfgate.model import Environment, Run, RunInfo
    from perfgate.store import open_store
    from tests.site_histories import single_median_case

    db = tmp_path / "h.db"
    env = Environment(device_kind="cuda", device_name="NVIDIA H100 80GB HBM3", compute_capability="9.0")
    noise = iter([1.001, 0.998, 1.0, 1.002, 0.999, 1.0015, 0.9985, 1.0005, 0.9995, 1.001] * 3)
    with open_store(db) as store:
        for i in range(30):
            info = RunInfo(f"2026-11-01T00:{i:02d}:00+00:00", "", git_commit=f"c{i:02d}" + "0" * 37, git_branch="main")
            slow = 0.2 * next(noise) * (1.1 if i >= 20 else 1.0)
            store.save_run(
                Run(
                    info,
                    env,
                    (single_median_case(BRACKETED, slow), single_median_case("tests/test_perf.py::test_enumB", 0.1)),
                )
            )
    return db


def test_history_changes_matches_a_bracketed_case_id_as_history_case_does(tmp_path):
    db = bracketed_history(tmp_path)
    code, out, _ = run_cli("history", "--db", db, "--case", BRACKETED, "--format", "json")
    assert code == 0 and {r["case_id"] for r in json.loads(out)} == {BRACKETED}
    code, out, _ = run_cli("history", "--changes", "--db", db, "--case", BRACKETED, "--rootdir", tmp_path)
    assert code == 0 and "1 change point(s) in 1 case series" in out, out
    code, out, _ = run_cli("history", "--changes", "--db", db, "--case-regex", r"\[Base", "--format", "json")
    assert code == 0 and [r["case_id"] for r in json.loads(out)] == [BRACKETED]


@pytest.mark.parametrize("median", [-1.0, float("nan")])
def test_history_changes_refuses_a_damaged_median_as_history_case_does(tmp_path, median):
    db = bracketed_history(tmp_path)
    con = sqlite3.connect(db)
    con.execute("UPDATE cases SET median_ms = ? WHERE run_id = 30 AND case_id = ?", (median, BRACKETED))
    con.commit()
    con.close()
    by_case = refused("history", "--db", db, "--case", BRACKETED, names=db)
    changes = refused("history", "--changes", "--db", db, "--rootdir", tmp_path, names=db)
    assert "run 30 case" in by_case and "run 30 case" in changes and "median_ms" in changes
