import csv
import json
from dataclasses import replace

import pytest

from perfgate import __version__
from perfgate.baseline.write import updated_baseline, write_baseline
from perfgate.cli import main
from perfgate.store import open_store
from tests.helpers import calibrated_of, make_run, noisy


def run_cli(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_analyze_json_for_an_nsys_export_matches_nsys_stats(capsys, h100_data):
    code, out, _ = run_cli(capsys, "analyze", str(h100_data / "perfgate-nsys.sqlite"), "--format", "json")
    assert code == 0
    doc = json.loads(out)
    kernels = {k["name"]: k for k in doc["kernels"]}
    for row in csv.DictReader((h100_data / "stats_cuda_gpu_kern_sum.csv").open()):
        k = kernels[row["Name"]]
        assert (k["count"], k["total_ns"], k["min_ns"], k["max_ns"]) == (
            int(row["Instances"]),
            int(row["Total Time (ns)"]),
            int(row["Min (ns)"]),
            int(row["Max (ns)"]),
        )
        assert set(k) >= {"name", "count", "total_ns", "avg_ns", "median_ns", "min_ns", "max_ns"}
    assert {"memory", "api", "nvtx"} <= set(doc)


def test_analyze_json_for_an_ncu_report_lists_launches_in_base_units(capsys, ncu_rep):
    code, out, _ = run_cli(capsys, "analyze", str(ncu_rep), "--format", "json")
    doc = json.loads(out)
    add = next(launch for launch in doc["launches"] if launch["name"] == "_add_kernel")
    assert add["units"]["gpu__time_duration.sum"] == "ns"
    assert add["metrics"]["gpu__time_duration.sum"] > 1000
    assert next(d for d in doc["diagnosis"] if d["name"] == "_add_kernel")["bottleneck"] == "memory-bound"


def test_analyze_several_files_compares_them(capsys, h100_data, ncu_rep):
    code, out, _ = run_cli(capsys, "analyze", str(h100_data / "perfgate-nsys.sqlite"), str(ncu_rep), "--format", "json")
    doc = json.loads(out)
    row = next(r for r in doc["comparison"] if r["name"] == "_add_kernel")
    assert set(row["total_ns_by_file"]) == {"perfgate-nsys.sqlite", "perfgate-ncu.ncu-rep"}


def test_analyze_writes_report_analysis_and_charts(tmp_path, capsys, ncu_rep):
    out_dir = tmp_path / "out"
    assert run_cli(capsys, "analyze", str(ncu_rep), "--output-dir", str(out_dir))[0] == 0
    assert {p.name for p in out_dir.iterdir()} >= {"report.md", "analysis.json", "bottleneck_analysis.png"}
    assert "memory-bound" in (out_dir / "report.md").read_text()
    quiet = tmp_path / "quiet"
    assert run_cli(capsys, "analyze", str(ncu_rep), "--output-dir", str(quiet), "--no-charts")[0] == 0
    assert not list(quiet.glob("*.png"))


def test_analyze_bad_file_is_one_line_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "broken.ncu-rep"
    bad.write_bytes(b"")
    code, _, err = run_cli(capsys, "analyze", str(bad))
    assert code == 2
    assert err.strip() == f"perfgate: cannot read {bad}: the file is empty"


def test_compare_gates_a_stored_run_without_pytest(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base_run = make_run({"t::a": noisy(1.0)})
    path = tmp_path / "baselines" / "nvidia-h100-80gb-hbm3.json"
    write_baseline(replace(calibrated_of(base_run, tmp_path), path=path))
    store = open_store(tmp_path / "h.db")
    store.save_run(make_run({"t::a": noisy(1.0, seed=1)}))
    slow_id = store.save_run(make_run({"t::a": noisy(1.2, seed=2)}))
    store.close()
    code, out, _ = run_cli(capsys, "compare", "--db", "h.db", "--run", "1", "--summary", "s.md")
    assert code == 0 and "unchanged" in out
    code, out, _ = run_cli(capsys, "compare", "--db", "h.db", "--json", "r.json")
    assert code == 1 and f"run {slow_id}" in out and "REGRESSED" in out
    assert json.loads((tmp_path / "r.json").read_text())["gate"]["failed"] is True


def test_compare_with_an_empty_history_is_a_clear_error(tmp_path, capsys):
    open_store(tmp_path / "h.db").close()
    code, _, err = run_cli(capsys, "compare", "--db", str(tmp_path / "h.db"))
    assert code == 2 and "has no runs yet" in err


def test_baseline_show_lists_cases(tmp_path, capsys):
    write_baseline(updated_baseline(None, make_run({"t::a": [1.0, 2.0]}), tmp_path / "b.json", "alice", "why not"))
    code, out, _ = run_cli(capsys, "baseline", "show", str(tmp_path))
    assert code == 0
    assert "t::a" in out and "alice" in out and "why not" in out


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out.strip() == f"perfgate {__version__}"


@pytest.fixture
def history(tmp_path):
    with open_store(tmp_path / "h.db") as store:
        for i, m in enumerate((1.0, 1.1, 1.2)):
            store.save_run(make_run({"t::softmax[bf16]": noisy(m, seed=i), "t::matmul": noisy(2.0, seed=i)}))
    return tmp_path / "h.db"


def test_history_lists_runs_and_trends_in_three_formats(history, capsys):
    code, out, _ = run_cli(capsys, "history", "--db", str(history))
    assert code == 0 and out.count("\n") == 2 + 3 and "NVIDIA H100" in out
    code, out, _ = run_cli(capsys, "history", "--db", str(history), "--case", "*softmax*", "--format", "csv")
    rows = list(csv.DictReader(out.splitlines()))
    assert [r["case_id"] for r in rows] == ["t::softmax[bf16]"] * 3
    assert float(rows[0]["median_ms"]) < float(rows[2]["median_ms"])
    code, out, _ = run_cli(
        capsys, "history", "--db", str(history), "--case", "t::matmul", "--last", "2", "--format", "json"
    )
    assert [r["run_id"] for r in json.loads(out)] == [2, 3]


def test_history_as_a_dataframe(history):
    import perfgate

    frame = perfgate.history(history, case="*softmax*")
    assert list(frame["run_id"]) == [1, 2, 3] and frame["median_ms"].is_monotonic_increasing
    assert str(frame["started_at"].dtype).startswith("datetime64")


def test_history_reads_only(tmp_path, capsys):
    code, _, err = run_cli(capsys, "history", "--db", str(tmp_path / "none" / "h.db"))
    assert code == 2 and "no history at" in err and not (tmp_path / "none").exists()


def test_db_merge_from_the_command_line_is_idempotent(history, tmp_path, capsys):
    out_db = tmp_path / "merged.db"
    assert run_cli(capsys, "db", "merge", str(out_db), str(history))[1].count("3 run(s) added") == 1
    assert "0 run(s) added, 3 already in" in run_cli(capsys, "db", "merge", str(out_db), str(history))[1]


def test_baseline_diff_lists_changed_cases(tmp_path, capsys):
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    write_baseline(updated_baseline(None, make_run({"t::a": [1.0, 1.0], "t::b": [2.0, 2.0]}), old, "x", "before"))
    write_baseline(
        updated_baseline(
            None, make_run({"t::a": [1.2, 1.2], "t::b": [2.0, 2.0], "t::c": [3.0, 3.0]}), new, "x", "faster softmax"
        )
    )
    code, out, _ = run_cli(capsys, "baseline", "diff", str(old), str(new))
    assert code == 0 and "faster softmax" in out
    assert "| `t::a` | 1 ms | 1.2 ms | +20.0% |" in out and "| `t::c` | - | 3 ms | added |" in out
    assert "`t::b`" not in out


def test_baseline_diff_reads_the_old_side_from_a_pipe_as_bash_process_substitution_gives_it(tmp_path, capsys):
    """`perfgate baseline diff <(git show main:baselines/x.json) baselines/x.json`: the old side is /dev/fd/N."""
    import os
    import threading

    old, new = tmp_path / "old.json", tmp_path / "new.json"
    write_baseline(updated_baseline(None, make_run({"t::a": [1.0, 1.0]}), old, "x", "before"))
    write_baseline(updated_baseline(None, make_run({"t::a": [1.2, 1.2]}), new, "x", "slower <a|b>"))
    read_end, write_end = os.pipe()

    def writer():
        with os.fdopen(write_end, "wb") as fh:
            fh.write(old.read_bytes())

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        code, out, err = run_cli(capsys, "baseline", "diff", "--format", "text", f"/dev/fd/{read_end}", str(new))
    finally:
        thread.join()
        os.close(read_end)
    assert code == 0, err
    # plain text: no table, no Markdown escaping of the reason
    assert out.splitlines() == [
        "1 of 1 case(s) changed in new.json: slower <a|b>",
        "  t::a: 1 ms -> 1.2 ms (+20.0%; detects -)",
    ]


SHA = "0123456789abcdef0123456789abcdef01234567"


def test_ci_init_writes_a_workflow_that_loads_back(tmp_path, capsys):
    import yaml

    path = tmp_path / ".github" / "workflows" / "perfgate.yml"
    argv = ("ci", "init", "--output", str(path), "--action-ref", f"me/perfgate@{SHA}", "--default-branch", "main")
    argv += ("--tests", ".")  # not a git repository: no perf tests to find, the path given
    assert run_cli(capsys, *argv)[0] == 0
    doc = yaml.safe_load(path.read_text())
    jobs = doc["jobs"]
    assert jobs["gate"]["permissions"] == {"contents": "read"}
    assert jobs["report"]["permissions"] == {"pull-requests": "write", "statuses": "write"}
    assert next(s for s in jobs["gate"]["steps"] if "uses" in s and "perfgate@" in s["uses"])["uses"] == (
        f"me/perfgate@{SHA}"
    )
    assert doc["on"]["pull_request_target"] == {"types": ["labeled", "synchronize"]}
    assert jobs["gate"]["steps"][0]["with"]["persist-credentials"] is False
    assert run_cli(capsys, *argv)[0] == 2  # nothing overwritten without --force


def test_ci_init_takes_the_fleets_history_url_from_a_secret_for_trusted_runs_and_prunes_weekly(tmp_path, capsys):
    import yaml

    path = tmp_path / "perfgate.yml"
    ref = ("--action-ref", f"me/perfgate@{SHA}", "--default-branch", "main", "--tests", ".")
    for label in ("gpu-h100", "ubuntu-latest"):  # a self-hosted runner's workflow and a GitHub-hosted one's
        args = ("ci", "init", "--output", str(path), *ref, "--runner-label", label, "--force")
        assert run_cli(capsys, *args, "--db-secret", "PERFGATE_DB_URL")[0] == 0
        doc = yaml.safe_load(path.read_text())
        action = next(s for s in doc["jobs"]["gate"]["steps"] if "perfgate@" in s.get("uses", ""))["with"]
        # a pull request's job (pull_request, pull_request_target) runs its code: it is handed ''
        assert action["db-url"] == (
            "${{ !startsWith(github.event_name, 'pull_request') && secrets.PERFGATE_DB_URL || '' }}"
        )
        assert doc["on"]["schedule"] == [{"cron": "17 3 * * 1"}]  # the action's prune: auto runs on it
    plain = tmp_path / "plain.yml"
    assert run_cli(capsys, "ci", "init", "--output", str(plain), *ref)[0] == 0
    assert "db-url" not in plain.read_text() and "secrets." not in plain.read_text()  # SQLite on each runner
    code, _, err = run_cli(capsys, *args, "--db-secret", "X; rm -rf /")
    assert code == 2 and "--db-secret must be a repository secret" in err


@pytest.mark.parametrize(
    "ref",
    [
        "me/perfgate@v1",
        "me/perfgate@main",
        "me/perfgate@0123abc",
        "perfgate@" + SHA,
        f"me/perfgate@{SHA.upper()}",
        f"me/perfgate@{SHA}\n",
    ],
)
def test_ci_init_pins_the_action_by_a_full_commit_sha(tmp_path, capsys, ref):
    path = tmp_path / "perfgate.yml"
    code, _, err = run_cli(capsys, "ci", "init", "--output", str(path), "--action-ref", ref, "--default-branch", "main")
    assert code == 2 and "must pin the action by a full commit sha" in err and not path.exists()


def test_ci_init_needs_the_action_ref(tmp_path, capsys):
    with pytest.raises(SystemExit):
        run_cli(capsys, "ci", "init", "--output", str(tmp_path / "perfgate.yml"))


def test_an_unknown_option_is_refused_with_the_commands_own_usage_and_its_spelling(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["compare", "--perfgate-full-table"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.startswith("usage: perfgate compare ")
    assert "--perfgate-full-table is pytest's spelling; perfgate commands take --full-table" in err


def test_compare_takes_the_full_table_and_its_help_names_only_its_own_flags(history, capsys, monkeypatch):
    monkeypatch.chdir(history.parent)
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    helptext = capsys.readouterr().out
    assert "--full-table" in helptext and "--json-samples" in helptext and "--perfgate-" not in helptext
    code, out, _ = run_cli(capsys, "compare", "--db", str(history), "--full-table")
    assert code in (0, 1) and "not listed:" not in out  # every row, not the counts
