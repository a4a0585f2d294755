"""pytest-benchmark's command line under `--perfgate`: what each of its output and comparison flags does there.

- `--benchmark-json PATH` writes pytest-benchmark's own JSON (report/pytest_benchmark_json.py, an output of
  the registry), every sample included as there;
- `--benchmark-save NAME` / `--benchmark-autosave` save the run into pytest-benchmark's storage
  (`--benchmark-storage`, `.benchmarks/<machine id>/NNNN_NAME.json`), with its samples only under
  `--benchmark-save-data`, as pytest-benchmark does;
- `--benchmark-compare[=NUM]` compares with this machine's perfgate baseline instead; where there is none
  yet, the saved run NUM (else the latest) seeds it, marked imported (baseline/imported.py);
- `--benchmark-compare-fail EXPR`: perfgate's gate decides instead (one line says so);
- `--benchmark-histogram`: perfgate's charts (`--perfgate-report-dir`) instead (one line says so).

With pytest-benchmark installed its own plugin declares these flags (perfgate reads them by their names);
without it (a pytest-codspeed suite, a project that dropped pytest-benchmark) perfgate declares the ones it
uses, so the same CI command line works either way.
"""

from __future__ import annotations

import platform
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from perfgate.errors import ConfigError

DECLARED = pytest.StashKey[bool]()  # perfgate declared pytest-benchmark's flags (it is not installed)
PYTEST_BENCHMARK_PLUGINS = ("benchmark", "pytest_benchmark.plugin", "pytest_benchmark")
DEFAULT_STORAGE = "file://./.benchmarks"
# the Settings attributes pytest-benchmark's flags set (config/options.py rows without a perfgate spelling)
PYTEST_BENCHMARK_SETTINGS = ("pytest_benchmark_json_path", "pytest_benchmark_save_path", "pytest_benchmark_save_data")
SAVED_RUN = re.compile(r"^(\d{4})_.*\.json$")

# What a flag perfgate does not carry out itself becomes in perfgate, in one line each.
MAPPED = {
    "--benchmark-compare": (
        "--benchmark-compare: compared with this machine's perfgate baseline instead of a saved run "
        "(the saved run seeds the baseline where there is none yet, marked imported)"
    ),
    "--benchmark-compare-fail": (
        "--benchmark-compare-fail: perfgate's gate fails the run instead: a case slower beyond its own measured "
        "noise, confirmed in fresh processes (the expressions are not used)"
    ),
    "--benchmark-histogram": (
        "--benchmark-histogram: no SVG histograms; perfgate draws each case's charts with --perfgate-report-dir DIR"
    ),
}


def _declared_flags(addoption: Callable[..., Any]) -> None:
    """pytest-benchmark's flags perfgate reads, with pytest-benchmark's names, destinations and kinds."""
    addoption("--benchmark-json", metavar="PATH", type=Path, help="write pytest-benchmark's JSON report to PATH")
    addoption("--benchmark-save", metavar="NAME", help="save the run in the storage as NNNN_NAME.json")
    addoption("--benchmark-autosave", action="store_true", help="save the run in the storage, named by commit and time")
    addoption("--benchmark-save-data", action="store_true", help="the saved run keeps every sample")
    addoption("--benchmark-storage", metavar="URI", default=DEFAULT_STORAGE, help="where runs are saved (file://PATH)")
    addoption(
        "--benchmark-compare", metavar="NUM", nargs="?", default=[], const=True, help=MAPPED["--benchmark-compare"]
    )
    addoption("--benchmark-compare-fail", metavar="EXPR", nargs="+", help=MAPPED["--benchmark-compare-fail"])
    addoption("--benchmark-histogram", action="append", nargs="?", default=[], const="benchmark", help="(see perfgate)")
    addoption("--benchmark-skip", action="store_true", help="skip the tests that use the benchmark fixture")
    addoption("--benchmark-only", action="store_true", help="run only the tests that use the benchmark fixture")
    addoption("--benchmark-disable", action="store_true", help="call benchmarked functions once, unmeasured")
    addoption("--benchmark-enable", action="store_true", help="override --benchmark-disable")
    addoption("--benchmark-disable-gc", action="store_true", help="disable the garbage collector while timing")


def pytest_benchmark_loaded(manager: pytest.PytestPluginManager) -> bool:
    return any(manager.get_plugin(name) is not None for name in PYTEST_BENCHMARK_PLUGINS)


def declare_when_absent(config: pytest.Config, parser: pytest.Parser) -> None:
    """After the plugins pytest loads by entry point or `-p` registered, before the command line is parsed:
    pytest-benchmark's flags, unless pytest-benchmark declared them itself."""
    if not pytest_benchmark_loaded(config.pluginmanager):
        _declared_flags(parser.getgroup("benchmark", "pytest-benchmark's flags (perfgate, under --perfgate)").addoption)
        config.stash[DECLARED] = True


def check_plain_run(config: pytest.Config, given: tuple[str, ...]) -> None:
    """Without --perfgate, flags perfgate declared for a missing pytest-benchmark would do nothing: refused,
    as pytest refuses a flag nobody declared."""
    if config.stash.get(DECLARED, False) and given:
        raise pytest.UsageError(
            f"{', '.join(given)}: pytest-benchmark is not installed; perfgate serves its flags under --perfgate only"
        )


def settings_values(getoption: Callable[..., Any], rootdir: Path, here: Path) -> dict[str, Any]:
    """Settings attributes from pytest-benchmark's output flags (config/options.py rows without a spelling)."""
    values: dict[str, Any] = {}
    json_path = getoption("benchmark_json", None)
    if json_path:
        values["pytest_benchmark_json_path"] = Path(getattr(json_path, "name", json_path))
    name = getoption("benchmark_save", None) or _autosave_name(getoption("benchmark_autosave", None), rootdir)
    if name:
        directory = storage_dir(getoption("benchmark_storage", DEFAULT_STORAGE), here) / machine_id()
        values["pytest_benchmark_save_path"] = directory / f"{next_number(directory):04d}_{name}.json"
        values["pytest_benchmark_save_data"] = bool(getoption("benchmark_save_data", False))
    return values


def _autosave_name(value: object, rootdir: Path) -> str:
    """pytest-benchmark's autosave tag (it computes it when declaring the flag); perfgate's own when it
    declared the flag: COMMIT_YYYYmmdd_HHMMSS[_uncommitted-changes]."""
    if isinstance(value, str):
        return value
    if not value:
        return ""
    import datetime as dt

    from perfgate.measure.git import git_info

    commit, _, dirty = git_info(rootdir)
    parts = [commit or "unversioned", dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d_%H%M%S")]
    return "_".join(parts + (["uncommitted-changes"] if dirty else []))


def storage_dir(uri: object, here: Path) -> Path:
    """`--benchmark-storage`: a file:// URI or a path (pytest-benchmark's rule), relative to the invocation."""
    text = str(uri or DEFAULT_STORAGE)
    scheme, sep, rest = text.partition("://")
    if sep and scheme != "file":
        raise ConfigError(
            f"perfgate: --benchmark-storage {text}: under --perfgate runs are saved to files only (file://PATH); "
            "perfgate's own history is the database"
        )
    path = Path(rest if sep else text)
    return path if path.is_absolute() else here / path


def machine_id() -> str:
    """pytest-benchmark's storage folder for this machine: system-implementation-version-bits."""
    return "-".join(
        (
            platform.system(),
            platform.python_implementation(),
            ".".join(platform.python_version_tuple()[:2]),
            platform.architecture()[0],
        )
    )


def saved_runs(directory: Path) -> list[Path]:
    """The saved runs in a storage folder, oldest number first."""
    if not directory.is_dir():
        return []
    return sorted((p for p in directory.iterdir() if SAVED_RUN.match(p.name)), key=lambda p: p.name)


def next_number(directory: Path) -> int:
    """pytest-benchmark's counter: one past the highest saved run's number."""
    return max((int(p.name[:4]) for p in saved_runs(directory)), default=0) + 1


def compared_run(getoption: Callable[..., Any], here: Path) -> Path | None:
    """The saved run `--benchmark-compare[=NUM]` names (None: not given); ConfigError when there is none."""
    wanted = getoption("benchmark_compare", [])
    if wanted in ([], None, False):
        return None
    directory = storage_dir(getoption("benchmark_storage", DEFAULT_STORAGE), here) / machine_id()
    runs = saved_runs(directory)
    if wanted is not True:
        runs = [p for p in runs if p.name.startswith(str(wanted))]
    if not runs:
        which = "any saved run" if wanted is True else f"a saved run {wanted!r}"
        raise ConfigError(f"perfgate: --benchmark-compare: {directory} holds no {which} to seed the baseline from")
    return runs[-1]


def mapped_lines(given: Mapping[str, object]) -> list[str]:
    """One line per given flag that perfgate maps onto its own equivalent."""
    return [f"perfgate: {line}" for flag, line in MAPPED.items() if flag in given]
