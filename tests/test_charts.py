"""Charts are checked through their Figure objects: series, labels and values, not only that a PNG exists."""

import gzip
import json
from dataclasses import replace

import pytest

pytest.importorskip("matplotlib")

from perfgate.analyze.document import analyze_file  # noqa: E402
from perfgate.baseline import Baseline, BaselineCase  # noqa: E402
from perfgate.config.settings import settings_from_config  # noqa: E402
from perfgate.gate.compare import compare_run  # noqa: E402
from perfgate.model import CaseResult, Environment, Metric, Timer  # noqa: E402
from perfgate.report import analyze_charts as ac  # noqa: E402
from perfgate.report import gate_charts as gc  # noqa: E402
from perfgate.report.figures import save  # noqa: E402
from perfgate.stats import summarize  # noqa: E402
from perfgate.store import HistoryPoint  # noqa: E402
from tests.helpers import ENV, baseline_of, calibrated_of, make_run, noisy  # noqa: E402


@pytest.fixture(scope="module")
def nsys_doc():
    from tests.conftest import H100

    return analyze_file(H100 / "perfgate-nsys.sqlite", with_spans=True)


@pytest.fixture
def ncu_doc(ncu_rep):
    return analyze_file(ncu_rep)


def gate_with_changes(tmp_path, ids=("t::fast", "t::slow", "t::same")):
    base = calibrated_of(make_run({cid: noisy(1.0, seed=i) for i, cid in enumerate(ids)}), tmp_path)
    centres = {"fast": 0.7, "slow": 1.5}
    run = make_run(
        {cid: noisy(centres.get(cid.rsplit("::", 1)[-1].split(".")[0], 1.0), seed=10 + i) for i, cid in enumerate(ids)}
    )
    return compare_run(run.results, base, ENV, settings_from_config({})), run, base


def bars_by_label(ax):
    labels = [t.get_text() for t in ax.get_yticklabels()]
    verdict_bars = [p for p in ax.patches if p.get_height() == pytest.approx(0.6)]
    return labels, verdict_bars


def test_change_per_case_bars_carry_threshold_bands_whiskers_and_verdict_colours(tmp_path):
    gate, _, _ = gate_with_changes(tmp_path)
    ax = gc.change_per_case_figure(gate).axes[0]
    labels, bars = bars_by_label(ax)
    assert labels[-1] == "slow" and labels == ["same", "fast", "slow"]  # largest change at the top
    width = {lbl: b.get_width() for lbl, b in zip(reversed(labels), bars)}  # bars are drawn top row first
    assert width["slow"] == pytest.approx(50, abs=2) and width["fast"] == pytest.approx(-30, abs=2)
    from matplotlib.colors import to_rgba

    colours = {lbl: b.get_facecolor() for lbl, b in zip(reversed(labels), bars)}
    assert colours["slow"] == to_rgba(gc.VERDICT_COLOURS["regressed"])
    assert colours["fast"] == to_rgba(gc.VERDICT_COLOURS["improved"])
    bands = [p for p in ax.patches if p.get_height() == pytest.approx(0.9)]
    thresholds = sorted(2 * c.threshold_pct for c in gate.comparisons if c.metric == "median_ms")
    assert sorted(b.get_width() for b in bands) == pytest.approx(thresholds)  # ±T around zero, per case
    assert all(w >= 2.0 for w in thresholds)  # at least the 1% minimum effect either side
    assert len(ax.lines) == 3 + 1  # one 95% CI whisker per case, and the zero line


def test_cases_whose_last_parts_collide_keep_their_own_bars(tmp_path):
    ids = ("a/test_x.py::test_k[1]", "b/test_x.py::test_k[1]", "a/test_y.py::test_k[1]", "b/test_y.py::test_k[1]")
    gate, _, _ = gate_with_changes(tmp_path, ids)
    labels, bars = bars_by_label(gc.change_per_case_figure(gate).axes[0])
    assert len(bars) == 4 and len(set(labels)) == 4 and all("test_x.py" in lbl or "test_y.py" in lbl for lbl in labels)


def test_large_runs_fold_into_an_others_row(tmp_path):
    cases = {f"t::c{i:02d}": noisy(1.0, seed=i) for i in range(40)}
    base = baseline_of(make_run(cases), tmp_path)
    gate = compare_run(
        make_run({k: noisy(1.0, seed=100 + i) for i, k in enumerate(cases)}).results,
        base,
        ENV,
        settings_from_config({}),
    )
    labels = [t.get_text() for t in gc.change_per_case_figure(gate, top_n=10).axes[0].get_yticklabels()]
    assert len(labels) == 11 and labels[0] == "others (30, median)"


def test_trend_is_by_commit_and_date_with_the_baseline_and_its_band():
    history = [
        HistoryPoint(i, f"2026-11-0{i + 1}T00:00:00+00:00", f"abcdef{i}123", m, m * 0.99, m * 1.01)
        for i, m in enumerate((1.0, 1.01, 1.5))
    ]
    ax = gc.trend_figure("t::slow", history, 1.0, 3.0, 1.5).axes[0]
    assert list(ax.lines[0].get_ydata()) == [1.0, 1.01, 1.5]
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        "abcdef0\n2026-11-01",
        "abcdef1\n2026-11-02",
        "abcdef2\n2026-11-03",
    ]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[:2] == ["median (history)", "q1-q3"] and "baseline" in legend and "threshold ±3%" in legend
    assert gc.trend_figure("t::x", [], 1.0, 3.0, 1.0) is None


def _case(name, ms, nbytes=None, flops=None):
    return CaseResult(
        f"t::{name}", summarize([ms, ms], Timer.CUDA_EVENT, nbytes, flops), (ms, ms), bytes_moved=nbytes, flops=flops
    )


def test_roofline_uses_the_device_spec_and_places_memory_bound_cases_by_bytes():
    run = replace(
        make_run({}),
        results=(
            _case("mm", 0.2, 3 * 2 * 4096**2, 2 * 4096**3),
            _case("add", 0.53, 12 * 2**27),
            _case("copy", 0.36, 8 * 2**27),
        ),
    )
    fig = gc.roofline_figure(run)
    roof, bandwidth = fig.axes
    assert "spec sheet" in roof.get_legend().get_texts()[0].get_text()
    assert "989 TFLOP/s" in roof.get_legend().get_texts()[0].get_text()
    assert [t.get_text() for t in bandwidth.get_yticklabels()] == ["copy", "add"]
    assert "3,350 GB/s" in bandwidth.get_legend().get_texts()[0].get_text()
    configured = gc.roofline_figure(run, peak_tflops=800, peak_gbps=3000).axes[0]
    assert "configured" in configured.get_legend().get_texts()[0].get_text()
    unknown = replace(run, environment=Environment("cuda", "Mystery GPU"))
    assert "best measured" in gc.roofline_figure(unknown).axes[0].get_legend().get_texts()[0].get_text()


def test_log_axes_label_ticks_with_plain_numbers():
    run = replace(make_run({}), results=(_case("mm", 0.2, 3 * 2 * 4096**2, 2 * 4096**3),))
    fig = gc.roofline_figure(run)
    fig.canvas.draw()
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels(which="both") + ax.get_yticklabels(which="both")]
    assert any(labels) and not [t for t in labels if "$" in t or "mathdefault" in t]


def test_a_series_the_baseline_does_not_have_gets_no_legend_entry(h100_data):
    doc = json.loads(gzip.decompress((h100_data / "gate_profiled_detuned_run.json.gz").read_bytes()))
    results = [
        CaseResult(
            c["case_id"],
            summarize([c["median_ms"]] * 2, Timer.CUDA_EVENT),
            (c["median_ms"],) * 2,
            tuple(Metric(**m) for m in c["metrics"]),
        )
        for c in doc["cases"]
    ]
    occ, bw = gc.profiler_figure(replace(make_run({}), results=tuple(results)), None).axes
    assert [t.get_text() for t in occ.get_legend().get_texts()] == ["achieved", "theoretical"]
    assert [t.get_text() for t in bw.get_legend().get_texts()] == ["this run"]


def test_no_chart_for_data_that_is_not_there():
    assert gc.roofline_figure(replace(make_run({}), results=(_case("x", 1.0),))) is None
    assert gc.profiler_figure(make_run({"t::a": [1.0, 2.0]}), None) is None


def test_any_case_id_renders_literally(tmp_path):
    ids = ("t::test_cost[$n$]", "t::test_frac[\\frac{1}{2}]", "t::test_under_[_]")
    gate, _, _ = gate_with_changes(tmp_path, ids)
    fig = gc.change_per_case_figure(gate)
    path = save(fig, tmp_path, "change.png")
    assert path.stat().st_size > 1000
    assert {t.get_text() for t in fig.axes[0].get_yticklabels()} == {
        "test_cost[$n$]",
        "test_frac[\\frac{1}{2}]",
        "test_under_[_]",
    }


def test_profiled_run_shows_occupancy_per_kernel_against_the_baseline(h100_data):
    doc = json.loads(gzip.decompress((h100_data / "gate_profiled_detuned_run.json.gz").read_bytes()))
    results = [
        CaseResult(
            c["case_id"],
            summarize([c["median_ms"]] * 2, Timer.CUDA_EVENT),
            (c["median_ms"],) * 2,
            tuple(Metric(**m) for m in c["metrics"]),
        )
        for c in doc["cases"]
    ]
    run = replace(make_run({}), results=tuple(results))
    base_doc = json.loads((h100_data / "profiled_baseline.json").read_text())
    base = Baseline(
        h100_data,
        ENV,
        {
            cid: BaselineCase(
                cid, Timer.CUDA_EVENT, c["median_ms"], tuple(c["samples_ms"]), tuple(Metric(**m) for m in c["metrics"])
            )
            for cid, c in base_doc["cases"].items()
        },
    )
    occ, bw = gc.profiler_figure(run, base).axes
    labels = [t.get_text() for t in bw.get_xticklabels()]
    assert len(set(labels)) == len(labels)
    i = next(j for j, lbl in enumerate(labels) if "test_matmul[triton]" in lbl)
    heights = {c.get_label(): [p.get_height() for p in c.patches] for c in occ.containers}
    assert heights["baseline achieved"][i] == pytest.approx(12.4, abs=0.1)  # the H100 numbers: 12.4% -> 6.2%
    assert heights["achieved"][i] == pytest.approx(6.2, abs=0.1)
    assert heights["theoretical"][i] == pytest.approx(6.25, abs=0.01)


def test_timeline_charts_from_the_recorded_capture(nsys_doc):
    top = ac.top_kernels_figure(nsys_doc).axes[0]
    labels = [t.get_text() for t in top.get_yticklabels()]
    assert labels[-1] == "_matmul_kernel"  # most total time (autotuning included)
    assert len(set(labels)) == len(labels) == len(nsys_doc.kernels)  # every kernel its own row
    assert top.patches[-1].get_width() == pytest.approx(nsys_doc.kernels[0].stats.total_ns / 1e6)
    tl = ac.kernel_timeline_figure(nsys_doc).axes[0]
    assert len(tl.collections) == min(len(nsys_doc.kernels), ac.TOP_N)
    assert ac.duration_distribution_figure(nsys_doc).axes[0].get_xscale() == "log"
    # seven memsets of a few bytes each: nothing worth a transfer chart
    assert sum(m.bytes for m in nsys_doc.memory) < ac.MEMORY_MIN_BYTES
    assert ac.memory_transfers_figure(nsys_doc) is None and ac.bandwidth_figure(nsys_doc) is None


def test_kernels_that_share_a_short_name_are_told_apart():
    names = [
        "void at::native::vectorized_elementwise_kernel<4, AddFunctor<float>>(int)",
        "void at::native::vectorized_elementwise_kernel<4, MulFunctor<float>>(int)",
        "_add_kernel",
        "_add_kernel",
    ]
    labels = ac.kernel_labels(names)
    assert len(set(labels)) == 4 and "AddFunctor" in labels[0] and labels[2:] == ["_add_kernel #1", "_add_kernel #2"]


def test_ncu_charts_from_the_recorded_report(ncu_doc):
    d = ncu_doc.diagnosis
    util = ac.gpu_utilization_figure(d).axes[0]
    sm = [p.get_width() for p in util.containers[0].patches]
    assert sm == pytest.approx([x.sm_sol_pct for x in d])
    assert len({t.get_text() for t in util.get_yticklabels()}) == len(d)  # no two launches share a label
    occ = ac.occupancy_figure(d).axes[0]
    assert [c.get_label() for c in occ.containers] == ["achieved", "theoretical"]
    assert len(ac.memory_performance_figure(d).axes[0].containers) == 3
    scatter = ac.bottleneck_figure(d).axes[0]
    assert {t.get_text() for t in scatter.get_legend().get_texts()} == {x.bottleneck for x in d}
    heat = ac.kernel_comparison_figure(d).axes[0]
    assert len(heat.get_yticklabels()) == len(d)  # every kernel visible: nothing drawn over another
    assert len(heat.texts) == len(d) * len(ac.HEATMAP_METRICS)


def test_a_metric_ncu_did_not_collect_is_missing_not_zero(ncu_doc):
    d = [replace(x, tensor_pipe_pct=None, l2_hit_pct=None) if i == 0 else x for i, x in enumerate(ncu_doc.diagnosis)]
    mem = ac.memory_performance_figure(d).axes[0]
    l2 = next(c for c in mem.containers if c.get_label() == "L2 hit rate")
    assert len(l2.patches) == len(d) - 1


def test_write_analysis_charts_names_the_files(tmp_path, ncu_rep):
    names = ac.write_analysis_charts([analyze_file(ncu_rep)], tmp_path)
    assert names == [
        "gpu_utilization.png",
        "memory_performance.png",
        "occupancy_analysis.png",
        "bottleneck_analysis.png",
        "kernel_comparison.png",
    ]
    assert all((tmp_path / n).stat().st_size > 1000 for n in names)
