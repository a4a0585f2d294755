"""Settings: the one table of options (options.py, its rows by group in *_options.py), `[tool.perfgate]` and markers
validated into frozen Settings."""
