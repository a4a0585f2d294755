"""Profiler outputs -> records (pure; no GPU and no profiler needed, except nsys to open a .nsys-rep)."""
