"""Just enough of the GitHub Actions runner to execute action.yml's `run` steps on this machine.

It evaluates the expression subset the action uses (`inputs.*`, `steps.*.outputs.*`, `github.*`, `==`,
`!=`, `&&`, `||`, `!`, `always()`, `startsWith()`), runs each script with `bash -eo pipefail` like the runner's
default shell, and records `uses:` steps instead of running them (they are other repositories' actions).

The runner's file commands are emulated from its source (actions/runner, src/Runner.Worker/
FileCommandManager.cs and Handlers/Handler.cs): before each step a fresh, empty file per command under
`$RUNNER_TEMP/_runner_file_commands/<prefix><guid>` (the previous step's deleted), named to the step by
GITHUB_ENV, GITHUB_PATH, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, GITHUB_STATE, GITHUB_ARTIFACTS(_LIST); after it,
set_env_ (NAME=VALUE and NAME<<DELIMITER blocks; NODE_OPTIONS refused) goes into every later step's
environment, add_path_ in front of every later step's PATH (the latest first), set_output_ into the step's
outputs and step_summary_ into the job summary. So what a test plants in those files reaches later steps here
exactly as it would on GitHub.
"""

from __future__ import annotations

import os
import re
import subprocess
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
TOKEN = re.compile(r"\s*(?:('(?:[^']|'')*')|(&&|\|\||==|!=|!|\(|\)|,)|([A-Za-z_][\w.-]*))")
EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.S)


@dataclass
class StepRun:
    kind: str  # "run" | "uses" | "skipped"
    returncode: int = 0
    stdout: str = ""
    uses: str = ""
    with_: dict[str, str] = field(default_factory=dict)


@dataclass
class JobRun:
    steps: list[StepRun]
    failed: bool
    env: dict[str, str]  # the job's environment after the last step (set_env applied)
    prepend_path: list[str] = field(default_factory=list)  # add_path, in the order added


# (prefix, the variable that names it to the step): FileCommandManager's extensions
FILE_COMMANDS = (
    ("add_path_", "GITHUB_PATH"),
    ("set_env_", "GITHUB_ENV"),
    ("step_summary_", "GITHUB_STEP_SUMMARY"),
    ("set_output_", "GITHUB_OUTPUT"),
    ("save_state_", "GITHUB_STATE"),
    ("artifacts_list_", "GITHUB_ARTIFACTS_LIST"),
    ("artifacts_", "GITHUB_ARTIFACTS"),
)
SET_ENV_BLOCKED = ("NODE_OPTIONS",)


class FileCommands:
    """The per-step command files of one job, created and processed the way the runner does."""

    def __init__(self, temp: Path, summary: Path) -> None:
        self.directory = temp / "_runner_file_commands"
        self.directory.mkdir(parents=True, exist_ok=True)
        self.summary = summary
        self.suffix = ""
        self.env: dict[str, str] = {}
        self.prepend_path: list[str] = []

    def initialize(self) -> dict[str, str]:
        """Before a step: the previous step's files deleted, fresh empty ones; their variables."""
        old, self.suffix = self.suffix, str(uuid.uuid4())
        names = {}
        for prefix, variable in FILE_COMMANDS:
            if old:
                (self.directory / f"{prefix}{old}").unlink(missing_ok=True)
            path = self.directory / f"{prefix}{self.suffix}"
            path.write_text("")
            names[variable] = str(path)
        return names

    def process(self) -> dict[str, str]:
        """After a step: env and PATH for every later step, the job summary; the step's outputs."""
        path = self.directory / f"add_path_{self.suffix}"
        for line in _text(path).splitlines():
            if line:
                self.prepend_path = [p for p in self.prepend_path if p != line] + [line]
        for key, value in env_file_pairs(_text(self.directory / f"set_env_{self.suffix}")):
            if key.upper() not in SET_ENV_BLOCKED:
                self.env[key] = value
        with self.summary.open("a") as out:
            out.write(_text(self.directory / f"step_summary_{self.suffix}"))
        return dict(env_file_pairs(_text(self.directory / f"set_output_{self.suffix}")))

    def step_env(self, base: dict[str, str]) -> dict[str, str]:
        env = {**base, **self.env}
        if self.prepend_path:
            env["PATH"] = os.pathsep.join([*reversed(self.prepend_path), env.get("PATH", "")])
        return env


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def env_file_pairs(text: str) -> list[tuple[str, str]]:
    """EnvFileKeyValuePairs: NAME=VALUE lines and NAME<<DELIMITER ... DELIMITER blocks."""
    pairs, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        line = lines[i].removesuffix("\r")
        i += 1
        if not line:
            continue
        eq, heredoc = line.find("="), line.find("<<")
        if eq >= 0 and (heredoc < 0 or eq < heredoc):
            key, value = line.split("=", 1)
            pairs.append((key, value))
            continue
        if heredoc < 0:
            raise ValueError(f"invalid file command line {line!r}")
        key, delimiter = line.split("<<", 1)
        body = []
        while i < len(lines) and lines[i].removesuffix("\r") != delimiter:
            body.append(lines[i])
            i += 1
        if i >= len(lines):
            raise ValueError(f"no closing delimiter {delimiter!r}")
        i += 1
        pairs.append((key, "\n".join(body)))
    return pairs


def _python_expr(expr: str) -> str:
    out, pos = [], 0
    expr = expr.strip()
    while pos < len(expr):
        m = TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            raise ValueError(f"unsupported expression: {expr!r} at {pos}")
        pos = m.end()
        string, op, name = m.groups()
        if string is not None:
            out.append(repr(string[1:-1].replace("''", "'")))
        elif op is not None:
            out.append({"&&": " and ", "||": " or ", "!": " not "}.get(op, op))
        elif expr[pos:].lstrip().startswith("("):
            out.append({"always": "_always", "startsWith": "_starts", "format": "_format"}[name])
        elif name in ("true", "false"):
            out.append(name.title())
        else:
            out.append(f"_get({name!r})")
    return "".join(out)


def evaluate(expr: str, context: dict[str, Any]) -> Any:
    def get(path: str) -> Any:
        node: Any = context
        for part in path.split("."):
            node = node.get(part, "") if isinstance(node, dict) else ""
        return node

    scope = {
        "_get": get,
        "_always": lambda: True,
        "_format": lambda f, *a: f.format(*a),
        "_starts": lambda s, p: str(s).lower().startswith(str(p).lower()),
    }
    return eval(_python_expr(expr), {"__builtins__": {}}, scope)  # noqa: S307 (the expression subset above)


def substitute(text: str, context: dict[str, Any]) -> str:
    return EXPRESSION.sub(lambda m: str(evaluate(m.group(1), context) or ""), text)


def run_action(
    inputs: dict[str, str],
    workdir: Path,
    runner_dir: Path,
    github: dict[str, Any] | None = None,
    base_env: dict[str, str] | None = None,
    timeout_s: float = 300,
    stand_ins: dict[str, Callable[[dict[str, str]], dict[str, str]]] | None = None,
) -> JobRun:
    """`stand_ins`: for a `uses:` action (its name before @), a function given the step's `with:` that does
    what the action would here (actions/cache/restore: put a saved directory back) and returns its outputs;
    other `uses:` steps are recorded only."""
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    values = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
    unknown = set(inputs) - set(values)
    if unknown:
        raise ValueError(f"not inputs of action.yml: {sorted(unknown)}")
    github = {"event_name": "push", "repository": "o/r", "token": "t", "event": {}, **(github or {})}
    context: dict[str, Any] = {"github": github, "steps": {}, "runner": {"temp": str(runner_dir / "temp")}}
    context["inputs"] = {k: substitute(v, context) for k, v in {**values, **inputs}.items()}
    (runner_dir / "temp").mkdir(exist_ok=True)
    summary = runner_dir / "summary"
    summary.write_text("")
    files = FileCommands(runner_dir / "temp", summary)
    job_env = {
        **(base_env or dict(os.environ)),
        "GITHUB_ACTION_PATH": str(ROOT),
        "RUNNER_TEMP": str(runner_dir / "temp"),
        "RUNNER_TOOL_CACHE": str(runner_dir / "tool-cache"),
        "GITHUB_REPOSITORY": github["repository"],
        "GITHUB_RUN_ID": "1",
        "GITHUB_JOB": "gate",
        "GITHUB_EVENT_NAME": github["event_name"],
    }
    steps, failed = [], False
    for step in action["runs"]["steps"]:
        condition = str(step.get("if", "success()")).strip().removeprefix("${{").removesuffix("}}")
        wants = (
            evaluate(condition.replace("success()", "true"), context)
            if "always()" in condition or not failed
            else False
        )
        if not wants:
            steps.append(StepRun("skipped"))
            continue
        if "uses" in step:
            with_ = {k: substitute(str(v), context) for k, v in step.get("with", {}).items()}
            stand_in = (stand_ins or {}).get(step["uses"].split("@")[0])
            outputs = stand_in(with_) if stand_in is not None else {}
            if step.get("id"):
                context["steps"][step["id"]] = {"outputs": outputs}
            steps.append(StepRun("uses", uses=step["uses"], with_=with_))
            continue
        names = files.initialize()
        env = {
            **files.step_env(job_env),
            **names,
            **{k: substitute(str(v), context) for k, v in step.get("env", {}).items()},
        }
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        outputs = files.process()
        if step.get("id"):
            context["steps"][step["id"]] = {"outputs": outputs}
        steps.append(StepRun("run", proc.returncode, proc.stdout + proc.stderr))
        failed = failed or proc.returncode != 0
    return JobRun(steps, failed, {**job_env, **files.env}, list(files.prepend_path))
