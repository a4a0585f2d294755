"""`python -m perfgate ...`: the same command line as the `perfgate` script."""

from perfgate.cli import main

raise SystemExit(main())
