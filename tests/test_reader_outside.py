"""The outside review of issue 32: what the trace readers accepted, crashed on or left behind."""

from __future__ import annotations

from pathlib import Path

from perfgate.cli import main

DATA = Path(__file__).parent / "inputs_outside32"


def test_a_kernel_name_with_a_lone_surrogate_is_shown_replaced_and_analyze_writes_everything(tmp_path, capsys):
    trace = DATA / "torch_lone_surrogate.json"  # "add\ud800kernel": valid JSON, no UTF-8 writer encodes it
    assert main(["analyze", str(trace), "--format", "md"]) == 0
    assert "add\ufffdkernel" in capsys.readouterr().out
    out = tmp_path / "rep"
    assert main(["analyze", str(trace), "--output-dir", str(out), "--no-charts"]) == 0
    assert {p.name for p in out.iterdir()} >= {"analysis.json", "report.md"}
