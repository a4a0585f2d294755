"""The `perfgate` command: thin wrappers over the library (the pytest plugin calls the same functions).

Every command finds the project root the way pytest does and reads the same `[tool.perfgate]`; bad input
is one line on stderr naming the file and the problem, exit status 2.
"""

from __future__ import annotations

import argparse
import os
import sys

from perfgate.cli.parsers import Handler, examples_text
from perfgate.cli.parsers.ab import add_ab, add_bisect
from perfgate.cli.parsers.ci import add_ci
from perfgate.cli.parsers.data import add_analyze, add_db, add_history, add_import, add_report
from perfgate.cli.parsers.gate import add_baseline, add_calibrate, add_compare
from perfgate.errors import PerfgateError


def main(argv: list[str] | None = None) -> int:
    args = _parse(list(sys.argv[1:] if argv is None else argv))
    try:
        handler: Handler = args.func
        return int(handler(args) or 0)
    except PerfgateError as err:
        from perfgate.report.scrub_foreign import scrub_refusal

        # a refusal runs in a CI log too and may quote a file another job wrote (`ci verdict` naming a case id
        # that holds a token, a forged `password: ...`): secrets masked
        print(scrub_refusal(str(err), os.environ), file=sys.stderr)
        return err.exit_status
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `perfgate history | head`
        return 0
    except OSError as err:  # a file a command was told to use and cannot (each command names its own where it can)
        where = f"{err.filename}: " if err.filename else ""
        print(f"perfgate: {where}{err.strerror or err}", file=sys.stderr)
        return 2


def _parse(argv: list[str]) -> argparse.Namespace:
    """Everything after `--` is pytest's, wherever the command's own options and positionals are
    (argparse alone leaves `perfgate ab main --strict -- -k x` half-parsed)."""
    parser = _parser()
    extra: list[str] | None = None
    if "--" in argv:
        at = argv.index("--")
        argv, extra = argv[:at], argv[at + 1 :]
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # said by the command's own parser, with its usage (the top-level usage names no option)
        command: argparse.ArgumentParser = getattr(args, "command_parser", parser)
        command.error(f"unrecognized arguments: {' '.join(unknown)}{_pytest_flag_hint(unknown)}")
    if extra is not None:
        if not hasattr(args, "pytest_args"):
            parser.error("arguments after -- are pytest's; this command runs no pytest")
        args.pytest_args = [*args.pytest_args, *extra]
    return args


def _pytest_flag_hint(unknown: list[str]) -> str:
    """`--perfgate-full-table` given to a command: the command's own spelling, where it has one."""
    from perfgate.config.options import OPTIONS

    flag = unknown[0].split("=", 1)[0]
    option = next((o for o in OPTIONS if o.flag == flag), None)
    if option is None:
        return ""
    if option.cli:
        return f" ({flag} is pytest's spelling; perfgate commands take {option.cli})"
    return f" ({flag} is a pytest option only)"


def _version() -> str:
    from perfgate import __version__

    return f"perfgate {__version__}"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="perfgate",
        description="performance gate for GPU kernels",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=examples_text(
            "perfgate calibrate --reason 'first baseline'",
            "perfgate compare --summary summary.md",
            "perfgate ab main",
        ),
    )
    p.add_argument("--version", action="version", version=_version())
    sub = p.add_subparsers(required=True, metavar="COMMAND")
    # the order of `perfgate --help`'s command list
    add_compare(sub)
    add_calibrate(sub)
    add_ab(sub)
    add_bisect(sub)
    add_baseline(sub)
    add_analyze(sub)
    add_history(sub)
    add_report(sub)
    add_db(sub)
    add_import(sub)
    add_ci(sub)
    return p


if __name__ == "__main__":
    raise SystemExit(main())
