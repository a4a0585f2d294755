"""The options of the decision: thresholds, the false-alarm budget, confirmation, the noise window, the
ceiling, the speedup target, autotune pins; and of the compiled kernels and the static gate (gate/static.py,
docs/compiled-kernels.md): rows of the one option table (options.py).
"""

from __future__ import annotations

from perfgate.compiled.records import StaticPolicy
from perfgate.config import validate as v
from perfgate.config.option import Arg, Option
from perfgate.model import GatedMeasure

DECISION: tuple[Option, ...] = (
    # --- the decision -----------------------------------------------------------------------------------
    Option(
        "threshold_pct",
        "time threshold (%) for cases of an uncalibrated baseline; set per case (marker, "
        "override) it also floors a calibrated case",
        v.THRESHOLD,
        key="threshold_pct",
        marker=True,
    ),
    Option(
        "min_effect_pct",
        "a change smaller than this (%) never regresses, however certain",
        v.MIN_EFFECT,
        key="min_effect_pct",
    ),
    Option(
        "false_alarm_pct",
        "the false-alarm budget of a whole run (%), divided over its gated tests (baseline and A/B "
        "mode alike); for noise of any shape it holds only with enough reference processes, which "
        "perfgate calibrate names (docs/decision-rule.md)",
        v.FALSE_ALARM,
        key="false_alarm_pct",
    ),
    Option(
        "confirm_runs",
        "fresh processes a suspect case must also fail in before the gate fails (0: decide on "
        "one process, at a stricter threshold)",
        v.integer(0, 5),
        key="confirm_runs",
        flag="--perfgate-confirm-runs",
        arg=Arg.INT,
        metavar="N",
    ),
    Option(
        "noise_window",
        "recent passing runs on noise_branch whose process values join the calibration's in "
        "the noise (0: the calibration alone)",
        v.integer(0, 1000),
        key="noise_window",
    ),
    Option(
        "noise_branch",
        "the branch whose passing runs feed the noise window (default: the repository's default branch, "
        'origin\'s HEAD, else the one of main/master that exists; "*": any branch)',
        v.nonempty_text,
        key="noise_branch",
    ),
    Option(
        "gate_time_with_reference",
        "gate a case's time as well as its speedup when it has a reference",
        v.boolean,
        key="gate_time_with_reference",
    ),
    Option(
        "gated_measure",
        "what a case without a reference is gated on: 'time', 'cycles' (time x the SM clock each sample ran at: "
        "steady under the power cap for compute-bound kernels) or 'auto' (cycles when the declared flops and "
        "bytes_moved put the case above the GPU's ridge point, or ncu finds it compute-bound; time otherwise)",
        v.choice(GatedMeasure),
        key="gated_measure",
        marker=True,
    ),
    Option(
        "noise_floor_pct",
        "the smallest between-process noise (%) a case is credited with (default 0.1 for "
        "CUDA events, 0.5 for the host clock)",
        v.number(0.0, 50.0),
        key="noise_floor_pct",
    ),
    Option(
        "ceiling_pct",
        "strict mode fails a case when any of its processes is this much slower (%) than the "
        "baseline, whatever its noise or its other processes say",
        v.CEILING,
        key="ceiling_pct",
    ),
    Option(
        "min_speedup",
        "fail a case with a reference when its speedup's upper bound is below this",
        v.SPEEDUP,
        key="min_speedup",
        marker=True,
    ),
    Option(
        "pin_autotune",
        "hold Triton autotuners to the configs the baseline recorded",
        v.boolean,
        key="pin_autotune",
        flag="--perfgate-pin-autotune",
        arg=Arg.FLAG,
    ),
    # --- the compiled kernels and the static gate (gate/static.py, docs/compiled-kernels.md) -------------------
    Option(
        "compiled_kernels",
        "record each case's compiled kernels (registers, spills, shared memory, launch, theoretical occupancy, "
        "SASS hash) and gate on them (--perfgate-no-compiled-kernels: neither)",
        v.boolean,
        key="compiled_kernels",
        flag="--perfgate-no-compiled-kernels",
        arg=Arg.NO_FLAG,
    ),
    Option(
        "static_registers",
        "static gate: a kernel's registers per thread up by more than static_registers_margin: 'fail', 'warn' or 'off'",
        v.choice(StaticPolicy),
        key="static_registers",
    ),
    Option(
        "static_registers_margin",
        "static gate: registers per thread a kernel may gain before static_registers applies",
        v.integer(0, 255),
        key="static_registers_margin",
    ),
    Option(
        "static_spills",
        "static gate: a kernel that spills where it did not, or more: 'fail', 'warn' or 'off'",
        v.choice(StaticPolicy),
        key="static_spills",
    ),
    Option(
        "static_occupancy",
        "static gate: a kernel's theoretical occupancy down a step: 'fail', 'warn' or 'off'",
        v.choice(StaticPolicy),
        key="static_occupancy",
    ),
    Option(
        "static_shared_memory",
        "static gate: a kernel's shared memory per block up: 'fail', 'warn' or 'off'",
        v.choice(StaticPolicy),
        key="static_shared_memory",
    ),
)
