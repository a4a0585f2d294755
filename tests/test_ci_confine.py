"""`perfgate ci confine` on its own (tests/test_action.py runs it inside the emulated runner): the tests' process
gets no way to the runner's command files by name, what it (or a process it leaves behind) changes there is
put back and named, and what it leaves running is killed."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from perfgate.ci.confine import REFUSED, confined_environment, run_confined

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the child subreaper is Linux's")


@pytest.fixture
def runner(tmp_path: Path) -> dict[str, str]:
    """A step's environment as the runner gives it: one command file per command in one directory."""
    files = tmp_path / "temp" / "_runner_file_commands"
    files.mkdir(parents=True)
    env = dict(os.environ)
    for variable, prefix in (
        ("GITHUB_ENV", "set_env_"),
        ("GITHUB_PATH", "add_path_"),
        ("GITHUB_OUTPUT", "set_output_"),
    ):
        (files / f"{prefix}1").write_text("")
        env[variable] = str(files / f"{prefix}1")
    (files / "step_summary_1").write_text("# before\n")
    env.update(
        GITHUB_STEP_SUMMARY=str(files / "step_summary_1"),
        RUNNER_TEMP=str(tmp_path / "temp"),
        BASH_ENV="/etc/evil",
        ACTIONS_RUNTIME_TOKEN="runtime",
        ACTIONS_ID_TOKEN_REQUEST_TOKEN="oidc",
        GITHUB_ARTIFACTS=str(files / "artifacts_1"),
        OTHER="kept",
    )
    return env


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_the_tests_see_no_command_file_no_token_and_a_temp_of_their_own(runner, tmp_path):
    env = confined_environment(runner, [Path(runner["GITHUB_ENV"]).parent], tmp_path / "private")
    assert not {"GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_ARTIFACTS", "BASH_ENV"} & set(env)
    assert not {"ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN"} & set(env)
    assert env["RUNNER_TEMP"] == str(tmp_path / "private") and env["OTHER"] == "kept"
    assert env["GITHUB_STEP_SUMMARY"] == str(tmp_path / "private" / "step_summary.md")


def test_what_the_tests_write_to_the_command_files_is_put_back_and_named(runner):
    files = Path(runner["GITHUB_ENV"]).parent
    code = (
        f"import os; d = {str(files)!r}; os.chmod(d, 0o700)\n"
        "open(d + '/set_env_1', 'a').write('BASH_ENV=/tmp/x\\nLD_PRELOAD<<EOF\\n/tmp/y.so\\nEOF\\n')\n"
        "open(d + '/set_env_2', 'w').write('PLANTED=1\\n')\n"
        "open(d + '/step_summary_1', 'w').write('forged\\n')\n"
    )
    done = run_confined(python(code), runner)
    assert done.returncode == REFUSED
    assert [line.split(":")[0] for line in done.refused] == ["set_env_2", "set_env_1", "step_summary_1"]
    assert "BASH_ENV; LD_PRELOAD" in done.refused[1]
    assert (files / "set_env_1").read_text() == "" and not (files / "set_env_2").exists()
    assert (files / "step_summary_1").read_text() == "# before\n"
    assert oct(files.stat().st_mode & 0o777) != "0o0"  # the directory's mode is back


def test_a_clean_run_keeps_its_status_and_its_summary_reaches_the_step(runner):
    code = "import os, sys; open(os.environ['GITHUB_STEP_SUMMARY'], 'a').write('## gate\\n'); sys.exit(1)"
    done = run_confined(python(code), runner)
    assert (done.returncode, done.refused) == (1, ())
    assert Path(runner["GITHUB_STEP_SUMMARY"]).read_text() == "# before\n## gate\n"


def test_a_daemon_the_tests_leave_behind_is_killed_when_they_end(runner, tmp_path):
    """A double-forked process in a session of its own, waiting to write a later step's files: reparented to
    perfgate (the child subreaper) when the tests' process exits, and killed before run_confined returns."""
    pidfile = tmp_path / "daemon.pid"
    daemon = f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(600)"
    code = (
        "import os, subprocess, sys, time\n"
        "if os.fork() == 0:\n"
        f"    subprocess.Popen([sys.executable, '-c', {daemon!r}], start_new_session=True)\n"
        f"    while not os.path.exists({str(pidfile)!r}) or not open({str(pidfile)!r}).read():\n"
        "        time.sleep(0.01)\n"
        "    os._exit(0)\n"
        "os.wait()\n"
    )
    done = run_confined(python(code), runner)
    pid = int(pidfile.read_text())
    assert done.killed >= 1 and done.subreaper
    assert not Path(f"/proc/{pid}").exists()  # killed and reaped: gone before any later step could start
