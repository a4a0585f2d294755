"""`perfgate ci report`, the trusted job's one step (issue 32, requirement 2): approval labels off first, the
measuring job's results checked by trusted code, the commit status branch protection requires set on the gated
commit (a missing or self-contradicting file is an error, never a pass), the comment edited. A stand-in for
GitHub's REST API records every request."""

from __future__ import annotations

import contextlib
import io
import json
import urllib.error
from pathlib import Path

import pytest

from perfgate.cli import main
from tests.test_ci_recompute import gate_document, passed, write

SHA = "a" * 40


class FakeGitHub:
    """Statuses, labels, pulls and comments of o/r; `forbid` answers 403 for paths starting with one of them."""

    def __init__(self, pulls=(), labels=("perfgate", "perfgate-baseline"), forbid=()):
        self.requests: list[tuple[str, str, object]] = []
        self.statuses: list[dict] = []
        self.labels = set(labels)
        self.comments: dict[int, dict] = {}
        self.pulls = list(pulls)
        self.forbid = forbid

    def __call__(self, req, timeout):
        method, path = req.get_method(), req.full_url.removeprefix("https://api.example.test")
        body = json.loads(req.data) if req.data else None
        self.requests.append((method, path, body))
        if any(path.startswith(f) for f in self.forbid):
            raise urllib.error.HTTPError(req.full_url, 403, "Forbidden", {}, io.BytesIO(b"{}"))
        if path == "/user":
            raise urllib.error.HTTPError(req.full_url, 403, "Forbidden", {}, io.BytesIO(b"{}"))
        if path.startswith("/repos/o/r/statuses/"):
            self.statuses.append({"sha": path.rsplit("/", 1)[1], **body})
            return io.BytesIO(b"{}")
        if path.startswith("/repos/o/r/pulls?"):
            return io.BytesIO(json.dumps(self.pulls).encode())
        if "/labels/" in path:
            name = path.rsplit("/", 1)[1]
            if name not in self.labels:
                raise urllib.error.HTTPError(req.full_url, 404, "Not Found", {}, io.BytesIO(b"{}"))
            self.labels.discard(name)
            return io.BytesIO(b"[]")
        if "/comments?" in path:
            return io.BytesIO(json.dumps(list(self.comments.values())).encode())
        if method == "POST" and path.endswith("/comments"):
            cid = 100 + len(self.comments)
            self.comments[cid] = {"id": cid, "user": {"login": "github-actions[bot]"}, "body": body["body"]}
            return io.BytesIO(json.dumps(self.comments[cid]).encode())
        raise AssertionError(f"unexpected {method} {path}")


@pytest.fixture
def github(monkeypatch):
    fake = FakeGitHub()
    import urllib.request

    monkeypatch.setattr(urllib.request, "urlopen", fake)
    monkeypatch.setenv("GITHUB_TOKEN", "t0ken")
    return fake


def report(*paths: Path, extra: tuple[str, ...] = ("--pr", "7")) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(
            [
                "ci",
                "report",
                "--results",
                *map(str, paths),
                "--repo",
                "o/r",
                "--sha",
                SHA,
                "--api-url",
                "https://api.example.test",
                "--remove-labels",
                "perfgate,perfgate-baseline",
                "--require-strict",
                *extra,
            ]
        )
    return code, out.getvalue()


def test_a_passing_gate_sets_success_on_the_gated_commit_after_taking_the_approval_back(github, tmp_path):
    code, out = report(write(tmp_path, gate_document(tmp_path, factor=1.0)))
    assert code == 0, out
    assert github.statuses == [
        {"sha": SHA, "state": "success", "context": "perfgate", "description": "perfgate.json: gate passed"}
    ]
    methods = [(m, p.split("?")[0]) for m, p, _ in github.requests]
    assert methods[:2] == [
        ("DELETE", "/repos/o/r/issues/7/labels/perfgate"),
        ("DELETE", "/repos/o/r/issues/7/labels/perfgate-baseline"),
    ]
    assert not github.labels and len(github.comments) == 1


def test_a_failed_gate_sets_failure_and_fails_the_job(github, tmp_path):
    code, _ = report(write(tmp_path, gate_document(tmp_path, factor=10.0)))
    assert code == 1 and github.statuses[0]["state"] == "failure"
    assert "FAILED" in next(iter(github.comments.values()))["body"]


def test_a_results_file_that_contradicts_itself_is_an_error_status_and_a_refusal_in_the_comment(github, tmp_path):
    code, out = report(write(tmp_path, passed(gate_document(tmp_path, strict=False))))
    assert code == 4 and github.statuses[0]["state"] == "error", out
    assert github.statuses[0]["description"].startswith("perfgate.json: comparisons[0] (t.py::test_slow median_ms)")
    body = next(iter(github.comments.values()))["body"]
    assert "results refused" in body and "contradicts its own numbers" in body


def test_no_results_file_is_an_error_never_a_pass(github, tmp_path):
    code, _ = report(tmp_path / "missing" / "perfgate.json")
    assert code == 2 and github.statuses[0]["state"] == "error"
    assert "the gate never decided" in next(iter(github.comments.values()))["body"]


def test_a_gate_without_strict_mode_is_an_error_where_strict_is_required(github, tmp_path):
    code, _ = report(write(tmp_path, gate_document(tmp_path, factor=1.0, strict=False)))
    assert code == 2 and github.statuses[0]["state"] == "error"


def test_a_forks_pull_request_is_found_by_its_head_at_the_gated_commit(github, tmp_path):
    github.pulls = [{"number": 3, "head": {"sha": "b" * 40}}, {"number": 9, "head": {"sha": SHA}}]
    code, out = report(write(tmp_path, gate_document(tmp_path, factor=1.0)), extra=("--pr-head", "someone:topic"))
    assert code == 0 and "on o/r#9" in out, out
    get = next(p for m, p, _ in github.requests if p.startswith("/repos/o/r/pulls?"))
    assert "head=someone:topic" in get
    github.pulls = [{"number": 9, "head": {"sha": "b" * 40}}]  # pushed since: not the gated commit
    code, out = report(write(tmp_path, gate_document(tmp_path, factor=1.0)), extra=("--pr-head", "someone:topic"))
    assert code == 0 and "no open pull request at" in out


def test_a_token_that_may_not_comment_still_sets_the_status(github, tmp_path):
    github.forbid = ("/repos/o/r/issues/",)
    code, out = report(write(tmp_path, gate_document(tmp_path, factor=1.0)))
    assert code == 0 and github.statuses[0]["state"] == "success"
    assert out.count("::warning title=perfgate::") == 2  # the labels and the comment


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (("--sha", "main"), "--sha must be a full commit sha"),
        (("--remove-labels", "a\nb"), "is not a label name"),
        (("--pr-head", "x y:z"), "--pr-head must be OWNER:BRANCH"),
    ],
)
def test_bad_arguments_are_one_line(github, tmp_path, capsys, args, problem):
    path = write(tmp_path, gate_document(tmp_path, factor=1.0))
    argv = ["ci", "report", "--results", str(path), "--repo", "o/r", "--sha", SHA, "--pr", "7", *args]
    assert main([*argv, "--api-url", "https://api.example.test"]) == 2
    err = capsys.readouterr().err.strip()
    assert problem in err and len(err.splitlines()) == 1 and not github.requests


def test_unlabel_takes_the_approval_labels_off(github, capsys):
    code = main(["ci", "unlabel", "--repo", "o/r", "--pr", "7", "--labels", "perfgate,perfgate-baseline,other"])
    assert code == 0 and not github.labels
    assert "perfgate, perfgate-baseline" in capsys.readouterr().out


REPORT_SH = Path(__file__).resolve().parents[1] / "report" / "report.sh"


def report_sh(tmp_path: Path, **env: str) -> list[str]:
    """The argv report/report.sh gives perfgate for the action's inputs (perfgate stood in by a script)."""
    import os
    import subprocess

    stub = tmp_path / "perfgate"
    stub.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$ARGV"\n')
    stub.chmod(0o755)
    argv = tmp_path / "argv"
    base = {"PATH": os.environ["PATH"], "PERFGATE": str(stub), "ARGV": str(argv), "GITHUB_REPOSITORY": "o/r"}
    done = subprocess.run(["bash", str(REPORT_SH)], env={**base, **env}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return argv.read_text().splitlines() if argv.exists() else []


def test_the_report_action_finds_a_forks_pull_request_by_its_head_and_passes_every_input(tmp_path):
    argv = report_sh(
        tmp_path,
        RESULTS="results/a/perfgate.json results/b/perfgate.json",
        SHA=SHA,
        HEAD_OWNER="someone",
        HEAD_BRANCH="topic; rm -rf /",
        REMOVE_LABELS="perfgate",
        COMMENT="false",
        REQUIRE_STRICT="true",
        GITHUB_RUN_ID="5",
    )
    assert argv[:4] == ["ci", "report", "--results", "results/a/perfgate.json"]
    assert "results/b/perfgate.json" in argv and argv[argv.index("--sha") + 1] == SHA
    assert argv[argv.index("--pr-head") + 1] == "someone:topic; rm -rf /"  # one argument, checked by perfgate
    assert "--no-comment" in argv and "--require-strict" in argv and "--pr" not in argv
    assert argv[argv.index("--target-url") + 1] == "https://github.com/o/r/actions/runs/5"


def test_the_report_action_only_takes_the_labels_back_on_a_push(tmp_path):
    argv = report_sh(tmp_path, UNLABEL_ONLY="true", PR="7", REMOVE_LABELS="perfgate,perfgate-baseline")
    assert argv == ["ci", "unlabel", "--repo", "o/r", "--pr", "7", "--labels", "perfgate,perfgate-baseline"]
