"""The pytest end of a shared A/B host (perfgate/ab/host/): every side a pytest session in a thread of
one process. Started by perfgate.ab.workers.SHARED_BOOT."""

from __future__ import annotations

import pytest

from perfgate.ab.host.process import serve_sides, worker_end
from perfgate.ab.protocol import WorkerEnd


def main(spec: str) -> int:
    return serve_sides(spec, pytest.main)


def this_worker_end(value: str) -> WorkerEnd:
    """The worker's pipes; in a shared host, the coordinator closing them ends this side's session."""
    return worker_end(value, _end_of_side)


def _end_of_side() -> None:
    pytest.exit("perfgate: A/B: the coordinator ended this side", returncode=3)
