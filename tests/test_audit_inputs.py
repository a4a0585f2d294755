"""Inputs an outside auditor built against the readers (issue 23), each rebuilt from its description: bad
input is one line naming the file and the problem (exit 2), never exit 0 with a nonsense result, and the
work is bounded."""

import contextlib
import csv
import gzip
import io
import json
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
    path.write_bytes(gzip_stream(b'{"traceEvents": [' + json.dumps(KERNEL).encode() + b'], "pad": "', b"A" * 10_000,
                                 b'"}', repeat=30))
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


@pytest.mark.parametrize("metric, unit, kind", [
    ("gpu__time_duration.sum", "furlongs", "a time"),
    ("dram__bytes_read.sum", "Gbit", "a size"),
    ("dram__bytes.sum.per_second", "Gbyte", "a rate"),
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "", "a percentage"),
    ("sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active", "permille", "a percentage"),
])
def test_an_ncu_metric_in_a_unit_of_the_wrong_kind_is_one_line_naming_metric_and_unit(tmp_path, h100_data, metric,
                                                                                        unit, kind):
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
