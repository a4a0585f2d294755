"""GitHub Actions output: the sticky PR comment (create vs update, replayed against GitHub's REST exchange),
its golden body as GitHub renders it, and the annotation lines."""

import io
import json
import os
import threading
import urllib.error
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from perfgate.ci.github import GitHubApi, comment_body, upsert_comment
from perfgate.errors import PerfgateError
from perfgate.report.annotations import workflow_commands
from perfgate.report.markdown import render_markdown
from tests.test_markdown import known_gate

DATA = Path(__file__).parent / "data"
EXCHANGE = json.loads((DATA / "github" / "sticky_comment_exchange.json").read_text())
GOLDEN_COMMENT = DATA / "golden_comment.md"
BODY_SUMMARY = "## ✅ perfgate: gate passed\n"


class Replay:
    """An opener for GitHubApi that checks each request against the script and answers with its response."""

    def __init__(self, script):
        self.script = list(script)
        self.seen = []

    def __call__(self, req, timeout):
        expected = self.script.pop(0)
        want, resp = expected["request"], expected["response"]
        body = json.loads(req.data) if req.data else None
        self.seen.append((req.get_method(), req.full_url, body, req.get_header("Authorization")))
        assert (req.get_method(), req.full_url) == (want["method"], "https://api.example.test" + want["path"])
        assert body == want.get("body")
        raw = json.dumps(resp["body"]).encode() if resp["body"] is not None else b""
        if resp["status"] >= 400:
            raise urllib.error.HTTPError(req.full_url, resp["status"], "Forbidden", {}, io.BytesIO(raw))
        return io.BytesIO(raw)


def api(script):
    replay = Replay(script)
    return GitHubApi("https://api.example.test/", "o/r", "t0ken", opener=replay), replay


def test_first_run_creates_the_comment():
    gh, replay = api(EXCHANGE["first_run"])
    result = upsert_comment(gh, 7, BODY_SUMMARY)
    assert (result.action, result.comment_id, result.deleted_duplicates) == ("created", 2001, 0)
    assert not replay.script
    assert all(auth == "Bearer t0ken" for *_, auth in replay.seen)


def test_a_later_run_edits_the_same_comment_in_place():
    gh, replay = api(EXCHANGE["second_run"])
    result = upsert_comment(gh, 7, BODY_SUMMARY)
    assert (result.action, result.comment_id) == ("updated", 2001)
    assert [m for m, *_ in replay.seen] == ["GET", "PATCH"]  # never a second POST


def test_duplicates_from_racing_jobs_collapse_to_the_oldest_and_other_markers_are_left_alone():
    gh, replay = api(EXCHANGE["race"])
    result = upsert_comment(gh, 7, BODY_SUMMARY)
    assert (result.action, result.comment_id, result.deleted_duplicates) == ("updated", 2001, 1)
    assert not replay.script  # 2009 (another marker) was neither edited nor deleted


def test_the_marker_is_found_on_a_later_page():
    gh, replay = api(EXCHANGE["paged"])
    assert upsert_comment(gh, 7, BODY_SUMMARY).action == "updated"
    assert not replay.script


def test_a_read_only_token_is_one_clear_error():
    gh, _ = api(EXCHANGE["forbidden"])
    with pytest.raises(PerfgateError, match=r"^perfgate: GitHub API POST /repos/o/r/issues/7/comments: HTTP 403"):
        upsert_comment(gh, 7, BODY_SUMMARY)


def test_the_command_posts_several_summaries_as_one_comment_over_http(tmp_path, monkeypatch, capsys):
    """`perfgate ci comment` end to end against a local server that replays the exchange (matrix jobs)."""
    script = [dict(step) for step in EXCHANGE["first_run"]]
    combined = "<!-- perfgate:perfgate -->\n## H100\n\n---\n\n## A100\n"
    script[1] = {"request": dict(script[1]["request"], body={"body": combined}), "response": script[1]["response"]}
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            step = script.pop(0)
            seen.append((self.command, self.path, body, self.headers.get("Authorization")))
            ok = (self.command, self.path, body) == (step["request"]["method"], step["request"]["path"],
                                                      step["request"].get("body"))
            self.send_response(step["response"]["status"] if ok else 400)
            self.end_headers()
            self.wfile.write(json.dumps(step["response"]["body"]).encode())

        do_GET = do_POST = do_PATCH = do_DELETE = _answer

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        (tmp_path / "h100.md").write_text("## H100\n")
        (tmp_path / "a100.md").write_text("## A100\n\n")
        monkeypatch.setenv("GITHUB_TOKEN", "t0ken")
        from perfgate.cli import main

        code = main(["ci", "comment", str(tmp_path / "h100.md"), str(tmp_path / "a100.md"), "--repo", "o/r",
                     "--pr", "7", "--api-url", f"http://127.0.0.1:{server.server_address[1]}"])
    finally:
        server.shutdown()
    assert code == 0
    assert "created comment 2001 on o/r#7" in capsys.readouterr().out
    assert [(m, p) for m, p, *_ in seen] == [("GET", "/repos/o/r/issues/7/comments?per_page=100&page=1"),
                                            ("POST", "/repos/o/r/issues/7/comments")]
    assert all(auth == "Bearer t0ken" for *_, auth in seen)


def test_the_comment_command_needs_a_token(tmp_path, monkeypatch, capsys):
    from perfgate.cli import main

    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    (tmp_path / "s.md").write_text("x")
    assert main(["ci", "comment", str(tmp_path / "s.md"), "--repo", "o/r", "--pr", "1"]) != 0
    assert "needs a token in $GITHUB_TOKEN" in capsys.readouterr().err


def test_comment_body_matches_the_golden_file():
    body = comment_body(render_markdown(known_gate()), "perfgate")
    if os.environ.get("PERFGATE_REGEN_GOLDEN") == "1":
        GOLDEN_COMMENT.write_text(body)
    assert body == GOLDEN_COMMENT.read_text()


def test_comment_body_renders_with_the_marker_hidden():
    markdown_it = pytest.importorskip("markdown_it")
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(GOLDEN_COMMENT.read_text())
    assert html.startswith("<!-- perfgate:perfgate -->")  # an HTML comment: GitHub shows nothing for it
    assert html.count("<table>") == 3 and "<h2>❌ perfgate: gate FAILED" in html


def test_an_oversized_summary_is_cut_below_githubs_limit_with_a_pointer_to_the_full_one():
    body = comment_body("| row |\n" * 20_000, "perfgate")
    assert len(body) <= 65_000 and body.startswith("<!-- perfgate:perfgate -->")
    assert "the full summary is in the job summary" in body


def results_doc():
    return {
        "gate": {"strict": True},
        "cases": [{"case_id": "k/test_perf.py::test_matmul", "location": ["k/test_perf.py", 41]},
                  {"case_id": "k/test_perf.py::test_softmax[bf16]", "location": ["k/test_perf.py", 60]}],
        "comparisons": [
            {"case_id": "k/test_perf.py::test_matmul", "metric": "median_ms", "verdict": "regressed",
             "change_pct": 9.61, "threshold_pct": 6.27},
            {"case_id": "k/test_perf.py::test_matmul", "metric": "speedup", "kernel": "torch.matmul",
             "verdict": "regressed", "change_pct": -8.2, "threshold_pct": 1.0},
            {"case_id": "k/test_perf.py::test_softmax[bf16]", "metric": "median_ms", "verdict": "inconclusive",
             "change_pct": 1.4, "threshold_pct": 1.0},
            {"case_id": "k/test_perf.py::test_softmax[bf16]", "metric": "min_speedup", "verdict": "below target",
             "note": "1.10x vs torch.softmax (CI 1.09-1.11), needs >= 1.2x"},
            {"case_id": "k/test_perf.py::test_other", "metric": "median_ms", "verdict": "unchanged"}],
        "findings": [{"kind": "case_skipped", "message": "in the baseline but skipped: no GPU", "fails_strict": True,
                      "case_id": "k/test_perf.py::test_copy"}],
    }


def test_annotations_point_at_the_test_and_name_case_metric_change_and_threshold():
    # message data escapes % as %25 (GitHub's toolkit does the same); the job page shows "+9.6% (threshold 6.3%)"
    assert workflow_commands(results_doc()) == [
        "::error file=k/test_perf.py,line=41,title=perfgate::k/test_perf.py::test_matmul time +9.6%25 "
        "(threshold 6.3%25)",
        "::error file=k/test_perf.py,line=41,title=perfgate::k/test_perf.py::test_matmul speedup [torch.matmul] "
        "-8.2%25 "
        "(threshold 1%25)",
        "::warning file=k/test_perf.py,line=60,title=perfgate::k/test_perf.py::test_softmax[bf16] time +1.4%25 "
        "(threshold 1%25) inconclusive",
        "::error file=k/test_perf.py,line=60,title=perfgate::k/test_perf.py::test_softmax[bf16] 1.10x vs "
        "torch.softmax (CI 1.09-1.11), needs >= 1.2x",
        "::error title=perfgate strict::case_skipped: in the baseline but skipped: no GPU",
    ]


def test_annotation_text_cannot_start_a_second_command():
    doc = results_doc()
    doc["comparisons"][0]["case_id"] = doc["cases"][0]["case_id"] = "k::t[a\n::error::forged]"
    line = workflow_commands(doc)[0]
    assert "\n" not in line and "%0A::error::forged" in line  # one line: the runner reads one command


def test_findings_only_warn_when_the_run_was_not_strict():
    doc = results_doc()
    doc["gate"]["strict"] = False
    assert workflow_commands(doc)[-1].startswith("::warning title=perfgate strict::")
