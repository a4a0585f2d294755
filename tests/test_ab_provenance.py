"""Where each side's code came from (perfgate/ab/imports.py, perfgate/ab/provenance.py): path entries and
import hooks that point into the head's checkout redirected to the side's own tree, and what each side
actually ran recorded and judged. GPU-free, no subprocess: the end-to-end runs with real editable installs
are in tests/test_ab_layouts.py."""

from __future__ import annotations

import functools
import importlib
import sys
from importlib.machinery import ModuleSpec
from importlib.util import spec_from_file_location
from pathlib import Path

import pytest

from perfgate.ab import imports, provenance
from perfgate.ab.imports import Place, SideTrees, TreeFinder
from perfgate.ab.protocol import Side
from perfgate.model import CaseResult, CodeRole, CodeSource, Timer, TimingStats


def _trees(tmp_path: Path) -> tuple[Path, Path, SideTrees]:
    head, base = tmp_path / "head", tmp_path / "cache" / "base"
    for tree, n in ((head, 3), (base, 1)):
        (tree / "src" / "mylib").mkdir(parents=True)
        (tree / "src" / "mylib" / "__init__.py").write_text(f"N = {n}\n")
    return head, base, SideTrees.of(str(base), str(head), [str(head)])


def test_a_path_entry_into_the_head_checkout_becomes_the_sides_own(tmp_path):
    head, base, trees = _trees(tmp_path)
    entries = ["", "/usr/lib/python3.11", str(head / "src"), "__editable__.x.finder.__path_hook__", str(base)]
    assert trees.path(entries) == ["/usr/lib/python3.11", str(base.resolve() / "src"), entries[3], str(base)]
    assert trees.place(str(head / "src" / "mylib" / "__init__.py")) == (Place.ORIGIN, "src/mylib/__init__.py")
    assert SideTrees.of(str(head)).path([str(head / "src")]) == [str(head / "src")]  # the head: its own


def test_a_base_worktree_inside_the_head_checkout_is_its_own_tree(tmp_path):
    head = tmp_path / "head"
    base = head / ".perfgate" / "wt" / "abc"
    base.mkdir(parents=True)
    as_base = SideTrees.of(str(base), str(head), [str(head)])
    as_head = SideTrees.of(str(head), str(head), [str(base)])
    assert as_base.place(str(base / "x.py"))[0] is Place.OWN and as_base.place(str(head / "x.py"))[0] is Place.ORIGIN
    assert as_head.place(str(base / "x.py"))[0] is Place.OTHER and as_head.place(str(head / "x.py"))[0] is Place.OWN


class _EditableHook:
    """Stands for setuptools' __editable___*_finder: top-level names mapped into the head's checkout."""

    def __init__(self, mapping: dict[str, Path]) -> None:
        self.mapping = mapping

    def find_spec(self, fullname, path=None, target=None):
        where = self.mapping.get(fullname)
        return spec_from_file_location(fullname, where / "__init__.py") if where else None


@pytest.fixture
def meta_path():
    saved, modules = list(sys.meta_path), dict(sys.modules)
    yield sys.meta_path
    sys.meta_path[:] = saved
    for name in [n for n in sys.modules if n not in modules]:
        del sys.modules[name]


def test_an_import_hook_into_the_head_checkout_serves_the_sides_own_file(tmp_path, meta_path):
    head, base, trees = _trees(tmp_path)
    meta_path[:] = [TreeFinder(lambda: trees), *meta_path, _EditableHook({"mylib": head / "src" / "mylib"})]
    module = importlib.import_module("mylib")
    assert module.N == 1 and Path(module.__file__).resolve() == (base / "src" / "mylib" / "__init__.py").resolve()
    assert "_EditableHook, moved from" in getattr(module.__spec__, imports.SERVED_BY)


def test_a_module_the_sides_tree_does_not_have_is_missing_there_not_taken_from_the_head(tmp_path, meta_path):
    head, base, trees = _trees(tmp_path)
    (head / "src" / "newlib").mkdir()
    (head / "src" / "newlib" / "__init__.py").write_text("")
    meta_path[:] = [TreeFinder(lambda: trees), *meta_path, _EditableHook({"newlib": head / "src" / "newlib"})]
    with pytest.raises(ModuleNotFoundError, match="No module named 'newlib' in this side's tree"):
        importlib.import_module("newlib")


def test_outside_a_side_nothing_is_redirected(tmp_path, meta_path):
    head, _, _ = _trees(tmp_path)
    meta_path[:] = [TreeFinder(lambda: None), *meta_path, _EditableHook({"mylib": head / "src" / "mylib"})]
    assert importlib.import_module("mylib").N == 3


# --- what a case ran -------------------------------------------------------------------------------


def _kernel(x):
    return x


def _decorated(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args)

    return wrapper


class _Jit:
    """Stands for a Triton JITFunction: the Python function in `fn`; `kernel[grid]` a lambda over it."""

    def __init__(self, fn):
        self.fn = fn

    def __getitem__(self, grid):
        return lambda *args: self.fn(*args)  # noqa: PLW0108 (Triton's launcher is such a lambda)


class _Module:
    def forward(self, x):
        return x

    def __call__(self, x):
        return self.forward(x)


class _Owner:
    def method(self, x):
        return x


@pytest.mark.parametrize(
    ("callable_", "name"),
    [
        (functools.partial(_kernel, 1), "_kernel"),
        (_decorated(_kernel), "_kernel"),
        (_Jit(_kernel), "_kernel"),
        (_Jit(_kernel)[(4,)], "_kernel"),
        (_Module(), "_Module.forward"),
        (_Owner().method, "_Owner.method"),
    ],
    ids=["partial", "functools.wraps", "jit", "kernel[grid]", "module", "bound method"],
)
def test_the_measured_callable_is_followed_to_the_function_it_runs(callable_, name):
    found = provenance.callable_code(callable_, CodeRole.MEASURED)
    ours = [c for c in found if c.name.endswith(f":{name}")]
    assert ours and Path(ours[0].path) == Path(__file__).resolve(), found


def test_a_built_in_callable_names_the_module_it_comes_from():
    (code,) = provenance.callable_code(len, CodeRole.REFERENCE)
    assert code.name == "builtins:len" and code.path == "" and code.role is CodeRole.REFERENCE


# --- judging ---------------------------------------------------------------------------------------


def _result(case_id: str, *code: CodeSource) -> CaseResult:
    return CaseResult(case_id, TimingStats(Timer.HOST, 1, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0), (1.0,), code=code)


def _src(role: CodeRole, name: str, path: str, tree: str) -> CodeSource:
    return CodeSource(role, name, path, tree)


OWN_BASE = _src(CodeRole.MEASURED, "mylib:work", "src/mylib/__init__.py", "base")
OWN_HEAD = _src(CodeRole.MEASURED, "mylib:work", "src/mylib/__init__.py", "head")


def test_a_base_that_imported_the_heads_module_makes_every_base_case_not_comparable():
    stray = _src(CodeRole.MODULE, "mylib", "src/mylib/__init__.py", "head")
    results = {
        (Side.BASE, "a"): _result("a", OWN_BASE, stray),
        (Side.BASE, "b"): _result("b", OWN_BASE),
        (Side.HEAD, "a"): _result("a", OWN_HEAD),
        (Side.HEAD, "b"): _result("b", OWN_HEAD),
    }
    reasons = provenance.judge(results, frozenset())
    assert set(reasons) == {"a", "b"}
    assert reasons["b"] == "provenance: the base side imported mylib from the head's tree (src/mylib/__init__.py)"


def test_a_measured_callable_from_the_other_tree_is_not_comparable_and_its_own_tree_is():
    results = {(Side.HEAD, "a"): _result("a", OWN_BASE), (Side.BASE, "a"): _result("a", OWN_BASE)}
    assert provenance.judge(results, frozenset()) == {
        "a": "provenance: the head side measured (measured) mylib:work from the base's tree (src/mylib/__init__.py)"
    }
    fine = {(Side.HEAD, "a"): _result("a", OWN_HEAD), (Side.BASE, "a"): _result("a", OWN_BASE)}
    assert provenance.judge(fine, frozenset()) == {}


def test_in_one_shared_process_the_other_trees_object_is_named_as_state_left_behind():
    """A conftest's module-level object (a clock, a registry) from the base reaching the head's test."""
    results = {(Side.HEAD, "a"): _result("a", OWN_BASE), (Side.BASE, "a"): _result("a", OWN_BASE)}
    reason = provenance.judge(results, frozenset(), shared=True)["a"]
    assert reason.startswith("provenance: the head side measured (measured) mylib:work from the base's tree")
    assert 'outlived its tree in the shared process: ab_process = "separate"' in reason


def test_one_installed_file_on_both_sides_is_not_comparable_only_when_the_diff_changes_it():
    installed = _src(CodeRole.MODULE, "mylib.core", "/venv/lib/site-packages/mylib/core.py", "")
    torch_op = _src(CodeRole.MEASURED, "torch:conv2d", "/venv/lib/site-packages/torch/__init__.py", "")
    results = {(s, "a"): _result("a", torch_op, installed) for s in (Side.BASE, Side.HEAD)}
    assert provenance.judge(results, frozenset({"README.md", "src/mylib/other.py"})) == {}
    reasons = provenance.judge(results, frozenset({"src/mylib/core.py"}))
    assert reasons["a"].startswith("provenance: base and head both ran mylib.core from /venv/lib/site-packages/mylib")
    assert reasons["a"].endswith("while the diff changes src/mylib/core.py")


def test_paths_are_recorded_relative_to_the_checkout_holding_them(tmp_path):
    head, base = tmp_path / "head", tmp_path / "head" / ".wt" / "base"
    base.mkdir(parents=True)
    code = (
        CodeSource(CodeRole.MODULE, "m", str(base.resolve() / "m.py")),
        CodeSource(CodeRole.MODULE, "n", str(head.resolve() / "n.py")),
        CodeSource(CodeRole.MODULE, "torch", "/venv/torch/__init__.py"),
    )
    out = provenance.located({(Side.BASE, "a"): _result("a", *code)}, {"head": head, "base": base, "checkout": head})
    assert [(c.tree, c.path) for c in out[(Side.BASE, "a")].code] == [
        ("base", "m.py"),
        ("head", "n.py"),
        ("", "/venv/torch/__init__.py"),
    ]


def test_a_spec_from_a_standard_finder_is_never_moved(tmp_path, meta_path):
    head, _, trees = _trees(tmp_path)
    finder = TreeFinder(lambda: trees)
    meta_path.insert(0, finder)
    sys.path.insert(0, str(head / "src"))  # as if a path entry of the head had survived: PathFinder's answer stands
    try:
        spec = finder.find_spec("mylib")
    finally:
        sys.path.remove(str(head / "src"))
    assert isinstance(spec, ModuleSpec) and not hasattr(spec, imports.SERVED_BY)


def test_the_history_keeps_where_each_case_code_came_from_and_refuses_a_damaged_record(tmp_path):
    import sqlite3

    from perfgate.errors import PerfgateError
    from perfgate.model import Environment, Run, RunInfo
    from perfgate.store import open_store

    code = (OWN_HEAD, _src(CodeRole.MODULE, "mylib", "src/mylib/__init__.py", "head"))
    run = Run(
        RunInfo("2024-01-01T00:00:00Z", "2024-01-01T00:00:01Z"), Environment("host", "cpu"), (_result("a", *code),)
    )
    with open_store(tmp_path / "h.db") as store:
        run_id = store.save_run(run)
        assert store.load_run(run_id).results[0].code == code
    con = sqlite3.connect(tmp_path / "h.db")
    con.execute("UPDATE cases SET code = ?", ('[{"role": "spell", "name": "x"}]',))
    con.commit()
    con.close()
    with (
        open_store(tmp_path / "h.db") as store,
        pytest.raises(PerfgateError, match="code: not a list of code sources"),
    ):
        store.load_run(run_id)
