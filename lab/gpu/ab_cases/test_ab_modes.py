"""A/B cases in both process modes (lab/gpu/ab_modes.py): each case of modes_cases.py in slots whose injected
slowdown the *commit* declares (inject.json beside this file): {"<case>-<slot>": {"cycles": N}} runs a GPU spin of
N cycles after the work (measured once on the GPU to make the case 2% slower), {"<case>-<slot>": {"seconds": s}}
a host busy wait (the plumbing without a GPU). A slot the commit does not inject spins 0 cycles: an A/A
comparison inside the same run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from modes_cases import CASES, CUDA, host_spin_after, spin_after

HERE = Path(__file__).parent
INJECT = json.loads((HERE / "inject.json").read_text())
NAMES = tuple(json.loads((HERE / "names.json").read_text()))
SLOTS = tuple(json.loads((HERE / "slots.json").read_text()))


@pytest.mark.parametrize("slot", SLOTS)
@pytest.mark.parametrize("case", NAMES)
def test_case(perfgate, case, slot):
    fn, args, reference = CASES[case]()
    inject = INJECT.get(f"{case}-{slot}", {})
    if CUDA:
        call = spin_after(fn, int(inject.get("cycles", 0)))
    else:
        call = host_spin_after(fn, float(inject.get("seconds", 0.0)))
    perfgate.measure(call, args, reference=reference)
