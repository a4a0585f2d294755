"""The Markdown summary: golden text for a known run, and what GitHub's renderer will make of it."""

import os
from pathlib import Path

import pytest

from perfgate.model import Comparison, Direction, Environment, GateResult, Verdict
from perfgate.report.markdown import ChartLink, render_markdown

GOLDEN = Path(__file__).parent / "data" / "golden_summary.md"
BASE_ENV = Environment(
    "cuda",
    "NVIDIA H100 80GB HBM3",
    compute_capability="9.0",
    driver_version="580.159.04",
    cuda_version="13.0",
    torch_version="2.11.0",
    triton_version="3.5.0",
)
CUR_ENV = Environment(
    "cuda",
    "NVIDIA H100 80GB HBM3",
    compute_capability="9.0",
    driver_version="580.159.04",
    cuda_version="13.0",
    torch_version="2.11.0",
    triton_version="3.6.0",
)


def known_gate() -> GateResult:
    t = dict(metric="median_ms", unit="ms", direction=Direction.LOWER)
    regs = Comparison(
        "k::test_matmul[triton]",
        "launch__registers_per_thread",
        "register/thread",
        Direction.LOWER,
        Verdict.REGRESSED,
        kernel="_matmul_kernel",
        baseline=202,
        current=255,
        change_pct=26.2,
        threshold_pct=0.0,
        note="ncu",
    )
    occ = Comparison(
        "k::test_matmul[triton]",
        "sm__warps_active.avg.pct_of_peak_sustained_active",
        "%",
        Direction.HIGHER,
        Verdict.REGRESSED,
        kernel="_matmul_kernel",
        baseline=12.4,
        current=6.2,
        change_pct=-50.0,
        threshold_pct=10.0,
        note="ncu",
    )
    dram = Comparison(
        "k::test_matmul[triton]",
        "nsys.launches_per_call",
        "",
        Direction.LOWER,
        Verdict.UNCHANGED,
        kernel="_matmul_kernel",
        baseline=1,
        current=1,
        change_pct=0.0,
        threshold_pct=0.0,
        note="nsys",
    )
    rows = (
        Comparison(
            "k::test_matmul[triton]",
            verdict=Verdict.REGRESSED,
            baseline=0.2096,
            current=3.458,
            change_pct=1550.1,
            ci_low_pct=1549.0,
            ci_high_pct=1551.2,
            threshold_pct=4.1,
            detects_pct=6.0,
            noise_pct=1.5,
            processes=2,
            **t,
        ),
        Comparison(
            "k::test_softmax[triton|bf16]",
            verdict=Verdict.IMPROVED,
            baseline=0.36,
            current=0.18,
            change_pct=-50.0,
            ci_low_pct=-50.2,
            ci_high_pct=-49.8,
            threshold_pct=2.2,
            detects_pct=3.0,
            noise_pct=0.6,
            processes=2,
            **t,
        ),
        Comparison(
            "k::test_vector_add[triton]",
            verdict=Verdict.UNCHANGED,
            baseline=0.534,
            current=0.5335,
            change_pct=-0.1,
            ci_low_pct=-0.2,
            ci_high_pct=0.0,
            threshold_pct=1.0,
            detects_pct=1.2,
            noise_pct=0.1,
            **t,
        ),
        regs,
        occ,
        Comparison("k::test_new", verdict=Verdict.NEW, current=1.0, note="no baseline", **t),
        Comparison(
            "k::test_x",
            metric="profile",
            unit="ms",
            direction=Direction.LOWER,
            verdict=Verdict.PROFILE_FAILED,
            note="ncu: perfgate: ncu timed out: <no output>",
        ),
    )
    return GateResult(rows, CUR_ENV, BASE_ENV, explanations={"k::test_matmul[triton]": (regs, occ, dram)})


def test_summary_matches_the_golden_file():
    text = render_markdown(known_gate(), charts=(ChartLink("change_per_case.png", "change_per_case.png"),))
    if os.environ.get("PERFGATE_REGEN_GOLDEN") == "1":  # regenerate on purpose, then review the diff
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()


def test_summary_renders_as_github_markdown():
    markdown_it = pytest.importorskip("markdown_it")
    md = markdown_it.MarkdownIt("commonmark").enable("table")
    html = md.render(render_markdown(known_gate(), charts=(ChartLink("change_per_case.png", "change_per_case.png"),)))
    assert html.count("<table>") == 4  # failing, other changed cases, the collapsed rest, the environment
    first_table = html.split("<table>")[1]
    assert first_table.count("<tr>") == 1 + 3  # header + the regressed time row + its 2 regressed metric rows
    assert "test_softmax[triton\\|bf16]" not in html and "test_softmax[triton|bf16]" in html  # pipe kept in a cell
    assert "<details>" in html and "<summary>All other results" in html
    assert "&lt;no output&gt;" in html  # user text never opens an HTML tag
    assert '<a href="change_per_case.png">' in html
    assert "registers/thread [_matmul_kernel] 202 → 255" in html  # the explanation names the cause


def test_headline_says_failed_when_anything_regressed():
    first = render_markdown(known_gate()).splitlines()[0]
    assert first.startswith("## ❌ perfgate: gate FAILED")


def test_profiled_run_shows_occupancy_and_bandwidth_per_kernel(h100_data):
    import gzip
    import json

    from perfgate.config.settings import settings_from_config
    from perfgate.gate.compare import compare_run
    from perfgate.model import CaseResult, Metric, Run, RunInfo, Timer
    from perfgate.stats import summarize

    doc = json.loads(gzip.decompress((h100_data / "gate_profiled_detuned_run.json.gz").read_bytes()))
    env = Environment(**doc["environment"])
    results = tuple(
        CaseResult(
            c["case_id"],
            summarize([c["median_ms"]] * 2, Timer.CUDA_EVENT),
            (c["median_ms"],) * 2,
            tuple(Metric(**m) for m in c["metrics"]),
        )
        for c in doc["cases"]
    )
    text = render_markdown(
        compare_run(results, None, env, settings_from_config({})), run=Run(RunInfo("a", "b"), env, results)
    )
    table = text.split("### Profiler metrics")[1].split("<details>")[0]
    row = next(line for line in table.splitlines() if "_matmul_kernel" in line)
    # the register-heavy matmul measured on the H100: occupancy 6.2%, 255 registers, spilling
    assert "| 6.2% | 6.2% |" in row and "| 255 |" in row and "52,089,856" in row


def test_a_copy_engine_case_shows_its_transfers_and_why_ncu_had_nothing(h100_data):
    """Session E on the H100: test_copy_bandwidth is a device-to-device copy_ (copy engine, no kernel)."""
    import gzip
    import json

    from perfgate.config.settings import settings_from_config
    from perfgate.gate.compare import compare_run
    from perfgate.model import CaseResult, Metric, Run, RunInfo, Timer
    from perfgate.stats import summarize

    doc = json.loads(gzip.decompress((h100_data / "gate_profiled_copy_run.json.gz").read_bytes()))
    env = Environment(**doc["environment"])
    results = tuple(
        CaseResult(
            c["case_id"],
            summarize(c["samples_ms"], Timer.CUDA_EVENT),
            tuple(c["samples_ms"]),
            tuple(Metric(**m) for m in c["metrics"]),
            profile_notes=tuple(c["profile_notes"]),
        )
        for c in doc["cases"]
    )
    text = render_markdown(
        compare_run(results, None, env, settings_from_config({})), run=Run(RunInfo("a", "b"), env, results)
    )
    section = text.split("### Copy-engine transfers (nsys)")[1].split("###")[0].split("<details>")[0]
    row = next(line for line in section.splitlines() if "test_copy_bandwidth" in line and line.startswith("|"))
    # 512 MiB per call, ~358 us on the copy engine: ~1.5 TB/s each way
    assert "536.9 MB" in row and "357.8 us" in row and "1.5 TB/s" in row
    assert "ncu: no kernel to profile" in text.split("### Profiler notes")[1].split("###")[0]
    assert "test_vector_add" not in section  # a kernel case moved no bytes on the copy engine


def test_a_reference_name_with_a_line_break_or_a_link_cannot_break_the_table_or_link_out():
    """Issue 23: a reference name (`name=`) is data: a newline must not end the row, `[x](url)` must not link."""
    markdown_it = pytest.importorskip("markdown_it")
    evil = "torch](https://evil.example/x)\n| forged | row |"
    row = Comparison(
        "k::t\nforged",
        "speedup",
        "x",
        Direction.HIGHER,
        Verdict.REGRESSED,
        kernel=evil,
        baseline=2.0,
        current=1.0,
        change_pct=-50.0,
        threshold_pct=1.0,
        processes=2,
    )
    text = render_markdown(GateResult(comparisons=(row,), current_env=CUR_ENV, baseline_env=BASE_ENV))
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(text)
    failing = html.split("<table>")[1].split("</table>")[0]
    assert "<a " not in html and failing.count("<tr>") == 2 and failing.count("<td") == 7  # header + one row
