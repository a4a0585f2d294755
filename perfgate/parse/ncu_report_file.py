"""Read `.ncu-rep` files through NVIDIA's `ncu_report` module (PyPI `ncu-report`; no GPU needed).

`ncu_report` is native code, and some malformed reports make it abort the whole process. So a report is
read in a child Python process (`python -m perfgate.parse.ncu_report_file REPORT`) that hands the launches
back as plain data (marshal); if NVIDIA's reader crashes, that is one ReportFileError naming the file, and
perfgate goes on.
Only our own child's output is decoded, never anything from the report itself.
"""

from __future__ import annotations

import marshal
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from perfgate.errors import ReportFileError
from perfgate.inputs import check_regular_file
from perfgate.parse.ncu_values import (
    DURATION,
    Budget,
    check_name,
    check_unit,
    check_value,
    is_count_unit,
    unreadable_duration,
    usable,
)
from perfgate.parse.records import MetricTable, NcuLaunch

_STRING_KIND = 2  # ncu_report ValueKind_STRING
MAGIC = b"NVR\x00"  # every .ncu-rep written by Nsight Compute 2023-2026 starts with it
READ_TIMEOUT_S = 600.0


def read_ncu_report(path: Path, metric_names: tuple[str, ...] | None = None, isolate: bool = True) -> list[NcuLaunch]:
    """Every launch in the report, with all metrics (or only `metric_names`), in base units."""
    path = Path(path)
    _check_readable(path)
    if not isolate:
        return read_in_process(path, metric_names)
    argv = [sys.executable, "-m", "perfgate.parse.ncu_report_file", str(path), *(metric_names or ())]
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=READ_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as err:
        raise ReportFileError(path, f"ncu_report did not finish reading it in {READ_TIMEOUT_S:.0f} s") from err
    if proc.returncode < 0:
        name = signal.Signals(-proc.returncode).name if -proc.returncode in signal.Signals._value2member_map_ else ""
        raise ReportFileError(
            path,
            f"NVIDIA's ncu_report crashed reading it ({name or f'signal {-proc.returncode}'}); "
            "the report is corrupt, truncated or from an incompatible Nsight Compute",
        )
    try:
        status, payload = marshal.loads(proc.stdout)  # noqa: S302 - our own child's output: plain data only
    except Exception as err:
        tail = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        raise ReportFileError(path, f"ncu_report failed reading it ({tail[0]})") from err
    if status == "error":
        raise ReportFileError(path, str(payload))
    return _build(path, payload)


def _check_readable(path: Path) -> None:
    st = check_regular_file(path, ReportFileError)
    if st.st_size == 0:
        raise ReportFileError(path, "the file is empty")
    with path.open("rb") as fh:
        if fh.read(len(MAGIC)) != MAGIC:
            raise ReportFileError(path, "not an Nsight Compute report (no NVR header)")


# One launch on the wire between the reading child and perfgate, in columns:
# (kernel name, metric names, values, units, NVTX ranges). Plain tuples and strings: marshal moves them
# several times faster than pickled objects and cannot carry anything else. Launches repeat the same
# metric names, units and ~1 kB breakdown strings; the child hands back the first equal object it saw
# (`seen`), and marshal writes an object it already wrote as a 5-byte reference (the 1,000-launch
# H100 report's hand-over: 4.8 MB instead of 53 MB).
RawLaunch = tuple[str, tuple[str, ...], tuple[float | str, ...], tuple[str, ...], tuple[str, ...]]


def read_in_process(path: Path, metric_names: tuple[str, ...] | None = None) -> list[NcuLaunch]:
    return _build(path, _raw_launches(path, metric_names))


def _build(path: Path, raw: list[RawLaunch]) -> list[NcuLaunch]:
    """Launches from the child's columns, each checked (parse/ncu_values.py): a name, counts, sizes,
    durations and rates within [0, int64], and units of the kind each metric is. Launches share their
    units tuple, so the positions of the count units are found once per distinct tuple."""
    indexes: dict[tuple[str, ...], dict[str, int]] = {}
    counted: dict[tuple[str, ...], list[int]] = {}
    unit_checked: set[tuple[tuple[str, ...], tuple[str, ...]]] = set()
    budget = Budget(path)
    out = []
    for i, (name, names, values, units, nvtx) in enumerate(raw):
        budget.take(len(values))
        index = indexes.get(names)
        if index is None:
            index = indexes[names] = {n: j for j, n in enumerate(names)}
        positions = counted.get(units)
        if positions is None:
            positions = counted[units] = [j for j, u in enumerate(units) if is_count_unit(u)]
        if (names, units) not in unit_checked:
            unit_checked.add((names, units))
            for metric, unit in zip(names, units):
                check_unit(path, metric, unit)
        duration = values[index[DURATION]] if DURATION in index else None
        if isinstance(duration, float) and not usable(duration):  # before check_value's "nan ns ... too large"
            raise unreadable_duration(path, i, str(duration))
        for j in positions:
            value = values[j]
            if not isinstance(value, str):
                check_value(path, i, names[j], value, units[j])
        out.append(
            NcuLaunch(
                launch_id=i,
                name=check_name(path, i, name),
                metrics=MetricTable(names, values, units, index),
                nvtx_ranges=tuple(nvtx),
            )
        )
    return out


def _raw_launches(path: Path, metric_names: tuple[str, ...] | None) -> list[RawLaunch]:
    try:
        import ncu_report
    except ImportError as err:
        raise ReportFileError(
            path,
            "reading .ncu-rep needs NVIDIA's ncu_report module (ships with Nsight "
            "Compute: add <ncu>/extras/python to PYTHONPATH)",
        ) from err
    try:
        ctx = ncu_report.load_report(str(path))
    except Exception as err:  # the SWIG loader raises plain Exception/RuntimeError on a bad file
        raise ReportFileError(path, f"not a readable Nsight Compute report ({err})") from err
    launches: list[RawLaunch] = []
    seen: dict[Any, Any] = {}
    budget = Budget(path)
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            names, values, units = _metrics(action, metric_names, seen)
            budget.take(len(values))
            # demangled, as nsys and `ncu --csv` print it (name() alone gives the bare function name)
            launches.append(
                (
                    action.name(ncu_report.IAction.NameBase_DEMANGLED),
                    seen.setdefault(names, names),
                    values,
                    seen.setdefault(units, units),
                    _nvtx(action),
                )
            )
    if not launches:
        raise ReportFileError(
            path,
            "no profiled kernel launches in it (truncated, not an Nsight Compute report, "
            "or ncu profiled nothing: check --kernel-name / NVTX filters)",
        )
    return launches


def _metrics(
    action: Any, names: tuple[str, ...] | None, seen: dict[Any, Any]
) -> tuple[tuple[str, ...], tuple[float | str, ...], tuple[str, ...]]:
    """Columns of one launch's metrics; string values (breakdown lists, the device name) through `seen`."""
    found: list[str] = []
    values: list[float | str] = []
    units: list[str] = []
    for name in names if names is not None else action.metric_names():
        m = action.metric_by_name(name)
        if m is None:
            continue  # absent is absent, not 0
        if m.kind() == _STRING_KIND:
            text = m.as_string()
            if not isinstance(text, str):
                continue
            values.append(seen.setdefault(text, text))
        else:
            number = m.as_double()
            if not isinstance(number, float) or (not usable(number) and name != DURATION):
                continue  # NaN/inf: ncu could not compute it; absent, never a number (the duration: refused)
            values.append(number + 0.0)  # -0.0 + 0.0 is 0.0: never shown as -0 %
        found.append(name)
        unit = m.unit()
        units.append(unit if isinstance(unit, str) else "")
    return tuple(found), tuple(values), tuple(units)


def _nvtx(action: Any) -> tuple[str, ...]:
    state = action.nvtx_state()
    if state is None:
        return ()
    ranges: list[str] = []
    for dom_id in state.domains():
        ranges.extend(r for r in state.domain_by_id(dom_id).push_pop_ranges() if isinstance(r, str))
    return tuple(ranges)


def _child(argv: list[str]) -> None:
    path = Path(argv[0])
    names = tuple(argv[1:]) or None
    try:
        result: tuple[str, Any] = ("ok", _raw_launches(path, names))
    except ReportFileError as err:
        result = ("error", err.problem)
    sys.stdout.buffer.write(marshal.dumps(result))


if __name__ == "__main__":
    _child(sys.argv[1:])
