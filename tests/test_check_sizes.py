"""The size checker (scripts/check_sizes.py) names modules past 400 lines and functions past 60, and only
those: a method and a nested function count, decorators are part of their function."""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).parents[1] / "scripts" / "check_sizes.py"


def _checker():
    spec = importlib.util.spec_from_file_location("check_sizes", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _function(name: str, lines: int, indent: str = "") -> str:
    """A function of exactly `lines` lines, its def included."""
    return f"{indent}def {name}():\n" + f"{indent}    x = 1\n" * (lines - 1)


def test_a_function_past_60_lines_is_listed_and_one_of_60_is_not(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(_function("short", 60) + _function("long", 61))
    assert _checker().oversized([path]) == [f"function   61  {path}:61 long"]


def test_methods_nested_functions_and_decorators_count(tmp_path):
    path = tmp_path / "m.py"
    method = "    @staticmethod\n" + _function("method", 60, "    ")
    nested = "def outer():\n" + _function("inner", 61, "    ")
    path.write_text("class C:\n" + method + nested)
    found = _checker().oversized([path])
    assert f"function   61  {path}:2 C.method" in found
    assert f"function   61  {path}:64 outer.inner" in found


def test_a_module_past_400_lines_is_listed_and_one_of_400_is_not(tmp_path):
    small, large = tmp_path / "small.py", tmp_path / "large.py"
    small.write_text("x = 1\n" * 400)
    large.write_text("x = 1\n" * 401)
    assert _checker().oversized([small, large]) == [f"module    401  {large}"]
