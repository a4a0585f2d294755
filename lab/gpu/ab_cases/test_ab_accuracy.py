"""A/B accuracy cases: kinds of GPU work the bundled suite does not tune for, each in several slots whose
injected slowdown the *commit* declares (inject.json beside this file: {"<case>-<slot>": percent}).

The base commit declares nothing (every spin runs 0 cycles); an injected head commit declares, say,
{"cublas_matmul-2a": 2.0}: that case in that slot runs a GPU spin of 2% of its own time after the work
(scripts/accuracy/test_accuracy_cases.py's mechanism, calibrated in each process), or
{"cublas_matmul-2a": {"cycles": N}}: a spin of N cycles, the same in every process (calibrated once by
ab_accuracy.py --fixed-spin; calibrated in each process, "2%" was 1.7-3.9% from one process to the next).
A slot a commit does not inject is an A/A comparison inside the same run. Copied into a throwaway project
by ab_accuracy.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from accuracy_cases import CASES, CUDA, _gpu_spin, _host_spin, spin_after

INJECT = json.loads((Path(__file__).with_name("inject.json")).read_text())
NAMES = tuple(json.loads((Path(__file__).with_name("names.json")).read_text()))
SLOTS = tuple(json.loads((Path(__file__).with_name("slots.json")).read_text()))


@pytest.mark.parametrize("slot", SLOTS)
@pytest.mark.parametrize("case", NAMES)
def test_case(perfgate, case, slot):
    fn, args, reference = CASES[case]()
    inject = INJECT.get(f"{case}-{slot}", 0.0)
    if isinstance(inject, dict):  # {"cycles": N}: the same spin in every process (ab_accuracy.py --fixed-spin)
        call = spin_after(fn, int(inject["cycles"]))
    else:
        call = (_gpu_spin if CUDA else _host_spin)(fn, args, float(inject))
    perfgate.measure(call, args, reference=reference)
