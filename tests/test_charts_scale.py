"""Charts stay readable at any size and with one case far off: the change axis is clipped with the clipped
bar labelled, charts go to the most severe cases first, the roofline names only the top cases."""

import re
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from perfgate.model import CaseResult, Comparison, Direction, GateResult, Timer, Verdict  # noqa: E402
from perfgate.report import gate_charts as gc  # noqa: E402
from perfgate.stats import summarize  # noqa: E402
from tests.helpers import make_run  # noqa: E402
from tests.scale import scale_gate  # noqa: E402

T = dict(metric="median_ms", unit="ms", direction=Direction.LOWER)


def row(name, verdict, change, threshold=1.5):
    return Comparison(
        f"k::{name}",
        verdict=verdict,
        baseline=1.0,
        current=1 + change / 100,
        change_pct=change,
        ci_low_pct=change - 0.5,
        ci_high_pct=change + 0.5,
        threshold_pct=threshold,
        **T,
    )


def test_one_case_far_off_clips_the_axis_and_its_bar_is_labelled():
    gate = GateResult(
        (
            row("noisy", Verdict.UNCHANGED, 3000.0, threshold=3000.0),
            row("mm", Verdict.REGRESSED, 4.0),
            row("sm", Verdict.IMPROVED, -5.0),
            row("add", Verdict.UNCHANGED, 0.3),
        )
    )
    ax = gc.change_per_case_figure(gate).axes[0]
    lo, hi = ax.get_xlim()
    assert hi < 10 and lo > -10  # the +4% regression is a bar, not a sliver next to +3000%
    labels = [t.get_text() for t in ax.texts]
    assert labels == ["+3000.0% ▸"]
    assert "axis clipped at ±6.5%" in ax.get_xlabel()
    hatched = [p for p in ax.patches if p.get_hatch()]
    assert len(hatched) == 1 and hatched[0].get_width() == pytest.approx(6.5)


def test_an_axis_without_outliers_is_not_clipped():
    gate = GateResult(
        (row("a", Verdict.REGRESSED, 40.0), row("b", Verdict.REGRESSED, 20.0), row("c", Verdict.UNCHANGED, 1.0))
    )
    ax = gc.change_per_case_figure(gate).axes[0]
    assert not ax.texts and "clipped" not in ax.get_xlabel() and ax.get_xlim()[1] > 40


def test_clip_limit_needs_a_jump_and_few_cases_past_it():
    assert gc.clip_limit([1, 2, 3, 4]) is None
    assert gc.clip_limit([2.0, 3000.0]) == pytest.approx(1.3 * 2.0)  # two cases: the far one past the edge
    assert gc.clip_limit([1.0] * 10 + [500.0] * 10) is None  # half the cases far off is the data, not an outlier


def test_the_change_chart_shows_the_most_severe_cases_first():
    gate, _ = scale_gate(400, 40, 100)
    gate = replace(gate, comparisons=gate.comparisons[::-1])  # id order must not matter
    ax = gc.change_per_case_figure(gate, top_n=25).axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0] == "others (375, median)" and all("case000" in lbl for lbl in labels[1:])
    assert labels[-1].endswith("case00039]")  # the largest regression at the top


def test_trend_and_distribution_charts_go_to_the_largest_regressions(tmp_path, monkeypatch):
    gate, run = scale_gate(200, 30, 20)
    gate = replace(gate, comparisons=gate.comparisons[::-1])
    drawn = []
    monkeypatch.setattr(gc, "distribution_figure", lambda cid, base, cur: drawn.append(cid))
    from perfgate.baseline import Baseline, BaselineCase

    base = Baseline(
        tmp_path / "b.json",
        run.environment,
        {r.case_id: BaselineCase(r.case_id, Timer.CUDA_EVENT, 1.0, (1.0, 1.0)) for r in run.results},
    )
    gc.write_gate_charts(gate, run, tmp_path, base, {})
    assert len(drawn) == gc.TOP_N
    assert [int(c.split("case")[1][:5]) for c in drawn] == list(range(29, 4, -1))  # +50% first, ids descending


def _memory_case(i, gbps):
    ms = 1.0
    nbytes = int(gbps * 1e6 * ms)
    return CaseResult(f"t::copy{i:04d}", summarize([ms, ms], Timer.CUDA_EVENT, nbytes), (ms, ms), bytes_moved=nbytes)


def _compute_case(i):
    ms, nbytes, flops = 0.2 + i / 1000, 3 * 2 * 4096**2, 2 * 4096**3
    return CaseResult(
        f"t::mm{i:04d}", summarize([ms, ms], Timer.CUDA_EVENT, nbytes, flops), (ms, ms), bytes_moved=nbytes, flops=flops
    )


def test_the_roofline_names_only_the_top_cases_and_counts_the_others():
    results = tuple(_compute_case(i) for i in range(300)) + tuple(_memory_case(i, 1000 + i) for i in range(300))
    run = replace(make_run({}), results=results)
    ranked = ["t::mm0299", "t::copy0007", "t::mm0005"]
    roof, bandwidth = gc.roofline_figure(run, ranked=ranked, top_n=12).axes
    names = [t.get_text() for t in roof.texts]
    assert {"mm0299", "mm0005"} <= set(names) and len(names) == 12 + 1 and names[-1] == "288 other case(s) unnamed"
    assert len(roof.collections[0].get_offsets()) == 300  # every case is still a point
    bars = [t.get_text() for t in bandwidth.get_yticklabels()]
    assert len(bars) == 13 and bars[0] == "others (288) not shown" and bars[-1] == "copy0007"


def test_the_roofline_of_thousands_of_cases_draws_one_scatter():
    run = replace(make_run({}), results=tuple(_compute_case(i) for i in range(2_000)))
    roof = gc.roofline_figure(run).axes[0]
    assert len(roof.collections) == 1 and len(roof.texts) == gc.ROOFLINE_LABELS + 1


def test_charts_are_written_for_a_large_gate(tmp_path):
    gate, run = scale_gate(600, 40, 200)
    paths = gc.write_gate_charts(gate, run, tmp_path, None, {})
    assert [p.name for p in paths] == ["change_per_case.png"] and Path(paths[0]).stat().st_size > 1000


def test_chart_file_names_are_the_case_in_safe_characters_and_unique():
    from perfgate.report.gate_charts import chart_stem

    assert re.fullmatch(r"test_softmax-bf16-[0-9a-f]{8}", chart_stem("kernels/tests/test_perf.py::test_softmax[bf16]"))
    hostile = [
        "a/t.py::test_x[../../etc]",
        "b/t.py::test_x[../../etc]",
        "t.py::test_\u00e9\n[\x1b]",
        "t.py::" + "y" * 300,
    ]
    stems = [chart_stem(c) for c in hostile]
    assert len(set(stems)) == len(stems)
    assert all(re.fullmatch(r"[A-Za-z0-9._-]{1,69}", s) and not s.startswith(".") for s in stems)
