"""Every reader of outside input against generated bad input (hypothesis; bounded for CI): a record or one
clear PerfgateError line, never a traceback, a hang or a crash. scripts/fuzz_campaign.py runs the same
generators for thousands of inputs."""

import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzzing import KINDS, check

EXAMPLES = {"ncu-rep": 12, "nsys-sqlite": 25, "history": 25, "analyze-cli": 25}
FILE_KINDS = (
    "baseline",
    "history",
    "nsys-sqlite",
    "ncu-rep",
    "ncu-csv",
    "torch-json",
    "pytest-benchmark",
    "results-json",
    "child-output",
    "analyze-cli",
)


@pytest.mark.slow  # ~10 s of CPU: its own stage of .ci/run
@pytest.mark.parametrize("name", sorted(KINDS))
def test_a_reader_returns_a_record_or_one_clear_error(name, tmp_path_factory):
    kind = KINDS[name]

    @settings(
        max_examples=EXAMPLES.get(name, 40),
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(st.integers(0, 2**32 - 1))
    def run(seed):
        tmp = tmp_path_factory.mktemp(name)
        assert check(kind, kind.make(random.Random(seed), tmp)) in ("ok", "clean error")

    run()


@pytest.mark.parametrize("name", FILE_KINDS)
def test_a_pipe_or_a_directory_is_refused_without_blocking(name, tmp_path):
    fifo = tmp_path / "input.json"
    os.mkfifo(fifo)
    assert check(KINDS[name], fifo) == "clean error"
    directory = tmp_path / "dir.sqlite"
    directory.mkdir()
    assert check(KINDS[name], directory) == "clean error"
