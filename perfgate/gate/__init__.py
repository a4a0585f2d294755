"""The verdict: thresholds per case, the decision rules (decision.py against a baseline, ratio.py for A/B
mode's per-round ratios with offset_bound.py and fresh_pair.py), comparisons with the baseline, findings, and the
one orchestration (run.py) that the pytest plugin and every command share."""
