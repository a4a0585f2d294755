"""The A/B verdict on rounds recorded on the H100 (docs/evidence/data/h100/ab: the round traces of A/A
runs, head = base code, sessions J, K and M): wild rounds (a window something else hit) are set aside, so
what a case's rounds say is their noise, not their worst window."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from perfgate.gate.ratio import RatioRule, decide_ratio

TRACES = sorted((Path(__file__).parent.parent / "docs" / "evidence" / "data" / "h100" / "ab").glob("*_ab_noise_*.json"))


def _rounds() -> list[tuple[str, np.ndarray]]:
    out = []
    for path in TRACES:
        for case in json.loads(path.read_text())["ab"]["cases"]:
            base, head = case["median_ms"]["base"], case["median_ms"]["head"]
            n = min(len(base), len(head))
            out.append((f"{path.stem}:{case['case_id']}", np.log(np.asarray(head[:n]) / np.asarray(base[:n]))))
    return out


def test_the_recorded_traces_are_there():
    assert len(TRACES) == 8 and len(_rounds()) == 64  # J: 2 x 10 cases, K: 2 x 10, M: 4 x 6


def test_wild_rounds_on_the_h100_are_set_aside_and_the_rest_is_their_noise():
    rule = RatioRule(alpha=0.01 / 42, stages=1)
    raw, tamed, wild = [], [], 0
    for _, x in _rounds():
        d = decide_ratio([x], None, rule)
        raw.append(100 * math.expm1(float(np.std(x, ddof=1))))
        tamed.append(d.noise_pct)
        wild += d.wild_rounds
    assert max(raw) > 10.0  # a standard deviation over every round: the worst window decides
    assert max(tamed) < 3.0  # with the wild rounds set aside: 0.05-2.5% (the GEMMs the noisiest)
    assert 0 < wild < 0.05 * sum(len(x) for _, x in _rounds())


def test_no_recorded_aa_case_is_called_regressed_on_a_cuda_kernel_whose_processes_agree():
    # every case but the 12 us add (whose head and base processes differ by 1-3%, docs/accuracy.md)
    rule = RatioRule(alpha=0.01 / 42, stages=1)
    called = [
        name
        for name, x in _rounds()
        if "small_add" not in name and decide_ratio([x], None, rule).verdict.value == "regressed"
    ]
    assert called == []


SHARED = sorted(
    (Path(__file__).parent.parent / "docs" / "evidence" / "data" / "h100" / "ab").glob("n4_shared_aa_*.json")
)


def test_in_one_shared_process_the_12us_adds_head_and_base_agree():
    # session N4 (docs/accuracy.md): three A/A runs of the add's six slots, base and head sides in one
    # process; in separate processes the same case read +0.9..+2.7% (session L) and was called 8 times in 46
    rule = RatioRule(alpha=0.01 / 6, stages=1)
    decisions = []
    for path in SHARED:
        for case in json.loads(path.read_text())["ab"]["cases"]:
            base, head = case["median_ms"]["base"], case["median_ms"]["head"]
            n = min(len(base), len(head))
            decisions.append(decide_ratio([np.log(np.asarray(head[:n]) / np.asarray(base[:n]))], None, rule))
    assert len(decisions) == 18
    assert all(d.verdict.value == "unchanged" for d in decisions)
    assert max(abs(100 * d.mean_log) for d in decisions) < 0.5
