import gzip
from pathlib import Path

import pytest

from perfgate.analyze.readers import reader_for
from perfgate.errors import ReportFileError
from perfgate.parse.torch_trace import read_torch_trace

TRACE = Path(__file__).parent / "data" / "torch_trace.json"


def test_torch_trace_kernels_in_nanoseconds_with_launch_config():
    t = read_torch_trace(TRACE)
    assert t.gpu_name == "NVIDIA H100 80GB HBM3"
    adds = [k for k in t.kernels if k.name == "add_kernel"]
    assert len(adds) == 3
    assert adds[0].duration_ns == 16864  # "dur": 16.864 us
    assert adds[0].grid == (4096, 1, 1) and adds[0].block == (128, 1, 1)
    assert adds[0].registers_per_thread == 26
    assert {a.name for a in t.api_calls} >= {"cuLaunchKernelEx", "cudaDeviceSynchronize"}


def test_gzipped_trace_reads_the_same(tmp_path):
    gz = tmp_path / "trace.json.gz"
    gz.write_bytes(gzip.compress(TRACE.read_bytes()))
    assert read_torch_trace(gz).kernels == read_torch_trace(TRACE).kernels


@pytest.mark.parametrize(
    "content, problem",
    [
        ("", "the file is empty"),
        ('{"traceEvents": [', "not valid JSON"),
        ('{"foo": 1}', "no traceEvents"),
    ],
)
def test_bad_traces_are_clear_errors(tmp_path, content, problem):
    path = tmp_path / "t.json"
    path.write_text(content)
    with pytest.raises(ReportFileError, match=problem):
        read_torch_trace(path)


def test_detection_by_content_and_suffix(tmp_path, h100_data):
    assert reader_for(h100_data / "perfgate-nsys.sqlite").kind == "nsys-sqlite"
    assert reader_for(h100_data / "perfgate-nsys.nsys-rep").kind == "nsys-rep"
    assert reader_for(h100_data / "perfgate-ncu_raw.csv").kind == "ncu-csv"
    assert reader_for(TRACE).kind == "torch-json"


def test_qdstrm_without_report_is_explained(tmp_path):
    path = tmp_path / "report1.qdstrm"
    path.write_bytes(b"\0" * 10)
    with pytest.raises(ReportFileError, match="QdstrmImporter"):
        reader_for(path).kind


@pytest.mark.parametrize(
    "name, problem",
    [
        ("missing.ncu-rep", "no such file"),
        ("notes.txt", "unknown report type"),
        ("cut.sqlite", "not a SQLite file"),
    ],
)
def test_wrong_kind_or_path_is_a_clear_error(tmp_path, name, problem):
    path = tmp_path / name
    if name != "missing.ncu-rep":
        path.write_text("hello")
    with pytest.raises(ReportFileError, match=problem):
        reader_for(path).kind


def test_a_new_format_is_one_reader_entry(tmp_path, h100_data):
    from perfgate.analyze.readers import READERS, Reader

    path = tmp_path / "capture.rocprof"
    path.write_bytes(b"ROCPROF\x00 ...")
    with pytest.raises(ReportFileError, match="unknown report type; expected nsys .sqlite, .nsys-rep"):
        reader_for(path)
    seen = []

    def summarize(p, kind, spans):
        seen.append((p, kind, spans))
        return None

    standin = Reader("rocprof", "rocprof capture", lambda name, head: head.startswith(b"ROCPROF\x00"), summarize)
    readers = (*READERS, standin)
    assert reader_for(path, readers) is standin
    readers[-1].summarize(path, "rocprof", False)
    assert seen == [(path, "rocprof", False)]
    assert reader_for(h100_data / "perfgate-nsys.sqlite", readers).kind == "nsys-sqlite"  # content first
