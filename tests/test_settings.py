import pytest

from perfgate.errors import ConfigError
from perfgate.settings import marker_options, parse_profile_list, settings_from_config


def test_threshold_precedence_catalogue_config_override_marker():
    s = settings_from_config({
        "threshold_pct": 4.0,
        "metrics": {"launch__registers_per_thread": 5.0},
        "overrides": [{"pattern": "*softmax*", "threshold_pct": 8.0, "metrics": {"dram__bytes_read.sum": 7.0}}],
    })
    assert s.threshold_for("test_add", "median_ms").pct == 4.0
    assert s.threshold_for("test_softmax[bf16]", "median_ms").pct == 8.0
    assert s.threshold_for("test_add", "dram__bytes_read.sum").pct == 2.0  # catalogue default
    assert s.threshold_for("test_softmax", "dram__bytes_read.sum").pct == 7.0
    assert s.threshold_for("test_add", "launch__registers_per_thread").pct == 5.0
    marker = marker_options({"threshold_pct": 20, "metrics": {"dram__bytes_read.sum": 1}}, "t")
    assert s.threshold_for("test_softmax", "median_ms", marker).pct == 20.0
    assert s.threshold_for("test_softmax", "dram__bytes_read.sum", marker).pct == 1.0


def test_unknown_config_key_is_an_error_naming_it():
    with pytest.raises(ConfigError, match="thresold_pct"):
        settings_from_config({"thresold_pct": 3})


def test_unknown_marker_argument_is_an_error():
    with pytest.raises(ConfigError, match="unknown perfgate marker argument"):
        marker_options({"treshold": 3}, "test_x")


def test_non_numeric_threshold_is_an_error():
    with pytest.raises(ConfigError, match="must be a number"):
        marker_options({"threshold_pct": "5%"}, "test_x")


def test_profile_list_rejects_unknown_profilers():
    assert parse_profile_list("nsys, ncu") == frozenset({"nsys", "ncu"})
    with pytest.raises(ConfigError, match="unknown profiler"):
        parse_profile_list("nsys,vtune")


def test_inconsistent_sample_bounds_are_rejected():
    with pytest.raises(ConfigError, match="min_samples"):
        settings_from_config({"min_samples": 50, "max_samples": 10})
