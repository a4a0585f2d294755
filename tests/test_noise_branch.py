"""The noise window's branch defaults to the repository's own default branch: a `master` repository is
read as `master`, not silently as `main`; where git cannot tell, the gate says so loudly."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from perfgate.config.settings import Settings
from perfgate.gate.run import with_noise_branch
from perfgate.measure.git import default_branch


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "init.defaultBranch=trunk", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        timeout=30,
    )


def repo(tmp_path: Path, *branches: str) -> Path:
    git(tmp_path, "init", "-q")
    git(tmp_path, "commit", "-q", "--allow-empty", "-m", "first")
    for b in branches:
        git(tmp_path, "branch", b)
    return tmp_path


@pytest.mark.parametrize("branch", ["master", "main"])
def test_the_one_of_main_and_master_that_exists_is_the_default(tmp_path, branch):
    assert default_branch(repo(tmp_path, branch)) == (branch, True)


def test_origin_head_names_the_default_branch(tmp_path):
    upstream = repo(tmp_path / "up", "develop") if (tmp_path / "up").mkdir() is None else None
    git(upstream, "symbolic-ref", "HEAD", "refs/heads/develop")
    git(tmp_path, "clone", "-q", str(upstream), "clone")
    assert default_branch(tmp_path / "clone") == ("develop", True)


def test_a_repository_that_names_no_default_branch_is_told_loudly(tmp_path):
    settings, line = with_noise_branch(Settings(rootdir=repo(tmp_path)))  # only "trunk": no main, no master
    assert settings.noise_branch == "main"
    assert "WARNING" in line and "set [tool.perfgate] noise_branch" in line


def test_a_master_repository_reads_its_window_from_master(tmp_path):
    settings, line = with_noise_branch(Settings(rootdir=repo(tmp_path, "master")))
    assert settings.noise_branch == "master" and line == ""
