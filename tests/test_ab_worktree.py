"""The base tree (perfgate/ab/worktree.py): REF -> commit -> a cached git worktree outside the checkout."""

from __future__ import annotations

import pytest

from perfgate.ab.protocol import AbError
from perfgate.ab.worktree import checkout, resolve_commit
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
