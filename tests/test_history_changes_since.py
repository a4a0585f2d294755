"""What changed since the last build (store/changes.py): the runs stored since a mark and the series they
touch, read in proportion to what changed, and on a server the runs a slower writer commits after a
newer one was already seen."""

from __future__ import annotations

import pytest

from perfgate.store import open_store
from perfgate.store.changes import BuildMark, changed_since
from tests.helpers import ENV, HOST_ENV, make_run


def test_a_second_look_sees_only_the_runs_stored_since_and_their_series(history_target):
    with open_store(history_target) as store:
        for _ in range(3):
            store.save_run(make_run({"a": [1.0, 2.0], "b": [1.0, 2.0]}, env=ENV))
        first = changed_since(store)
        assert first.runs == (1, 2, 3) and first.series == (("a", ENV.device_name), ("b", ENV.device_name))
        store.save_run(make_run({"c": [1.0, 2.0]}, env=HOST_ENV))
        before = store.db.rows_read
        second = changed_since(store, first.mark)
        assert second.runs == (4,) and second.series == (("c", HOST_ENV.device_name),)
        assert store.db.rows_read - before == 2  # one run, one series: nothing older is read
        assert changed_since(store, second.mark).runs == ()
    assert BuildMark.from_json(second.mark.to_json()) == second.mark


def test_an_ab_runs_cases_are_no_change_to_a_series(history_target):
    """A/B runs are stored runs (their own pages) but no point of a case's series (store/kinds.py): a push that
    stored only an A/B comparison changes no series page."""
    from dataclasses import replace

    from perfgate.model import RunKind

    with open_store(history_target) as store:
        mark = changed_since(store).mark
        for kind in (RunKind.AB_BASE, RunKind.AB_HEAD):
            run = make_run({"a": [1.0, 2.0]}, env=ENV)
            store.save_run(replace(run, info=replace(run.info, kind=kind, ab_pair="pr-7")))
        store.save_run(make_run({"b": [1.0, 2.0]}, env=ENV))
        seen = changed_since(store, mark)
    assert seen.runs == (1, 2, 3) and seen.series == (("b", ENV.device_name),)


def test_a_mark_that_is_not_one_is_refused():
    for text in ('{"last_run_id": -1}', '{"last_run_id": 3, "pending": [5]}', "[]", '{"last_run_id": true}'):
        with pytest.raises(ValueError):
            BuildMark.from_json(text)


def test_a_run_committed_after_a_newer_one_was_seen_comes_next_time(history_target):
    from perfgate.store.prepared import prepare_run, write_prepared
    from perfgate.store.target import ServerUrl

    if not isinstance(history_target, ServerUrl):
        pytest.skip("SQLite writers queue for the write lock: ids are committed in order")
    with open_store(history_target) as slow, open_store(history_target) as fast, open_store(history_target) as look:
        mark = changed_since(look).mark
        with slow.db.transaction():  # a runner still writing its run: id 1 taken, not committed
            write_prepared(slow.db, prepare_run(make_run({"slow": [1.0, 2.0]}, env=ENV), None))
            fast.save_run(make_run({"fast": [1.0, 2.0]}, env=ENV))  # id 2, committed first
            seen = changed_since(look, mark)
            assert seen.runs == (2,) and seen.mark.pending == (1,)
        later = changed_since(look, seen.mark)
        assert later.runs == (1,) and later.series == (("slow", ENV.device_name),) and later.mark.pending == ()
