"""The `perfgate` command: thin wrappers over the library (the pytest plugin calls the same functions)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from perfgate.errors import PerfgateError


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except PerfgateError as err:
        print(str(err), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="perfgate", description="performance gate for GPU kernels")
    sub = p.add_subparsers(required=True, metavar="COMMAND")
    c = sub.add_parser("compare", help="gate a stored run against the baselines (no pytest)")
    c.add_argument("--db", type=Path, default=Path(".perfgate/history.db"))
    c.add_argument("--run", type=int, help="run id (default: the latest)")
    c.add_argument("--baseline-dir", type=Path, default=Path("baselines"))
    c.add_argument("--baseline-file", type=Path)
    c.add_argument("--summary", type=Path, help="write the Markdown summary here")
    c.add_argument("--json", type=Path, help="write the JSON results here")
    c.add_argument("--allow-env-mismatch", action="store_true")
    c.set_defaults(func=_compare)
    b = sub.add_parser("baseline", help="baseline files")
    bsub = b.add_subparsers(required=True, metavar="ACTION")
    show = bsub.add_parser("show", help="list the cases of a baseline file (or of every file in a directory)")
    show.add_argument("path", type=Path, nargs="?", default=Path("baselines"))
    show.set_defaults(func=_baseline_show)
    a = sub.add_parser("analyze", help="summarise .nsys-rep/.sqlite/.ncu-rep/ncu CSV/torch JSON files")
    a.add_argument("files", type=Path, nargs="+")
    a.add_argument("--format", choices=("json", "md"), default="md", help="what to print on stdout")
    a.add_argument("--output-dir", type=Path, help="write report.md, analysis.json and charts here")
    a.add_argument("--no-charts", action="store_true")
    a.set_defaults(func=_analyze)
    return p


def _compare(args: argparse.Namespace) -> int:
    from perfgate.baseline import baseline_path, load_baseline
    from perfgate.compare import compare_run
    from perfgate.pipeline import write_outputs
    from perfgate.report.terminal import render_terminal
    from perfgate.settings import read_pyproject, settings_from_config
    from perfgate.store import open_store

    settings = settings_from_config(read_pyproject(Path.cwd()), summary_path=args.summary, json_path=args.json,
                                    allow_env_mismatch=args.allow_env_mismatch or None)
    store = open_store(args.db)
    try:
        run = store.load_run(args.run)
    finally:
        store.close()
    path = args.baseline_file or baseline_path(args.baseline_dir, run.environment)
    baseline = load_baseline(path)
    if baseline is None:
        print(f"perfgate: no baseline at {path}; every case is new", file=sys.stderr)
    gate = compare_run(run.results, baseline, run.environment, settings)
    write_outputs(gate, run, settings)
    print(f"perfgate: run {run.run_id} ({run.info.started_at}, commit {run.info.git_commit[:12] or '-'}) vs {path}")
    print("\n".join(render_terminal(gate)))
    return 1 if gate.failed else 0


def _baseline_show(args: argparse.Namespace) -> int:
    from perfgate.baseline import load_baseline
    from perfgate.report.quantity import fmt_value
    from perfgate.report.terminal import render_table

    files = sorted(args.path.glob("*.json")) if args.path.is_dir() else [args.path]
    if not files:
        print(f"perfgate: no baseline files in {args.path}", file=sys.stderr)
        return 2
    for f in files:
        b = load_baseline(f)
        if b is None:
            raise PerfgateError(f"perfgate: baseline {f}: no such file")
        print(f"{f}: {b.environment.device_name} ({b.environment.device_kind}), {len(b.cases)} case(s)")
        for u in b.updates[-3:]:
            print(f"  updated {u.at} by {u.by} at {u.commit[:12] or '-'}: {u.reason}")
        rows = [(cid, fmt_value(c.median_ms, "ms"), str(len(c.samples_ms)), str(len(c.metrics)))
                for cid, c in sorted(b.cases.items())]
        print("\n".join(render_table(rows, ("case", "median", "samples", "metrics"))))
    return 0


def _analyze(args: argparse.Namespace) -> int:
    from perfgate.analyze.document import analyze_file, comparison
    from perfgate.report.analyze_markdown import render_analysis_markdown

    documents = [analyze_file(f) for f in _progress(args.files)]
    table = comparison(documents)
    charts: list[str] = []
    if args.output_dir:
        args.output_dir.mkdir(parents=True, exist_ok=True)
        if not args.no_charts:
            from perfgate.report.analyze_charts import write_analysis_charts

            charts = write_analysis_charts(documents, args.output_dir)
        (args.output_dir / "analysis.json").write_text(
            json.dumps({"files": documents, "comparison": table}, indent=2, default=str) + "\n")
        (args.output_dir / "report.md").write_text(render_analysis_markdown(documents, table, charts))
    if args.format == "json":
        doc = documents[0] if len(documents) == 1 else {"files": documents, "comparison": table}
        print(json.dumps(doc, indent=2, default=str))
    else:
        print(render_analysis_markdown(documents, table, charts), end="")
    return 0


def _progress(files: list[Path]):
    """A rich progress bar on a terminal; silent when piped or under CI."""
    import os

    if len(files) < 2 or not sys.stderr.isatty() or os.environ.get("CI"):
        yield from files
        return
    try:
        from rich.progress import track
    except ImportError:
        yield from files
        return
    yield from track(files, description="analyzing", console=None, transient=True)


if __name__ == "__main__":
    raise SystemExit(main())
