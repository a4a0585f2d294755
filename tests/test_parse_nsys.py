"""The nsys SQLite parser against what `nsys stats` printed for the same capture (recorded on the H100
from this project's suite: lab/gpu/h100_profile_demo.sh)."""

import csv
import shutil
import sqlite3

import pytest

from perfgate.analyze.nsys_summary import summarize_nsys
from perfgate.errors import ReportFileError
from perfgate.measure.profilers import nsys_case_metrics
from perfgate.parse.nsys_sqlite import read_nsys_sqlite


@pytest.fixture(scope="module")
def timeline():
    from tests.conftest import H100

    return read_nsys_sqlite(H100 / "perfgate-nsys.sqlite")


@pytest.fixture(scope="module")
def summary():
    from tests.conftest import H100

    return summarize_nsys(H100 / "perfgate-nsys.sqlite", "nsys-sqlite").as_dict()


def stats_rows(h100, name):
    with (h100 / f"stats_{name}.csv").open() as fh:
        return list(csv.DictReader(fh))


def assert_row_matches(ours, theirs, count_key):
    assert ours["count"] == int(theirs[count_key])
    assert ours["total_ns"] == int(theirs["Total Time (ns)"])
    assert ours["avg_ns"] == pytest.approx(float(theirs["Avg (ns)"]), abs=0.06)
    assert ours["median_ns"] == pytest.approx(float(theirs["Med (ns)"]), abs=0.06)
    assert ours["min_ns"] == int(theirs["Min (ns)"])
    assert ours["max_ns"] == int(theirs["Max (ns)"])
    assert ours["stddev_ns"] == pytest.approx(float(theirs["StdDev (ns)"]), abs=0.06)


def test_schema_version_is_read(timeline):
    assert timeline.meta["export_schema_version"].startswith("3.")
    assert timeline.gpu_name == "NVIDIA H100 80GB HBM3"


def test_kernel_summary_matches_nsys_stats(summary, h100_data):
    theirs = stats_rows(h100_data, "cuda_gpu_kern_sum")
    ours = {k["name"]: k for k in summary["kernels"]}
    assert len(ours) == len(theirs)
    for row in theirs:
        assert_row_matches(ours[row["Name"]], row, "Instances")
        assert ours[row["Name"]]["time_pct"] == pytest.approx(float(row["Time (%)"]), abs=0.06)


def test_memory_summary_matches_nsys_stats(summary, h100_data):
    theirs = stats_rows(h100_data, "cuda_gpu_mem_time_sum")
    ours = {m["kind"]: m for m in summary["memory"]}
    for row in theirs:
        kind = row["Operation"].strip("[]").replace("CUDA ", "").replace("memcpy ", "")
        assert_row_matches(ours[kind], row, "Count")


def test_api_summary_matches_nsys_stats(summary, h100_data):
    ours = {a["name"]: a for a in summary["api"]}
    for row in stats_rows(h100_data, "cuda_api_sum"):
        assert_row_matches(ours[row["Name"]], row, "Num Calls")


def test_nvtx_summary_matches_nsys_stats(summary, h100_data):
    ours = {r["range"]: r for r in summary["nvtx"]}
    theirs = stats_rows(h100_data, "nvtx_sum")
    assert len(ours) == len(theirs)
    for row in theirs:
        assert_row_matches(ours[row["Range"].lstrip(":")], row, "Instances")


def test_every_kernel_is_attributed_to_the_range_it_ran_in(timeline):
    """Independent check: the child synchronises inside each case's range, so a kernel belongs to a
    range exactly when it executed inside that range's time window."""
    ranges = [r for r in timeline.nvtx_ranges if r.text.startswith("perfgate:")]
    assert len(ranges) == 6
    for k in timeline.kernels:
        inside = [r.text for r in ranges if r.start_ns <= k.start_ns and k.end_ns <= r.end_ns]
        assert (k.nvtx_range or None) == (inside[0] if inside else None), k


def test_sweep_attribution_equals_the_correlated_subquery_it_replaced(timeline, h100_data):
    """Ground truth: the first version's per-launch SQL (quadratic, exact) for every kernel of the capture."""
    con = sqlite3.connect(h100_data / "perfgate-nsys.sqlite")
    truth = con.execute("""select k.start, (select group_concat(txt, char(31)) from (
            select coalesce(n.text, ns.value) as txt from CUPTI_ACTIVITY_KIND_RUNTIME r
            join NVTX_EVENTS n on n.globalTid = r.globalTid and n.start <= r.start and n.end >= r.end
                 and n.eventType = 59
            left join StringIds ns on ns.id = n.textId
            where r.correlationId = k.correlationId and (r.globalTid & 0xFFFFFFFFFF000000) = k.globalPid
            order by n.start asc))
        from CUPTI_ACTIVITY_KIND_KERNEL k order by k.start""").fetchall()
    con.close()
    assert len(truth) == len(timeline.kernels) == 2437
    assert [tuple(t.split("\x1f")) if t else () for _, t in truth] == [k.nvtx_stack for k in timeline.kernels]
    assert sum(1 for k in timeline.kernels if k.nvtx_stack) == 18  # 6 cases x 3 calls in their ranges


def test_case_metrics_name_the_kernels_each_case_launched(timeline):
    per_case = nsys_case_metrics(timeline, calls=3)

    def kernels(case):
        rows = per_case[f"kernels/tests/test_perf.py::{case}"]
        return {m.kernel: m.value for m in rows if m.name == "nsys.launches_per_call"}

    assert kernels("test_vector_add[triton]") == {"_add_kernel": 1.0}
    assert kernels("test_softmax[triton-bf16]") == {"_softmax_fused": 1.0}
    assert kernels("test_matmul[triton]") == {"_matmul_kernel": 1.0}
    assert list(kernels("test_matmul[torch]").values()) == [1.0]
    vector_add = per_case["kernels/tests/test_perf.py::test_vector_add[triton]"]
    regs = [m for m in vector_add if m.name == "nsys.registers_per_thread"]
    assert regs and regs[0].value > 0


def test_missing_kernel_table_is_explained(tmp_path, h100_data):
    path = tmp_path / "no_kernels.sqlite"
    shutil.copy(h100_data / "perfgate-nsys.sqlite", path)
    con = sqlite3.connect(path)
    con.execute("drop table CUPTI_ACTIVITY_KIND_KERNEL")
    con.commit()
    con.close()
    with pytest.raises(ReportFileError, match="no CUPTI_ACTIVITY_KIND_KERNEL table"):
        read_nsys_sqlite(path)


def test_unknown_major_schema_version_is_refused(tmp_path, h100_data):
    path = tmp_path / "future.sqlite"
    shutil.copy(h100_data / "perfgate-nsys.sqlite", path)
    con = sqlite3.connect(path)
    cols = [r[1] for r in con.execute("pragma table_info(META_DATA_EXPORT)")]
    con.execute(f"update META_DATA_EXPORT set {cols[1]} = '4.0.0' where {cols[0]} = 'EXPORT_SCHEMA_VERSION'")
    con.commit()
    con.close()
    with pytest.raises(ReportFileError, match="export schema version 4.0.0 is not supported"):
        read_nsys_sqlite(path)


@pytest.mark.parametrize(
    "content, problem",
    [
        (b"", "the file is empty"),
        (b"hello, not sqlite", "not a SQLite file"),
    ],
)
def test_bad_files_are_clear_errors(tmp_path, content, problem):
    path = tmp_path / "x.sqlite"
    path.write_bytes(content)
    with pytest.raises(ReportFileError, match=problem) as err:
        read_nsys_sqlite(path)
    assert str(path) in str(err.value)


def test_truncated_export_is_a_clear_error(tmp_path, h100_data):
    path = tmp_path / "cut.sqlite"
    path.write_bytes((h100_data / "perfgate-nsys.sqlite").read_bytes()[:50_000])
    with pytest.raises(ReportFileError, match=str(path)):
        read_nsys_sqlite(path)


def test_sqlite_that_is_not_an_nsys_export(tmp_path):
    path = tmp_path / "other.sqlite"
    con = sqlite3.connect(path)
    con.execute("create table t (x)")
    con.execute("insert into t values (1)")
    con.commit()
    con.close()
    with pytest.raises(ReportFileError, match="not an Nsight Systems export"):
        read_nsys_sqlite(path)
