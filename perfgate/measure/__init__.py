"""Producing numbers: timing in-process, fingerprinting the environment, profilers in child processes."""
