import json
import multiprocessing
import os
from pathlib import Path

import pytest

from perfgate.atomic import exclusive_lock
from perfgate.baseline import baseline_path, load_baseline
from perfgate.baseline.write import (
    calibrated_baseline,
    render_baseline,
    update_baseline_file,
    updated_baseline,
    write_baseline,
)
from perfgate.config.settings import Settings
from perfgate.errors import BaselineError
from perfgate.model import Environment, Metric
from tests.helpers import ENV, baseline_of, calibrated, make_run, noisy

# the H100 baseline as the first version wrote it (format version 1, 19 cases, uncalibrated)
V1_BASELINE = (Path(__file__).parent / "data" / "baseline_v1_h100.json").read_text()


def test_baseline_file_is_named_after_the_device_model(tmp_path):
    assert baseline_path(tmp_path, ENV).name == "nvidia-h100-80gb-hbm3.json"
    assert baseline_path(tmp_path, Environment("host", "Intel(R) Xeon(R)")).name == "host-intel-r-xeon-r.json"


def test_written_baseline_reads_back_with_its_update_log(tmp_path):
    path = tmp_path / "b.json"
    run = make_run(
        {"t::b": [1.0, 1.1, 0.9], "t::a": [2.0, 2.1]},
        metrics=(
            Metric("launch__registers_per_thread", 64, "register/thread", "ncu", "k"),
            Metric("some__uncatalogued.metric", 1, "", "ncu", "k"),
        ),
    )
    write_baseline(updated_baseline(None, run, path, "alice", "first"))
    b = load_baseline(path)
    assert sorted(b.cases) == ["t::a", "t::b"]
    assert b.cases["t::b"].samples_ms == (1.0, 1.1, 0.9)
    assert [m.name for m in b.cases["t::b"].metrics] == ["launch__registers_per_thread"]  # only gated metrics
    assert b.updates[-1].by == "alice" and b.updates[-1].reason == "first" and b.updates[-1].commit == "abc123"
    assert not b.calibrated


def test_rendering_is_stable_and_sorted_for_review(tmp_path):
    path = tmp_path / "b.json"
    b1 = updated_baseline(None, make_run({"z": [1.0, 2.0], "a": [3.0, 4.0]}), path, "x", "r")
    b2 = updated_baseline(None, make_run({"a": [3.0, 4.0], "z": [1.0, 2.0]}), path, "x", "r")
    text = render_baseline(b1)
    assert text == render_baseline(b2)
    assert text.index('"a"') < text.index('"z"')
    json.loads(text)  # still plain JSON


def test_update_keeps_cases_that_were_not_run(tmp_path):
    path = tmp_path / "b.json"
    first = updated_baseline(None, make_run({"a": [1.0, 1.0], "b": [2.0, 2.0]}), path, "x", "one")
    second = updated_baseline(first, make_run({"a": [5.0, 5.0]}), path, "x", "two")
    assert second.cases["a"].median_ms == 5.0
    assert second.cases["b"].median_ms == 2.0
    assert [u.reason for u in second.updates] == ["one", "two"]


def test_a_baseline_written_by_the_first_version_still_reads_as_uncalibrated(tmp_path):
    assert '"version": 1' in V1_BASELINE
    path = tmp_path / "v1.json"
    path.write_text(V1_BASELINE)
    b = load_baseline(path)
    assert b.environment.device_name == "NVIDIA H100 80GB HBM3" and len(b.cases) == 19 and not b.calibrated


def test_calibrated_baseline_keeps_process_medians_noise_and_what_each_case_detects(tmp_path):
    path = tmp_path / "b.json"
    runs = [
        make_run({"t::quiet": noisy(1.0 + 0.002 * i, seed=i), "t::loud": noisy(1.0 + 0.05 * (i % 2), seed=i)})
        for i in range(6)
    ]
    write_baseline(calibrated_baseline(None, runs, path, "ci", "calibrate", Settings()))
    b = load_baseline(path)
    assert b.calibrated and b.updates[-1].calibrated_runs == 6
    quiet, loud = b.cases["t::quiet"], b.cases["t::loud"]
    assert len(quiet.process_medians_ms) == 6
    assert quiet.noise_pct < loud.noise_pct and quiet.threshold_pct < loud.threshold_pct
    assert quiet.threshold_pct >= 1.0  # the minimum effect floors what a quiet case calls
    assert quiet.process_speedups == ()  # no reference, no speedup
    assert sorted(quiet.process_medians_ms)[2] <= quiet.median_ms <= sorted(quiet.process_medians_ms)[3]


def test_calibration_keeps_each_process_speedup_and_its_noise(tmp_path):
    from dataclasses import replace

    from perfgate.model import Speedup

    runs = []
    for i in range(5):
        run = make_run({"t::k": noisy(1.0, seed=i)})
        res = replace(run.results[0], speedup=Speedup("torch.op", (1.5,) * 3, 1.5 + 0.002 * i, 1.49, 1.51))
        runs.append(replace(run, results=(res,)))
    path = tmp_path / "b.json"
    write_baseline(calibrated_baseline(None, runs, path, "ci", "calibrate", Settings()))
    case = load_baseline(path).cases["t::k"]
    assert case.process_speedups == (1.5, 1.502, 1.504, 1.506, 1.508)
    assert 0.1 <= case.speedup_noise_pct < 0.5 and 1.0 <= case.speedup_threshold_pct < 3.0


BASE = {
    "format": "perfgate-baseline",
    "version": 2,
    "environment": {"device_kind": "cuda", "device_name": "x"},
    "cases": {},
}


def _with_case(**fields):
    doc = json.loads(json.dumps(BASE))
    doc["cases"]["t"] = {"median_ms": 1.0, "samples_ms": [1.0, 2.0], **fields}
    return json.dumps(doc)


@pytest.mark.parametrize(
    "content, problem",
    [
        ("{not json", "not valid JSON (line 1"),
        ('{"format": "something-else"}', "not a perfgate baseline"),
        ('{"format": "perfgate-baseline", "version": 99}', "format version 99"),
        ('{"format": "perfgate-baseline", "version": true}', "format version True"),
        ('{"format": "perfgate-baseline", "version": 2, "cases": {}}', 'missing "environment"'),
        (_with_case(samples_ms=[1.0]), "at least 2"),
        (_with_case(samples_ms=[]), "at least 2"),
        (_with_case(median_ms="1.0"), '"median_ms" must be a finite number > 0'),
        (_with_case(median_ms=0), '"median_ms" must be a finite number > 0'),
        (_with_case(median_ms=-1.0), '"median_ms" must be a finite number > 0'),
        (_with_case(median_ms=True), '"median_ms" must be a finite number > 0'),
        (_with_case(median_ms=12345.0).replace("12345.0", "1e400"), '"median_ms" is outside the range of a double'),
        (_with_case(samples_ms=[1.0, 7.5]).replace("7.5", "-1e400"), '"samples_ms[1]" is outside the range'),
        (_with_case(noise_pct=7.5).replace("7.5", "1" * 400 + ".0"), '"noise_pct" is outside the range of a double'),
        (_with_case(median_ms=float("inf")), "Infinity is not valid JSON"),
        (_with_case(samples_ms=[1.0, -2.0]), "samples_ms[1]"),
        (_with_case(timer="wallclock"), "unknown timer"),
        (_with_case(process_medians_ms=[1.0, 2.0]), "process_medians_ms"),
        (_with_case(metrics=[{"name": "x", "value": "big"}]), "metrics[0]"),
        (_with_case(metrics=[{"name": "x", "value": 1, "kernel": 5}]), '"kernel" must be a string'),
        (_with_case(autotune={"k": 3}), "autotune"),
        (_with_case(gpu_state={"polls": -1}), "gpu_state"),
        (json.dumps({**BASE, "environment": {"device_kind": "cuda", "device_name": 5}}), "device_name"),
        (json.dumps({**BASE, "environment": {"device_kind": "tpu", "device_name": "x"}}), "device_kind"),
        (
            json.dumps({**BASE, "environment": {"device_kind": "cuda", "device_name": "x", "driver_version": 1}}),
            "driver_version",
        ),
        (json.dumps({**BASE, "updates": {}}), '"updates" must be a list'),
        (json.dumps({**BASE, "updates": [{"cases": -1}]}), "updates[0]"),
        ('{"format": "perfgate-baseline", "version": 2, "version": 2}', "duplicate key"),
        ('{"format": "perfgate-baseline", "version": 2, "x": NaN}', "NaN is not valid JSON"),
        ('{"a":' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        ("\xff\xfe garbage", "not valid JSON"),
    ],
)
def test_malformed_baseline_is_one_clear_line_naming_the_file(tmp_path, content, problem):
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8", errors="surrogateescape")
    with pytest.raises(BaselineError) as err:
        load_baseline(path)
    assert str(path) in str(err.value)
    assert problem in str(err.value)
    assert "\n" not in str(err.value)


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    with pytest.raises(BaselineError, match="not a regular file"):
        load_baseline(fifo)


def test_missing_baseline_is_none(tmp_path):
    assert load_baseline(tmp_path / "none.json") is None


def test_writing_leaves_no_temporary_files(tmp_path):
    path = tmp_path / "b.json"
    for i in range(3):
        write_baseline(updated_baseline(None, make_run({"a": [1.0 + i, 2.0]}), path, "x", "r"))
    assert [p.name for p in tmp_path.iterdir()] == ["b.json"]


def _update_one(args):
    path, name, lock_dir = args
    os.environ["PERFGATE_LOCK_DIR"] = lock_dir
    from pathlib import Path

    from perfgate.baseline.write import update_baseline_file, updated_baseline
    from tests.helpers import make_run

    run = make_run({name: [1.0, 2.0]})
    update_baseline_file(Path(path), lambda old: updated_baseline(old, run, Path(path), "w", name))


def test_concurrent_updates_of_one_baseline_all_land(tmp_path):
    path = tmp_path / "b.json"
    names = [f"case{i:02d}" for i in range(24)]
    with multiprocessing.get_context("spawn").Pool(4) as pool:  # each spawned process imports perfgate: ~0.5 s
        pool.map(_update_one, [(str(path), n, str(tmp_path / "locks")) for n in names])
    b = load_baseline(path)
    assert sorted(b.cases) == names  # no update lost
    assert len(b.updates) == 20  # the log keeps the last 20


def test_an_update_that_cannot_get_the_lock_fails_loudly(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFGATE_LOCK_DIR", str(tmp_path / "locks"))
    path = tmp_path / "b.json"
    with exclusive_lock(path):
        with pytest.raises(BaselineError, match="not updated: .* locked by another process"):
            update_baseline_file(
                path, lambda old: updated_baseline(old, make_run({"a": [1.0, 2.0]}), path, "x", "r"), timeout_s=0.2
            )
    assert not path.exists()


KILLED_WRITER = """
import os, signal, sys
from pathlib import Path
import perfgate.atomic
from perfgate.baseline.write import update_baseline_file, updated_baseline
from tests.helpers import make_run

def killed(*args):  # kill -9 after the temporary is written, before the rename
    os.kill(os.getpid(), signal.SIGKILL)

perfgate.atomic.os.replace = killed
path = Path(sys.argv[1])
update_baseline_file(path, lambda old: updated_baseline(old, make_run({"k": [1.0, 2.0]}), path, "w", "killed"))
"""


def test_a_writer_killed_mid_write_leaves_no_temporaries_that_pile_up(tmp_path, monkeypatch):
    import signal
    import subprocess
    import sys

    monkeypatch.setenv("PERFGATE_LOCK_DIR", str(tmp_path / "locks"))
    baselines = tmp_path / "baselines"
    path = baselines / "b.json"
    root = Path(__file__).resolve().parents[1]
    for _ in range(3):
        done = subprocess.run(
            [sys.executable, "-c", KILLED_WRITER, str(path)],
            cwd=root,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(root)},
            capture_output=True,
        )
        assert done.returncode == -signal.SIGKILL, done.stderr
        # each writer removed what the one before it left: one temporary at most, never a pile
        assert len([p for p in baselines.iterdir() if p.name.endswith(".tmp")]) == 1
    (baselines / ".b.json.notmine.tmp").write_text("a user's file")  # not a name perfgate makes
    update_baseline_file(path, lambda old: updated_baseline(old, make_run({"a": [1.0, 2.0]}), path, "x", "r"))
    assert sorted(p.name for p in baselines.iterdir()) == [".b.json.notmine.tmp", "b.json"]
    assert sorted(load_baseline(path).cases) == ["a"]


def test_a_calibration_process_far_from_the_others_is_named_with_its_unit(tmp_path):
    from perfgate.baseline.review import _isolated_notes

    base = calibrated(
        baseline_of(make_run({"a": noisy(0.0001638)}), tmp_path),
        {"a": [0.0001, 0.000101, 0.0001005, 0.0000998, 0.0001002, 0.0001638]},
    )
    (note,) = _isolated_notes("a", base.cases["a"])
    assert "one calibration process's time (163.8 ns) lies +63.3%" in note
