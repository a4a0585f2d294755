"""Secrets masked in every output, and the uploaded history scrubbed (issue 23): a GitHub token in a parametrize
id, an environment secret echoed by an assertion and `sk-live-...` keys reach none of perfgate's outputs (JSON,
Markdown summary, terminal section, the history `perfgate db export` uploads); the hostname, absolute paths and
raw reasons leave the machine only with --publish-host."""

from __future__ import annotations

import socket
import sqlite3

import pytest

from perfgate.report.scrub import Scrubber, scrub_secrets, secret_env_values
from tests.helpers import gate_json, perf_project, results_json

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
ENV_SECRET = "hunter2-correct-horse-battery"  # no pattern knows it: only its variable's name says it is secret
PERF_TEST = f'''
import os
import pytest
from perfgate.measure import clock


@pytest.mark.parametrize("token", ["{TOKEN}"])
def test_with_token(perfgate, token):
    perfgate(clock.current().sleep, 0.001)


def test_echoes_a_secret(perfgate):
    assert os.environ["PERFGATE_TEST_API_KEY"] == "something else", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
'''
PYPROJECT = """
[tool.perfgate]
warmup_ms = 1
min_samples = 5
max_samples = 8
budget_ms = 20
confirm_runs = 0
"""


@pytest.mark.parametrize(
    "text",
    [
        f"k::t[{TOKEN}]",
        "key sk-live-abcdefgh12345678",
        "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
        "rk_test_abcdefghijkl",
        "OPENAI sk-proj-" + "x" * 30,
        "sk-" + "a1B2c3D4e5F6g7H8i9J0" * 2,  # an OpenAI-style key (not a run of one letter: a placeholder)
    ],
)
def test_token_shapes_are_masked(text):
    assert scrub_secrets(text).count("***") == 1, scrub_secrets(text)


def test_secret_named_variables_are_masked_wherever_their_value_appears():
    env = {
        "API_KEY": ENV_SECRET,
        "DB_PASSWORD": "p4ssw0rd-long",
        "HOME": "/home/runner",
        "SHORT_TOKEN": "1",
        "PATH": "/usr/bin",
    }
    values = secret_env_values(env)
    assert set(values) == {ENV_SECRET, "p4ssw0rd-long"}  # short values and ordinary variables are not masked
    scrubber = Scrubber(None, secret_values=values)
    assert scrubber.text(f"AssertionError: assert '{ENV_SECRET}' == 'x'") == "AssertionError: assert '***' == 'x'"
    assert scrubber.case_id(f"t::k[{ENV_SECRET}]") == "t::k[***]"


@pytest.fixture
def project(pytester, monkeypatch):
    return perf_project(pytester, monkeypatch, PERF_TEST, PYPROJECT, PERFGATE_TEST_API_KEY=ENV_SECRET)


def _perfgate_section(result) -> str:
    """perfgate's own section, up to pytest's next one (the short test summary is pytest's: with CI=true it
    quotes failing assertions in full, secrets the test put in its own assert included)."""
    out = result.stdout.str()
    start = out.index("= perfgate =")
    end = out.find("\n=", out.index("\n", start))
    return out[start : end if end != -1 else len(out)]


def test_no_secret_reaches_json_summary_or_the_terminal_section(project):
    result = gate_json(project, "--perfgate-summary", "s.md", "--perfgate-full-table")
    published = [
        (project.path / "out.json").read_text(),
        (project.path / "s.md").read_text(),
        _perfgate_section(result),
    ]
    for text in published:
        for secret in (TOKEN, ENV_SECRET, "sk_live_4eC39HqLyjWDarjtT1zdp7dc"):
            assert secret not in text
    doc = results_json(project)
    assert any(c["case_id"] == "test_perf.py::test_with_token[***]" for c in doc["cases"])


def test_the_uploaded_history_is_scrubbed_and_keeps_the_host_only_when_asked(project, capsys, monkeypatch):
    from perfgate.cli import main

    gate_json(project)
    db, results = project.path / ".perfgate" / "history.db", project.path / "out.json"
    local = sqlite3.connect(db).execute("select hostname, argv from runs").fetchone()
    assert local[0] == socket.gethostname()  # the machine's own history keeps everything
    monkeypatch.setenv("PERFGATE_TEST_API_KEY", ENV_SECRET)
    assert main(["db", "export", str(project.path / "up.db"), "--db", str(db), "--results", str(results)]) == 0
    up = sqlite3.connect(project.path / "up.db")
    hostname, argv = up.execute("select hostname, argv from runs").fetchone()
    assert hostname in ("", None) and str(project.path) not in (argv or "")
    dump = "\n".join(up.iterdump())
    for secret in (TOKEN, ENV_SECRET, socket.gethostname()):
        assert secret not in dump
    assert (
        main(
            [
                "db",
                "export",
                str(project.path / "host.db"),
                "--db",
                str(db),
                "--results",
                str(results),
                "--publish-host",
            ]
        )
        == 0
    )
    kept = sqlite3.connect(project.path / "host.db").execute("select hostname from runs").fetchone()[0]
    assert kept == socket.gethostname()
    capsys.readouterr()
