"""ncu readers: the .ncu-rep (through ncu_report) and `ncu --import --csv --page raw` of the same
report must agree, launch by launch and metric by metric."""

import re

import pytest

pytest.importorskip("ncu_report")

from perfgate.errors import ReportFileError  # noqa: E402
from perfgate.measure.profilers import ncu_case_metrics  # noqa: E402
from perfgate.parse.ncu_csv import read_ncu_csv  # noqa: E402
from perfgate.parse.ncu_report_file import read_ncu_report  # noqa: E402


def simplified(name: str) -> str:
    return re.sub(r"\((int|unsigned long)\)", "", name.replace("at::native::", "at::"))


def printed_precision(value: float) -> float:
    """ncu's CSV prints about 6 decimals after auto-scaling; allow for that rounding."""
    return max(abs(value) * 5e-6, 1e-6)


def test_report_and_csv_agree_on_every_launch(ncu_rep, h100_data):
    rep = read_ncu_report(ncu_rep)
    csv = read_ncu_csv(h100_data / "perfgate-ncu_raw.csv")
    # `ncu --csv` prints a simplified demangling (no at::native::, no (int) casts); the reader keeps
    # ncu_report's full demangled name, the one nsys prints, so both profilers name a kernel alike
    assert [simplified(launch.name) for launch in rep] == [launch.name for launch in csv]
    assert [launch.nvtx_ranges for launch in rep] == [launch.nvtx_ranges for launch in csv]
    compared = 0
    for a, b in zip(rep, csv):
        for name, m in b.metrics.items():
            if isinstance(m.value, str) or name not in a.metrics or isinstance(a.metrics[name].value, str):
                continue
            ours = a.metrics[name].value
            # the CSV rounds to its printed digits (e.g. 1.94 for 1.9394 waves/SM): compare at that precision
            digits = len(str(m.value).split(".")[1]) if "." in str(m.value) else 0
            assert ours == pytest.approx(
                m.value, abs=max(10 ** -min(digits, 6) * 0.51 * max(1, abs(m.value)), printed_precision(ours))
            ), name
            compared += 1
    assert compared > 500


def test_key_metrics_are_in_base_units(ncu_rep):
    launches = read_ncu_report(ncu_rep)
    add = next(launch for launch in launches if launch.name == "_add_kernel")
    assert add.metrics["gpu__time_duration.sum"].unit == "ns"
    assert 400_000 < add.value("gpu__time_duration.sum") < 700_000  # 1.6 GB at ~3 TB/s
    assert add.metrics["dram__bytes_read.sum"].unit == "byte"
    assert add.value("dram__bytes_read.sum") == pytest.approx(2 * 2**29, rel=0.02)  # x and y, 512 MiB each
    assert add.value("launch__registers_per_thread") > 0


def test_absent_metric_is_absent_not_zero(ncu_rep):
    launch = read_ncu_report(ncu_rep)[0]
    assert launch.value("no__such_metric.sum") is None
    assert "no__such_metric.sum" not in launch.metrics


def test_every_launch_maps_to_its_case_through_nvtx(ncu_rep):
    per_case = ncu_case_metrics(read_ncu_report(ncu_rep))
    assert len(per_case) == 6
    kernels = {case.split("::")[1]: {m.kernel for m in ms} for case, ms in per_case.items()}
    assert kernels["test_vector_add[triton]"] == {"_add_kernel"}
    assert kernels["test_softmax[triton-bf16]"] == {"_softmax_fused"}
    assert kernels["test_matmul[triton]"] == {"_matmul_kernel"}


@pytest.mark.parametrize(
    "make, problem",
    [
        (lambda p, src: p.write_bytes(b""), "the file is empty"),
        (lambda p, src: p.write_bytes(src.read_bytes()[:4096]), "truncated"),
        (lambda p, src: p.write_bytes(b"PK\x03\x04 definitely not a report" * 10), "not an Nsight Compute report"),
    ],
)
def test_bad_ncu_reports_are_clear_errors(tmp_path, ncu_rep, make, problem):
    path = tmp_path / "bad.ncu-rep"
    make(path, ncu_rep)
    with pytest.raises(ReportFileError, match=problem) as err:
        read_ncu_report(path)
    assert str(path) in str(err.value)


@pytest.mark.parametrize(
    "text, problem",
    [
        ("", "the file is empty"),
        ("a,b,c\n1,2,3\n", "not an ncu CSV export"),
        ('"ID","Kernel Name","x"\n"0","k","1"\n', "no units row"),
    ],
)
def test_bad_ncu_csv_is_a_clear_error(tmp_path, text, problem):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(ReportFileError, match=problem):
        read_ncu_csv(path)


def test_truncated_ncu_csv_is_a_clear_error(tmp_path, h100_data):
    text = (h100_data / "perfgate-ncu_raw.csv").read_text()
    path = tmp_path / "cut.csv"
    path.write_text(text[: len(text) // 2])
    with pytest.raises(ReportFileError, match="truncated"):
        read_ncu_csv(path)


def test_thousands_separators_and_scaled_units(tmp_path):
    path = tmp_path / "raw.csv"
    path.write_text(
        '"ID","Kernel Name","launch__grid_size","gpu__time_duration.sum",'
        '"dram__bytes.sum.per_second","l1tex__t_sector_hit_rate.pct"\n'
        '"","","","us","Tbyte/s","%"\n'
        '"0","k","4,096","15.648000","2.345063",""\n'
    )
    m = read_ncu_csv(path)[0].metrics
    assert m["launch__grid_size"].value == 4096
    assert (m["gpu__time_duration.sum"].value, m["gpu__time_duration.sum"].unit) == (pytest.approx(15648.0), "ns")
    assert m["dram__bytes.sum.per_second"].value == pytest.approx(2.345063e12)
    assert "l1tex__t_sector_hit_rate.pct" not in m  # empty cell: absent
