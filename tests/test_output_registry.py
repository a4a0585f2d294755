"""The outputs a gate writes are one registry: each names a path option of the one option table (or the
environment variable of GitHub's job summary), and `perfgate compare` takes every one that has a flag."""

from perfgate.cli import main
from perfgate.config.options import Arg, by_attr
from perfgate.pytest_plugin.benchmark_cli import PYTEST_BENCHMARK_SETTINGS
from perfgate.report.outputs import OUTPUTS, STEP_SUMMARY_ENV, output_options


def test_every_output_is_asked_for_by_a_path_option_of_the_table_or_the_job_summary_variable():
    table = by_attr()
    for output in OUTPUTS:
        assert bool(output.option) != bool(output.env), output.name
        if output.option:  # a misspelt attribute fails here, not when a user passes the flag
            # pytest-benchmark's own flags ask for its formats (pytest_plugin/benchmark_cli.py)
            flagged = table[output.option].flag or output.option in PYTEST_BENCHMARK_SETTINGS
            assert table[output.option].arg is Arg.PATH and flagged, output.name
    assert [o.env for o in OUTPUTS if o.env] == [STEP_SUMMARY_ENV]
    assert OUTPUTS[0].option == "report_dir"  # charts first: the summaries link to them
    assert len({o.name for o in OUTPUTS}) == len(OUTPUTS)


def test_perfgate_compare_takes_every_output_that_has_a_command_flag(capsys):
    try:
        main(["compare", "--help"])
    except SystemExit:
        pass
    text = capsys.readouterr().out
    flags = [by_attr()[a].cli for a in output_options() if by_attr()[a].cli]
    assert {"--summary", "--json", "--report-dir"} <= set(flags)
    assert all(f"{flag} " in text for flag in flags)
