"""The static gate: a case's compiled kernels against the baseline's, exactly, with the reason in words; and
the same facts kept by the baseline file, the history, the JSON and the summary."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfgate.baseline import load_baseline
from perfgate.baseline.write import updated_baseline, write_baseline
from perfgate.compiled import codec
from perfgate.compiled.occupancy import LIMITS, theoretical
from perfgate.compiled.records import CompiledCase, KernelFacts, KernelSource, StaticPolicy
from perfgate.config.settings import Settings
from perfgate.errors import BaselineError
from perfgate.gate.compare import compare_run
from perfgate.gate.static import StaticRule, compare_compiled
from perfgate.metrics import STATIC_LAUNCHED, STATIC_OCCUPANCY, STATIC_REGISTERS, STATIC_SHARED, STATIC_SPILLS
from perfgate.model import Run, RunInfo, Verdict
from perfgate.report.markdown import render_markdown
from perfgate.report.terminal import render_terminal
from perfgate.store import open_store
from tests.helpers import ENV, case, noisy

CID = "kernels/tests/test_perf.py::test_matmul"


def make_run(results) -> Run:
    return Run(RunInfo("2026-11-21T00:00:00+00:00", "2026-11-21T00:01:00+00:00"), ENV, tuple(results))


def kernel(registers: int = 64, threads: int = 256, dynamic: int = 0, spills: tuple[int, int] = (0, 0), **extra):
    occupancy = theoretical(LIMITS["sm_90"], registers, threads, 0, dynamic)
    fields = dict(
        name="_matmul_kernel",
        source=KernelSource.TRITON,
        registers_per_thread=registers,
        spill_store_bytes=spills[0],
        spill_load_bytes=spills[1],
        stack_bytes_per_thread=spills[0],
        static_shared_bytes=0,
        dynamic_shared_bytes=dynamic,
        block=(threads, 1, 1),
        grid=(512, 1, 1),
        num_warps=threads // 32,
        num_stages=3,
        occupancy=occupancy,
        sass_sha="a" * 16,
        key="_matmul_kernel",
    )
    return KernelFacts(**(fields | extra))


def compiled(*kernels: KernelFacts) -> CompiledCase:
    return CompiledCase(kernels, "inputs-sha", "bf16[4096,4096](4096,1)@cuda", "sm_90", (("torch", "2.11.0"),))


def rows_for(before: KernelFacts, after: KernelFacts, rule: StaticRule = StaticRule()):
    return compare_compiled(CID, compiled(before), compiled(after), rule)


def test_registers_past_the_margin_fail_and_the_occupancy_row_says_what_they_cost():
    rows = rows_for(kernel(64), kernel(80), StaticRule(registers_margin=8))
    regs = next(r for r in rows if r.metric == STATIC_REGISTERS)
    assert regs.verdict is Verdict.REGRESSED and regs.gated
    assert regs.note == "registers 64 -> 80 per thread"  # the occupancy is the occupancy row's to explain
    occ = next(r for r in rows if r.metric == STATIC_OCCUPANCY)
    assert occ.verdict is Verdict.REGRESSED
    assert occ.note == (
        "occupancy 50 % -> 37.5 % from registers 64 -> 80 per thread: the register file limits it to 3 blocks of "
        "256 threads per SM (was: the register file limits it to 4 blocks of 256 threads per SM)"
    )


def test_without_an_occupancy_row_the_registers_row_says_the_occupancy_they_cost():
    rows = rows_for(kernel(64), kernel(80), StaticRule(registers_margin=8, occupancy=StaticPolicy.OFF))
    (regs,) = rows
    assert regs.note == (
        "registers 64 -> 80 per thread: occupancy 50 % -> 37.5 % "
        "(the register file limits it to 3 blocks of 256 threads per SM)"
    )


def detuned_matmul() -> tuple[KernelFacts, KernelFacts]:
    """The H100's matmul and its de-tune (lab/gpu/kernels_session.py): 8 warps and 192 KiB -> 4 warps, 128 KiB."""
    return kernel(216, 256, dynamic=196608), kernel(255, 128, dynamic=131072, spills=(7268, 5752))


def test_each_static_row_of_the_detuned_matmul_says_one_true_thing():
    rows = {r.metric: r for r in rows_for(*detuned_matmul())}
    assert rows[STATIC_REGISTERS].note == "registers 216 -> 255 per thread"
    assert rows[STATIC_SPILLS].note.startswith("spills 0 -> 13,020 bytes")
    # registers alone (2 blocks of 4 warps still fit) and less shared memory did not lower it: the halved block did
    assert rows[STATIC_OCCUPANCY].note == (
        "occupancy 12.5 % -> 6.25 % from block 256 -> 128 threads: shared memory (132,096 bytes per block) limits "
        "it to 1 block of 128 threads per SM (was: the register file limits it to 1 block of 256 threads per SM)"
    )
    shared = rows[STATIC_SHARED]
    assert (shared.verdict, shared.note) == (Verdict.IMPROVED, "shared memory 196,608 -> 131,072 bytes per block")
    assert sum("occupancy" in r.note for r in rows.values()) == 1


def test_a_block_shrunk_to_one_warp_is_explained_by_the_sms_block_slots():
    before = kernel(28, 512, name="rms_norm_kernel", key="rms_norm_kernel")
    (occ,) = rows_for(before, replace(before, **_launch(28, 32)), StaticRule(registers=StaticPolicy.OFF))
    assert occ.verdict is Verdict.REGRESSED
    assert occ.note == (
        "occupancy 100 % -> 50 % from block 512 -> 32 threads: the SM's 32 block slots limit it to 32 blocks of 32 "
        "threads (was: the SM's 64 warp slots limit it to 4 blocks of 512 threads)"
    )


def _launch(registers: int, threads: int) -> dict:
    return {
        "block": (threads, 1, 1),
        "num_warps": threads // 32,
        "occupancy": theoretical(LIMITS["sm_90"], registers, threads, 0, 0),
    }


def test_registers_within_the_margin_pass_and_say_so():
    (regs,) = rows_for(kernel(64), kernel(72), StaticRule(registers_margin=16, occupancy=StaticPolicy.OFF))
    assert regs.verdict is Verdict.UNCHANGED
    assert "(within the margin of 16)" in regs.note


def test_any_new_spill_fails_whatever_its_size():
    rows = rows_for(kernel(255, spills=(0, 0)), kernel(255, spills=(4, 4)))
    (spill,) = [r for r in rows if r.metric == STATIC_SPILLS]
    assert (spill.verdict, spill.baseline, spill.current) == (Verdict.REGRESSED, 0, 8)
    assert spill.note.endswith("the kernel spills where it did not")


def test_a_warn_policy_reports_without_failing_and_off_compares_nothing():
    warn = StaticRule(registers=StaticPolicy.WARN, occupancy=StaticPolicy.WARN)
    rows = rows_for(kernel(64), kernel(128), warn)
    assert {r.verdict for r in rows} == {Verdict.INCONCLUSIVE} and not any(r.gated for r in rows)
    assert all(r.note.startswith("warn: ") for r in rows)
    off = StaticRule(registers=StaticPolicy.OFF, occupancy=StaticPolicy.OFF)
    assert rows_for(kernel(64), kernel(128), off) == []


def test_more_shared_memory_warns_by_default_and_improvements_are_named():
    rows = rows_for(kernel(64, dynamic=16384), kernel(64, dynamic=32768))
    (shared,) = [r for r in rows if r.metric == STATIC_SHARED]
    assert (shared.verdict, shared.gated) == (Verdict.INCONCLUSIVE, False)
    assert "shared memory 16,384 -> 32,768 bytes per block" in shared.note
    better = rows_for(kernel(128), kernel(64))
    assert {r.verdict for r in better} == {Verdict.IMPROVED}


def test_another_kernel_is_named_not_compared():
    other = kernel(32, name="_softmax_looped", key="_softmax_looped")
    (row,) = rows_for(kernel(64), other)
    assert (row.metric, row.verdict, row.gated) == (STATIC_LAUNCHED, Verdict.INCONCLUSIVE, False)
    assert "now launches _softmax_looped; no longer _matmul_kernel" in row.note


def test_library_operators_and_other_gpus_are_not_compared():
    op = KernelFacts("aten::mm", KernelSource.LIBRARY, key="aten::mm")
    assert compare_compiled(CID, compiled(op), compiled(replace(op, detail="x")), StaticRule()) == []
    other_gpu = replace(compiled(kernel(128)), arch="sm_80")
    assert compare_compiled(CID, compiled(kernel(64)), other_gpu, StaticRule()) == []
    assert compare_compiled(CID, None, compiled(kernel(64)), StaticRule()) == []


def baseline_with(tmp_path, facts: KernelFacts, samples: list[float]):
    run = make_run([case(CID, samples, compiled=compiled(facts))])
    base = updated_baseline(None, run, tmp_path / "b.json", "t", "r")
    write_baseline(base)
    return load_baseline(tmp_path / "b.json")


def test_a_detuned_kernel_fails_the_gate_on_its_compiled_facts_alone(tmp_path):
    baseline = baseline_with(tmp_path, kernel(64), noisy(1.0))
    run = make_run([case(CID, noisy(1.0, seed=1), compiled=compiled(kernel(80)))])
    gate = compare_run(run.results, baseline, ENV, Settings(static_registers_margin=8))
    assert gate.failed
    assert f"{CID}: {STATIC_REGISTERS} regressed" in gate.failure_reasons
    text = "\n".join(render_terminal(gate))
    assert "regressed (static, _matmul_kernel): " in text and "limits it to 3 blocks of 256 threads" in text


def test_a_time_regression_names_the_static_changes_that_came_with_it_first(tmp_path):
    baseline = baseline_with(tmp_path, kernel(64), noisy(1.0))
    calibrated = replace(baseline.cases[CID], process_medians_ms=(1.0, 1.002, 0.998, 1.001))
    baseline = replace(baseline, cases={CID: calibrated})
    run = make_run([case(CID, noisy(1.5, seed=1), compiled=compiled(kernel(72)))])
    gate = compare_run(run.results, baseline, ENV, Settings(static_registers_margin=16, confirm_runs=0))
    why = gate.explanations[CID]
    assert why[0].metric == STATIC_REGISTERS and "(within the margin of 16)" in why[0].note
    md = render_markdown(gate, run=run).replace("-&gt;", "->")  # GitHub shows the escaped arrow as written
    assert "_matmul_kernel: registers 64 -> 72 per thread (within the margin of 16); _matmul_kernel: occupancy" in md
    assert "occupancy 50 % -> 37.5 % from registers 64 -> 72 per thread: the register file limits it" in md
    why_line = next(line for line in render_terminal(gate) if line.startswith("why "))
    assert why_line == (  # what changed, once; the static rows below it say why
        f"why {CID}: _matmul_kernel: registers 64 -> 72 per thread (within the margin of 16), occupancy 50 % -> "
        "37.5 % from registers 64 -> 72 per thread"
    )


def test_the_baseline_file_keeps_the_compiled_facts_one_kernel_a_line(tmp_path):
    baseline = baseline_with(tmp_path, kernel(64), noisy(1.0))
    assert baseline.cases[CID].compiled == compiled(kernel(64))
    text = (tmp_path / "b.json").read_text()
    assert '"kernels": [\n        {"block": [256, 1, 1]' in text


def test_a_damaged_compiled_record_in_a_baseline_is_one_line_naming_the_file(tmp_path):
    baseline_with(tmp_path, kernel(64), noisy(1.0))
    path = tmp_path / "b.json"
    data = json.loads(path.read_text())
    data["cases"][CID]["compiled"]["kernels"][0]["registers_per_thread"] = -1
    path.write_text(json.dumps(data))
    with pytest.raises(BaselineError, match=r"b\.json: case .*registers_per_thread: must be an integer"):
        load_baseline(path)


def test_the_history_stores_and_reads_back_every_fact(tmp_path):
    lib = KernelFacts("aten::copy_", KernelSource.LIBRARY, launches=2, key="aten::copy_", detail="f32[8](1)@cuda")
    record = replace(compiled(kernel(88, spills=(8, 16)), lib), notes=("cuobjdump not found",))
    run = make_run([case(CID, noisy(1.0), compiled=record), case("b::other", noisy(1.0))])
    with open_store(tmp_path / "h.db") as store:
        run_id = store.save_run(run)
        back = store.load_run(run_id)
    by_id = {r.case_id: r for r in back.results}
    assert by_id[CID].compiled == record
    assert by_id["b::other"].compiled is None


def test_the_json_results_carry_the_occupancy_with_its_percentage():
    from perfgate.report.json_out import results_document

    run = make_run([case(CID, noisy(1.0), compiled=compiled(kernel(64)))])
    doc = results_document(compare_run(run.results, None, ENV, Settings()), run)
    occ = doc["cases"][0]["compiled"]["kernels"][0]["occupancy"]
    assert (occ["pct"], occ["limiter"], occ["blocks_per_sm"]) == (50.0, "registers", 4)


def test_the_summary_lists_each_kernel_with_its_facts():
    run = make_run([case(CID, noisy(1.0), compiled=compiled(kernel(255, spills=(656, 640), dynamic=49152)))])
    md = render_markdown(compare_run(run.results, None, ENV, Settings()), run=run)
    assert "### Compiled kernels (1 in 1 case(s), sm_90)" in md
    assert "| 255 | 656 / 640 B | 0 + 49,152 B | 256 x 512 | 8 / 3 | 12.5 % (registers) | `aaaaaaaaaaaaaaaa` |" in md


facts_strategy = st.builds(
    kernel,
    registers=st.integers(0, 255),
    threads=st.sampled_from([32, 64, 128, 256, 512, 1024]),
    dynamic=st.integers(0, 200_000),
    spills=st.tuples(st.integers(0, 10_000), st.integers(0, 10_000)),
)


@settings(max_examples=60)
@given(facts=facts_strategy)
def test_every_record_reads_back_as_itself(facts):
    record = compiled(facts)
    assert codec.from_dict(json.loads(json.dumps(codec.to_dict(record)))) == record


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200)
@given(raw=json_values, field=st.sampled_from(["kernels", "occupancy", "block", "versions", "source", "name"]))
def test_a_damaged_record_is_a_value_error_never_a_traceback(raw, field):
    good = codec.to_dict(compiled(kernel()))
    if field in ("kernels", "versions"):
        good[field] = raw
    else:
        good["kernels"][0][field] = raw
    try:
        back = codec.from_dict(good)
    except ValueError as err:
        assert str(err).startswith("kernels")
    else:
        for k in back.kernels:
            assert k.occupancy is None or k.occupancy.blocks_per_sm == min(
                k.occupancy.by_registers, k.occupancy.by_shared_memory, k.occupancy.by_warps, k.occupancy.by_blocks
            )


def test_a_token_among_a_cases_arguments_is_not_published():
    from perfgate.report.scrub import Scrubber

    record = replace(compiled(kernel()), inputs="f32[8](1)@cuda, 'ghp_R7kq2Lx9VbT4mWz8NcJ3pYh6Fd1Gs5QaUe0o'")
    run = make_run([case(CID, noisy(1.0), compiled=record)])
    published = Scrubber(None, False, ()).run(run).results[0].compiled
    assert "ghp_" not in published.inputs and published.kernels == record.kernels
