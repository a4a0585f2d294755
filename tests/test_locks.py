"""The lock directory stays bounded: a lock file lives while its lock is held or waited for, so locking a
new target per A/B base commit for a year leaves no file per commit behind, and mutual exclusion holds."""

from __future__ import annotations

import threading
import time

from perfgate.atomic import exclusive_lock


def test_locking_many_targets_leaves_no_lock_file_behind(tmp_path, monkeypatch):
    locks = tmp_path / "locks"
    monkeypatch.setenv("PERFGATE_LOCK_DIR", str(locks))
    for commit in range(200):  # one base worktree per commit, as A/B mode locks them
        with exclusive_lock(tmp_path / "worktrees" / f"{commit:040x}"):
            assert len(list(locks.iterdir())) == 1
    assert list(locks.iterdir()) == []


def test_the_lock_still_excludes_while_its_files_come_and_go(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFGATE_LOCK_DIR", str(tmp_path / "locks"))
    target, counter = tmp_path / "baseline.json", tmp_path / "count"
    counter.write_text("0")
    inside: list[int] = []

    def bump() -> None:
        for _ in range(25):
            with exclusive_lock(target, poll_s=0.001):
                inside.append(1)
                assert len(inside) == 1  # nobody else holds it
                value = int(counter.read_text())
                time.sleep(0)  # let another thread try to get in between the read and the write
                counter.write_text(str(value + 1))
                inside.pop()

    threads = [threading.Thread(target=bump) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counter.read_text() == "150"
    assert list((tmp_path / "locks").iterdir()) == []
