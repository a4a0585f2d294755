"""One option's record: the Settings (or MeasureOptions) attribute it fills, how a value is checked, its help,
and where a user may set it (`[tool.perfgate]` key, pytest flag, `perfgate` command flag, marker). The table of
every option, and its help as each interface spells it (`help_as`), is options.py's.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from perfgate.config import validate as v


class Arg(enum.Enum):
    """How a command-line value is read before `parse` checks it."""

    FLAG = "flag"  # --x: True when given
    NO_FLAG = "no flag"  # --no-x: False when given
    PATH = "path"
    HISTORY = "history"  # a SQLite path or a postgresql:// URL
    INT = "int"
    NUMBER = "number"
    TEXT = "text"


@dataclass(frozen=True)
class Option:
    attr: str  # the Settings attribute (MeasureOptions when `measure`)
    help: str
    parse: v.Parser
    key: str | None = None  # [tool.perfgate] key
    flag: str | None = None  # pytest flag
    cli: str | None = None  # `perfgate` command flag (a command names the attributes it takes)
    arg: Arg = Arg.TEXT
    marker: bool = False  # may be set per test with @pytest.mark.perfgate(...)
    measure: bool = False  # a MeasureOptions field (how one case is timed)
    metavar: str | None = None
    # only from pytest's own command line, never from addopts or PYTEST_ADDOPTS: a project's files (which a
    # pull request edits) must not switch a gate into writing its baseline or out of its checks
    command_line_only: bool = False

    @property
    def where(self) -> str:
        """How a user spells it, for messages."""
        return self.flag or self.cli or f"[tool.perfgate] {self.key}"
