"""The package as users get it, offline: `python -m build` makes the sdist and, from it, the wheel; the
wheel installs into a fresh virtualenv where `perfgate --version` runs and the pytest plugin imports;
the install step of the composite action and the one of the workflow `perfgate ci init` writes both
resolve (pip --dry-run) to this package, never to a version no index has."""

from __future__ import annotations

import json
import re
import shutil
import site
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml

from perfgate import _version
from perfgate.cli import main

ROOT = Path(__file__).parents[1]
TIMEOUT_S = 300


def run(argv: list[str], cwd: Path) -> str:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, f"{argv} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """What the package is built from, copied so a build never writes into the checkout."""
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md", "action.yml"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "perfgate", src / "perfgate", ignore=shutil.ignore_patterns("__pycache__"))
    return src


@pytest.fixture(scope="module")
def dist(source, tmp_path_factory) -> Path:
    pytest.importorskip("build", reason="the dev extra brings `build`")
    pytest.importorskip("setuptools", reason="the dev extra brings the build backend")
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)], cwd=source)
    return out


def pip_dry_run(requirement: str, cwd: Path) -> dict:
    """What pip would install for `requirement` (metadata built here, nothing fetched, nothing installed)."""
    out = run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--no-deps",
            "--no-index",
            "--no-build-isolation",
            "--quiet",
            "--report",
            "-",
            requirement,
        ],
        cwd=cwd,
    )
    report = json.loads(out)
    assert len(report["install"]) == 1
    return report["install"][0]


@pytest.mark.slow  # builds and resolves the package: its own stage of .ci/run
def test_sdist_and_wheel_build_and_the_wheel_installs_into_a_fresh_venv(dist, tmp_path):
    version = _version()
    sdist, wheel = dist / f"perfgate-{version}.tar.gz", dist / f"perfgate-{version}-py3-none-any.whl"
    assert sorted(p.name for p in dist.iterdir()) == sorted([sdist.name, wheel.name])
    with tarfile.open(sdist) as tar:
        names = set(tar.getnames())
    assert {f"perfgate-{version}/pyproject.toml", f"perfgate-{version}/perfgate/pytest_plugin/__init__.py"} <= names
    with zipfile.ZipFile(wheel) as whl:
        entry_points = whl.read(f"perfgate-{version}.dist-info/entry_points.txt").decode()
    assert "[pytest11]" in entry_points and "perfgate = perfgate.pytest_plugin" in entry_points

    venv = tmp_path / "fresh"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp_path)
    python = venv / "bin" / "python"
    fresh_site = Path(
        run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], cwd=tmp_path).strip()
    )
    # the dependencies (pytest, numpy) from this environment, after the fresh site-packages: --no-deps stays
    # offline, and the perfgate imported is the one the wheel installed
    (fresh_site / "dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "--no-index",
            "--quiet",
            str(wheel),
        ],
        cwd=tmp_path,
    )
    assert run([str(venv / "bin" / "perfgate"), "--version"], cwd=tmp_path).split() == ["perfgate", version]
    where = run(
        [
            str(python),
            "-c",
            ("import perfgate, perfgate.pytest_plugin, perfgate.pytest_plugin.fixture; print(perfgate.__file__)"),
        ],
        cwd=tmp_path,
    ).strip()
    assert Path(where).is_relative_to(fresh_site)


@pytest.mark.slow  # builds and resolves the package: its own stage of .ci/run
def test_the_composite_action_installs_perfgate_from_its_own_checkout(source, tmp_path):
    steps = yaml.safe_load((ROOT / "action.yml").read_text())["runs"]["steps"]
    installs = [s["run"] for s in steps if "pip install" in s.get("run", "")]
    assert len(installs) == 1
    requirement = re.search(r'pip install --quiet "([^"]+)"', installs[0])
    assert requirement is not None and requirement[1].startswith("${GITHUB_ACTION_PATH}")
    # the extras the step picks: report, and the server's with a db-url
    assert (
        requirement[1].endswith("[$extras]")
        and 'extras=report; [ -n "$DB_URL" ] && extras=report,server' in installs[0]
    )
    for extras in ("report", "report,server"):
        target = requirement[1].replace("${GITHUB_ACTION_PATH}", str(source)).replace("$extras", extras)
        resolved = pip_dry_run(target, tmp_path)
        assert resolved["metadata"]["name"] == "perfgate" and resolved["metadata"]["version"] == _version()


@pytest.mark.slow  # builds and resolves the package: its own stage of .ci/run
def test_the_report_action_installs_perfgate_from_its_own_commit(source, tmp_path):
    steps = yaml.safe_load((ROOT / "report" / "action.yml").read_text())["runs"]["steps"]
    installs = [line for s in steps for line in s.get("run", "").splitlines() if "pip install" in line]
    assert len(installs) == 1
    requirement = re.search(r'pip install --quiet "([^"]+)"', installs[0])
    assert requirement is not None and requirement[1] == "${GITHUB_ACTION_PATH}/.."
    (source / "report").mkdir(exist_ok=True)
    resolved = pip_dry_run(str(source / "report" / ".."), tmp_path)
    assert resolved["metadata"]["name"] == "perfgate" and resolved["metadata"]["version"] == _version()


@pytest.mark.slow  # builds and resolves the package: its own stage of .ci/run
def test_the_ci_init_workflow_installs_perfgate_from_the_actions_commit(source, tmp_path, capsys):
    repo = tmp_path / "perfgate-repo"
    shutil.copytree(source, repo)
    git = [
        "git",
        "-c",
        "user.name=perfgate",
        "-c",
        "user.email=perfgate@example.invalid",
        "-c",
        "init.defaultBranch=main",
    ]
    run([*git, "init", "-q"], cwd=repo)
    run([*git, "add", "-A"], cwd=repo)
    run([*git, "commit", "-q", "-m", "perfgate"], cwd=repo)
    sha = run(["git", "rev-parse", "HEAD"], cwd=repo).strip()
    workflow = tmp_path / "perfgate.yml"
    argv = ["ci", "init", "--output", str(workflow), "--action-ref", f"me/perfgate@{sha}", "--default-branch", "main"]
    assert main([*argv, "--tests", "."]) == 0
    baseline = yaml.safe_load(workflow.with_name("perfgate-baseline.yml").read_text())
    installs = [s["run"].strip() for s in baseline["jobs"]["open-pr"]["steps"] if "pip install" in s.get("run", "")]
    assert installs == [f'python -m pip install --quiet "perfgate @ git+https://github.com/me/perfgate@{sha}"']
    requirement = re.search(r'"([^"]+)"', installs[0])[1]
    resolved = pip_dry_run(requirement.replace("https://github.com/me/perfgate", repo.as_uri()), tmp_path)
    assert resolved["metadata"]["name"] == "perfgate" and resolved["metadata"]["version"] == _version()
    assert resolved["download_info"]["vcs_info"]["commit_id"] == sha


@pytest.mark.parametrize("ref", ["perfgate/perfgate@v1", "me/perfgate@main", "me/perfgate@abc123", "perfgate"])
def test_ci_init_refuses_an_action_ref_that_is_not_a_commit(ref, tmp_path, capsys):
    assert main(["ci", "init", "--output", str(tmp_path / "w.yml"), "--action-ref", ref]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "OWNER/REPO@COMMIT_SHA" in err
    assert not (tmp_path / "w.yml").exists()
