"""The options of what a run writes and shows: the Markdown summary, JSON, pytest-benchmark and other
external formats, JUnit, the terminal table, links to charts and the site: rows of the one option table
(options.py).
"""

from __future__ import annotations

from perfgate.config import validate as v
from perfgate.config.option import Arg, Option

OUTPUTS: tuple[Option, ...] = (
    # --- outputs ----------------------------------------------------------------------------------------
    Option(
        "summary_path",
        "write the Markdown summary here (also appended to $GITHUB_STEP_SUMMARY)",
        v.path,
        flag="--perfgate-summary",
        cli="--summary",
        arg=Arg.PATH,
        metavar="PATH",
    ),
    Option(
        "json_path",
        "write the JSON results here (perfgate_json_version 3; every timed sample too with {json_samples})",
        v.path,
        flag="--perfgate-json",
        cli="--json",
        arg=Arg.PATH,
        metavar="PATH",
    ),
    Option(
        "report_dir",
        "write the charts (PNG) here",
        v.path,
        flag="--perfgate-report-dir",
        cli="--report-dir",
        arg=Arg.PATH,
        metavar="DIR",
    ),
    Option(
        "benchmark_json_path",
        "write github-action-benchmark customSmallerIsBetter JSON here",
        v.path,
        flag="--perfgate-benchmark-json",
        arg=Arg.PATH,
        metavar="PATH",
    ),
    Option(
        "benchmark_speedup_json_path",
        "write the speedups as github-action-benchmark customBiggerIsBetter JSON here",
        v.path,
        flag="--perfgate-benchmark-speedup-json",
        arg=Arg.PATH,
        metavar="PATH",
    ),
    Option(
        "bencher_json_path",
        "write Bencher Metric Format (BMF) JSON here",
        v.path,
        flag="--perfgate-bencher-json",
        arg=Arg.PATH,
        metavar="PATH",
    ),
    # pytest-benchmark's own flags set these (pytest_plugin/benchmark_cli.py): no perfgate spelling
    Option(
        "pytest_benchmark_json_path",
        "write pytest-benchmark's own JSON here (pytest-benchmark's --benchmark-json)",
        v.path,
        arg=Arg.PATH,
    ),
    Option(
        "pytest_benchmark_save_path",
        "save the run in pytest-benchmark's storage here (--benchmark-save NAME, --benchmark-autosave)",
        v.path,
        arg=Arg.PATH,
    ),
    Option(
        "pytest_benchmark_save_data",
        "the saved run keeps every sample (--benchmark-save-data)",
        v.boolean,
        arg=Arg.FLAG,
    ),
    Option(
        "junit_xml_path",
        "write the verdicts as JUnit XML here (one testcase per case: regressed cases fail, "
        "undecided ones are skipped)",
        v.path,
        key="junit_xml",
        flag="--perfgate-junit-xml",
        cli="--junit-xml",
        arg=Arg.PATH,
        metavar="PATH",
    ),
    Option(
        "json_samples",
        "include every timed sample in the JSON results (large at many cases)",
        v.boolean,
        flag="--perfgate-json-samples",
        cli="--json-samples",
        arg=Arg.FLAG,
    ),
    Option(
        "full_table",
        "list every row in the terminal, not only failing and changed rows and the counts",
        v.boolean,
        flag="--perfgate-full-table",
        cli="--full-table",
        arg=Arg.FLAG,
    ),
    Option(
        "publish_host",
        "keep the hostname and absolute paths in published outputs and exported histories",
        v.boolean,
        key="publish_host",
        flag="--perfgate-publish-host",
        cli="--publish-host",
        arg=Arg.FLAG,
    ),
    Option(
        "chart_url",
        "base URL the charts are published at (links in a job summary)",
        v.text,
        key="chart_url",
        flag="--perfgate-chart-url",
        metavar="URL",
    ),
    Option(
        "site_url",
        "base URL of the published dashboard (perfgate report --html): the summary links to the changed cases' pages",
        v.text,
        key="site_url",
        flag="--perfgate-site-url",
        metavar="URL",
    ),
    Option(
        "repo_url",
        "the repository's web address (https://github.com/OWNER/REPO): the dashboard links commits to it "
        "(default: GITHUB_SERVER_URL/GITHUB_REPOSITORY in Actions, else the git remote `origin`)",
        v.text,
        key="repo_url",
        cli="--repo-url",
        metavar="URL",
    ),
)
