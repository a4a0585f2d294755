"""Trends in the history: step changes (change points) in each case's series of process values, per device."""
