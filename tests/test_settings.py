import math
from pathlib import Path

import pytest

from perfgate.config.profile_options import parse_profile_list
from perfgate.config.project import find_root, project_settings, read_pyproject
from perfgate.config.settings import marker_options, settings_from_config
from perfgate.errors import ConfigError
from perfgate.gate.thresholds import metric_threshold_pct, resolve_thresholds


def test_threshold_precedence_catalogue_config_override_marker():
    s = settings_from_config(
        {
            "threshold_pct": 4.0,
            "metrics": {"launch__registers_per_thread": 5.0},
            "overrides": [
                {
                    "pattern": "*softmax*",
                    "threshold_pct": 8.0,
                    "metrics": {"dram__bytes_read.sum": 7.0},
                    "min_speedup": 1.3,
                }
            ],
        }
    )
    add, softmax = resolve_thresholds(s, "test_add", None), resolve_thresholds(s, "test_softmax[bf16]", None)
    assert add.time_pct == 4.0 and not add.time_pct_explicit
    assert softmax.time_pct == 8.0 and softmax.time_pct_explicit and softmax.min_speedup == 1.3
    assert metric_threshold_pct(add, "dram__bytes_read.sum") == 2.0  # catalogue default
    assert metric_threshold_pct(softmax, "dram__bytes_read.sum") == 7.0
    assert metric_threshold_pct(add, "launch__registers_per_thread") == 5.0
    marker = marker_options({"threshold_pct": 20, "metrics": {"dram__bytes_read.sum": 1}, "min_speedup": 2}, "t")
    with_marker = resolve_thresholds(s, "test_softmax", marker)
    assert with_marker.time_pct == 20.0 and metric_threshold_pct(with_marker, "dram__bytes_read.sum") == 1.0
    assert with_marker.min_speedup == 2.0


@pytest.mark.parametrize(
    "table, problem",
    [
        ({"thresold_pct": 3}, "unknown key(s) ['thresold_pct']"),
        ({"threshold_pct": math.nan}, "threshold_pct: must be a finite number >= 0"),
        ({"threshold_pct": math.inf}, "threshold_pct: must be a finite number >= 0"),
        ({"threshold_pct": -1}, "threshold_pct: must be a finite number >= 0"),
        ({"threshold_pct": "3"}, "threshold_pct: must be a finite number"),
        ({"threshold_pct": True}, "threshold_pct: must be a finite number"),
        ({"false_alarm_pct": 0}, "false_alarm_pct: must be a finite number >= 0.01 and <= 5"),
        ({"alpha": 0.01}, "'alpha' was replaced by false_alarm_pct"),
        ({"min_samples": "20"}, "min_samples: must be an integer >= 2"),
        ({"min_samples": 1}, "min_samples: must be an integer >= 2"),
        ({"min_samples": 2.5}, "min_samples: must be an integer >= 2"),
        ({"min_samples": 50, "max_samples": 10}, "min_samples <= max_samples"),
        ({"budget_ms": 0}, "budget_ms: must be a finite number > 0"),
        ({"metrics": []}, "metrics: must be a table of metric name = threshold_pct"),
        ({"metrics": {"no_such_metric": 1}}, "unknown metric 'no_such_metric'"),
        ({"metrics": {"dram__bytes_read.sum": math.nan}}, "dram__bytes_read.sum: must be a finite number"),
        ({"db": 5}, "db: must be a non-empty string"),
        ({"db": ""}, "db: must be a non-empty string"),
        ({"ncu_sections": "SpeedOfLight"}, "ncu_sections: must be a list of non-empty strings"),
        ({"overrides": {"pattern": "*"}}, "overrides: must be an array of tables"),
        ({"overrides": [{"threshold_pct": 1}]}, "overrides[0]: needs a 'pattern'"),
        ({"overrides": [{"pattern": "*", "treshold_pct": 1}]}, "overrides[0]: unknown key(s)"),
        ({"overrides": [{"pattern": "*", "threshold_pct": math.inf}]}, "overrides[0] threshold_pct"),
        ({"min_speedup": 0}, "min_speedup: must be a finite number > 0"),
        ({"confirm_runs": -1}, "confirm_runs: must be an integer >= 0"),
        ({"strict": "yes"}, "strict: must be true or false"),
    ],
)
def test_every_config_value_is_validated_with_one_line_naming_it(table, problem):
    with pytest.raises(ConfigError) as err:
        settings_from_config(table, where="/p/pyproject.toml [tool.perfgate]")
    assert problem in str(err.value)
    assert "/p/pyproject.toml" in str(err.value) or "min_samples <= max_samples" in problem
    assert "\n" not in str(err.value)


def test_an_ncu_metric_listed_for_collection_may_be_gated():
    s = settings_from_config({"ncu_metrics": ["smsp__inst_executed.sum"], "metrics": {"smsp__inst_executed.sum": 1}})
    assert dict(s.metric_thresholds) == {"smsp__inst_executed.sum": 1.0}


@pytest.mark.parametrize(
    "kwargs, problem",
    [
        ({"treshold": 3}, "unknown perfgate marker argument"),
        ({"threshold_pct": "5%"}, "must be a finite number"),
        ({"threshold_pct": math.nan}, "must be a finite number"),
        ({"min_samples": 1}, "must be an integer >= 2"),
        ({"min_samples": 30, "max_samples": 10}, "min_samples > max_samples"),
        ({"metrics": {"nope": 1}}, "unknown metric"),
    ],
)
def test_marker_arguments_are_validated(kwargs, problem):
    with pytest.raises(ConfigError, match=problem.replace("(", r"\(")):
        marker_options(kwargs, "test_x")


def test_profile_list_rejects_unknown_profilers():
    assert parse_profile_list("nsys, ncu", "--perfgate-profile") == frozenset({"nsys", "ncu"})
    with pytest.raises(ConfigError, match="unknown profiler"):
        parse_profile_list("nsys,vtune", "--perfgate-profile")


def test_relative_paths_in_pyproject_are_relative_to_the_project_root(tmp_path):
    s = settings_from_config({"db": "hist/h.db", "baseline_dir": "bl"}, rootdir=tmp_path)
    assert s.db_path == tmp_path / "hist" / "h.db" and s.baseline_dir == tmp_path / "bl"


def test_perfgate_db_in_the_environment_moves_the_history_out_of_the_checkout(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFGATE_DB", str(tmp_path / "runner" / "history.db"))
    assert settings_from_config({"db": "x.db"}, rootdir=tmp_path).db_path == tmp_path / "runner" / "history.db"
    cli = settings_from_config({}, rootdir=tmp_path, overrides={"db_path": tmp_path / "cli.db"})
    assert cli.db_path == tmp_path / "cli.db"


def test_the_command_line_finds_the_root_pytest_would(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options]\n[tool.perfgate]\nthreshold_pct = 7.0\n")
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    (tmp_path / "a" / "pyproject.toml").write_text("[project]\nname = 'inner'\n")  # not pytest config: skipped
    assert find_root(sub) == tmp_path
    monkeypatch.chdir(sub)
    s = project_settings()
    assert s.threshold_pct == 7.0 and s.db_path == tmp_path / ".perfgate" / "history.db"


def test_a_broken_pyproject_is_one_line_naming_it(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.perfgate\n")
    with pytest.raises(ConfigError, match=f"{tmp_path / 'pyproject.toml'}: not valid TOML"):
        read_pyproject(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool]\nperfgate = 3\n")
    with pytest.raises(ConfigError, match=r"\[tool.perfgate\] must be a table"):
        read_pyproject(tmp_path)


def test_no_pyproject_means_defaults(tmp_path):
    assert read_pyproject(tmp_path) == ({}, Path(tmp_path) / "pyproject.toml")
