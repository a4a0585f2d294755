"""A/B's "same code?": only identical SASS, launches, inputs and libraries on both sides skip a case; any
difference, or a record that could not read everything, is measured, and the first difference is named."""

from __future__ import annotations

from dataclasses import replace

import pytest

from perfgate.compiled.records import KernelFacts, KernelSource
from perfgate.compiled.same_code import same_code
from tests.test_static_gate import compiled, kernel

OP = KernelFacts("aten::copy_", KernelSource.LIBRARY, key="aten::copy_", detail="f32[8](1)@cuda")


def test_identical_records_are_the_same_code_and_say_what_was_compared():
    found = same_code(compiled(kernel(), OP), compiled(kernel(), OP))
    assert found.same
    assert (
        found.why
        == "1 kernel(s) with identical SASS and launches, 1 library operator(s) on identical inputs; same torch"
    )


def test_a_renamed_kernel_with_the_same_sass_and_launch_is_the_same_code():
    assert same_code(compiled(kernel()), compiled(kernel(name="_matmul_v2", key="_matmul_v2"))).same


@pytest.mark.parametrize(
    ("head", "why"),
    [
        (compiled(kernel(sass_sha="b" * 16)), "_matmul_kernel: its SASS differs"),
        (compiled(kernel(grid=(1024, 1, 1))), "_matmul_kernel: grid (512, 1, 1) / (1024, 1, 1)"),
        (compiled(kernel(launches=2)), "_matmul_kernel: launches per call 1 / 2"),
        (compiled(kernel(dynamic=1024)), "_matmul_kernel: dynamic shared memory 0 / 1024"),
        (compiled(kernel(num_stages=4)), "_matmul_kernel: stages 3 / 4"),
        (compiled(kernel(sass_sha="")), "_matmul_kernel: no SASS to compare"),
        (compiled(kernel(), kernel()), "1 kernel launch configurations in the base, 2 in the head"),
        (replace(compiled(kernel()), inputs_sha="other", inputs="bf16[8](1)@cuda"), "inputs differ"),
        (replace(compiled(kernel()), versions=(("torch", "2.12.0"),)), "libraries differ: torch 2.11.0 / 2.12.0"),
        (replace(compiled(kernel()), arch="sm_80"), "compiled for sm_90 and sm_80"),
        (replace(compiled(kernel()), notes=("cuobjdump not found",)), "the head's record is incomplete (cuobjdump"),
        (compiled(), "no kernel launch was seen"),
        (compiled(replace(OP, key="aten::copy_", name="aten::copy_", source=KernelSource.LIBRARY)), "a library kernel"),
        (None, "not recorded on both sides"),
    ],
)
def test_any_difference_is_measured_and_named(head, why):
    found = same_code(compiled(kernel()), head)
    assert not found.same
    assert why in found.why


def test_a_library_operator_on_other_inputs_is_other_code():
    found = same_code(compiled(OP), compiled(replace(OP, detail="f32[16](1)@cuda")))
    assert not found.same and "operator aten::copy_(f32[8](1)@cuda) in the base" in found.why
