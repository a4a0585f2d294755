"""A calibrated case's samples are committed as a 33-point quantile summary (its verdict reads only its
process medians): the file shrinks, reads back as that many samples, rewrites byte for byte, and every
baseline written before (full samples) still reads."""

import json
import random
from pathlib import Path

import pytest

from perfgate.baseline import SAMPLE_SUMMARY_POINTS, load_baseline
from perfgate.baseline.write import render_baseline, updated_baseline, write_baseline
from perfgate.errors import BaselineError
from perfgate.stats import median_change_ci_pct
from tests.helpers import calibrated, make_run

REPO = Path(__file__).resolve().parents[1]


def lognormal(n, seed, shift=0.0):
    rng = random.Random(seed)
    return [rng.lognormvariate(shift, 0.02) for _ in range(n)]


@pytest.fixture
def written(tmp_path):
    run = make_run({"t::cal": lognormal(200, 1), "t::uncal": lognormal(200, 2), "t::short": lognormal(20, 3)})
    base = calibrated(
        updated_baseline(None, run, tmp_path / "b.json", "x", "r"),
        {"t::cal": [1.0, 1.01, 0.99], "t::short": [1.0, 1.01, 0.99]},
    )
    write_baseline(base)
    return base, tmp_path / "b.json"


def test_a_calibrated_case_is_written_as_quantiles_and_reads_back_as_its_samples(written):
    base, path = written
    raw = json.loads(path.read_text())["cases"]
    assert raw["t::cal"]["sample_count"] == 200 and len(raw["t::cal"]["samples_ms"]) == SAMPLE_SUMMARY_POINTS
    assert len(raw["t::uncal"]["samples_ms"]) == 200 and "sample_count" not in raw["t::uncal"]  # its rank test
    assert len(raw["t::short"]["samples_ms"]) == 20 and "sample_count" not in raw["t::short"]  # nothing to save
    case = load_baseline(path).cases["t::cal"]
    full = sorted(base.cases["t::cal"].samples_ms)
    assert len(case.samples_ms) == 200
    assert (min(case.samples_ms), max(case.samples_ms)) == pytest.approx((full[0], full[-1]), rel=1e-5)
    assert sorted(case.samples_ms)[100] == pytest.approx(full[100], rel=1e-3)


def test_rewriting_a_summarised_baseline_changes_no_line(written):
    _, path = written
    text = path.read_text()
    write_baseline(load_baseline(path))
    assert path.read_text() == text


def test_the_change_interval_from_the_summary_is_within_a_tenth_of_its_width(written):
    base, path = written
    summarised = load_baseline(path).cases["t::cal"].samples_ms
    for seed in range(20):
        current = lognormal(200, 100 + seed, shift=0.01)
        lo, hi = median_change_ci_pct(base.cases["t::cal"].samples_ms, current)
        lo2, hi2 = median_change_ci_pct(summarised, current)
        assert abs(lo2 - lo) <= 0.1 * (hi - lo) and abs(hi2 - hi) <= 0.1 * (hi - lo)


def test_the_summary_is_a_quarter_of_the_full_file(tmp_path):
    run = make_run({f"t::c{i}": lognormal(200, i) for i in range(50)})
    base = updated_baseline(None, run, tmp_path / "b.json", "x", "r")
    full = render_baseline(base)
    summary = render_baseline(calibrated(base, {cid: [1.0, 1.01, 0.99] for cid in base.cases}))
    assert len(summary) < 0.3 * len(full)


@pytest.mark.parametrize("path", ["baselines/nvidia-h100-80gb-hbm3.json", "tests/data/baseline_v1_h100.json"])
def test_baselines_written_with_every_sample_still_read(path):
    doc = json.loads((REPO / path).read_text())
    b = load_baseline(REPO / path)
    assert {cid: len(c.samples_ms) for cid, c in b.cases.items()} == {
        cid: len(c["samples_ms"]) for cid, c in doc["cases"].items()
    }


@pytest.mark.parametrize(
    "fields, problem",
    [
        ({"sample_count": 1}, '"sample_count" must be an integer from 2'),
        ({"sample_count": True}, '"sample_count" must be an integer'),
        ({"sample_count": 10**9}, '"sample_count" must be an integer'),
        ({"sample_count": 5, "samples_ms": [2.0, 1.0]}, "must not decrease"),
    ],
)
def test_a_bad_summary_is_one_clear_error(tmp_path, fields, problem):
    doc = {
        "format": "perfgate-baseline",
        "version": 2,
        "environment": {"device_kind": "cuda", "device_name": "x"},
        "cases": {"t": {"median_ms": 1.0, "samples_ms": [1.0, 2.0], **fields}},
    }
    path = tmp_path / "b.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(BaselineError, match=problem):
        load_baseline(path)
