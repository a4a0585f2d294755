import sys

import pytest

from perfgate.errors import ToolFailed, ToolMissing
from perfgate.measure.profiler_registry import profiler_named
from perfgate.measure.tools import find_tool, run_tool


def test_missing_tool_names_it_and_how_to_get_it(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ToolMissing, match="ncu not found on PATH; install Nsight Compute"):
        find_tool("ncu", profiler_named("ncu").install_hint)


def test_failing_tool_keeps_the_tail_of_its_stderr():
    script = "import sys; sys.stderr.write('line1\\nline2\\nline3\\nfatal: no GPU\\n'); sys.exit(3)"
    with pytest.raises(ToolFailed) as err:
        run_tool([sys.executable, "-c", script], timeout_s=30)
    assert err.value.returncode == 3
    assert "fatal: no GPU" in str(err.value) and "line1" not in str(err.value)
    assert "line1" in err.value.stderr_tail


def test_hanging_tool_times_out_with_a_typed_error():
    with pytest.raises(ToolFailed, match="timed out") as err:
        run_tool([sys.executable, "-c", "import time; time.sleep(30)"], timeout_s=0.5)
    assert err.value.timed_out
