"""Shared fixtures for perfgate's own (GPU-free) tests."""

import gzip
import importlib
import pkgutil
import shutil
from pathlib import Path

import pytest

# pytester's in-process runs drop the modules a run imported when it ends; native extensions (torch,
# numpy) cannot be imported twice in one process, so they are imported once, before any run.
# perfgate's own modules are imported lazily by the plugin; importing them once also spares every
# in-process run their assertion rewriting (pytest rewrites a pytest11 plugin's whole package).
_PRELOAD = (
    "numpy",
    "pandas",
    "torch",
    "matplotlib.figure",
    "matplotlib.backends.backend_agg",
    "yaml",
    "hypothesis",
    "_hypothesis_pytestplugin",
    "xdist",
    "xdist.plugin",
    "pytest_benchmark.plugin",
    "psycopg",  # a history on the test server: psycopg's binary core raises its first import's error classes
    "sqlalchemy.dialects.postgresql.psycopg",
)


def pytest_configure(config):
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        return  # the -n controller runs no test: only its workers need the modules (~5 s of CPU)
    for module in _PRELOAD:
        try:
            importlib.import_module(module)
        except ImportError:
            pass
    import perfgate

    for info in pkgutil.walk_packages(perfgate.__path__, "perfgate."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)


DATA = Path(__file__).parent / "data"
# pytest-benchmark's own fixture tests: run under --perfgate by tests/test_pytest_benchmark_upstream.py only
collect_ignore = ["pytest_benchmark_upstream"]
H100 = DATA / "h100"


@pytest.fixture
def h100_data() -> Path:
    return H100


@pytest.fixture
def ncu_rep(tmp_path) -> Path:
    """The recorded .ncu-rep (stored gzipped: 12 MB raw, 1.7 MB compressed)."""
    out = tmp_path / "perfgate-ncu.ncu-rep"
    with gzip.open(H100 / "perfgate-ncu.ncu-rep.gz", "rb") as src, out.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


@pytest.fixture(autouse=True)
def _no_pull_request_base(monkeypatch):
    """On a pull request's CI run GITHUB_BASE_REF is set: every gate a test runs would check its baseline against
    origin/<base> (baseline/base_ref.py). Tests that want that check set it themselves."""
    monkeypatch.delenv("GITHUB_BASE_REF", raising=False)


@pytest.fixture(params=["sqlite", "postgresql"])
def history_target(request, tmp_path):
    """A history on each backend: a SQLite file, or an empty schema on the test server (skipped, with the
    reason, where PERFGATE_TEST_PG_URL names none that answers)."""
    from tests.backends import server_history, server_unavailable

    if request.param == "sqlite":
        yield tmp_path / "history.db"
        return
    why = server_unavailable()
    if why:
        pytest.skip(why)
    with server_history() as url:
        yield url


def pytest_terminal_summary(terminalreporter):
    """Say which history backends the backend-parametrized tests (`history_target`) ran on: CI prints it."""
    if hasattr(terminalreporter.config, "workerinput"):
        return
    from tests.backends import server_unavailable

    why = server_unavailable()
    terminalreporter.write_line(
        f"perfgate history backends: {'sqlite and postgresql' if not why else f'sqlite only ({why})'}"
    )
