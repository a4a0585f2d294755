"""The A/A (a second base process against the base): measured in every stage its case gets, so the offset it draws
is as precise as the mean it bounds; cached (perfgate/ab/aa.py) and reused only for the selection, GPU model and
process mode it was measured in (a twin in the base's own process shows next to no offset: reused by a run in
separate processes it would understate theirs); an older cache file is measured again rather than trusted."""

from __future__ import annotations

import json

from perfgate.ab import aa
from perfgate.ab.pairs import _with_twin
from perfgate.ab.protocol import Side
from perfgate.ab.run import run_ab
from perfgate.ab.workers import WorkerSpec
from perfgate.gate.ratio import AaNoise
from tests.ab_repo import cases, commit, make_repo, request

ARGS = ("tests/test_perf.py",)


def _entry(shared: bool) -> aa.AaEntry:
    return aa.AaEntry(
        "NVIDIA H100 80GB HBM3", ARGS, {"t.py::a": {"median_ms": AaNoise(60, 0.001, 0.002)}}, shared=shared
    )


def test_a_cached_aa_is_reused_only_in_the_process_mode_it_was_measured_in(tmp_path):
    cache = aa.with_entry(aa.read_cache(tmp_path, "abc"), _entry(shared=True))
    aa.write_cache(cache)
    again = aa.read_cache(tmp_path, "abc")
    assert not again.problem
    assert again.covering(ARGS, shared=True) == _entry(shared=True)
    assert again.covering(ARGS, shared=False) is None  # a separate run measures its own twin
    assert again.covering(("other.py",), shared=True) is None


def test_an_aa_cache_of_the_version_before_the_process_mode_is_measured_again(tmp_path):
    doc = {"format": aa.FORMAT, "version": 1, "base_commit": "abc", "devices": {}}
    (tmp_path / aa.FILE_NAME).write_text(json.dumps(doc))
    cache = aa.read_cache(tmp_path, "abc")
    assert cache.entries == {} and "is not this base's version 2 A/A cache" in cache.problem


def test_an_aa_entry_whose_process_mode_is_not_a_boolean_is_not_trusted(tmp_path):
    aa.write_cache(aa.with_entry(aa.read_cache(tmp_path, "abc"), _entry(shared=False)))
    doc = json.loads((tmp_path / aa.FILE_NAME).read_text())
    doc["devices"]["NVIDIA H100 80GB HBM3"]["shared"] = "yes"
    (tmp_path / aa.FILE_NAME).write_text(json.dumps(doc))
    cache = aa.read_cache(tmp_path, "abc")
    assert cache.entries == {} and "unreadable A/A cache" in cache.problem and "'shared'" in cache.problem


def test_the_twin_measures_every_stage_of_a_suspect_case(tmp_path):
    repo = make_repo(tmp_path / "repo")
    commit(repo, cases({"a": 1.0}), "base")
    commit(repo, cases({"a": 1.3}), "head: a 30% slower")
    outcome = run_ab(request(repo, "HEAD~1", tmp_path, ab_fresh_pair=False))
    d = outcome.decisions[("test_perf.py::a", "median_ms")]
    assert d.stages == 3 and len(d.draws) == 1
    twin_rounds = d.round_var_log / d.draws[0].rounds_var  # rounds_var = s^2 / the twin's rounds
    assert round(twin_rounds) == d.rounds == 18  # 6 rounds x 3 stages, the twin in all of them


def test_a_shared_run_that_falls_back_to_separate_processes_measures_its_own_twin(tmp_path):
    base = WorkerSpec(Side.BASE, tmp_path, tmp_path, (), tmp_path, {})
    specs = _with_twin([WorkerSpec(Side.HEAD, tmp_path, tmp_path, (), tmp_path, {}), base])
    assert [s.side for s in specs] == [Side.HEAD, Side.BASE, Side.AA] and specs[2].tree == base.tree
    assert _with_twin(specs) == specs  # one twin is enough
