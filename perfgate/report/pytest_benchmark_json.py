"""A run in pytest-benchmark's own JSON format (`--benchmark-json`, `--benchmark-save`): the document its
`pytest_benchmark_generate_json` writes (machine_info, commit_info, benchmarks, datetime, version), so the
tools that read those files (`pytest-benchmark compare`, github-action-benchmark's `pytest` tool, Bencher's
`json` adapter, a project's own scripts) read perfgate's runs unchanged.

Each case's `stats` are pytest-benchmark's statistics (parse/pytest_benchmark_stats.py, its definitions)
of perfgate's per-call samples, in seconds; `iterations` is the calls timed together per sample; `params`
the test's parameters (null for a test without any), objects JSON cannot hold in pytest-benchmark's
"UNSERIALIZABLE[repr]" form.
"""

from __future__ import annotations

import json
import platform
from typing import Any

from perfgate.model import CaseResult, Run
from perfgate.parse.pytest_benchmark_stats import BenchmarkStats

# the pytest-benchmark version whose format this writes (5.x; the `version` field names the writer's format)
FORMAT_VERSION = "5.1.0"


def render_pytest_benchmark_json(run: Run, include_data: bool = True, project: str = "") -> str:
    doc = {
        "machine_info": machine_info(run),
        "commit_info": {
            "id": run.info.git_commit or "unversioned",
            "time": None,
            "author_time": None,
            "dirty": run.info.git_dirty,
            "project": project,
            "branch": run.info.git_branch or "(unknown)",
        },
        "benchmarks": [benchmark(r, include_data) for r in run.results if r.samples_ms or r.timing.n_samples],
        "datetime": run.info.started_at,
        "version": FORMAT_VERSION,
    }
    return json.dumps(doc, indent=4, ensure_ascii=True, allow_nan=False) + "\n"


def machine_info(run: Run) -> dict[str, Any]:
    """pytest-benchmark's `machine_info`: the platform module's facts, and the CPU as py-cpuinfo names it."""
    env = run.environment
    cores = int(env.cpu_cores) if env.cpu_cores.isdigit() else None
    return {
        "node": env.hostname,
        "processor": platform.processor(),
        "machine": platform.machine(),
        "python_compiler": platform.python_compiler(),
        "python_implementation": platform.python_implementation(),
        "python_implementation_version": platform.python_version(),
        "python_version": env.python_version or platform.python_version(),
        "python_build": list(platform.python_build()),
        "release": platform.release(),
        "system": platform.system(),
        "cpu": {"brand_raw": env.cpu_brand or env.device_name, "count": cores, "arch_string_raw": platform.machine()},
        "perfgate": {"device_kind": env.device_kind, "device_name": env.device_name},
    }


def benchmark(r: CaseResult, include_data: bool) -> dict[str, Any]:
    """One case as pytest-benchmark's `Metadata.as_dict(include_data)`."""
    name = _name(r)
    data_s = [v / 1e3 for v in r.samples_ms] or [r.timing.median_ms / 1e3]
    stats: dict[str, Any] = BenchmarkStats(data_s).as_dict()
    if include_data:
        stats["data"] = data_s
    stats["iterations"] = r.calls_per_sample
    return {
        "group": r.group or None,
        "name": name,
        "fullname": r.case_id,
        "params": dict(r.params) or None,
        "param": name[name.index("[") + 1 : -1] if name.endswith("]") and "[" in name else None,
        "extra_info": dict(r.extra_info),
        "options": {"timer": f"perfgate {r.timing.timer.value}", "disable_gc": False},
        "stats": stats,
    }


def _name(r: CaseResult) -> str:
    """pytest-benchmark's `name` is the test's own name (node.name); a perfgate case named inside a test
    (`perfgate.measure(..., name="bf16")`) keeps its suffix."""
    base = r.nodeid or r.case_id
    test = base.rsplit("::", 1)[-1]
    return test + r.case_id[len(base) :] if r.case_id.startswith(base) else r.case_id.rsplit("::", 1)[-1]
