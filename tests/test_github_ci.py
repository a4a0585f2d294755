"""GitHub Actions output: the sticky PR comment (create vs update, replayed against GitHub's REST exchange),
its golden body as GitHub renders it, and the annotation lines."""

import io
import json
import os
import re
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
    assert [m for m, *_ in replay.seen] == ["GET", "GET", "PATCH"]  # who am I, the comments; never a second POST


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
    script[2] = {"request": dict(script[2]["request"], body={"body": combined}), "response": script[2]["response"]}
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            step = script.pop(0)
            seen.append((self.command, self.path, body, self.headers.get("Authorization")))
            ok = (self.command, self.path, body) == (
                step["request"]["method"],
                step["request"]["path"],
                step["request"].get("body"),
            )
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

        code = main(
            [
                "ci",
                "comment",
                str(tmp_path / "h100.md"),
                str(tmp_path / "a100.md"),
                "--repo",
                "o/r",
                "--pr",
                "7",
                "--api-url",
                f"http://127.0.0.1:{server.server_address[1]}",
            ]
        )
    finally:
        server.shutdown()
    assert code == 0
    assert "created comment 2001 on o/r#7" in capsys.readouterr().out
    assert [(m, p) for m, p, *_ in seen] == [
        ("GET", "/user"),
        ("GET", "/repos/o/r/issues/7/comments?per_page=100&page=1"),
        ("POST", "/repos/o/r/issues/7/comments"),
    ]
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
    assert html.count("<table>") == 4 and "<h2>❌ perfgate: gate FAILED" in html


def test_an_oversized_summary_is_cut_below_githubs_limit_with_a_pointer_to_the_full_one():
    body = comment_body("| row |\n" * 20_000, "perfgate")
    assert len(body) <= 65_000 and body.startswith("<!-- perfgate:perfgate -->")
    assert "the full summary is in the job summary" in body


def results_doc():
    return {
        "gate": {"strict": True},
        "cases": [
            {"case_id": "k/test_perf.py::test_matmul", "location": ["k/test_perf.py", 41]},
            {"case_id": "k/test_perf.py::test_softmax[bf16]", "location": ["k/test_perf.py", 60]},
        ],
        "comparisons": [
            {
                "case_id": "k/test_perf.py::test_matmul",
                "metric": "median_ms",
                "verdict": "regressed",
                "change_pct": 9.61,
                "threshold_pct": 6.27,
            },
            {
                "case_id": "k/test_perf.py::test_matmul",
                "metric": "speedup",
                "kernel": "torch.matmul",
                "verdict": "regressed",
                "change_pct": -8.2,
                "threshold_pct": 1.0,
            },
            {
                "case_id": "k/test_perf.py::test_softmax[bf16]",
                "metric": "median_ms",
                "verdict": "inconclusive",
                "change_pct": 1.4,
                "threshold_pct": 1.0,
            },
            {
                "case_id": "k/test_perf.py::test_softmax[bf16]",
                "metric": "min_speedup",
                "verdict": "below target",
                "note": "1.10x vs torch.softmax (CI 1.09-1.11), needs >= 1.2x",
            },
            {"case_id": "k/test_perf.py::test_other", "metric": "median_ms", "verdict": "unchanged"},
        ],
        "findings": [
            {
                "kind": "case_skipped",
                "message": "in the baseline but skipped: no GPU",
                "fails_strict": True,
                "case_id": "k/test_perf.py::test_copy",
            }
        ],
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


# --- only the bot's own comment is ever edited or deleted ----------------------------------------------------

BOT = "github-actions[bot]"
MARKER = "<!-- perfgate:perfgate -->"


def test_only_the_bots_own_marked_comment_is_edited_whoever_else_carries_the_marker():
    gh, replay = api(EXCHANGE["other_authors"])
    result = upsert_comment(gh, 7, BODY_SUMMARY)
    assert (result.action, result.comment_id, result.deleted_duplicates) == ("updated", 2002, 0)
    assert not replay.script  # mallory's, octocat's, another bot's and the other GPU's comment untouched


class FakeGitHub:
    """A stateful stand-in for the issue-comment endpoints: comments by several authors, each token posting
    as its own identity (an installation token cannot read /user, as on GitHub), every write recorded."""

    def __init__(self, comments, identities):
        self.comments = {c["id"]: dict(c) for c in comments}
        self.identities = identities  # token -> login, or None for an installation token (posts as BOT)
        self.writes = []  # (method, comment id, author of that comment)
        self.next_id = 9000

    def __call__(self, req, timeout):
        token = req.get_header("Authorization").removeprefix("Bearer ")
        method, path = req.get_method(), req.full_url.removeprefix("https://api.example.test")
        body = json.loads(req.data) if req.data else None
        if path == "/user":
            login = self.identities[token]
            if login is None:
                raise urllib.error.HTTPError(req.full_url, 403, "Forbidden", {}, io.BytesIO(b"{}"))
            return io.BytesIO(json.dumps({"login": login}).encode())
        author = self.identities[token] or BOT
        if path.startswith("/repos/o/r/issues/7/comments?"):
            page = int(path.rsplit("page=", 1)[1])
            ordered = [self.comments[i] for i in sorted(self.comments)]
            return io.BytesIO(json.dumps(ordered[(page - 1) * 100 : page * 100]).encode())
        if method == "POST":
            self.next_id += 1
            self.comments[self.next_id] = {"id": self.next_id, "user": {"login": author}, "body": body["body"]}
            return io.BytesIO(json.dumps(self.comments[self.next_id]).encode())
        comment_id = int(path.rsplit("/", 1)[1])
        self.writes.append((method, comment_id, self.comments[comment_id]["user"]["login"]))
        if method == "PATCH":
            self.comments[comment_id]["body"] = body["body"]
            return io.BytesIO(json.dumps(self.comments[comment_id]).encode())
        del self.comments[comment_id]
        return io.BytesIO(b"")


def comment(cid, login, body):
    return {"id": cid, "user": {"login": login}, "body": body}


def fake_api(fake, token="installation"):
    return GitHubApi("https://api.example.test", "o/r", token, opener=fake)


def test_a_matrix_job_never_overwrites_another_jobs_comment_through_a_quoted_marker():
    """The A100 job's summary quotes the H100 job's marker in a case id; each job still edits only its own."""
    fake = FakeGitHub([], {"installation": None})
    h100 = "<!-- perfgate:perfgate-h100 -->"
    upsert_comment(fake_api(fake), 7, f"## A100\n| `k::t[{h100}]` | regressed |\n", "perfgate-a100")
    upsert_comment(fake_api(fake), 7, "## H100 first\n", "perfgate-h100")
    upsert_comment(fake_api(fake), 7, "## H100 again\n", "perfgate-h100")
    bodies = sorted(c["body"].split("\n")[1] for c in fake.comments.values())
    assert bodies == ["## A100", "## H100 again"]
    assert all(author == BOT for _, _, author in fake.writes)


def test_a_personal_tokens_identity_is_asked_and_only_its_comments_are_touched():
    fake = FakeGitHub(
        [comment(1, BOT, MARKER + "\nposted by the workflow"), comment(2, "perfgate-bot", MARKER + "\nold")],
        {"pat": "perfgate-bot"},
    )
    result = upsert_comment(fake_api(fake, "pat"), 7, BODY_SUMMARY)
    assert result.comment_id == 2 and fake.writes == [("PATCH", 2, "perfgate-bot")]
    assert fake.comments[1]["body"] == MARKER + "\nposted by the workflow"


def test_a_token_github_refuses_is_an_error_not_an_assumed_identity():
    gh = GitHubApi(
        "https://api.example.test",
        "o/r",
        "bad",
        opener=Replay(
            [{"request": {"method": "GET", "path": "/user"}, "response": {"status": 401, "body": {"message": "Bad"}}}]
        ),
    )
    with pytest.raises(PerfgateError, match="HTTP 401"):
        upsert_comment(gh, 7, BODY_SUMMARY)


@pytest.mark.parametrize("name", ["a -->", "x\ny", "", "-lead", "a" * 101, "pf<!--"])
def test_a_marker_name_that_could_end_the_html_comment_is_refused(name):
    with pytest.raises(PerfgateError, match="comment marker"):
        upsert_comment(fake_api(FakeGitHub([], {"installation": None})), 7, BODY_SUMMARY, name)


def test_whatever_comments_others_wrote_only_the_bots_own_are_ever_edited_or_deleted():
    """Property: comments by several authors, with and without the marker anywhere in them; after any number
    of runs, every comment another author wrote (or the bot wrote for another marker) is as it was, and
    the bot has exactly one perfgate comment."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    authors = st.sampled_from(["mallory", "octocat", BOT, "other-app[bot]"])
    bodies = st.sampled_from(
        [
            MARKER + "\nx",
            "LGTM",
            f"quote: {MARKER}",
            f"<!-- perfgate:perfgate-a100 -->\n`{MARKER}`",
            f" {MARKER}\nindented",
            MARKER.upper(),
            MARKER + "\r\nwindows",
        ]
    )

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(st.tuples(authors, bodies), max_size=12), st.integers(1, 3))
    def check(existing, runs):
        fake = FakeGitHub([comment(i + 1, a, b) for i, (a, b) in enumerate(existing)], {"installation": None})
        before = {i: dict(c) for i, c in fake.comments.items()}
        for n in range(runs):
            upsert_comment(fake_api(fake), 7, f"## run {n}\n")
        for cid, old in before.items():
            ours = old["user"]["login"] == BOT and old["body"].split("\n", 1)[0].rstrip("\r") == MARKER
            if not ours:
                assert fake.comments.get(cid) == old
        assert all(author == BOT for _, _, author in fake.writes)
        mine = [
            c
            for c in fake.comments.values()
            if c["user"]["login"] == BOT and c["body"].split("\n", 1)[0].rstrip("\r") == MARKER
        ]
        assert len(mine) == 1 and mine[0]["body"].endswith(f"## run {runs - 1}\n")

    check()


# --- the comment rendered by trusted code from results files ------------------------------------------------

HOSTILE = (
    "k::t[ghp_x](https://evil.example/a) ![img](https://evil.example/i.png) @octo-org/team <img src=x "
    "onerror=alert(1)> <!-- perfgate:perfgate --> #1 :+1: ``` | split\nnew line`"
)


# what a results file the CLI reads may hold: a control character in a case id is refused there (one line)
HOSTILE_PRINTABLE = HOSTILE.replace("\n", " ")


def hostile_results(tmp_path, strict=True, case_id=HOSTILE):
    doc = {
        "perfgate_json_version": 3,
        "gate": {"failed": False, "strict": strict},
        "environment": {"device_name": "<b>GPU</b> @admin"},
        "comparisons": [
            {
                "case_id": case_id,
                "metric": "median_ms [x](y)",
                "verdict": "regressed",
                "change_pct": 900.0,
                "threshold_pct": 2.5,
                "gated": True,
            },
            {
                "case_id": "ok",
                "metric": "median_ms",
                "verdict": "improved",
                "change_pct": -5.0,
                "threshold_pct": 2.5,
                "gated": True,
            },
        ],
        "findings": [{"kind": "baseline case not measured", "message": HOSTILE, "fails_strict": True}],
    }
    path = tmp_path / "perfgate.json"
    path.write_text(json.dumps(doc))
    return path


def test_the_comment_shows_every_string_from_the_results_as_code_never_as_markup(tmp_path):
    from perfgate.report.comment import read_results, render_comment

    markdown_it = pytest.importorskip("markdown_it")
    text = comment_body([render_comment(read_results(hostile_results(tmp_path)), "a" * 40)], "perfgate")
    assert text.split("\n", 1)[0] == MARKER and text.count(MARKER) == 3  # the real one, and the data's twice
    html = markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table").render(text)
    assert "<a " not in html and "<img" not in html and "<b>" not in html
    outside_code = re.sub(r"<code>.*?</code>", "", html, flags=re.S)
    for data in ("@octo-org", "@admin", "evil.example", "onerror", "ghp_x", "#1", ":+1:"):
        assert data not in outside_code, data
    assert html.count("<!--") == 1  # only the marker is an HTML comment
    rows = [line for line in text.splitlines() if line.startswith("| ") and "regressed" in line]
    assert len(rows) == 1 and rows[0].count(" | ") == 4  # a pipe or a newline in the data never adds a cell
    assert "## ❌ perfgate: gate FAILED" in text  # the rows say failed, whatever gate.failed says


def test_a_results_file_with_a_foreign_verdict_or_kind_is_refused(tmp_path):
    from perfgate.errors import ReportFileError
    from perfgate.report.comment import read_results

    path = hostile_results(tmp_path)
    doc = json.loads(path.read_text())
    doc["comparisons"][0]["verdict"] = "[passed](https://evil)"
    path.write_text(json.dumps(doc))
    with pytest.raises(ReportFileError, match="is not perfgate's"):
        read_results(path)
    doc["comparisons"][0]["verdict"] = "regressed"
    doc["findings"][0]["kind"] = "**all good**"
    path.write_text(json.dumps(doc))
    with pytest.raises(ReportFileError, match="one of perfgate's kinds"):
        read_results(path)


def test_a_huge_results_file_gives_a_comment_within_githubs_limit(tmp_path):
    from perfgate.report.comment import read_results, render_comment

    doc = {
        "gate": {"failed": True, "strict": True},
        "comparisons": [
            {
                "case_id": f"k::t[{i}]" + "x" * 300,
                "metric": "median_ms",
                "verdict": "regressed",
                "change_pct": 50.0,
                "threshold_pct": 1.0,
            }
            for i in range(3000)
        ],
        "findings": [{"kind": "inconclusive", "message": "m" * 5000, "fails_strict": True}] * 300,
    }
    path = tmp_path / "big.json"
    path.write_text(json.dumps(doc))
    body = comment_body([render_comment(read_results(path))] * 4, "perfgate")
    assert len(body) <= 65_000
    for section in body.split("### Fails the gate")[1:]:  # each GPU: the rows that fit, the rest counted
        shown = section.split("###", 1)[0].count("| `k::t[")
        left_out = int(re.search(r"… and ([\d,]+) more", section).group(1).replace(",", ""))
        assert shown + left_out == 3000 and shown > 0


def test_the_comment_command_renders_results_and_names_a_missing_one(tmp_path, monkeypatch, capsys):
    import perfgate.ci.github as github

    fake = FakeGitHub([comment(5, "mallory", MARKER + "\nforged verdict: passed")], {"installation": None})
    monkeypatch.setattr(github.urllib.request, "urlopen", fake)
    monkeypatch.setenv("GITHUB_TOKEN", "installation")
    from perfgate.cli import main

    code = main(
        [
            "ci",
            "comment",
            "--results",
            str(hostile_results(tmp_path, case_id=HOSTILE_PRINTABLE)),
            str(tmp_path / "a100.json"),
            "--commit",
            "a" * 40,
            "--repo",
            "o/r",
            "--pr",
            "7",
            "--api-url",
            "https://api.example.test",
        ]
    )
    assert code == 0, capsys.readouterr()
    (posted,) = [c for c in fake.comments.values() if c["user"]["login"] == BOT]
    assert "wrote no perfgate.json: the gate never decided" in posted["body"]
    assert f"commit `{'a' * 40}`" in posted["body"]
    assert fake.comments[5]["body"] == MARKER + "\nforged verdict: passed"


def test_ci_verdict_reads_the_gates_own_verdict(tmp_path, capsys):
    from perfgate.cli import main

    passed = tmp_path / "passed.json"
    passed.write_text(
        json.dumps(
            {"perfgate_json_version": 3, "gate": {"failed": False, "strict": False}, "comparisons": [], "findings": []}
        )
    )
    assert main(["ci", "verdict", str(passed)]) == 0
    assert main(["ci", "verdict", str(hostile_results(tmp_path, case_id=HOSTILE_PRINTABLE))]) == 1
    assert main(["ci", "verdict", str(passed), str(tmp_path / "missing.json")]) == 2
    assert "the gate never decided" in capsys.readouterr().err
