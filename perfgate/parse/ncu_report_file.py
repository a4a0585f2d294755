"""Read `.ncu-rep` files through NVIDIA's `ncu_report` module (PyPI `ncu-report`; no GPU needed)."""

from __future__ import annotations

from pathlib import Path

from perfgate.errors import ReportFileError
from perfgate.parse.records import NcuLaunch, NcuMetric

_STRING_KIND = 2  # ncu_report ValueKind_STRING
NCU_REP_MAGIC = b"NVIDIA Nsight Compute"  # not in every version's header; we check the loader instead


def read_ncu_report(path: Path, metric_names: tuple[str, ...] | None = None) -> list[NcuLaunch]:
    """Every launch in the report, with all metrics (or only `metric_names`), in base units."""
    path = Path(path)
    try:
        import ncu_report
    except ImportError as err:
        raise ReportFileError(path, "reading .ncu-rep needs NVIDIA's ncu_report module: pip install ncu-report") from err
    _check_readable(path)
    try:
        ctx = ncu_report.load_report(str(path))
    except Exception as err:  # the SWIG loader raises plain Exception/RuntimeError on a bad file
        raise ReportFileError(path, f"not a readable Nsight Compute report ({err})") from err
    launches = []
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            # demangled, as nsys and `ncu --csv` print it (name() alone gives the bare function name)
            launches.append(NcuLaunch(launch_id=len(launches), name=action.name(ncu_report.IAction.NameBase_DEMANGLED),
                                      metrics=_metrics(action, metric_names), nvtx_ranges=_nvtx(action)))
    if not launches:
        raise ReportFileError(path, "no profiled kernel launches in it (truncated, not an Nsight Compute report, "
                                    "or ncu profiled nothing: check --kernel-name / NVTX filters)")
    return launches


def _check_readable(path: Path) -> None:
    if not path.is_file():
        raise ReportFileError(path, "no such file")
    if path.stat().st_size == 0:
        raise ReportFileError(path, "the file is empty")


def _metrics(action, names: tuple[str, ...] | None) -> dict[str, NcuMetric]:
    out = {}
    for name in names if names is not None else action.metric_names():
        m = action.metric_by_name(name)
        if m is None:
            continue  # absent is absent, not 0
        if m.kind() == _STRING_KIND:
            out[name] = NcuMetric(m.as_string(), m.unit())
        else:
            out[name] = NcuMetric(m.as_double(), m.unit())
    return out


def _nvtx(action) -> tuple[str, ...]:
    state = action.nvtx_state()
    if state is None:
        return ()
    ranges: list[str] = []
    for dom_id in state.domains():
        ranges.extend(state.domain_by_id(dom_id).push_pop_ranges())
    return tuple(ranges)
