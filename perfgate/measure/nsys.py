"""Nsight Systems: profile a child command, export the report to SQLite."""

from __future__ import annotations

from pathlib import Path

from perfgate.errors import ReportFileError, ToolFailed
from perfgate.measure.tools import find_tool, run_tool, tail

INSTALL_HINT = "install Nsight Systems (https://developer.nvidia.com/nsight-systems) or put its bin/ on PATH"


def nsys_profile_argv(nsys: str, output: Path, command: list[str]) -> list[str]:
    # cuda + nvtx only: CPU sampling and context-switch tracing cost time and tell a kernel gate nothing
    return [
        nsys,
        "profile",
        "--trace=cuda,nvtx",
        "--sample=none",
        "--cpuctxsw=none",
        "--force-overwrite=true",
        f"--output={output}",
        *command,
    ]


def profile(command: list[str], output: Path, timeout_s: float, env: dict[str, str], cwd: Path) -> Path:
    """Run command under nsys; the path of the .nsys-rep it wrote."""
    nsys = find_tool("nsys", INSTALL_HINT)
    output.parent.mkdir(parents=True, exist_ok=True)
    for suffix in (".nsys-rep", ".qdstrm", ".sqlite"):  # a stale report would pass for this run's
        output.with_suffix(suffix).unlink(missing_ok=True)
    out = run_tool(nsys_profile_argv(nsys, output, command), timeout_s, cwd=cwd, env=env, check=False)
    rep = output.with_suffix(".nsys-rep")
    if not rep.is_file():
        qdstrm = output.with_suffix(".qdstrm")
        if qdstrm.is_file():
            raise ReportFileError(
                qdstrm,
                "nsys wrote a raw .qdstrm but no .nsys-rep: its importer "
                "(QdstrmImporter) failed, usually for missing libdw.so.1/libelf.so.1; "
                "stderr: " + tail(out.stderr, 3).replace("\n", " | "),
            )
        raise ToolFailed(list(out.argv), out.returncode, out.stderr or out.stdout)
    return rep


def export_sqlite(report: Path, timeout_s: float = 600.0, target: Path | None = None) -> Path:
    """report.nsys-rep -> target (default report.sqlite beside it, for perfgate's own captures only:
    re-exported every time, a stale export would mislead; a user's report goes to a target of the
    caller's, never over a file of theirs)."""
    nsys = find_tool("nsys", INSTALL_HINT)
    target = target or report.with_suffix(".sqlite")
    run_tool([nsys, "export", "--type=sqlite", "--force-overwrite=true", f"--output={target}", str(report)], timeout_s)
    if not target.is_file():
        raise ReportFileError(report, "nsys export wrote no SQLite file")
    return target
