"""A/B mode with every side in one process (perfgate/ab/host/): each tree's modules, working
directory, sys.path and environment its own while the process is shared; the choice between shared and
separate; a side that takes the process down. Real pytest workers on the host clock (a 10x slower head:
no tight timing)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

import pytest

from perfgate.ab.host import baton as host
from perfgate.ab.host import environ, sharing
from perfgate.ab.host.handover import Handed, Registry
from perfgate.model import AbProcess
from tests.ab_repo import git, make_repo

PERF_TESTS = textwrap.dedent("""
    import os
    import random
    from pathlib import Path

    import mylib

    def test_sort(perfgate):
        with open(os.environ["SIDES_SEEN"], "a") as out:  # who ran where: scale, cwd's marker, process
            print(mylib.scale(), Path("marker.txt").read_text().strip(), os.getpid(), file=out)
        data = [random.random() for _ in range(300)]
        perfgate(mylib.work, data)
""")

# the scale is imported lazily, inside the call: it must still be the calling side's own module
MYLIB = textwrap.dedent("""
    def scale():
        from mylib.factor import N
        return N

    def work(data):
        return sorted(data * scale())
""")


def _commit(repo: Path, n: int, marker: str, message: str, extra: dict[str, str] | None = None) -> None:
    files = {"mylib/__init__.py": MYLIB, "mylib/factor.py": f"N = {n}\n", "marker.txt": marker, **(extra or {})}
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def _project(
    root: Path, conftest: str = "", base_files: dict[str, str] | None = None, head_files: dict[str, str] | None = None
) -> Path:
    """Base: scale 1, marker "base"; head (HEAD): scale 10, marker "head"; each with its extra files."""
    repo = make_repo(root)
    (repo / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\n\n[tool.perfgate]\nab_rounds = 4\nbudget_ms = 40.0\nab_process = "shared"\n'
    )
    (repo / "test_perf.py").write_text(PERF_TESTS)
    (repo / ".gitignore").write_text(".perfgate/\n")
    if conftest:
        (repo / "conftest.py").write_text(conftest)
    _commit(repo, 1, "base", "base", base_files)
    _commit(repo, 10, "head", "head: 10x the work", head_files)
    return repo


@pytest.fixture
def project(tmp_path):
    return _project(tmp_path / "proj")


def _ab(repo: Path, tmp_path: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], list[tuple[int, str, int]]]:
    seen = tmp_path / "seen.txt"
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--perfgate", "--perfgate-base", "HEAD~1"]
    argv += [f"--perfgate-worktree-dir={tmp_path / 'wt'}", "--perfgate-json", "out.json", *extra]
    env = {k: v for k, v in os.environ.items() if k not in ("PERFGATE_DB", "GITHUB_STEP_SUMMARY")}
    proc = subprocess.run(
        argv, cwd=repo, capture_output=True, text=True, timeout=300, env={**env, "SIDES_SEEN": str(seen)}
    )
    rows = [line.split() for line in seen.read_text().splitlines()] if seen.exists() else []
    return proc, [(int(n), marker, int(pid)) for n, marker, pid in rows]


def test_a_shared_run_measures_each_trees_own_code_in_one_process(project, tmp_path):
    # independent of the host's load: whether a loaded host confirms the call in a fresh pair (and so how many
    # host processes ran) varies; that every process ran each tree's own module, and that the head's 10x
    # slower code was measured as such, does not
    proc, seen = _ab(project, tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode in (0, 1), out
    assert "base and head in one process" in out
    doc = json.loads((project / "out.json").read_text())
    row = next(c for c in doc["comparisons"] if (c["case_id"], c["metric"]) == ("test_perf.py::test_sort", "median_ms"))
    assert row["change_pct"] > 100.0, row  # the head's own code: it sorts 10x the data
    # base, head, the A/A twin in one process; a fresh pair (base, head, twin) for a call in another
    by_pid: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for n, marker, pid in seen:
        by_pid[pid].append((n, marker))
    assert 1 <= len(by_pid) <= 2, seen
    for sides in by_pid.values():
        assert sorted(sides) == [(1, "base"), (1, "base"), (10, "head")]  # each its own module and cwd


def test_a_base_worktree_inside_the_head_checkout_keeps_its_own_modules(project, tmp_path):
    proc, seen = _ab(
        project, tmp_path, "--perfgate-worktree-dir=.perfgate/wt"
    )  # the base's files under the head's root
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert sorted({(n, marker) for n, marker, _ in seen}) == [(1, "base"), (10, "head")]


def test_each_tree_runs_under_its_own_warning_filters(tmp_path):
    # the base's pytest configuration turns DeprecationWarning into an error; the head's code warns
    config = '[tool.pytest.ini_options]\n{}\n[tool.perfgate]\nab_rounds = 4\nbudget_ms = 40.0\nab_process = "shared"\n'
    warns = MYLIB.replace(
        "def work(data):\n", "def work(data):\n    import warnings\n\n    warnings.warn('old', DeprecationWarning)\n"
    )
    repo = _project(
        tmp_path / "proj",
        base_files={"pyproject.toml": config.format('filterwarnings = ["error::DeprecationWarning"]')},
        head_files={"pyproject.toml": config.format(""), "mylib/__init__.py": warns},
    )
    proc, _ = _ab(repo, tmp_path)
    out = proc.stdout + proc.stderr
    assert re.search(r"test_perf.py::test_sort +time .* REGRESSED", out), out


def test_a_signal_handler_set_by_a_side_ends_the_shared_comparison_and_it_is_measured_separately(tmp_path):
    sets_alarm = "import signal\n\ndef pytest_runtest_setup(item):\n    signal.signal(signal.SIGALRM, signal.SIG_DFL)\n"
    repo = _project(tmp_path / "proj", conftest=sets_alarm)
    proc, _ = _ab(repo, tmp_path)
    out = proc.stdout + proc.stderr
    assert "the shared comparison ended (the " in out and "set a signal handler (signal.signal(14, ...))" in out, out
    assert "measured in a process per tree" in out and re.search(r"test_perf.py::test_sort +time .* REGRESSED", out)


def test_a_base_session_cut_short_ends_the_run_with_pytests_status_and_reason(tmp_path):
    exits = "import pytest\nfrom pathlib import Path\n\ndef pytest_runtest_setup(item):\n"
    exits += "    if Path('marker.txt').read_text() == 'base':\n        pytest.exit('stop')\n"
    repo = _project(tmp_path / "proj", conftest=exits)
    proc, _ = _ab(repo, tmp_path, "--perfgate-strict")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out  # pytest's status for an interrupted session: never a pass
    assert "perfgate: A/B: base: pytest: pytest.exit: stop (pytest exit status 2, interrupted" in out, out


def test_separate_processes_when_asked(project, tmp_path):
    proc, seen = _ab(project, tmp_path, "--perfgate-ab-process", "separate")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert 'a process per tree (ab_process = "separate")' in out
    assert len({pid for _, _, pid in seen}) == len(seen) == 6


def test_a_side_that_takes_the_shared_process_down_is_one_line_naming_it_and_strict_fails_closed(tmp_path):
    exits_in_base = (
        "import os\nfrom pathlib import Path\n\nif Path('marker.txt').read_text() == 'base':\n    os._exit(7)\n"
    )
    repo = _project(tmp_path / "proj", conftest=exits_in_base)
    proc, seen = _ab(repo, tmp_path, "--perfgate-strict")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and not seen, out  # strict mode fails closed
    lines = [line for line in out.splitlines() if "the shared process crashed (exit status 7)" in line]
    assert len(lines) == 1 and "last run by the base" in lines[0], out  # the base or its A/A twin: both exit


def test_auto_shares_only_trees_without_native_code(tmp_path):
    pure = make_repo(tmp_path / "pure")
    (pure / "lib.py").write_text("X = 1\n")
    native = make_repo(tmp_path / "native")
    (native / "kernels" / "csrc").mkdir(parents=True)
    (native / "kernels" / "csrc" / "add.cu").write_text("__global__ void add() {}\n")
    (native / ".gitignore").write_text("build/\n")
    (native / "build").mkdir()
    (native / "build" / "ignored.so").write_text("")  # ignored build output: not the tree's code
    assert sharing.decide(AbProcess.AUTO, [("base", pure), ("head", pure)]).shared
    mixed = sharing.decide(AbProcess.AUTO, [("base", pure), ("head", native)])
    assert not mixed.shared and "the head holds native code (kernels/csrc/add.cu)" in mixed.why
    assert sharing.decide(AbProcess.SHARED, [("head", native)]).shared
    assert not sharing.decide(AbProcess.SEPARATE, [("head", pure)]).shared


def test_ab_process_refuses_an_unknown_choice(tmp_path):
    from perfgate.config.validate import choice
    from perfgate.errors import ConfigError

    parse = choice(AbProcess)
    assert parse("shared", "ab_process") is AbProcess.SHARED
    with pytest.raises(ConfigError, match="ab_process: must be one of 'auto', 'shared', 'separate', got 'both'"):
        parse("both", "ab_process")


@pytest.fixture
def process_wide(monkeypatch):
    """sys.modules, sys.path, the working directory and the environment put back after the test."""
    modules, path, cwd, env = dict(sys.modules), list(sys.path), os.getcwd(), dict(os.environ)
    yield
    for name in [n for n in sys.modules if n not in modules]:
        del sys.modules[name]
    sys.modules.update(modules)
    sys.path[:] = path
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)


def _tree(root: Path, value: str) -> Path:
    (root / "samename").mkdir(parents=True)
    (root / "samename" / "__init__.py").write_text(f"VALUE = {value!r}\n")
    (root / "venv" / "lib" / "site-packages").mkdir(parents=True)
    (root / "venv" / "lib" / "site-packages" / "installed_here.py").write_text(f"VALUE = {value!r}\n")
    return root


def _side(baton: host.Baton, tree: Path, name: str, tmp_path: Path) -> host.SideState:
    boot = host.SideBoot(name, str(tree), str(tree), {"SIDE": name}, str(tmp_path / f"{name}.log"), [], -1)
    env = environ.python_view()
    return host.SideState(boot, baton, [str(tree / "venv" / "lib" / "site-packages"), *sys.path], env)


def _baton(*handed: Handed) -> host.Baton:
    """A baton carrying only `handed` (the test process's own warnings and torch stay as they are)."""
    return host.Baton(frozenset(n.partition(".")[0] for n in sys.modules), registry=Registry(lambda: handed))


def test_the_baton_carries_each_sides_modules_path_cwd_and_environment(tmp_path, process_wide, monkeypatch):
    import importlib

    base, head = _tree(tmp_path / "base", "base"), _tree(tmp_path / "head", "head")
    baton = _baton()
    sides = _side(baton, base, "base", tmp_path), _side(baton, head, "head", tmp_path)
    baton.sides = sides
    odd = type(sys)("odd_module")  # torch.classes has a `__path__` that is not a list: shared, not a failure
    odd.__path__ = object()  # type: ignore[attr-defined]
    sys.modules["odd_module"] = odd
    seen = {}
    for state in (*sides, *sides):  # each side twice: the second time finds what it had
        with baton.holding(state):
            mod = importlib.import_module("samename")
            installed = importlib.import_module("installed_here")
            seen.setdefault(state.boot.side, []).append((mod, mod.VALUE, os.getcwd(), os.environ["SIDE"], installed))
        assert "samename" not in sys.modules  # nothing of a side's tree left behind
    assert [v for _, v, *_ in seen["base"]] == ["base", "base"] and [v for _, v, *_ in seen["head"]] == ["head"] * 2
    assert seen["base"][0][0] is seen["base"][1][0]  # the same module object when the side comes back
    assert seen["base"][0][2] == str(base) and seen["head"][0][3] == "head"
    # under a site-packages directory: installed, shared by every side even inside a tree
    assert seen["head"][0][4] is seen["base"][0][4] and "installed_here" in sys.modules
    assert sys.modules["odd_module"] is odd


def test_a_process_wide_setting_is_each_sides_own_and_pristine_for_a_side_that_never_set_it(
    tmp_path, process_wide, monkeypatch
):
    value = {"dtype": "float32"}  # stands for torch's default dtype: one value for the whole process
    setting = Handed("dtype", lambda: value["dtype"], lambda v: value.update(dtype=v))
    base, head = _tree(tmp_path / "base", "base"), _tree(tmp_path / "head", "head")
    baton = _baton(setting)
    b, h = _side(baton, base, "base", tmp_path), _side(baton, head, "head", tmp_path)
    baton.sides = (b, h)
    with baton.holding(h):
        value["dtype"] = "float64"  # the head's conftest: torch.set_default_dtype(torch.float64)
    with baton.holding(b):
        assert value["dtype"] == "float32"  # the base never set it: what a process of its own would have
    with baton.holding(h):
        assert value["dtype"] == "float64"


def test_a_failing_hand_over_still_frees_the_baton(tmp_path, process_wide, monkeypatch):
    tree = _tree(tmp_path / "base", "base")
    baton = _baton()
    side = _side(baton, tree, "base", tmp_path)
    baton.sides = (side,)

    def cuda_fault() -> None:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(host, "_finish_gpu_work", cuda_fault)
    with pytest.raises(RuntimeError, match="illegal memory access"), baton.holding(side):
        pass
    assert baton.lock.acquire(blocking=False)  # the other sides are not left waiting forever
    baton.lock.release()


SWITCHES_SEEN = textwrap.dedent("""
    import os
    import sys
    from pathlib import Path

    import torch

    import mylib

    def test_sort(perfgate):
        hooks = sum(type(f).__name__ == "AssertionRewritingHook" for f in sys.meta_path)
        b = torch.backends
        seen = (b.cuda.flash_sdp_enabled(), b.cuda.mem_efficient_sdp_enabled(), b.cudnn.enabled, hooks)
        with open(os.environ["SIDES_SEEN"] + ".switches", "a") as out:
            print(Path("marker.txt").read_text().strip(), *seen, file=out)
        perfgate(mylib.work, [0.5] * 300)
""")
TURNS_OFF = (
    "import torch\n\ntorch.backends.cuda.enable_flash_sdp(False)\ntorch.backends.cuda.enable_mem_efficient_sdp(False)\n"
)
TURNS_OFF += "torch.backends.cudnn.enabled = False\n"


def test_a_base_conftest_turning_off_sdpa_and_cudnn_leaves_the_heads_switches_and_import_hooks_alone(tmp_path):
    repo = _project(
        tmp_path / "proj",
        base_files={"conftest.py": TURNS_OFF, "test_perf.py": SWITCHES_SEEN},
        head_files={"conftest.py": "", "test_perf.py": SWITCHES_SEEN},
    )
    proc, _ = _ab(repo, tmp_path, "--perfgate-ab-process", "shared")
    out = proc.stdout + proc.stderr
    assert "base and head in one process" in out and "shared comparison ended" not in out, out
    seen = {tuple(line.split()) for line in (tmp_path / "seen.txt.switches").read_text().splitlines()}
    # each side its own switches, and only its own session's assertion-rewriting hook in sys.meta_path
    assert seen == {("base", "False", "False", "False", "1"), ("head", "True", "True", "True", "1")}, seen


LEAVES_STATE = (
    "import os\nimport threading\nimport time\n\n"
    'os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"\n'
    'threading.Thread(target=time.sleep, args=(120,), name="leftover", daemon=True).start()\n'
)


def test_a_side_that_changes_what_the_baton_does_not_carry_ends_sharing_naming_it(tmp_path):
    repo = _project(tmp_path / "proj", conftest=LEAVES_STATE)
    proc, seen = _ab(repo, tmp_path, "--perfgate-strict")
    out = proc.stdout + proc.stderr
    ended = next((line for line in out.splitlines() if "the shared comparison ended" in line), "")
    assert "Python threads (started leftover)" in ended and "environment variable CUBLAS_WORKSPACE_CONFIG" in ended
    assert "measured in a process per tree" in ended, out
    assert re.search(r"test_perf.py::test_sort +time .* REGRESSED", out) and len({pid for *_, pid in seen}) == 6
