"""Optional extras: a missing one is one line naming the extra to install, never a traceback."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import tomllib

from perfgate.cli import main
from perfgate.errors import MissingExtra
from perfgate.store import open_store
from tests.helpers import make_run


@pytest.fixture
def without(monkeypatch):
    """Make `import name` fail as it does where the package is not installed."""

    def block(*names: str) -> None:
        for name in names:
            monkeypatch.setitem(sys.modules, name, None)

    return block


def test_charts_without_matplotlib_name_the_report_extra(without, capsys, tmp_path, h100_data):
    without("matplotlib")
    code = main(["analyze", str(h100_data / "perfgate-nsys.sqlite"), "--output-dir", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.count("\n") == 0 and "Traceback" not in err
    assert "charts needs matplotlib" in err and "pip install 'perfgate[report]'" in err


def test_analyze_without_charts_needs_no_matplotlib(without, capsys, h100_data):
    without("matplotlib")
    assert main(["analyze", str(h100_data / "perfgate-nsys.sqlite"), "--format", "json"]) == 0


def test_the_history_dataframe_without_pandas_names_the_data_extra(without, tmp_path):
    with open_store(tmp_path / "h.db") as store:
        store.save_run(make_run({"t::a": [1.0, 1.1, 1.2]}))
    without("pandas")
    import perfgate

    with pytest.raises(MissingExtra, match=r"perfgate.history needs pandas.*pip install 'perfgate\[data\]'"):
        perfgate.history(tmp_path / "h.db")


def test_ci_init_without_pyyaml_names_the_ci_extra(without, capsys, tmp_path):
    without("yaml")
    code = main(["ci", "init", "--output", str(tmp_path / "w.yml"), "--action-ref", "me/perfgate@" + "0" * 40])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and "Traceback" not in err
    assert "perfgate ci init needs yaml" in err and "pip install 'perfgate[ci]'" in err
    assert not (tmp_path / "w.yml").exists()


def test_the_core_imports_no_optional_dependency():
    import subprocess

    code = (
        "import sys, perfgate, perfgate.pytest_plugin, perfgate.cli, perfgate.gate.run, perfgate.ci.workflow; "
        "print(sorted({'yaml', 'pandas', 'matplotlib', 'torch', 'triton', 'ncu_report'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]"


def test_every_extra_an_error_names_is_declared():
    declared = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    import perfgate.ci.workflow
    import perfgate.report.figures
    import perfgate.store.query

    named = set()
    for module in (perfgate.store.query, perfgate.report.figures, perfgate.ci.workflow):
        source = Path(module.__file__).read_text()
        named |= {part.split('"')[3] for part in source.split("require(")[1:] if part.count('"') >= 4}
    assert named and named <= set(declared), f"extras named in errors but not declared: {named - set(declared)}"
