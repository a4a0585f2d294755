"""How a way of measuring shows its comparisons: the Markdown summary, the JSON document and the terminal.

Every output of the registry (outputs.py) is written, scrubbed and fitted the same way whatever measured the
run; what differs is how a comparison reads. Against a calibrated baseline (GateView): baseline, current,
change, what the case detects. Head against base in A/B mode (report/ab.py's AbView): base, head, their
ratio, the rounds behind it. A new way of measuring brings one more View, never a branch in the outputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # the registry names this protocol when a command's flags are made: no renderer imported
    from perfgate.model import GateResult, Run
    from perfgate.report.markdown import ChartLink
    from perfgate.report.scrub import Scrubber


class View(Protocol):
    @property
    def no_charts(self) -> str:
        """Why this way of measuring draws no charts ("" when it draws them)."""

    def markdown(self, gate: GateResult, run: Run, links: Sequence[ChartLink]) -> str:
        """The summary (a file, the job summary, the sticky PR comment), before it is fitted to a size."""

    def json(self, gate: GateResult, run: Run, samples: bool) -> str:
        """The JSON results document."""

    def terminal(self, gate: GateResult, full: bool) -> list[str]:
        """The terminal's table, notes and findings, ending with the headline."""

    def scrubbed(self, scrubber: Scrubber) -> View:
        """The same view with everything it holds beyond the gate and the run scrubbed for publication."""


@dataclass(frozen=True)
class GateView:
    """Baseline mode: each case against its calibrated baseline."""

    @property
    def no_charts(self) -> str:
        return ""

    def markdown(self, gate: GateResult, run: Run, links: Sequence[ChartLink]) -> str:
        from perfgate.report.markdown import render_markdown

        return render_markdown(gate, links, run=run)

    def json(self, gate: GateResult, run: Run, samples: bool) -> str:
        from perfgate.report.json_out import render_json

        return render_json(gate, run, samples)

    def terminal(self, gate: GateResult, full: bool) -> list[str]:
        from perfgate.report.terminal import render_terminal

        return render_terminal(gate, full)

    def scrubbed(self, scrubber: Scrubber) -> GateView:
        return self
