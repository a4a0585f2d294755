"""Every `[tool.perfgate]` example in README.md and docs/*.md loads through the real settings loader: a user
who copies one gets a working configuration, not exit 4 on a key that was removed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from perfgate.config.project import project_settings

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)


def _examples() -> list[tuple[str, str]]:
    """(file:line, block) for every fenced block that configures [tool.perfgate]."""
    out = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            if re.search(r"^\[\[?tool\.perfgate[\].]", m[1], re.M):
                out.append((f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}", m[1]))
    return out


EXAMPLES = _examples()


def test_the_readme_configuration_example_is_among_those_checked() -> None:
    assert any(where.startswith("README.md:") for where, _ in EXAMPLES)


@pytest.mark.parametrize("block", [b for _, b in EXAMPLES], ids=[w for w, _ in EXAMPLES])
def test_a_documented_configuration_loads(block: str, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(block, encoding="utf-8")
    settings = project_settings(tmp_path)
    assert settings.pyproject == tmp_path / "pyproject.toml"
