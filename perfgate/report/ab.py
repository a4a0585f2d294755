"""What only A/B mode shows: head against base per case (base, head, ratio with its interval, what the case
detects, the verdict) in the terminal, the Markdown summary / sticky PR comment and the JSON document (its
`ab` block: the two sides, the phases' costs and the rounds behind every ratio). `AbView` is A/B mode's
View (report/views.py): the outputs themselves, their scrubbing, fitting and publication are the gate's
(gate/run.py's tail, report/outputs.py), the same as in baseline mode."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from perfgate.metrics import TIME_METRIC
from perfgate.model import CodeSource, Comparison, GateResult, Run, Verdict
from perfgate.report.format import fmt_detects, fmt_value, metric_title, shorten
from perfgate.report.terminal import headline, render_table

if TYPE_CHECKING:
    from perfgate.report.markdown import ChartLink
    from perfgate.report.scrub import Scrubber

HEADERS = ("case", "metric", "base", "head", "ratio (95% CI)", "detects", "verdict")
ICON = {
    Verdict.REGRESSED: "🔴",
    Verdict.IMPROVED: "🟢",
    Verdict.UNCHANGED: "⚪",
    Verdict.INCONCLUSIVE: "🟡",
    Verdict.BELOW_TARGET: "🔴",
    Verdict.NEW: "🆕",
    Verdict.MISSING: "➖",
    Verdict.NOT_COMPARABLE: "⛔",
    Verdict.PROFILE_FAILED: "⚠️",
}
ORDER = (
    Verdict.REGRESSED,
    Verdict.BELOW_TARGET,
    Verdict.INCONCLUSIVE,
    Verdict.NOT_COMPARABLE,
    Verdict.IMPROVED,
    Verdict.NEW,
    Verdict.MISSING,
    Verdict.UNCHANGED,
    Verdict.PROFILE_FAILED,
)
VERDICT_WORD = {Verdict.MISSING: "removed"}


@dataclass(frozen=True)
class RoundTrace:
    """The rounds behind one case's ratios, for whoever wants to check a verdict or study the noise: each
    round's order of sides and every side's round medians (and its reference's, where it times one)."""

    case_id: str
    orders: tuple[tuple[str, ...], ...]  # per round, the sides in the order they measured
    stage_ends: tuple[int, ...]  # the round count at the end of each stage
    median_ms: tuple[tuple[str, tuple[float, ...]], ...]  # side -> its rounds' medians, in time order
    reference_median_ms: tuple[tuple[str, tuple[float, ...]], ...] = ()

    def as_json(self) -> dict[str, object]:
        return {
            "case_id": self.case_id,
            "orders": [list(o) for o in self.orders],
            "stage_ends": list(self.stage_ends),
            "median_ms": {side: list(v) for side, v in self.median_ms},
            "reference_median_ms": {side: list(v) for side, v in self.reference_median_ms},
        }


@dataclass(frozen=True)
class AbInfo:
    """What the summary says about the comparison itself."""

    base_label: str  # "main @ 1a2b3c4d5e6f"
    head_label: str
    rounds: int
    false_alarm_pct: float
    comparisons: int  # m: the budget's share per comparison is false_alarm_pct / m
    # each phase's seconds up to the summary (storing and writing the outputs come after it, so the summary
    # says "until this summary"; the terminal's last cost line has the whole run)
    costs_s: tuple[tuple[str, float], ...] = ()
    rounds_trace: tuple[RoundTrace, ...] = ()  # the JSON's ab.cases
    base_commit: str = ""
    base_run_uid: str = ""
    base_code: tuple[tuple[str, tuple[CodeSource, ...]], ...] = ()  # where each base case's code came from
    anchor: str = ""  # an anchor run (ab/anchor.py): the calibration the base is, as Anchor.label says it


@dataclass(frozen=True)
class AbView:
    """A/B mode's View: head against base."""

    info: AbInfo

    @property
    def no_charts(self) -> str:
        return "A/B mode draws no charts (the table of ratios is its report)"

    def markdown(self, gate: GateResult, run: Run, links: Sequence[ChartLink]) -> str:
        return render_ab_markdown(gate, self.info)

    def json(self, gate: GateResult, run: Run, samples: bool) -> str:
        return render_ab_json(gate, run, self.info, samples)

    def terminal(self, gate: GateResult, full: bool) -> list[str]:
        return render_ab_terminal(gate, self.info)

    def scrubbed(self, scrubber: Scrubber) -> AbView:
        i = self.info
        traces = tuple(replace(t, case_id=scrubber.case_id(t.case_id)) for t in i.rounds_trace)
        return AbView(
            replace(
                i, base_label=scrubber.text(i.base_label), head_label=scrubber.text(i.head_label), rounds_trace=traces
            )
        )


def ratio_text(c: Comparison) -> str:
    """`1.023 [1.018, 1.028]`: head over base (time) or head's speedup over base's; '-' when not compared."""
    if c.change_pct is None or c.metric not in (TIME_METRIC, "speedup"):
        return "-"
    text = f"{1 + c.change_pct / 100:.3f}"
    if c.ci_low_pct is not None and c.ci_high_pct is not None:
        text += f" [{1 + c.ci_low_pct / 100:.3f}, {1 + c.ci_high_pct / 100:.3f}]"
    return text


def _verdict(c: Comparison) -> str:
    return VERDICT_WORD.get(c.verdict, c.verdict.value)


def _rows(gate: GateResult) -> list[Comparison]:
    shown = [
        c
        for c in gate.comparisons
        if c.metric == TIME_METRIC or c.verdict is not Verdict.UNCHANGED or c.metric == "speedup"
    ]
    return sorted(shown, key=lambda c: (ORDER.index(c.verdict), c.case_id, c.metric != TIME_METRIC))


def render_ab_terminal(gate: GateResult, info: AbInfo) -> list[str]:
    rows = [
        (
            shorten(c.case_id, 56),
            metric_title(c),
            fmt_value(c.baseline, c.unit),
            fmt_value(c.current, c.unit),
            ratio_text(c),
            fmt_detects(c),
            _verdict(c).upper() if c.verdict is Verdict.REGRESSED else _verdict(c),
        )
        for c in _rows(gate)
    ]
    lines = [f"perfgate: A/B: head {info.head_label} against base {info.base_label}"]
    if info.anchor:
        lines.append(f"perfgate: anchor: cumulative change per case since the baseline's calibration ({info.anchor})")
    lines += render_table(rows, HEADERS) if rows else []
    for c in gate.comparisons:  # (a case not compared is a finding below)
        if c.verdict is Verdict.BELOW_TARGET and c.note:
            lines.append(f"{c.verdict.value}: {shorten(c.case_id, 56)}: {c.note}")
    for f in gate.findings:
        tag = "strict" if gate.strict and f.fails_strict else "warning" if f.fails_strict else "note"
        lines.append(f"perfgate {tag}: {f.kind.value}: {f.message}")
    lines.append(ab_headline(gate))
    return lines


def ab_headline(gate: GateResult) -> str:
    """The gate's headline, in A/B words (a case only the base has was removed, not missed)."""
    return headline(gate).replace("perfgate: gate", "perfgate: A/B gate", 1).replace(" missing", " removed")


def _where(gate: GateResult) -> str:
    env = gate.current_env
    if env is None or env.device_kind == "host":
        return "on this host's clock (CPU)"
    return f"on one GPU ({env.device_name})" if env.device_name else "on one GPU"


def render_ab_markdown(gate: GateResult, info: AbInfo, top_n: int = 60) -> str:
    status = "❌" if gate.failed else "✅"
    out = [
        f"## {status} {_md(ab_headline(gate).replace('perfgate: ', 'perfgate ', 1))}",
        "",
        f"Head `{_code(info.head_label)}` measured side by side with base `{_code(info.base_label)}` "
        f"{_md(_where(gate))}: {info.rounds} alternating rounds per case, ratio = head / base (time) or head's "
        f"speedup / base's. False-alarm budget {info.false_alarm_pct:g}% per run over {info.comparisons} "
        "comparison(s).",
        "",
    ]
    if info.anchor:
        out[0] = out[0].replace("A/B gate", "anchor run", 1)
        out[1:1] = [
            "",
            f"**Cumulative change since the baseline's calibration** ({_md(info.anchor)}): the base is the "
            "commit the baseline was calibrated at, measured beside the head in this job, so machine and "
            "driver drift cancel and each ratio is what the code did since.",
        ]
    if gate.findings:
        out += ["### Needs attention", ""]
        for f in gate.findings:
            icon = ("❌" if gate.strict else "⚠️") if f.fails_strict else "ℹ️"
            out.append(f"- {icon} **{f.kind.value}**: {_md(f.message)}")
        out.append("")
    rows = _rows(gate)
    out += ["| case | metric | base | head | ratio (95% CI) | detects | verdict |", "|---|---|---:|---:|---:|---:|---|"]
    for c in rows[:top_n]:
        out.append(
            f"| `{_code(shorten(c.case_id, 70))}` | {_md(metric_title(c))} | {fmt_value(c.baseline, c.unit)} | "
            f"{fmt_value(c.current, c.unit)} | {ratio_text(c)} | {fmt_detects(c)} | "
            f"{ICON[c.verdict]} {_verdict(c)} |"
        )
    if len(rows) > top_n:
        out.append(f"| … {len(rows) - top_n} others | | | | | | |")
    if info.costs_s:
        out += ["", "<details><summary>What each phase cost</summary>", "", "| phase | seconds |", "|---|---:|"]
        out += [f"| {name} | {seconds:.1f} |" for name, seconds in info.costs_s]
        total = sum(seconds for _, seconds in info.costs_s)
        out += [f"| until this summary (storing and writing the outputs follow) | {total:.1f} |", "", "</details>"]
    return "\n".join(out).rstrip() + "\n"


def render_ab_json(gate: GateResult, head: Run, info: AbInfo, samples: bool = False) -> str:
    from perfgate.report.json_out import plain, results_document

    doc: dict[str, Any] = results_document(gate, head, samples)
    doc["ab"] = {
        "base": info.base_label,
        "head": info.head_label,
        "base_commit": info.base_commit,
        "rounds": info.rounds,
        "false_alarm_pct": info.false_alarm_pct,
        "comparisons": info.comparisons,
        "costs_s": dict(info.costs_s),
        "base_run_uid": info.base_run_uid,
        "cases": [t.as_json() for t in info.rounds_trace],
        "base_code": {cid: [plain(c) for c in code] for cid, code in info.base_code},  # the head's: under cases
        "anchor": info.anchor or None,  # an anchor run: the calibration its base is
    }
    return json.dumps(doc, indent=2, sort_keys=True, allow_nan=False) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _code(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "'")


def cost_line(costs: Sequence[tuple[str, float]]) -> str:
    return "perfgate: A/B cost: " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in costs)
