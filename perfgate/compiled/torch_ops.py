"""The torch operators a call runs (ATen, cuBLAS, cuDNN behind them), seen by a dispatch mode for one call.

What they launch is the library's code: known by its name, its inputs and the library's version, not by its
SASS. Operators that only allocate or re-view memory launch nothing and are left out.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from perfgate.compiled.inputs import describe

# allocation, views and metadata: no kernel behind them
NO_KERNEL = frozenset(
    {
        "empty",
        "empty_like",
        "empty_strided",
        "new_empty",
        "new_empty_strided",
        "view",
        "_unsafe_view",
        "as_strided",
        "alias",
        "detach",
        "t",
        "transpose",
        "permute",
        "expand",
        "slice",
        "select",
        "unsqueeze",
        "squeeze",
        "split",
        "split_with_sizes",
        "unbind",
        "lift_fresh",
        "is_same_size",
        "_to_copy_meta",
        "set_",
        "resize_",
        "record_stream",
        "_local_scalar_dense",
    }
)


class TorchOps:
    """(operator, its inputs) for every operator run inside `watching()`, in order."""

    def __init__(self) -> None:
        self.ops: list[tuple[str, str]] = []

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        if "torch" not in sys.modules:  # code that never imported torch runs no torch operator
            yield
            return
        from torch.utils._python_dispatch import TorchDispatchMode

        ops = self.ops

        class _Watch(TorchDispatchMode):
            @classmethod
            def _should_skip_dynamo(cls) -> bool:
                # torch wraps a mode's __torch_dispatch__ in torch._disable_dynamo unless the mode opts out, and
                # that wrapper imports torch._dynamo on its first call: 7 s of the first recorded case on the
                # H100 (docs/compiled-kernels.md). This mode never runs under torch.compile.
                return False

            def __torch_dispatch__(
                self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
            ) -> Any:
                kwargs = kwargs or {}
                name = str(getattr(func, "_schema", func).name) if hasattr(func, "_schema") else str(func)
                if name.rsplit("::", 1)[-1] not in NO_KERNEL:
                    ops.append((name + _overload(func), describe(args, kwargs)[0]))
                return func(*args, **kwargs)

        with _Watch():  # type: ignore[no-untyped-call]
            yield


def _overload(func: Any) -> str:
    overload = str(getattr(func, "_overloadname", "") or "")
    return f".{overload}" if overload and overload != "default" else ""
