"""The git hint is best effort: outside a repository, or without git, it stays silent."""

from perfgate.measure.git import history_hint


def test_outside_a_repository_there_is_no_hint(tmp_path):
    assert history_hint(tmp_path / "history.db") is None


def test_without_git_on_path_there_is_no_hint(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert history_hint(tmp_path / "history.db") is None
