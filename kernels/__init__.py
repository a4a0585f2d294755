"""The kernel suite perfgate gates: Triton (and one CUDA C++) kernels, each beside a torch reference.

Kernels are imported lazily so `import kernels` works without triton or a GPU. Launch settings are
explicit arguments; `KERNELS_DETUNE=name[,name...]` (or `all`) makes the named kernels pick a
deliberately bad configuration, to demonstrate that the gate catches a slowdown.
"""

from importlib import import_module

_WHERE = {
    "vector_add": "kernels.elementwise",
    "mul_add": "kernels.elementwise",
    "fused_add_gelu": "kernels.elementwise",
    "softmax": "kernels.softmax_kernel",
    "layer_norm": "kernels.layer_norm_kernel",
    "matmul": "kernels.matmul_kernel",
    "flash_attention": "kernels.flash_attention_kernel",
    "rms_norm": "kernels.rms_norm_kernel",
}

__all__ = [
    "flash_attention",
    "fused_add_gelu",
    "layer_norm",
    "matmul",
    "mul_add",
    "rms_norm",
    "softmax",
    "vector_add",
]  # the keys of _WHERE (a literal: linters and IDEs read it)


def __getattr__(name):
    if name in _WHERE:
        return getattr(import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'kernels' has no attribute {name!r}")
