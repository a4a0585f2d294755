"""`pytest --perfgate -n N`: one GPU per pytest-xdist worker, and one run from all of them.

Two workers on one GPU would time each other, so N may not exceed the visible GPUs, and host-timed cases
(which would share CPU cores) refuse -n. Each worker makes its GPU the current CUDA device before any
test runs (perf tests allocate on "cuda", the current device), measures, and sends its cases to the
controller when it shuts down; the controller stores them as one run in one transaction.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from perfgate.codec import CodecError, case_from_dict, case_to_dict, unmeasured_from_dict, unmeasured_to_dict
from perfgate.errors import ConfigError
from perfgate.pytest_plugin.arguments import ArgumentError
from perfgate.pytest_plugin.session import PerfgateSession

OUTPUT_KEY = "perfgate"
GPU_KEY = "perfgate_gpu"


def worker_count(config: pytest.Config) -> int:
    if not config.pluginmanager.hasplugin("xdist"):
        return 0
    n = config.getoption("numprocesses", None)
    if isinstance(n, int) and n > 0:
        return n
    tx = config.getoption("tx", None) or []
    return len(tx) if config.getoption("dist", "no") != "no" else 0


def check_controller(config: pytest.Config) -> None:
    """Refuse worker counts the GPUs cannot isolate, before any worker starts."""
    workers = worker_count(config)
    if not workers:
        return
    from perfgate.measure.timer import cuda_available

    if not cuda_available():
        raise ConfigError(
            "perfgate: -n (pytest-xdist) needs one GPU per worker; without CUDA the cases are timed "
            "with the host clock and parallel workers would share CPU cores and skew each other: "
            "run the perf suite without -n"
        )
    import torch

    gpus = torch.cuda.device_count()
    if workers > gpus:
        raise ConfigError(
            f"perfgate: -n {workers} but {gpus} GPU(s) visible: two workers on one GPU would time "
            f"each other; use -n {gpus} or fewer"
        )
    names = {torch.cuda.get_device_name(i) for i in range(workers)}
    if len(names) > 1:
        raise ConfigError(
            f"perfgate: -n needs one GPU model (one baseline per model), found {sorted(names)}; "
            "narrow CUDA_VISIBLE_DEVICES"
        )


def assign_gpu(node: Any) -> None:
    """Controller side (pytest_configure_node): worker gwK gets visible GPU K."""
    worker_id = str(node.workerinput.get("workerid", "gw0"))
    node.workerinput[GPU_KEY] = int(worker_id[2:]) if worker_id[2:].isdigit() else 0


def select_worker_gpu(config: pytest.Config) -> None:
    """Worker side: make its GPU the current device before any test allocates."""
    from perfgate.measure.timer import cuda_available

    workerinput: dict[str, Any] = getattr(config, "workerinput", {})
    index = workerinput.get(GPU_KEY)
    if index is None or not cuda_available():
        return
    import torch

    torch.cuda.set_device(int(index))


def send_worker_results(config: pytest.Config, state: PerfgateSession) -> None:
    output: dict[str, Any] = getattr(config, "workeroutput", {})
    output[OUTPUT_KEY] = json.dumps(
        {
            "results": [case_to_dict(r) for r in state.results.values()],
            "unmeasured": [unmeasured_to_dict(u) for u in state.unmeasured.values()],
        },
        allow_nan=False,
    )


def receive_worker_results(state: PerfgateSession, node: Any, error: Any) -> None:
    worker = getattr(node, "gateway", None)
    name = getattr(worker, "id", "a worker")
    raw = getattr(node, "workeroutput", {}).get(OUTPUT_KEY) if hasattr(node, "workeroutput") else None
    if not raw:
        state.messages.append(f"perfgate: {name} sent no measurements ({error or 'it stopped early'})")
        return
    try:
        doc = json.loads(raw)
        results = [case_from_dict(d) for d in doc["results"]]
        unmeasured = [unmeasured_from_dict(d) for d in doc["unmeasured"]]
    except (ValueError, KeyError, TypeError, CodecError) as err:
        state.messages.append(f"perfgate: {name} sent unreadable measurements: {err}")
        return
    for r in results:
        try:
            state.record(r)
        except ArgumentError as err:  # measured twice across workers, or a value no history could hold
            state.messages.append(f"perfgate: {name}: {err}")
    for u in unmeasured:
        state.unmeasured[u.nodeid] = u
