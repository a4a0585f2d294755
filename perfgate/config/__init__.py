"""Settings: the one table of options (options.py), `[tool.perfgate]` and markers validated into frozen Settings."""
