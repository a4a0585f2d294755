"""The mutation campaign at CI size: a few hundred mutated real files through every reader, each in a
worker process with a deadline, every exit-0 result judged by the invariant oracle (and, for semantic
mutations, by the truth each carries). No traceback, no silent-wrong result, no hang, no native abort.
scripts/mutation_campaign.py runs >= 5,000 per reader (docs/robustness.md)."""

import pytest

from tests.campaign import SEMANTIC_SUFFIX, run_campaign

# inputs per reader, sized by what one costs (an nsys export ~0.5 s, an ncu report ~0.8 s in NVIDIA's reader)
SIZES = {
    "nsys-sqlite": 8,
    "ncu-rep": 4,
    "ncu-csv": 25,
    "torch-json": 60,
    "pytest-benchmark": 60,
    "results-json": 15,
    "child-output": 60,
    "baseline": 60,
    # semantic mutations (tests/semantic.py): each input read twice (the truth is the reference file's reading)
    "nsys-sqlite" + SEMANTIC_SUFFIX: 6,
    "ncu-csv" + SEMANTIC_SUFFIX: 30,
    "torch-json" + SEMANTIC_SUFFIX: 40,
    "pytest-benchmark" + SEMANTIC_SUFFIX: 40,
    "results-json" + SEMANTIC_SUFFIX: 15,
    "child-output" + SEMANTIC_SUFFIX: 40,
    "baseline" + SEMANTIC_SUFFIX: 40,
}


@pytest.mark.slow  # ~8 s of CPU: its own stage of .ci/run
@pytest.mark.parametrize("reader", sorted(SIZES))
def test_mutated_real_files_give_a_true_result_or_one_clear_line(reader):
    if reader == "ncu-rep":
        pytest.importorskip("ncu_report")
    tally = run_campaign(reader, range(SIZES[reader]), timeout_s=120)
    assert tally.failures == 0, dict(tally.sites)
    assert sum(tally.outcomes.values()) == SIZES[reader]
