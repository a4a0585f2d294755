"""A pytest plugin that slows cattrs' `structure` and `unstructure` by a busy loop of a chosen length per
benchmark case: the injected regression of scripts/pytest_benchmark_suite.py.

Loaded with `-p cattrs_slowdown` through PYTEST_ADDOPTS (so the fresh processes perfgate measures in load
it too), with this directory on PYTHONPATH; CATTRS_SLOWDOWN_JSON names a file {nodeid: loop iterations}.
The replacement methods are cattrs' own one-line bodies followed by the loop (no extra call frame). How
many iterations make +30% is measured per case by the script (nested structures call these methods
once per element, so the cost of one iteration differs from case to case).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from cattrs.converters import BaseConverter

LOOPS = range(0)  # the busy loop of the test now running
LOOPS_KEY = pytest.StashKey[dict[str, range]]()


def _unstructure(self: Any, obj: Any, unstructure_as: Any = None) -> Any:
    result = self._unstructure_func.dispatch(obj.__class__ if unstructure_as is None else unstructure_as)(obj)
    for _ in LOOPS:
        pass
    return result


def _structure(self: Any, obj: Any, cl: Any) -> Any:
    result = self._structure_func.dispatch(cl)(obj, cl)
    for _ in LOOPS:
        pass
    return result


def pytest_configure(config: pytest.Config) -> None:
    table = json.loads(Path(os.environ["CATTRS_SLOWDOWN_JSON"]).read_text())
    config.stash[LOOPS_KEY] = {nodeid: range(int(n)) for nodeid, n in table.items()}
    BaseConverter.unstructure = _unstructure  # type: ignore[method-assign]
    BaseConverter.structure = _structure  # type: ignore[method-assign]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    global LOOPS  # noqa: PLW0603 (a module global is the cheapest lookup inside the replaced methods)
    LOOPS = item.config.stash[LOOPS_KEY].get(item.nodeid, range(0))
