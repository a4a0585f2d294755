"""The verdict: thresholds per case, the decision rule, comparisons with the baseline, findings, and the one
orchestration (run.py) that the pytest plugin and every command share."""
