"""Where a case's inputs sit in GPU memory, moved every round (A/B mode).

A kernel's time depends a little on where its buffers sit (on the H100 a 12 us add moved 0.7-1% between
placements inside one process, 3.5% from the slowest to the fastest; docs/evidence/ab-noise.md). A process
keeps its test's placement for the whole case, and the caching allocator hands the next test the same
blocks, so between two processes of identical code placement is a fixed offset that no number of rounds
cancels (session I: the add's base processes differed by 4.7%, every slot alike). Moving the inputs every
round, behind a spacer of random size and as fresh copies, turns that offset into round noise, which the
rounds average out on both sides alike: the principle of Curtsinger & Berger's Stabilizer (randomised code
and heap layout for sound CPU comparisons), applied to the GPU buffers a case is handed.

Moved: CUDA tensors among the call's positional and keyword arguments, and inside a list, tuple or dict one
level down. A case keeps its placement, and says why, when moving would change what the kernel sees: two
arguments sharing storage (an in-place output, a view of another argument), a copy that would not keep the
strides (a strided view), a tensor subclass, or copies that would not fit in a quarter of the free memory.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

SPACER_STEP_BYTES = 2 * 1024 * 1024  # the caching allocator's large-segment unit
SPACER_STEPS = 32
SPACER_FINE_BYTES = 512  # the allocator's block granularity (keeps Triton's 16-byte pointer alignment)
SPACER_FINE_STEPS = 4096
SMALL_SPACER_STEPS = 2048  # up to 1 MiB in 512-byte steps: inside the allocator's small pool
FREE_MEMORY_SHARE = 0.25  # the copies (and spacer) may take at most this share of the free GPU memory


@dataclass(frozen=True)
class Placement:
    """One round's arguments: fresh copies behind a spacer, kept alive until the round has been read."""

    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    keep: tuple[Any, ...]


OnDevice = Callable[[Any], bool]  # is this tensor one to move? (CUDA tensors; tests use CPU ones)


def on_cuda(tensor: Any) -> bool:
    return bool(tensor.is_cuda)


def _one_level(value: Any, fn: Callable[[Any], Any]) -> Any:
    """fn over value, or over each item of a plain dict, list or tuple: how far down inputs are looked for."""
    if type(value) is dict:
        return {k: fn(v) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(fn(v) for v in value)
    return fn(value)


def _tensors(args: tuple[Any, ...], kwargs: Mapping[str, Any], on_device: OnDevice) -> list[Any]:
    import torch

    found: list[Any] = []

    def visit(item: Any) -> Any:
        if isinstance(item, torch.Tensor) and on_device(item):
            found.append(item)
        return item

    for value in (*args, *kwargs.values()):
        _one_level(value, visit)
    return found


def free_cuda_bytes() -> int:
    import torch

    return int(torch.cuda.mem_get_info()[0])


def why_not_movable(
    args: tuple[Any, ...], kwargs: Mapping[str, Any], free_bytes: int, on_device: OnDevice = on_cuda
) -> str | None:
    """None when the case's CUDA inputs can be moved every round; otherwise why not (one phrase)."""
    import torch

    tensors = _tensors(args, kwargs, on_device)
    if not tensors:
        return "it takes no CUDA tensor arguments"
    if any(type(t) not in (torch.Tensor, torch.nn.Parameter) for t in tensors):
        return "a tensor subclass among its arguments"
    storages = [t.untyped_storage().data_ptr() for t in tensors]
    if len(set(storages)) < len(storages):
        return "two arguments share storage"
    if any(t.clone().stride() != t.stride() for t in tensors):
        return "a copy would not keep an argument's strides"
    needed = sum(t.untyped_storage().nbytes() for t in tensors) + SPACER_STEPS * SPACER_STEP_BYTES
    if needed > FREE_MEMORY_SHARE * free_bytes:
        return f"copies of its inputs ({needed / 2**30:.1f} GiB) would not fit in a quarter of the free memory"
    return None


def moved(
    args: tuple[Any, ...], kwargs: Mapping[str, Any], rng: random.Random, on_device: OnDevice = on_cuda
) -> Placement:
    """The arguments with every CUDA tensor copied anew behind a spacer of random size."""
    import torch

    first = _tensors(args, kwargs, on_device)[0]
    size = rng.randrange(SPACER_STEPS) * SPACER_STEP_BYTES + rng.randrange(SPACER_FINE_STEPS) * SPACER_FINE_BYTES
    spacer = torch.empty(size, dtype=torch.uint8, device=first.device)
    # the caching allocator serves requests up to 1 MiB from a pool of its own (2 MiB blocks): a second,
    # small spacer shifts small inputs' copies inside it, as the first shifts large ones
    small = torch.empty(rng.randrange(SMALL_SPACER_STEPS) * SPACER_FINE_BYTES, dtype=torch.uint8, device=first.device)
    copies: list[Any] = []

    def tensor(value: Any) -> Any:
        if isinstance(value, torch.Tensor) and on_device(value):
            c = value.detach().clone().requires_grad_(value.requires_grad)
            copies.append(c)
            return c
        return value

    new_args = tuple(_one_level(a, tensor) for a in args)
    new_kwargs = {k: _one_level(v, tensor) for k, v in kwargs.items()}
    return Placement(new_args, new_kwargs, (spacer, small, *copies))
