"""The scrubber masks secrets and only secrets (issue 32): 40 token formats (tests/secret_formats.py) masked in
free text, in case ids and through every field perfgate publishes (results JSON, Markdown and job summary,
annotations, the PR comment, JUnit, Bencher and github-action-benchmark files, chart names, the exported
history's run texts, the dashboard), while identifiers that are no secret (`test_tokenizer.py`,
`kv/test_key_cache.py`, hashes, kernel names) are published unchanged and ids that differ only in their
secrets stay apart."""

from __future__ import annotations

import gzip
import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from perfgate.report.scrub import Scrubber, names_a_secret, scrub_secrets, secret_env_values
from tests.helpers import perf_project
from tests.secret_formats import FORMATS, secret_part

DATA = Path(__file__).parent / "data"
ENV_SECRET = "hunter2-correct-horse-battery"  # no format: only its variable's name says it is secret
FORMAT_IDS = [name for name, _ in FORMATS]


@pytest.mark.parametrize(("name", "token"), FORMATS, ids=FORMAT_IDS)
def test_every_format_is_masked_in_free_text(name, token):
    text = f"ConnectionError: the service answered 401 for {token}, retrying"
    out = scrub_secrets(text)
    assert secret_part(name, token) not in out and "***" in out
    assert out.startswith("ConnectionError: the service answered 401 for ") and out.endswith(", retrying")


@pytest.mark.parametrize(("name", "token"), FORMATS, ids=FORMAT_IDS)
def test_every_format_is_masked_in_a_case_id_that_keeps_its_test(name, token):
    out = Scrubber(None).case_id(f"tests/test_api.py::test_call[{name}-{token}]")
    assert secret_part(name, token) not in out
    assert out.startswith(f"tests/test_api.py::test_call[{name}-") and "***" in out


def test_case_ids_that_differ_only_in_their_secrets_stay_apart():
    s = Scrubber(None)
    (_, a), (_, b) = FORMATS[0], FORMATS[1]
    ids = [s.case_id(f"t.py::test[{a}]"), s.case_id(f"t.py::test[{b}]"), s.case_id(f"t.py::test[{a}]")]
    assert ids == ["t.py::test[***]", "t.py::test[***2]", "t.py::test[***]"]


def test_a_secret_id_never_takes_the_name_of_an_id_already_published():
    s = Scrubber(None)
    (_, a), (_, b) = FORMATS[0], FORMATS[1]
    assert s.case_id("t.py::test[***]") == "t.py::test[***]"  # an id that holds no secret is never changed
    assert s.case_id(f"t.py::test[{a}]") not in ("t.py::test[***]", f"t.py::test[{a}]")
    assert s.case_id(f"t.py::test[{b}]") not in ("t.py::test[***]", s.case_id(f"t.py::test[{a}]"))


def _recorded_identifiers() -> list[str]:
    """Case ids, node ids and kernel names perfgate has recorded (gate results, baselines, child output,
    ncu exports), and the node ids of this repository's own tests."""
    import re

    names: set[str] = set()

    def walk(doc: object) -> None:
        if isinstance(doc, dict):
            for k, v in doc.items():
                if k in ("case_id", "nodeid", "kernel", "name", "group") and isinstance(v, str):
                    names.add(v)
                walk(v)
        elif isinstance(doc, list):
            for v in doc:
                walk(v)

    for path in sorted(DATA.rglob("*.json*")):
        raw = path.read_bytes()
        try:
            walk(json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw))
        except ValueError:
            continue
    for path in sorted(DATA.rglob("*.csv")):
        for line in path.read_text().splitlines()[2:]:
            names.update(c.strip('"') for c in line.split('","')[6:7])
    root = Path(__file__).resolve().parents[1]
    for path in sorted([*root.glob("tests/test_*.py"), *root.glob("kernels/tests/test_*.py")]):
        rel = path.relative_to(root).as_posix()
        names.update(f"{rel}::{t}" for t in re.findall(r"^def (test_\w+)", path.read_text(), re.M))
    return sorted(n for n in names if n)


NOT_SECRETS = [
    "tests/test_tokenizer.py::test_encode[bpe]",
    "kv/test_key_cache.py::test_lookup[4]",
    "tests/test_auth.py::test_login_speed",
    "tests/test_password_hash.py::test_argon2[t=3-m=65536]",
    "tests/test_secret_sharing.py::test_shamir[5-of-9]",
    "test_session.py::test_sessionmaker",
    "test_tokens_per_second[llama-7b-bf16-2048]",
    "test_kv_cache[keys=128-values=128]",
    "test_sort[key=median]",
    "test_apikey_parsing.py::test_parse",
    "FlashAttention2ForwardHeaddim128Causal64",  # 40 characters of a CamelCase kernel name
    "triton_cache/4e2f0d9a1c7b3e5f8a6d2c1b0e9f7a5c3d1b8e6f4a2c0e9d7b5a3f1e8c6d4b2a",  # a SHA-256 cache key
    "3f786850e387550fdab836ed7e6dc881de23001b",  # a git commit
    "8d6c7f3e-1b2a-4c5d-9e8f-0a1b2c3d4e5f",  # a UUID
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int, T2, T3)",
    "_matmul_kernel[BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3]",
    "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT",
    "ampere_sgemm_128x64_nn",
    "cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_nn_align8>",
    "test_bearer_auth.py::test_headers[basic-auth]",
    "tests/test_jwt.py::test_decode[HS256]",
    "tests/perf/test_gemm.py::test_gemm[M=4096-N=4096-K=4096-dtype=bfloat16-layout=TN]",
    "token: 12 per step",
    "see file.py:12: AssertionError",
    "per token throughput dropped",
    "sort key: median_ms",
    "Basic blocks per kernel: 12",
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_an_identifier_that_is_no_secret_is_published_unchanged(text):
    s = Scrubber(None, secret_values=secret_env_values({"API_KEY": ENV_SECRET, "PWD": "/home/runner/work/x"}))
    assert s.case_id(text) == text
    assert s.identifier(text) == text
    assert s.text(text) == text


def test_every_recorded_case_id_and_kernel_name_is_published_unchanged():
    names = _recorded_identifiers()
    assert len(names) > 1000  # the recorded runs' case ids and kernel names, this repository's tests
    s = Scrubber(None)
    assert [n for n in names if s.case_id(n) != n] == []


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("API_KEY=abc123xyz9 next", "API_KEY=*** next"),
        ('{"password": "hello world"}', '{"password": "***"}'),
        ("run --token 12ab34cd56 --verbose", "run --token *** --verbose"),
        ("Authorization: token 12ab34cd56ef, retry", "Authorization: token ***, retry"),
        ("db_passwd: s3cr3t!", "db_passwd: ***"),
        ("aws_secret_access_key = wJalrXUtnFEMI", "aws_secret_access_key = ***"),
        ("GITHUB_TOKEN=${{ secrets.GITHUB_TOKEN }}", "GITHUB_TOKEN=${{ secrets.GITHUB_TOKEN }}"),  # a placeholder
        ("password=$DB_PASSWORD", "password=$DB_PASSWORD"),
    ],
)
def test_the_value_after_a_secret_named_key_is_masked_in_free_text(text, masked):
    assert scrub_secrets(text) == masked


def test_secret_names_are_told_by_their_words():
    assert all(map(names_a_secret, ["API_KEY", "apiKey", "db.password", "x-auth-token", "SECRET", "access_key"]))
    assert not any(map(names_a_secret, ["tokenizer", "key_cache", "sort_key", "monkey", "keyboard", "test_key.py"]))


def test_secret_values_of_the_environment_include_githubs_own():
    env = {
        "GITHUB_TOKEN": "ghs_" + "x1" * 18,
        "ACTIONS_RUNTIME_TOKEN": "eyJ0eXAiOiJKV1Qi-runtime",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "request-token-value",
        "INPUT_GITHUB-TOKEN": "input-token-value",  # an action's `github-token:` input
        "HF_TOKEN": "hf_value_from_env",
        "DB_PASSWORD": "p4ssw0rd-long",
        "MY_SECRET_KEY": "k3y-of-mine-9",
        "PWD": "/home/runner/work/repo",  # the working directory: no secret
        "SSH_AUTH_SOCK": "/tmp/ssh-abc/agent.1",
        "TOKENIZERS_PARALLELISM": "false-false",  # "tokenizers" is no secret word
        "KEYBOARD_LAYOUT": "us-international",
        "SHORT_TOKEN": "1",
        "PLACEHOLDER_TOKEN": "${GITHUB_TOKEN}",
    }
    assert set(secret_env_values(env)) == {
        env[k]
        for k in (
            "GITHUB_TOKEN",
            "ACTIONS_RUNTIME_TOKEN",
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
            "INPUT_GITHUB-TOKEN",
            "HF_TOKEN",
            "DB_PASSWORD",
            "MY_SECRET_KEY",
        )
    }


def test_a_token_cut_by_a_length_limit_is_not_published_in_part():
    _, token = FORMATS[0]
    cut = "skipped: the server said " + token[:20] + "…"
    assert token[:20] not in scrub_secrets(cut)


# --- end to end: every published field ---------------------------------------------------------------------

TOKENS = [t for _, t in FORMATS]
PERF_TEST = f"""
import os
import pytest
from perfgate.measure import clock

TOKENS = {TOKENS!r}
NAMES = {FORMAT_IDS!r}


@pytest.mark.parametrize("token", TOKENS, ids=[f"{{n}}-{{t}}" for n, t in zip(NAMES, TOKENS)])
def test_call(perfgate, token):
    perfgate(clock.current().sleep, 0.001)


@pytest.mark.parametrize("token", TOKENS, ids=NAMES)
def test_skipped(perfgate, token):
    pytest.skip(f"the service answered 401 for {{token}}")


def test_echoes_the_environment(perfgate):
    assert os.environ["PERFGATE_TEST_API_KEY"] == "x", os.environ["PERFGATE_TEST_API_KEY"]
"""
PYPROJECT = """
[tool.perfgate]
warmup_ms = 1
min_samples = 5
max_samples = 8
budget_ms = 20
confirm_runs = 0
"""
BRANCH = "feature/" + FORMATS[0][1]  # a branch named with a token: the run's git_branch


def _git(path: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=path, check=True, capture_output=True, timeout=30)


@pytest.fixture
def published(pytester, monkeypatch, tmp_path_factory):
    """One project measured twice (a baseline, then the gate with every output), then the trusted job's
    commands; returns {output name: its text}."""
    from perfgate.cli import main
    from perfgate.cli.ci import _rendered
    from perfgate.report.scrub import scrub_rendered

    project = perf_project(pytester, monkeypatch, PERF_TEST, PYPROJECT, PERFGATE_TEST_API_KEY=ENV_SECRET)
    _git(project.path, "init", "-q", "-b", BRANCH)
    _git(project.path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "x")
    update = ("--perfgate-update-baseline", "--perfgate-reason", "r", "-k", "not echoes")
    assert project.runpytest("--perfgate", "-p", "no:cacheprovider", *update).ret == 0
    step = project.path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    outputs = {
        "--perfgate-json": "out.json",
        "--perfgate-summary": "s.md",
        "--perfgate-junit-xml": "junit.xml",
        "--perfgate-bencher-json": "bencher.json",
        "--perfgate-benchmark-json": "bench.json",
        "--perfgate-benchmark-speedup-json": "speedup.json",
        "--perfgate-report-dir": "charts",
    }
    flags = [part for pair in outputs.items() for part in pair]
    result = project.runpytest("--perfgate", "-p", "no:cacheprovider", "--perfgate-full-table", *flags)
    texts = {name: (project.path / name).read_text() for name in outputs.values() if name != "charts"}
    texts["job summary"] = step.read_text()
    texts["terminal section"] = result.stdout.str().split("= perfgate =", 1)[1].split("short test summary")[0]
    texts["chart names"] = "\n".join(p.name for p in (project.path / "charts").iterdir())
    out = project.path / "out.json"
    texts["PR comment"] = "\n".join(scrub_rendered(s, os.environ) for s in _rendered([out], ""))
    db, up = project.path / ".perfgate" / "history.db", project.path / "up.db"
    assert main(["db", "export", str(up), "--db", str(db), "--results", str(out)]) == 0
    texts["exported history"] = "\n".join(sqlite3.connect(up).iterdump())
    assert main(["report", "--html", str(project.path / "site"), "--db", str(db)]) == 0
    site = sorted(p for p in (project.path / "site").rglob("*") if p.is_file() and "assets" not in p.parts)
    texts["dashboard"] = "\n".join([p.name for p in site] + [p.read_text() for p in site])
    return texts, project


def test_no_format_reaches_any_published_field(published, capsys):
    from perfgate.cli import main

    texts, project = published
    assert main(["ci", "annotate", str(project.path / "out.json")]) == 0
    texts["annotations"] = capsys.readouterr().out
    # a results file another job wrote, holding raw tokens: the trusted job's annotations and comment mask them
    forged = json.loads(texts["out.json"])
    forged["findings"][0]["message"] = " ".join(TOKENS) + " " + ENV_SECRET
    forged["findings"][0].update(kind="baseline not checked against the base ref", fails_strict=True)
    (project.path / "forged.json").write_text(json.dumps(forged))
    assert main(["ci", "annotate", str(project.path / "forged.json")]) == 0
    texts["annotations of a forged file"] = capsys.readouterr().out
    assert "***" in texts["annotations of a forged file"]
    leaks = [
        (field, name)
        for field, text in texts.items()
        for name, token in (*FORMATS, ("environment", ENV_SECRET), ("branch", BRANCH))
        if secret_part(name, token) in text
    ]
    assert leaks == []
    for field in ("out.json", "s.md", "exported history", "dashboard", "junit.xml", "bencher.json"):
        assert "test_call[github-pat-***" in texts[field], field
    assert "feature/***" in texts["exported history"]


def test_published_case_ids_keep_their_tests_apart(published):
    texts, _ = published
    doc = json.loads(texts["out.json"])
    ids = [c["case_id"] for c in doc["cases"]]
    assert len(ids) == len(set(ids)) == len(FORMATS)
    assert {i.split("[", 1)[1].split("-", 1)[0] for i in ids} <= {n.split("-", 1)[0] for n in FORMAT_IDS}
    for name in FORMAT_IDS:
        assert any(i.startswith(f"test_perf.py::test_call[{name}-") for i in ids), name
