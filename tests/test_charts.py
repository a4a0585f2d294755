"""Charts are checked through their Figure objects: series, labels and values, not only that a PNG exists."""

import gzip
import json

import pytest

pytest.importorskip("matplotlib")

from perfgate.analyze.document import analyze_file  # noqa: E402
from perfgate.baseline import Baseline, BaselineCase  # noqa: E402
from perfgate.compare import compare_run  # noqa: E402
from perfgate.model import CaseResult, Metric, Timer  # noqa: E402
from perfgate.parse.nsys_sqlite import read_nsys_sqlite  # noqa: E402
from perfgate.report import analyze_charts as ac  # noqa: E402
from perfgate.report import gate_charts as gc  # noqa: E402
from perfgate.settings import settings_from_config  # noqa: E402
from perfgate.stats import summarize  # noqa: E402
from tests.helpers import ENV, baseline_of, make_run, noisy  # noqa: E402


@pytest.fixture(scope="module")
def nsys_doc():
    from tests.conftest import H100

    path = H100 / "perfgate-nsys.sqlite"
    return analyze_file(path), read_nsys_sqlite(path)


@pytest.fixture
def ncu_doc(ncu_rep):
    return analyze_file(ncu_rep)


def gate_with_changes(tmp_path):
    base = baseline_of(make_run({"t::fast": noisy(1.0), "t::slow": noisy(1.0, seed=4), "t::same": noisy(1.0, seed=5)}), tmp_path)
    run = make_run({"t::fast": noisy(0.7, seed=1), "t::slow": noisy(1.5, seed=2), "t::same": noisy(1.0, seed=3)})
    return compare_run(run.results, base, ENV, settings_from_config({})), run, base


def test_change_per_case_bars_are_sorted_and_coloured_by_verdict(tmp_path):
    gate, _, _ = gate_with_changes(tmp_path)
    ax = gc.change_per_case_figure(gate).axes[0]
    bars = ax.patches
    labels = [t.get_text() for t in ax.get_yticklabels()]
    values = dict(zip(labels, (b.get_width() for b in bars)))
    assert values["slow"] == pytest.approx(50, abs=2) and values["fast"] == pytest.approx(-30, abs=2)
    colours = dict(zip(labels, (b.get_facecolor() for b in bars)))
    from matplotlib.colors import to_rgba
    assert colours["slow"] == to_rgba(gc.VERDICT_COLOURS["regressed"])
    assert colours["fast"] == to_rgba(gc.VERDICT_COLOURS["improved"])
    assert labels[-1] == "slow"  # largest change at the top (barh draws bottom-up)


def test_large_runs_fold_into_an_others_row(tmp_path):
    cases = {f"t::c{i:02d}": noisy(1.0, seed=i) for i in range(40)}
    base = baseline_of(make_run(cases), tmp_path)
    gate = compare_run(make_run({k: noisy(1.0, seed=100 + i) for i, k in enumerate(cases)}).results, base, ENV,
                       settings_from_config({}))
    labels = [t.get_text() for t in gc.change_per_case_figure(gate, top_n=10).axes[0].get_yticklabels()]
    assert len(labels) == 11 and labels[0] == "others (30)"


def test_distribution_and_trend_figures(tmp_path):
    gate, run, base = gate_with_changes(tmp_path)
    box = gc.distribution_figure("t::slow", base.cases["t::slow"].samples_ms, run.results[1].samples_ms).axes[0]
    assert [t.get_text() for t in box.get_xticklabels()] == ["baseline", "this run"]
    from perfgate.store import HistoryPoint

    history = [HistoryPoint(i, f"2026-11-0{i}T00:00:00+00:00", f"c{i}", m, m, m) for i, m in enumerate((1.0, 1.01, 1.5))]
    ax = gc.trend_figure("t::slow", history, 1.0, 3.0, 1.5).axes[0]
    assert list(ax.lines[0].get_ydata()) == [1.0, 1.01, 1.5]
    assert [t.get_text() for t in ax.get_legend().get_texts()][:2] == ["median (history)", "baseline"]


def test_roofline_places_cases_by_intensity_under_the_roof():
    results = []
    for name, flops, nbytes, ms in (("mm", 2 * 4096**3, 3 * 2 * 4096**2, 0.2), ("add", 2**27, 12 * 2**27, 0.53)):
        results.append(CaseResult(f"t::{name}", summarize([ms, ms], Timer.CUDA_EVENT, nbytes, flops), (ms, ms),
                                  bytes_moved=nbytes, flops=flops))
    run = make_run({})
    from dataclasses import replace
    run = replace(run, results=tuple(results))
    ax = gc.roofline_figure(run, peak_tflops=800.0, peak_gbps=3000.0).axes[0]
    points = sorted(tuple(c.get_offsets()[0]) for c in ax.collections)
    assert points[0][0] == pytest.approx(1 / 12) and points[1][0] == pytest.approx(4096 / 3)
    assert points[1][1] == pytest.approx(2 * 4096**3 / 0.2e-3 / 1e12)
    roof = ax.lines[0].get_ydata()
    assert max(roof) == 800.0


def test_profiler_figure_compares_occupancy_and_bandwidth_with_the_baseline(h100_data):
    doc = json.loads(gzip.decompress((h100_data / "gate_profiled_detuned_run.json.gz").read_bytes()))
    results = [CaseResult(c["case_id"], summarize([c["median_ms"]] * 2, Timer.CUDA_EVENT), (c["median_ms"],) * 2,
                          tuple(Metric(**m) for m in c["metrics"])) for c in doc["cases"]]
    run = make_run({})
    from dataclasses import replace
    run = replace(run, results=tuple(results))
    base_doc = json.loads((h100_data / "profiled_baseline.json").read_text())
    base = Baseline(h100_data, ENV, {cid: BaselineCase(cid, Timer.CUDA_EVENT, c["median_ms"], tuple(c["samples_ms"]),
                                                        tuple(Metric(**m) for m in c["metrics"]))
                                     for cid, c in base_doc["cases"].items()})
    occ, bw = gc.profiler_figure(run, base).axes
    labels = [t.get_text() for t in bw.get_xticklabels()]
    i = next(j for j, lbl in enumerate(labels) if "test_matmul[triton]" in lbl)
    heights = {c.get_label(): [p.get_height() for p in c.patches] for c in occ.containers}
    assert heights["baseline achieved"][i] == pytest.approx(12.4, abs=0.1)  # the H100 numbers: 12.4% -> 6.2%
    assert heights["achieved"][i] == pytest.approx(6.2, abs=0.1)
    assert heights["theoretical"][i] == pytest.approx(6.25, abs=0.01)


def test_timeline_charts_from_the_recorded_capture(nsys_doc):
    doc, timeline = nsys_doc
    top = ac.top_kernels_figure(doc).axes[0]
    assert top.get_yticklabels()[-1].get_text() == "_matmul_kernel"  # most total time (autotuning included)
    assert top.patches[-1].get_width() == pytest.approx(doc["kernels"][0]["total_ns"] / 1e6)
    tl = ac.kernel_timeline_figure(doc, timeline).axes[0]
    assert len(tl.collections) == len(doc["kernels"][:ac.TOP_N]) + (1 if len(doc["kernels"]) > ac.TOP_N else 0)
    assert ac.duration_distribution_figure(doc, timeline).axes[0].get_xscale() == "log"
    mem = ac.memory_transfers_figure(doc).axes[0]
    assert [t.get_text() for t in mem.get_xticklabels()] == ["memset"]
    assert ac.bandwidth_figure(doc).axes[0].get_ylabel() == "achieved bandwidth (GB/s)"


def test_ncu_charts_from_the_recorded_report(ncu_doc):
    d = ncu_doc["diagnosis"]
    util = ac.gpu_utilization_figure(d).axes[0]
    sm = [p.get_height() for p in util.containers[0].patches]
    assert sm == pytest.approx([x["sm_sol_pct"] for x in d])
    occ = ac.occupancy_figure(d).axes[0]
    assert [c.get_label() for c in occ.containers] == ["achieved", "theoretical"]
    mem = ac.memory_performance_figure(d).axes[0]
    assert len(mem.containers) == 3
    scatter = ac.bottleneck_figure(d).axes[0]
    assert {t.get_text() for t in scatter.get_legend().get_texts()} == {x["bottleneck"] for x in d}
    radar = ac.kernel_comparison_figure(d).axes[0]
    assert radar.name == "polar" and len(radar.lines) == 6


def test_write_analysis_charts_names_the_files(tmp_path, ncu_rep):
    names = ac.write_analysis_charts([analyze_file(ncu_rep)], tmp_path)
    assert names == ["gpu_utilization.png", "memory_performance.png", "occupancy_analysis.png",
                     "bottleneck_analysis.png", "kernel_comparison.png"]
    assert all((tmp_path / n).stat().st_size > 1000 for n in names)
