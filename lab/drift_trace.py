"""Trace every failing unchanged run of an over-time scenario of scripts/replay_scenarios.py (issue 31, the
machine-drift row): the same seeds, the same shipped gate, with what each run's common-mode test saw.

    python lab/drift_trace.py [--scenario "machine drift (+0.03%/run)"] [--calibrations 20] [--first 0]
                              [--json OUT]

Per failing run: the calibration and run index, the drift accumulated since calibration and since the
baseline's last re-anchor (the true level of the failing case against its baseline centre), whether this run
declared a common-mode shift (and which finding named it), whether one was named earlier since the last
re-anchor, the shift's size and its signed-rank p-value (computed even where the size condition stopped
it), and the failing case's verdict line. Each failure is classed:

    a  a shift was declared in this run: the case failed against the moved centre
    b  no shift named since the last re-anchor: the test had not seen the drift yet
    c  a shift was named earlier since the last re-anchor, not in this run: the user had not re-anchored yet
    d  other
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from perfgate.baseline import load_baseline
from perfgate.gate import common, compare
from perfgate.model import FindingKind, Verdict

HERE = Path(__file__).resolve().parent.parent


def _replay_module() -> Any:
    spec = importlib.util.spec_from_file_location("replay_scenarios", HERE / "scripts" / "replay_scenarios.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["replay_scenarios"] = mod
    spec.loader.exec_module(mod)
    return mod


class Seen:
    """What the last run's common-mode test was given, and its statistic even when not declared."""

    def __init__(self) -> None:
        self.shift_pct = 0.0
        self.p = 1.0
        self.cases = 0
        original = compare.common_shift

        def spy(changes: Mapping[str, tuple[float, float]], floor: float, *args: Any, **kw: Any) -> Any:
            ranks = kw.get("ranks", args[2] if len(args) > 2 else None)
            keys = [k for k, (d, u) in changes.items() if u > 0]
            pairs = [changes[k] for k in keys]
            self.cases = len(pairs)
            if pairs:
                self.shift_pct = common.weighted_median([d for d, _ in pairs], [1 / (u * u) for _, u in pairs])
                # the gate's own test (weighted ranks since issue 31's drift work; the signed rank before)
                weighted = getattr(common, "weighted_sign_p", None)
                if ranks and weighted is not None:
                    self.p = weighted([ranks[k] / u for k, (_, u) in zip(keys, pairs, strict=True)])
                else:
                    self.p = common.signed_rank_p([ranks[k] for k in keys] if ranks else [d / u for d, u in pairs])
            return original(changes, floor, *args, **kw)

        compare.common_shift = spy  # type: ignore[assignment]


def trace(
    mod: Any, scenario_name: str, calibrations: int, first: int, seed: int, index: int = 0
) -> list[dict[str, Any]]:
    s = mod.SCENARIOS[scenario_name]
    seen = Seen()
    rows: list[dict[str, Any]] = []
    for c in range(first, first + calibrations):
        state: dict[str, Any] = {"anchor_run": 0, "named_since": [], "reanchors": []}
        gate, reanchor = mod.Replica.gate, mod.Replica.reanchor

        def traced_gate(rep: Any, run: int, state: dict[str, Any] = state, gate: Any = gate, c: int = c) -> Any:
            out = gate(rep, run)
            g = out.gate
            kinds = sorted(f.kind.value for f in g.findings if "shift" in f.kind.value or "stale" in f.kind.value)
            strict = any(f.kind is FindingKind.COMMON_SHIFT for f in g.findings)
            failed = [
                cmp
                for cmp in g.comparisons
                if cmp.verdict is Verdict.REGRESSED and cmp.gated and cmp.case_id not in _changed(rep)
            ]
            if failed:
                base = load_baseline(rep.path)
                offsets = [
                    _offset_pct(rep, base, j, run) for j in range(len(rep.ids)) if base.cases[rep.ids[j]].calibrated
                ]
                for cmp in failed:
                    i = rep.ids.index(cmp.case_id)
                    rows.append(
                        {
                            "calibration": c,
                            "run": run,
                            "drift_pct": s.drift_pct_per_run * run,
                            "true_vs_centre_pct": _offset_pct(rep, base, i, run),
                            "common_true_pct": statistics.median(offsets),
                            "anchor_run": state["anchor_run"],
                            "declared": g.common_shift is not None,
                            "findings": kinds,
                            "strict_now": strict,
                            "named_since_anchor": list(state["named_since"]),
                            "shift_pct": seen.shift_pct,
                            "shift_p": seen.p,
                            "case": cmp.case_id.rsplit("_", 1)[-1],
                            "noise": rep.s.noises[i].name,
                            "change_pct": cmp.change_pct,
                            "threshold_pct": cmp.threshold_pct,
                            "noise_pct": cmp.noise_pct,
                            "processes": cmp.processes,
                            "note": cmp.note,
                        }
                    )
            if strict:
                state["named_since"].append(run)
            state["last_run"] = run
            return out

        def traced_reanchor(rep: Any, state: dict[str, Any] = state, reanchor: Any = reanchor) -> None:
            reanchor(rep)
            state["anchor_run"] = state["last_run"]
            state["named_since"] = []

        mod.Replica.gate, mod.Replica.reanchor = traced_gate, traced_reanchor
        try:
            # replay_scenarios.run's seed: `index` is the scenario's place among those named on its command line
            mod.replay(s, seed * 100_003 + index * 1009 + c, mod.Tally(), mod._Silence)
        finally:
            mod.Replica.gate, mod.Replica.reanchor = gate, reanchor
        print(f"calibration {c}: {sum(r['calibration'] == c for r in rows)} failing case rows", file=sys.stderr)
    return rows


def _offset_pct(rep: Any, base: Any, i: int, run: int) -> float:
    """Case i's true mean level in this run against its baseline centre (%): the drift since its anchor plus
    the centre's own calibration error."""
    noise = rep.s.noises[i]
    level = rep.base_ms[i] * (1 + noise.mode_share * noise.mode_gap_pct / 100) * rep.s.factor(i, run, _NO_RNG)
    return float(100 * (level / statistics.fmean(base.cases[rep.ids[i]].time_values()) - 1))


class _NoRng:
    def random(self) -> float:
        return 1.0  # Scenario.factor's random draws (a new mode) never taken: the drift's level alone


_NO_RNG = _NoRng()


def _changed(rep: Any) -> set[str]:
    return {rep.ids[i] for i in rep.s.changed_cases}


def classify(r: Mapping[str, Any]) -> str:
    if r["declared"]:
        return "a"
    if not r["named_since_anchor"]:
        return "b"
    return "c"


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--scenario", default="machine drift (+0.03%/run)")
    p.add_argument("--calibrations", type=int, default=20)
    p.add_argument("--first", type=int, default=0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--index", type=int, default=0, help="the scenario's place among replay_scenarios' --scenario")
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    mod = _replay_module()
    rows = trace(mod, args.scenario, args.calibrations, args.first, args.seed, args.index)
    runs = {(r["calibration"], r["run"]) for r in rows}
    for r in rows:
        r["class"] = classify(r)
        print(
            f"cal {r['calibration']:2d} run {r['run']:3d} drift {r['drift_pct']:.2f}% true-vs-centre "
            f"{r['true_vs_centre_pct']:+.2f}% common {r['common_true_pct']:+.2f}% "
            f"anchor@{r['anchor_run']:3d} class {r['class']} "
            f"declared={r['declared']!s:5s} {r['findings']} named-since={r['named_since_anchor']} "
            f"c={r['shift_pct']:+.2f}% p={r['shift_p']:.3f} case {r['case']} [{r['noise'][:12]}] "
            f"change {r['change_pct']:+.2f}% T {r['threshold_pct']:.2f}% s {r['noise_pct']:.2f}% "
            f"k={r['processes']} | {r['note']}"
        )
    classes = {k: len({(r["calibration"], r["run"]) for r in rows if r["class"] == k}) for k in "abcd"}
    print(f"failing runs {len(runs)}; by class {classes}; per calibration {np.bincount([c for c, _ in runs])}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
