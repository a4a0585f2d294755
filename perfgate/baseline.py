"""Committed baseline files: one JSON file per device model, written only on purpose.

Layout is chosen for review: keys sorted, one case per block, samples on one line, and an `updates`
log saying who changed it, when, at which commit and why.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from perfgate.errors import BaselineError
from perfgate.metrics import spec_for
from perfgate.model import Environment, Metric, Run, Timer

FORMAT = "perfgate-baseline"
VERSION = 1
MAX_UPDATES_KEPT = 20


@dataclass(frozen=True)
class BaselineCase:
    case_id: str
    timer: Timer
    median_ms: float
    samples_ms: tuple[float, ...]
    metrics: tuple[Metric, ...] = ()


@dataclass(frozen=True)
class Update:
    at: str
    by: str
    commit: str
    reason: str
    cases: int


@dataclass(frozen=True)
class Baseline:
    path: Path
    environment: Environment
    cases: dict[str, BaselineCase]
    updates: tuple[Update, ...] = ()


def slug(device_name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", device_name.lower()).strip("-") or "unknown-device"


def baseline_path(baseline_dir: Path, env: Environment) -> Path:
    """baselines/nvidia-h100-80gb-hbm3.json; host-timed runs get a host- prefix."""
    prefix = "" if env.device_kind == "cuda" else "host-"
    return Path(baseline_dir) / f"{prefix}{slug(env.device_name)}.json"


def load_baseline(path: Path) -> Baseline | None:
    """The baseline at path, None if there is none; BaselineError naming the file if malformed."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise BaselineError(path, f"not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})") from err
    except (OSError, UnicodeDecodeError) as err:
        raise BaselineError(path, f"cannot be read ({err})") from err
    return _parse(path, data)


def _parse(path: Path, data: Any) -> Baseline:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BaselineError(path, f"not a perfgate baseline (expected \"format\": \"{FORMAT}\")")
    if data.get("version") != VERSION:
        raise BaselineError(path, f"format version {data.get('version')!r} is not supported (expected {VERSION})")
    env_data = _require(path, data, "environment", dict)
    known = {f.name for f in fields(Environment)}
    if "device_kind" not in env_data or "device_name" not in env_data:
        raise BaselineError(path, "environment needs device_kind and device_name")
    env = Environment(**{k: str(v) for k, v in env_data.items() if k in known})
    cases = {cid: _parse_case(path, cid, c) for cid, c in _require(path, data, "cases", dict).items()}
    updates = tuple(Update(**{k: u.get(k, "" if k != "cases" else 0) for k in ("at", "by", "commit", "reason", "cases")})
                    for u in data.get("updates", []) if isinstance(u, dict))
    return Baseline(path=path, environment=env, cases=cases, updates=updates)


def _parse_case(path: Path, case_id: str, c: Any) -> BaselineCase:
    where = f"case {case_id!r}"
    if not isinstance(c, dict):
        raise BaselineError(path, f"{where} must be an object")
    samples = _require(path, c, "samples_ms", list, where)
    if len(samples) < 2 or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in samples):
        raise BaselineError(path, f"{where}: samples_ms must be a list of at least 2 non-negative numbers")
    median = _require(path, c, "median_ms", (int, float), where)
    try:
        timer = Timer(c.get("timer", "cuda_event"))
    except ValueError as err:
        raise BaselineError(path, f"{where}: unknown timer {c.get('timer')!r}") from err
    metrics = []
    for m in c.get("metrics", []):
        if not isinstance(m, dict) or not isinstance(m.get("value"), (int, float)) or "name" not in m:
            raise BaselineError(path, f"{where}: each metric needs a name and a numeric value, got {m!r}")
        metrics.append(Metric(name=str(m["name"]), value=float(m["value"]), unit=str(m.get("unit", "")),
                              source=str(m.get("source", "")), kernel=str(m.get("kernel", ""))))
    return BaselineCase(case_id, timer, float(median), tuple(float(v) for v in samples), tuple(metrics))


def _require(path: Path, obj: dict, key: str, kind: Any, where: str = "") -> Any:
    if key not in obj:
        raise BaselineError(path, f"{where + ': ' if where else ''}missing \"{key}\"")
    if not isinstance(obj[key], kind) or isinstance(obj[key], bool):
        raise BaselineError(path, f"{where + ': ' if where else ''}\"{key}\" has the wrong type")
    return obj[key]


def updated_baseline(old: Baseline | None, run: Run, path: Path, who: str, reason: str) -> Baseline:
    """Cases measured in this run replace theirs; cases not run this time are kept as they were."""
    cases = dict(old.cases) if old else {}
    for res in run.results:
        # only catalogue metrics: the gate compares those, and a full ncu set (thousands) would drown review
        kept = tuple(m for m in res.metrics if m.source != "timing" and spec_for(m.name) is not None)
        cases[res.case_id] = BaselineCase(res.case_id, res.timing.timer, res.timing.median_ms, res.samples_ms, kept)
    update = Update(at=run.info.finished_at, by=who, commit=run.info.git_commit, reason=reason,
                    cases=len(run.results))
    updates = ((old.updates if old else ()) + (update,))[-MAX_UPDATES_KEPT:]
    return Baseline(path=path, environment=run.environment, cases=cases, updates=updates)


def render_baseline(b: Baseline) -> str:
    """Stable text: sorted keys, samples and metric rows on one line each, so diffs show what moved."""
    env = {k: v for k, v in sorted(asdict(b.environment).items()) if k not in ("hostname",)}
    lines = ["{", f'  "format": "{FORMAT}",', f'  "version": {VERSION},',
             f'  "environment": {json.dumps(env, sort_keys=True)},', '  "updates": [']
    lines += [f"    {json.dumps(asdict(u), sort_keys=True)}{',' if i < len(b.updates) - 1 else ''}"
              for i, u in enumerate(b.updates)]
    lines += ["  ],", '  "cases": {']
    ids = sorted(b.cases)
    for i, cid in enumerate(ids):
        lines += _render_case(b.cases[cid], last=i == len(ids) - 1)
    lines += ["  }", "}"]
    return "\n".join(lines) + "\n"


def _render_case(c: BaselineCase, last: bool) -> list[str]:
    samples = ", ".join(_short(v) for v in c.samples_ms)
    metric_rows = [json.dumps({"source": m.source, "kernel": m.kernel, "name": m.name, "value": m.value,
                               "unit": m.unit}, sort_keys=True)
                   for m in sorted(c.metrics, key=lambda m: (m.source, m.kernel, m.name))]
    out = [f"    {json.dumps(c.case_id)}: {{", f'      "timer": "{c.timer.value}",',
           f'      "median_ms": {_short(c.median_ms)},', f'      "samples_ms": [{samples}],',
           '      "metrics": [']
    out += [f"        {row}{',' if j < len(metric_rows) - 1 else ''}" for j, row in enumerate(metric_rows)]
    out += ["      ]", f"    }}{'' if last else ','}"]
    return out


def _short(v: float) -> str:
    """Six significant digits: far below timing noise, and short lines in review."""
    return repr(float(f"{v:.6g}"))


def write_baseline(b: Baseline) -> None:
    """Write atomically (temp file + rename) so an interrupted update never leaves half a file."""
    b.path.parent.mkdir(parents=True, exist_ok=True)
    tmp = b.path.with_suffix(b.path.suffix + ".tmp")
    tmp.write_text(render_baseline(b), encoding="utf-8")
    os.replace(tmp, b.path)
