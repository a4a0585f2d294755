"""perfgate: a performance gate for GPU kernels.

Importing perfgate does nothing costly: no torch, no GPU, no subprocess, no pandas. Two thin adapters,
`perfgate.pytest_plugin` and `perfgate.cli`, sit over the library: config -> measure -> parse/analyze ->
stats -> store -> baseline -> gate (decision, compare, findings; `perfgate.gate.run` is the one
orchestration both adapters call) -> report -> ci.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("perfgate")
    except metadata.PackageNotFoundError:  # running from a source tree that was never installed
        return "0.2.0"


def __getattr__(name: str) -> Any:
    # `perfgate.__version__` reads the installed metadata on first use, not at import (importlib.metadata
    # costs ~40 ms, paid by every pytest session that loads the plugin)
    if name == "__version__":
        return _version()
    raise AttributeError(f"module 'perfgate' has no attribute {name!r}")


def history(
    db: str | Path | None = None,
    case: str | None = None,
    last: int | None = None,
    rootdir: str | Path | None = None,
    case_regex: str | None = None,
    kind: str = "",
) -> Any:
    """The history as a pandas DataFrame: one row per run, or with `case` (a pattern on case ids where `*`
    and `?` are wildcards and brackets match themselves) or `case_regex` (a regular expression) one row
    per run and matching case, oldest first. Columns include the run's kind, git_dirty and, per case,
    its verdict. `db` defaults to the project's configured history. `kind`: "" every run but A/B mode's
    (its two sides share a start time and measure a pull request, not the branch), "ab" A/B runs only,
    "all", or one kind ("gate", "calibration", "import").

    >>> import perfgate
    >>> perfgate.history(case="*softmax*", last=30).pivot(index="started_at", columns="case_id", values="median_ms")
    """
    from perfgate.config.project import project_settings
    from perfgate.store.query import history_frame

    path = Path(db) if db is not None else project_settings(Path(rootdir) if rootdir else None).db_path
    return history_frame(path, case, last, case_regex, kind)
