"""Is a pull request gated with what its base branch gates with?

A pull request can make its own slowdown pass by editing what it is judged against: the baseline file
(a median raised, process medians spread, a case removed), `[tool.perfgate]` (another `baseline_dir`, an
`allow_missing` entry), or a baseline file named in addopts. So when the base ref is known (the action
passes the pull request's base commit; otherwise origin/$GITHUB_BASE_REF), the gate compares what it
reads with what the base ref's own configuration reads for this device, through `git show`. A difference
is reported and fails strict mode unless the pull request states that the change is intended (the
workflow passes --perfgate-accept-baseline-change for a labelled pull request). Cases the base lacks
are fine: a new test's baseline hides nothing the base gates.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfgate.baseline import Baseline, baseline_path, parse_baseline
from perfgate.config.layout import Invocation, RootRule, WorkingTree, place_root
from perfgate.config.project import read_pyproject
from perfgate.config.settings import Settings, settings_from_config
from perfgate.errors import BaselineError, ConfigError, PerfgateError
from perfgate.inputs import parse_json
from perfgate.model import Environment

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

BASE_REF_ENV = "GITHUB_BASE_REF"  # set by GitHub Actions on pull_request(_target) events: the base branch
GIT_TIMEOUT_S = 30.0
SHOWN_CASES = 3  # case ids named per kind of change; the rest are counted


def base_ref(option: str, environ: Mapping[str, str]) -> str:
    """The ref to check against: --perfgate-baseline-ref, else origin/$GITHUB_BASE_REF, else none ("")."""
    if option.strip():
        return option.strip()
    branch = environ.get(BASE_REF_ENV, "").strip()
    return f"origin/{branch}" if branch else ""


@dataclass(frozen=True)
class BaseCheck:
    ref: str
    changes: tuple[str, ...] = ()  # what differs from the base ref, one line each
    added: int = 0  # baseline cases the base ref lacks (fine on their own)
    unverified: str = ""  # why no comparison could be made ("" when it was)
    stated: bool = False  # the pull request states the change is intended


def check_against_base(
    ref: str,
    settings: Settings,
    env: Environment,
    baseline_file: Path | None,
    invocation: Invocation | None = None,
    rule: RootRule | None = None,
) -> BaseCheck:
    """Compare what the gate reads with what the base ref's files make the same invocation read: the project
    root (config/layout.py: pytest's rule, `rule`, on both trees), `[tool.perfgate]`, and (baseline mode,
    `baseline_file` given) the baseline. Never raises for a missing git, ref or file: those are `unverified`,
    which strict mode also fails."""
    stated = settings.accept_baseline_change
    try:
        git = _Git(settings.rootdir)
        top = git.toplevel()
        commit = git.commit(ref)
    except PerfgateError as err:
        return BaseCheck(ref, unverified=str(err).removeprefix("perfgate: "), stated=stated)
    placing = (invocation, rule) if invocation is not None and rule is not None else None
    base_root, changes = _root_changes(git, commit, top, settings.rootdir, placing, ref)
    head_table, _ = read_pyproject(settings.rootdir)
    base_table = _base_table(git, commit, _relative(base_root / "pyproject.toml", top) or "pyproject.toml")
    keys = sorted(k for k in {*head_table, *base_table} if head_table.get(k) != base_table.get(k))
    if keys:
        changes.append(f"[tool.perfgate] differs from {ref} in {', '.join(keys)}")
    if baseline_file is None:  # A/B mode reads no baseline
        return BaseCheck(ref, tuple(changes), stated=stated)
    base_path = _base_baseline_path(base_root, base_table, env, changes, ref)
    head_rel, base_rel = _relative(baseline_file, top), _relative(base_path, top) if base_path else None
    if base_path is not None and head_rel != base_rel:
        changes.append(f"the gate reads {head_rel or baseline_file}, {ref}'s configuration reads {base_rel}")
    added = 0
    if base_rel is not None:
        base_text = git.show(commit, base_rel)
        head_text = baseline_file.read_text(encoding="utf-8", errors="replace") if baseline_file.is_file() else None
        if base_text != head_text:
            what, added = _describe(base_text, head_text, baseline_file)
            changes += [f"{head_rel or baseline_file} differs from {ref}: {w}" for w in what]
    return BaseCheck(ref, tuple(changes), added, stated=stated)


def _root_changes(
    git: _Git, commit: str, top: Path, root: Path, placing: tuple[Invocation, RootRule] | None, ref: str
) -> tuple[Path, list[str]]:
    """The root the base ref's files give this invocation, and how the gate's differs from it: a pull request
    that adds a pytest.ini (tox.ini, setup.cfg, pytest.toml) beside its tests, a `confcutdir`, or a conftest
    that moves pytest's root would otherwise bring its own pyproject.toml and baseline directory."""
    if placing is None:
        return root, []
    try:
        head = place_root(WorkingTree(top), top, *placing)
        base = place_root(_CommitTree(git, commit), top, *placing)
    except ConfigError as err:
        return root, [f"the project root cannot be placed the way {ref} places it ({err})"]
    gate = _relative(root, top)
    gate = "" if gate == "." else gate  # layout.Placed's spelling of the top
    shown = "outside the repository" if gate is None else gate or "."
    changes = []
    if head.root != gate:
        changes.append(
            f"the gate works in {shown} where the pull request's own files place pytest's root at "
            f"{head.describe()}: a conftest, plugin or option moved it"
        )
    if base.root != head.root:  # another configuration file at the same root moves nothing perfgate reads
        changes.append(
            f"the project root moved: pytest's root is {head.describe()}, {ref}'s files place it at {base.describe()}"
        )
    if base.confcutdir != head.confcutdir:
        changes.append(f"confcutdir is {head.confcutdir!r} where {ref}'s configuration has {base.confcutdir!r}")
    return (top / base.root if base.root is not None else root), changes


def _base_baseline_path(
    base_root: Path, base_table: dict[str, Any], env: Environment, changes: list[str], ref: str
) -> Path | None:
    """The baseline file the base ref's configuration reads for this device."""
    try:
        base = settings_from_config(base_table, where=f"{ref}:pyproject.toml [tool.perfgate]", rootdir=base_root)
    except ConfigError as err:
        changes.append(f"{ref}'s [tool.perfgate] no longer reads ({err})")
        return None
    return baseline_path(base.baseline_dir, env)


def _base_table(git: _Git, commit: str, rel: str) -> dict[str, Any]:
    text = git.show(commit, rel)
    if text is None:
        return {}
    try:
        tool = tomllib.loads(text).get("tool", {})
    except tomllib.TOMLDecodeError:
        return {"<unreadable pyproject.toml>": True}
    table = tool.get("perfgate", {}) if isinstance(tool, dict) else {}
    return table if isinstance(table, dict) else {"<not a table>": True}


def _describe(base_text: str | None, head_text: str | None, path: Path) -> tuple[list[str], int]:
    """What changed between two versions of a baseline file, and how many cases were only added."""
    if head_text is None:
        return ["the baseline file was removed"], 0
    head = _parse(head_text, path)
    base = _parse(base_text, path) if base_text is not None else None
    if head is None:
        return ["the baseline file does not read"], 0
    if base is None:
        return ([] if base_text is None else ["the base's version does not read"]), len(head.cases)
    what = []
    removed = sorted(set(base.cases) - set(head.cases))
    changed = sorted(c for c in set(base.cases) & set(head.cases) if base.cases[c] != head.cases[c])
    if removed:
        what.append(f"{len(removed)} case(s) removed ({_names(removed)})")
    if changed:
        what.append(f"{len(changed)} case(s) changed ({_names(changed)})")
    if base.environment != head.environment:
        what.append("its environment (device, timer) changed")
    return what, len(set(head.cases) - set(base.cases))


def _parse(text: str, path: Path) -> Baseline | None:
    try:
        return parse_baseline(path, parse_json(text.encode("utf-8"), path, BaselineError))
    except (BaselineError, ValueError, RecursionError):
        return None


def _names(ids: list[str]) -> str:
    more = f" and {len(ids) - SHOWN_CASES} more" if len(ids) > SHOWN_CASES else ""
    return ", ".join(ids[:SHOWN_CASES]) + more


def _relative(path: Path, top: Path) -> str | None:
    """`path` relative to the repository, as git names it; None outside the repository."""
    try:
        return Path(path).resolve().relative_to(top).as_posix()
    except ValueError:
        return None


class _Git:
    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd

    def _run(self, *args: str) -> tuple[int, str]:
        from perfgate.measure.tools import run_tool

        out = run_tool(["git", *args], GIT_TIMEOUT_S, cwd=self.cwd, check=False)
        return out.returncode, out.stdout

    def toplevel(self) -> Path:
        code, out = self._run("rev-parse", "--show-toplevel")
        if code != 0 or not out.strip():
            raise PerfgateError(f"perfgate: {self.cwd} is not in a git checkout")
        return Path(out.strip()).resolve()

    def commit(self, ref: str) -> str:
        if ref.startswith("-"):
            raise PerfgateError(f"perfgate: {ref!r} is not a git ref")
        code, out = self._run("rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
        if code != 0 or not out.strip():
            raise PerfgateError(
                f"perfgate: the base ref {ref} is not in this checkout (fetch it: actions/checkout "
                f"with fetch-depth: 0, or git fetch origin <base>)"
            )
        return out.strip()

    def show(self, commit: str, rel: str) -> str | None:
        """The file at `rel` in `commit`, None when it has none."""
        code, out = self._run("show", f"{commit}:{rel}")
        return out if code == 0 else None

    def entries(self, commit: str, rel_dir: str) -> dict[str, str]:
        """name -> 'blob' | 'tree' of the directory `rel_dir` ("" the top) in `commit`."""
        where = ("--", f"{rel_dir}/") if rel_dir else ()
        code, out = self._run("ls-tree", "-z", "--full-tree", commit, *where)
        if code != 0:
            return {}
        found = {}
        for entry in filter(None, out.split("\0")):
            meta, _, path = entry.partition("\t")
            found[path.rsplit("/", 1)[-1]] = meta.split(" ")[1] if meta.count(" ") >= 2 else ""
        return found


class _CommitTree:
    """A commit's files, as config/layout.py reads a tree."""

    def __init__(self, git: _Git, commit: str) -> None:
        self.git, self.commit = git, commit
        self._dirs: dict[str, dict[str, str]] = {}

    def _entries(self, rel_dir: str) -> dict[str, str]:
        if rel_dir not in self._dirs:
            self._dirs[rel_dir] = self.git.entries(self.commit, rel_dir)
        return self._dirs[rel_dir]

    def kind(self, rel: str) -> str | None:
        if not rel:
            return "dir"
        parent, _, name = rel.rpartition("/")
        return {"blob": "file", "tree": "dir"}.get(self._entries(parent).get(name, ""))

    def read(self, rel: str) -> bytes | None:
        if self.kind(rel) != "file":
            return None
        text = self.git.show(self.commit, rel)
        return None if text is None else text.encode("utf-8")
