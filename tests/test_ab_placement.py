"""A/B mode moves a case's GPU inputs every round (perfgate/ab/placement.py): fresh copies with the same
values, shapes and strides behind a spacer, and a plain reason when moving would change what the kernel
sees. CPU tensors stand in for CUDA ones (the device test is a parameter)."""

from __future__ import annotations

import random

import pytest

torch = pytest.importorskip("torch")

from perfgate.ab.placement import moved, why_not_movable  # noqa: E402

ANY = lambda t: True  # noqa: E731 (CPU tensors stand in for CUDA ones)
PLENTY = 1 << 40
SHARED = torch.randn(8)


def test_every_tensor_argument_is_copied_anew_with_its_values_and_strides():
    a, b = torch.randn(64, 32), torch.randn(32, 64).t()  # b: a transposed (dense) view
    weight = torch.nn.Parameter(torch.randn(8))
    p = moved((a, [b, 3], "x"), {"w": weight, "eps": 1e-5}, random.Random(0), ANY)
    new_a, (new_b, three), x = p.args
    assert torch.equal(new_a, a) and new_a.data_ptr() != a.data_ptr()
    assert torch.equal(new_b, b) and new_b.stride() == b.stride() and new_b.data_ptr() != b.data_ptr()
    assert (three, x, p.kwargs["eps"]) == (3, "x", 1e-5)
    assert torch.equal(p.kwargs["w"], weight) and p.kwargs["w"].requires_grad
    assert len(p.keep) == 5  # the two spacers and three copies stay alive for the round


def test_the_spacer_varies_from_round_to_round():
    rng, x = random.Random(1), torch.randn(16)
    spacers = [moved((x,), {}, rng, ANY).keep[:2] for _ in range(20)]
    for sizes in ({large.numel() for large, _ in spacers}, {small.numel() for _, small in spacers}):
        assert len(sizes) > 10 and all(s % 512 == 0 for s in sizes)
    assert all(small.numel() < 1 << 20 for _, small in spacers)  # inside the small pool


@pytest.mark.parametrize(
    ("args", "why"),
    [
        ((), "no CUDA tensor arguments"),
        ((torch.randn(8, 8)[:, ::2],), "would not keep an argument's strides"),
        ((SHARED, SHARED[1:]), "two arguments share storage"),
    ],
)
def test_a_case_keeps_its_place_when_moving_would_change_what_the_kernel_sees(args, why):
    assert why in why_not_movable(args, {}, PLENTY, ANY)


def test_inputs_too_large_for_a_quarter_of_the_free_memory_stay_put():
    x = torch.empty(1 << 20, dtype=torch.uint8)
    assert "would not fit in a quarter of the free memory" in why_not_movable((x,), {}, 4 << 20, ANY)
    assert why_not_movable((x,), {}, PLENTY, ANY) is None


def test_a_tensor_subclass_is_not_copied_apart():
    class Tagged(torch.Tensor):
        pass

    x = torch.randn(4).as_subclass(Tagged)
    assert "subclass" in why_not_movable((x,), {}, PLENTY, ANY)


def test_tensors_in_a_dict_argument_are_moved_and_checked_too():
    w = torch.randn(8)
    p = moved((), {"params": {"w": w, "eps": 1e-5}}, random.Random(2), ANY)
    assert torch.equal(p.kwargs["params"]["w"], w) and p.kwargs["params"]["w"].data_ptr() != w.data_ptr()
    assert "share storage" in why_not_movable((w,), {"params": {"w": w[2:]}}, PLENTY, ANY)
