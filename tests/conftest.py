"""Shared fixtures for perfgate's own (GPU-free) tests."""

import gzip
import shutil
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
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
