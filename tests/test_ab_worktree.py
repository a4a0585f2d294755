"""The base tree (perfgate/ab/worktree.py): REF -> commit -> a cached git worktree outside the checkout."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

from perfgate.ab.protocol import AbError
from perfgate.ab.worktree import checkout, resolve_commit, verify
from tests.ab_repo import cases, commit, git, make_repo


@pytest.fixture
def repo(tmp_path):
    repo = make_repo(tmp_path / "repo")
    commit(repo, cases({"a": 1.0}), "one")
    return repo


def test_the_second_run_reuses_the_worktree_of_the_same_commit(repo, tmp_path):
    first = checkout(repo, "main", tmp_path / "wt")
    second = checkout(repo, "main", tmp_path / "wt")
    assert not first.reused and second.reused and first.path == second.path
    assert (second.path / "standin.json").is_file() and not str(second.path).startswith(str(repo))
    assert git(second.path, "rev-parse", "HEAD") == first.commit == git(repo, "rev-parse", "main")


def test_a_new_commit_on_the_base_branch_makes_a_new_worktree(repo, tmp_path):
    old = checkout(repo, "main", tmp_path / "wt")
    commit(repo, cases({"a": 2.0}), "two")
    new = checkout(repo, "main", tmp_path / "wt")
    assert not new.reused and new.path != old.path and new.commit != old.commit
    assert old.path.is_dir()  # kept for a run against the old commit (until more than KEEP pile up)


def test_each_worktree_has_its_own_build_caches(repo, tmp_path):
    tree = checkout(repo, "main", tmp_path / "wt")
    env = tree.env()
    assert set(env) == {"TRITON_CACHE_DIR", "TORCH_EXTENSIONS_DIR", "PERFGATE_KERNEL_CACHE"}
    assert all(str(tree.cache_dir) in v for v in env.values()) and tree.path not in tree.cache_dir.parents


def test_an_edited_cached_worktree_is_recreated_not_trusted(repo, tmp_path):
    tree = checkout(repo, "main", tmp_path / "wt")
    (tree.path / "standin.json").write_text("{}")
    again = checkout(repo, "main", tmp_path / "wt")
    assert not again.reused and "noise_pct" in (again.path / "standin.json").read_text()


def test_an_interrupted_checkout_is_never_reused_and_is_cleaned_up(repo, tmp_path):
    tree = checkout(repo, "main", tmp_path / "wt")
    tree.path.with_name(tree.path.name + ".ready").unlink()  # as if the run died before marking it finished
    partial = tree.path.with_name(tree.path.name + ".partial-999999999")
    partial.mkdir()
    again = checkout(repo, "main", tmp_path / "wt")
    assert not again.reused and not partial.exists()
    assert str(partial) not in git(repo, "worktree", "list")


def test_an_unknown_ref_is_one_line_naming_it(repo):
    with pytest.raises(AbError, match=r"unknown git ref 'no-such-branch' in .*repo \(fetch it first"):
        resolve_commit(repo, "no-such-branch")
    with pytest.raises(AbError, match="is not a git ref"):
        resolve_commit(repo, "--output=x")


def test_outside_a_git_checkout_is_one_line(tmp_path):
    from perfgate.ab.worktree import repository_root

    with pytest.raises(AbError, match="needs a git checkout"):
        repository_root(tmp_path)


def test_an_untracked_file_left_in_a_cached_worktree_is_never_reused(repo, tmp_path):
    tree = checkout(repo, "main", tmp_path / "wt")
    (tree.path / "conftest.py").write_text("import mylib\nmylib.N = 3\n")  # left by an earlier run's head
    again = checkout(repo, "main", tmp_path / "wt")
    assert not again.reused and not (again.path / "conftest.py").exists()


def test_an_edit_that_keeps_the_files_size_and_time_is_still_seen(repo, tmp_path):
    tree = checkout(repo, "main", tmp_path / "wt")
    target = tree.path / "standin.json"
    past = target.stat().st_mtime - 100
    os.utime(target, (past, past))
    git(tree.path, "update-index", "--refresh")  # git's stat cache now trusts that size and time
    target.write_text(target.read_text().replace("0.3", "9.9"))  # same size
    os.utime(target, (past, past))  # same time: `git status` sees nothing
    again = checkout(repo, "main", tmp_path / "wt")
    assert not again.reused and '"noise_pct": 0.3' in (again.path / "standin.json").read_text()


def test_what_a_base_session_leaves_in_ignored_files_is_no_change_and_is_cleared_before_reuse(repo, tmp_path):
    (repo / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore caches")
    tree = checkout(repo, "main", tmp_path / "wt")
    (tree.path / "__pycache__").mkdir()
    (tree.path / "__pycache__" / "mylib.cpython-311.pyc").write_bytes(b"stale or forged byte code")
    (tree.path / ".pytest_cache").mkdir()
    assert verify(tree) == []  # ignored: what a base session legitimately leaves
    again = checkout(repo, "main", tmp_path / "wt")
    assert again.reused and not (again.path / "__pycache__").exists()


def test_a_change_to_the_base_during_the_run_is_named(repo, tmp_path):
    tree = checkout(repo, "main", tmp_path / "wt")
    (tree.path / "standin.json").write_text("{}")
    (tree.path / "sitecustomize.py").write_text("")
    assert verify(tree) == ["sitecustomize.py (added)", "standin.json (changed)"]


# the head's conftest writes a conftest into every other worktree of the repository: the base's tests then
# run its mylib three times slower too (hiding the head's slowdown), in this run or any later one
POISONS = textwrap.dedent("""
    import subprocess
    from pathlib import Path

    here = Path(__file__).resolve().parents[1]
    listed = subprocess.run(["git", "worktree", "list", "--porcelain"], capture_output=True, text=True, cwd=here)
    for line in listed.stdout.splitlines():
        tree = Path(line.removeprefix("worktree ")).resolve()
        if line.startswith("worktree ") and tree != here:
            (tree / "tests" / "conftest.py").write_text("import mylib\\n\\nmylib.N = 3\\n")
""")


def test_a_head_that_writes_into_the_base_worktree_fails_strict_and_poisons_no_later_run(tmp_path):
    from tests.ab_layouts import ab, project

    repo = project(tmp_path, "pythonpath", head_files={"tests/conftest.py": POISONS})
    first, _ = ab(Path(sys.executable), repo, tmp_path, "--perfgate-ab-process", "separate", "--perfgate-strict")
    out = first.stdout + first.stderr
    assert first.returncode == 1 and "changed during the run (tests/conftest.py (added))" in out, out
    (repo / "tests" / "conftest.py").unlink()  # the next pull request is honest, and as slow
    git(repo, "commit", "-q", "-am", "head: no conftest")
    second, doc = ab(Path(sys.executable), repo, tmp_path, "--perfgate-base", "HEAD~2", "--perfgate-strict")
    out = second.stdout + second.stderr
    # the base measured its own, fast mylib: the head's 3x shows (regressed; on a loaded host whose noise
    # widens what the pair can call, at least inconclusive and far beyond 1, never hidden as unchanged)
    (row,) = [c for c in doc["comparisons"] if c["metric"] == "median_ms"]
    assert "worktree created" in out and row["case_id"] == "tests/test_perf.py::test_sort", out
    assert row["verdict"] in ("regressed", "inconclusive") and row["change_pct"] > 50.0, out
