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
    _check_repo_url(settings.repo_url)
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


def _check_repo_url(repo_url: str) -> None:
    """A repo_url given but unusable is said, not dropped silently (the site would have no commit links)."""
    from perfgate.report.site.project import web_url

    if repo_url and not web_url(repo_url):
        raise ConfigError(
            "perfgate: repo_url (--repo-url or [tool.perfgate]) is not a repository's web address "
            "(https://HOST/OWNER/REPO, or a git remote such as git@HOST:OWNER/REPO.git; no credentials, no "
            "query); it is not repeated here, in case it holds one"
        )
