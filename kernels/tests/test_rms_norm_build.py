"""The CUDA extension's build is kept by content: any checkout of the same sources (an A/B run's base and head
worktrees) finds the same build, an edit or another architecture builds anew, and a kept build is imported
without rebuilding. No GPU and no compiler: the build itself is a stand-in here."""

import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch")

from kernels import rms_norm_kernel as rk


@pytest.fixture
def sources(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFGATE_KERNEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0")
    checkout = tmp_path / "head" / "csrc"
    shutil.copytree(rk.CSRC, checkout)
    monkeypatch.setattr(rk, "CSRC", checkout)
    return checkout


def test_two_checkouts_of_the_same_sources_share_one_build(sources, tmp_path, monkeypatch):
    head = rk.cache_dir()
    base = tmp_path / "base" / "csrc"
    shutil.copytree(sources, base)
    monkeypatch.setattr(rk, "CSRC", base)
    assert rk.cache_dir() == head


def test_an_edited_header_or_another_architecture_is_another_build(sources, monkeypatch):
    before = rk.cache_dir()
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0a")
    assert rk.cache_dir() != before
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0")
    header = sources / "rms_norm_kernel.cuh"
    header.write_text(header.read_text() + "\n// edited\n")
    assert rk.cache_dir() != before


def test_a_kept_build_is_used_as_it_is_and_a_missing_one_built_once(sources, monkeypatch):
    builds: list[Path] = []

    def stand_in(where: Path) -> None:
        builds.append(where)
        (where / f"{rk.NAME}.so").write_bytes(b"\x7fELF")

    monkeypatch.setattr(rk, "_build", stand_in)
    first = rk.build()
    assert first == rk.cache_dir() / "perfgate_rms_norm.so" and builds == [rk.cache_dir()]
    assert rk.build() == first and len(builds) == 1
