"""Just enough of the GitHub Actions runner to execute action.yml's `run` steps on this machine.

It evaluates the expression subset the action uses (`inputs.*`, `steps.*.outputs.*`, `github.*`, `==`,
`!=`, `&&`, `||`, `!`, `always()`, `startsWith()`), passes env the way the runner does (GITHUB_ENV,
GITHUB_OUTPUT, GITHUB_ACTION_PATH), runs each script with `bash -eo pipefail` like the runner's default
shell, and records `uses:` steps instead of running them (they are other repositories' actions).
"""

from __future__ import annotations

import os
import re
import subprocess
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
    env: dict[str, str]


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


def _read_pairs(path: Path) -> dict[str, str]:
    pairs = dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    path.write_text("")
    return pairs


def run_action(
    inputs: dict[str, str],
    workdir: Path,
    runner_dir: Path,
    github: dict[str, Any] | None = None,
    base_env: dict[str, str] | None = None,
    timeout_s: float = 300,
) -> JobRun:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    values = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
    unknown = set(inputs) - set(values)
    if unknown:
        raise ValueError(f"not inputs of action.yml: {sorted(unknown)}")
    github = {"event_name": "push", "repository": "o/r", "token": "t", "event": {}, **(github or {})}
    context: dict[str, Any] = {"github": github, "steps": {}, "runner": {"temp": str(runner_dir / "temp")}}
    context["inputs"] = {k: substitute(v, context) for k, v in {**values, **inputs}.items()}
    files = {name: runner_dir / name for name in ("env", "output", "summary")}
    for f in files.values():
        f.write_text("")
    (runner_dir / "temp").mkdir(exist_ok=True)
    job_env = {
        **(base_env or dict(os.environ)),
        "GITHUB_ACTION_PATH": str(ROOT),
        "GITHUB_ENV": str(files["env"]),
        "GITHUB_OUTPUT": str(files["output"]),
        "GITHUB_STEP_SUMMARY": str(files["summary"]),
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
            steps.append(
                StepRun(
                    "uses",
                    uses=step["uses"],
                    with_={k: substitute(str(v), context) for k, v in step.get("with", {}).items()},
                )
            )
            continue
        env = {**job_env, **{k: substitute(str(v), context) for k, v in step.get("env", {}).items()}}
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        job_env.update(_read_pairs(files["env"]))
        if step.get("id"):
            context["steps"][step["id"]] = {"outputs": _read_pairs(files["output"])}
        steps.append(StepRun("run", proc.returncode, proc.stdout + proc.stderr))
        failed = failed or proc.returncode != 0
    return JobRun(steps, failed, job_env)
