"""Projects laid out the ways users lay them out, installed the ways pip installs them, in a throwaway
environment: for A/B runs that must measure each tree's own code (tests/test_ab_layouts.py).

    src-hook        src/mylib, `pip install -e .` through setuptools' import hook (__editable___*_finder)
    src-pth         src/mylib, `pip install -e .` as a .pth path entry (setuptools' src-layout default)
    pythonpath      src/mylib, nothing installed: pytest's `pythonpath = ["src"]`
    installed-copy  src/mylib, `pip install .` (a copy in site-packages: both sides run the same file)

The environment is a venv whose site-packages adds this interpreter's own (perfgate, pytest, setuptools,
pip) through a .pth, so nothing is downloaded; `pip install --no-deps --no-build-isolation` then takes
about three seconds on the development machine.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sysconfig
import textwrap
import venv
from pathlib import Path
from typing import Any

from tests.ab_repo import git, make_repo

LAYOUTS = ("src-hook", "src-pth", "pythonpath", "installed-copy")
PIP_TIMEOUT_S = 240

BUILD = textwrap.dedent("""
    [build-system]
    requires = ["setuptools>=64"]
    build-backend = "setuptools.build_meta"

    [project]
    name = "mylib"
    version = "0.1"
""")
# a package dir that is not src/'s root: setuptools serves it through an import hook, not a path entry
HOOK = '\n[tool.setuptools]\npackages = ["mylib"]\npackage-dir = {mylib = "src/mylib"}\n'
CONFIG = (
    "\n[tool.pytest.ini_options]\n{pythonpath}\n"
    "[tool.perfgate]\nab_rounds = 4\nbudget_ms = 40.0\nab_fresh_pair = false\n"  # one pair of processes: faster
)

PERF_TEST = textwrap.dedent("""
    import random

    import mylib

    def test_sort(perfgate):
        data = [random.random() for _ in range(300)]
        perfgate(mylib.work, data)
""")


def mylib(n: int) -> str:
    return f"N = {n}\n\n\ndef work(data):\n    return sorted(data * N)\n"


def project(root: Path, layout: str, conftest: str = "", head_files: dict[str, str] | None = None) -> Path:
    """A git repository: the base commit's mylib sorts the data once, the head's (HEAD) three times, with
    `head_files` added there."""
    repo = make_repo(root / "proj")
    pyproject = "" if layout == "pythonpath" else BUILD + (HOOK if layout == "src-hook" else "")
    pyproject += CONFIG.format(pythonpath='pythonpath = ["src"]' if layout == "pythonpath" else "")
    files = {
        "pyproject.toml": pyproject,
        "tests/test_perf.py": PERF_TEST,
        "src/mylib/__init__.py": mylib(1),
        ".gitignore": ".perfgate/\n*.egg-info/\nbuild/\n",
    }
    if conftest:
        files["tests/conftest.py"] = conftest
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base: sorts once")
    for name, text in {"src/mylib/__init__.py": mylib(3), **(head_files or {})}.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "head: sorts three times")
    return repo


def environment(root: Path, repo: Path, layout: str) -> Path:
    """A venv seeing this interpreter's packages, with the project installed as `layout` says; its python."""
    env_dir = root / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    ours = dict.fromkeys([sysconfig.get_paths()["purelib"], *site.getsitepackages()])
    lines = "".join(f"import site; site.addsitedir({p!r})\n" for p in ours if os.path.isdir(p))
    (Path(purelib) / "zz_perfgate_tests.pth").write_text(lines)
    if layout in ("src-hook", "src-pth", "installed-copy"):
        editable = ["-e"] if layout != "installed-copy" else []
        argv = [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index"]
        subprocess.run(
            [*argv, *editable, str(repo)],
            capture_output=True,
            check=True,
            timeout=PIP_TIMEOUT_S,
            env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        )
    return python


def ab(python: Path, repo: Path, root: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """`pytest --perfgate --perfgate-base HEAD~1` in the project with that environment's python; the JSON."""
    out = root / "out.json"
    argv = [str(python), "-m", "pytest", "-p", "no:cacheprovider", "--perfgate", "--perfgate-base", "HEAD~1"]
    argv += [f"--perfgate-worktree-dir={root / 'wt'}", "--perfgate-no-store", f"--perfgate-json={out}", *extra]
    env = {k: v for k, v in os.environ.items() if k not in ("PERFGATE_DB", "GITHUB_STEP_SUMMARY", "PYTHONPATH")}
    proc = subprocess.run(argv, cwd=repo, capture_output=True, text=True, timeout=300, env=env)
    return proc, json.loads(out.read_text()) if out.exists() else {}


def verdicts(doc: dict[str, Any]) -> dict[str, str]:
    return {c["case_id"]: c["verdict"] for c in doc.get("comparisons", ()) if c["metric"] == "median_ms"}
