"""`--perfgate-profile nsys,ncu` end to end without a GPU: stand-in `nsys`/`ncu` executables on PATH
hand back the reports recorded on the H100 for the same case ids, so argv building, report discovery,
export, parsing, case attribution, storage, gating and the failure paths all run for real."""

import json
import sqlite3
import sys
import textwrap

import pytest

from tests.helpers import MANUAL_CLOCK_CONFTEST

pytest.importorskip("ncu_report")

PERF_TESTS = """
import pytest
from perfgate.measure import clock

def work():
    clock.current().sleep(0.001)

@pytest.mark.parametrize("impl", ["triton", "torch"])
def test_vector_add(perfgate, impl):
    perfgate(work)

@pytest.mark.parametrize("dtype", ["bf16"])
@pytest.mark.parametrize("impl", ["triton", "torch"])
def test_softmax(perfgate, impl, dtype):
    perfgate(work)

@pytest.mark.parametrize("impl", ["triton", "torch"])
def test_matmul(perfgate, impl):
    perfgate(work)
"""

# a millisecond on the manual clock stands in for each kernel: the timing is not under test here, the profilers are
PYPROJECT = (
    "[tool.perfgate]\nthreshold_pct = 100\nmin_samples = 5\nmax_samples = 10\nbudget_ms = 20\nwarmup_ms = 1\n"
    "confirm_runs = 0\n"
)

FAKE_NSYS = """
import os, shutil, sys
args = sys.argv[1:]
data = os.environ["FAKE_DATA"]
out = next(a.split("=", 1)[1] for a in args if a.startswith("--output="))
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write("nsys " + " ".join(args) + "\\n")
if args[0] == "profile":
    if os.environ.get("FAKE_NSYS_MODE") == "leaky":
        sys.stderr.write("nsys: fatal: cannot start; env was HF_TOKEN=hf_fakesecret123 HOME=/home/runner\\n")
        sys.exit(3)
    if os.environ.get("FAKE_NSYS_MODE") == "qdstrm":
        open(out + ".qdstrm", "wb").write(b"raw")
        sys.stderr.write("Unable to retrieve the importer version\\n")
        sys.exit(0)
    shutil.copy(os.path.join(data, "perfgate-nsys.nsys-rep"), out + ".nsys-rep")
elif args[0] == "export":
    shutil.copy(os.path.join(data, "perfgate-nsys.sqlite"), out)
"""

FAKE_NCU = """
import gzip, os, shutil, sys
args = sys.argv[1:]
if args == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\\nVersion 2025.3.1.0 (build 36398880) (public-release)")
    sys.exit(0)
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write("ncu " + " ".join(args) + "\\n")
if os.environ.get("FAKE_NCU_MODE") == "crash":
    sys.stderr.write("==PROF== Connected to process 123\\n==ERROR== Failed to profile kernel _add_kernel\\n")
    sys.exit(1)
out = args[args.index("--export") + 1]
with gzip.open(os.path.join(os.environ["FAKE_DATA"], "perfgate-ncu.ncu-rep.gz")) as src, open(out + ".ncu-rep",
                                                                                              "wb") as dst:
    shutil.copyfileobj(src, dst)
"""


@pytest.fixture
def project(pytester, h100_data, tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("nsys", FAKE_NSYS), ("ncu", FAKE_NCU)):
        tool = bin_dir / name
        tool.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{__import__('os').environ['PATH']}")
    monkeypatch.setenv("FAKE_DATA", str(h100_data))
    monkeypatch.setenv("FAKE_LOG", str(tmp_path / "calls.log"))
    pytester.mkdir("kernels")
    pytester.mkdir("kernels/tests")
    (pytester.path / "kernels" / "tests" / "test_perf.py").write_text(PERF_TESTS)
    pytester.makeconftest(MANUAL_CLOCK_CONFTEST)
    pytester.makefile(".toml", pyproject=PYPROJECT)
    pytester.log = tmp_path / "calls.log"
    return pytester


def gate(p, *args):
    return p.runpytest(
        "-p",
        "no:cacheprovider",
        "kernels/tests/test_perf.py",
        "--perfgate",
        "--perfgate-profile",
        "nsys,ncu",
        "--perfgate-json",
        "out.json",
        "--perfgate-summary",
        "summary.md",
        *args,
    )


def case(doc, name):
    return next(c for c in doc["cases"] if c["case_id"] == f"kernels/tests/test_perf.py::{name}")


def test_profiled_run_attributes_metrics_to_cases_and_stores_them(project):
    result = gate(project)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*nsys phase took*", "*ncu phase took*"])
    calls = project.log.read_text()
    assert "--trace=cuda,nvtx" in calls
    assert "--profile-from-start off" in calls and "--clock-control none" in calls and "--nvtx" in calls
    doc = json.loads((project.path / "out.json").read_text())
    add = {(m["source"], m["name"]): m for m in case(doc, "test_vector_add[triton]")["metrics"]}
    assert add[("ncu", "launch__registers_per_thread")]["kernel"] == "_add_kernel"
    assert add[("nsys", "nsys.launches_per_call")]["value"] == 1.0
    assert case(doc, "test_matmul[triton]")["profile_errors"] == []
    md = (project.path / "summary.md").read_text()
    assert "### Profiler metrics" in md and "_matmul_kernel" in md
    con = sqlite3.connect(project.path / ".perfgate" / "history.db")
    settings = con.execute("select profile_settings from runs").fetchone()[0]
    assert "ncu 2025.3.1.0" in settings and "clock-control=none" in settings and "cache-control=all" in settings
    units = dict(
        con.execute("select name, unit from metrics where name in ('gpu__time_duration.sum', 'dram__bytes_read.sum')")
    )
    assert units == {"gpu__time_duration.sum": "ns", "dram__bytes_read.sum": "byte"}
    baseline = json.loads(next((project.path / "baselines").glob("*.json")).read_text())
    names = {m["name"] for m in baseline["cases"]["kernels/tests/test_perf.py::test_matmul[triton]"]["metrics"]}
    assert {"launch__registers_per_thread", "derived__local_spilling_requests", "nsys.launches_per_call"} <= names
    # the same reports again: every profiler metric compares unchanged
    again = gate(project)
    assert again.ret == 0
    doc = json.loads((project.path / "out.json").read_text())
    metric_rows = [c for c in doc["comparisons"] if c["metric"] != "median_ms"]
    assert metric_rows and all(c["verdict"] == "unchanged" for c in metric_rows)


def test_profiler_crash_marks_cases_and_keeps_timing(project):
    assert gate(project).ret == 0
    project._monkeypatch.setenv("FAKE_NCU_MODE", "crash")
    result = gate(project)
    assert result.ret == 0  # not configured to fail on profile errors
    result.stdout.fnmatch_lines(["*profile failed*ncu*exited with status 1*Failed to profile kernel _add_kernel*"])
    doc = json.loads((project.path / "out.json").read_text())
    assert all(c["timing"]["median_ms"] > 0 for c in doc["cases"])
    project.makefile(".toml", pyproject=PYPROJECT + "fail_on_profile_error = true\n")
    assert gate(project).ret == 1


def test_qdstrm_without_report_is_explained(project):
    project._monkeypatch.setenv("FAKE_NSYS_MODE", "qdstrm")
    result = gate(project)
    result.stdout.fnmatch_lines(["*profile failed*QdstrmImporter*libdw.so.1*"])


def test_a_profiler_that_prints_a_secret_never_publishes_it(project, tmp_path, monkeypatch):
    summary = tmp_path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("FAKE_NSYS_MODE", "leaky")
    result = gate(project)
    result.stdout.fnmatch_lines(["*profile failed*nsys exited with status 3*"])
    published = [
        summary.read_text(),
        (project.path / "summary.md").read_text(),
        (project.path / "out.json").read_text(),
    ]
    for text in published:
        assert "hf_fakesecret123" not in text and "HF_TOKEN=***" in text
        assert "/home/runner" not in text
    con = sqlite3.connect(project.path / ".perfgate" / "history.db")
    stored = con.execute("select profile_errors from cases").fetchone()[0]
    assert "hf_fakesecret123" in stored  # the local history keeps what happened, unscrubbed


def test_a_copy_engine_case_gets_a_note_from_ncu_not_a_failure(project):
    tests = project.path / "kernels" / "tests" / "test_perf.py"
    tests.write_text(tests.read_text() + "\ndef test_copy_bandwidth(perfgate):\n    perfgate(work)\n")
    result = project.runpytest(
        "-p",
        "no:cacheprovider",
        "kernels/tests/test_perf.py",
        "--perfgate",
        "--perfgate-profile",
        "ncu",
        "--perfgate-json",
        "out.json",
    )
    assert result.ret == 0
    doc = json.loads((project.path / "out.json").read_text())
    copy = case(doc, "test_copy_bandwidth")
    assert copy["profile_errors"] == []
    assert copy["profile_notes"] == [
        "ncu: no kernel to profile (this case launched none: copy-engine work such as "
        "memcpy/memset has none; nsys reports its transfers)"
    ]
    assert not [c for c in doc["comparisons"] if c["verdict"] == "profile failed"]
