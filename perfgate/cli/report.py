"""`perfgate report --html DIR`: the history as a static dashboard (perfgate/report/site/)."""

from __future__ import annotations

import argparse

from perfgate.cli.settings import command_settings
from perfgate.errors import ConfigError
from perfgate.store import open_store


def report(args: argparse.Namespace) -> int:
    from perfgate.report.site.write import SiteOptions, write_site

    if args.summaries < 0:
        raise ConfigError(f"perfgate: --summaries must be >= 0, got {args.summaries}")
    settings = command_settings(args)
    with open_store(settings.db_path, readonly=True) as store:
        done = write_site(store, args.html, settings, SiteOptions(summaries=args.summaries))
    how = (
        f"full build ({done.reason})"
        if done.full
        else f"incremental: {done.pages_written} page(s) written, the rest kept from the last build"
    )
    print(
        f"perfgate: wrote {done.out_dir}/index.html: {done.cases} case series, {done.runs} run(s), "
        f"{done.change_points} change point(s); {done.files} files, {done.total_bytes / 1e6:.1f} MB in "
        f"{done.seconds:.1f} s; {how}"
    )
    return 0
