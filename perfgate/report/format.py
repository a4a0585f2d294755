"""Numbers for people: units scaled, changes signed, long kernel and case names shortened the same way."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

from perfgate.metrics import NCU_WHY, STATIC_PREFIX, WINDOW_MODE, label
from perfgate.model import Comparison

_SCALES = {
    "ns": ((1e9, "s"), (1e6, "ms"), (1e3, "us"), (1, "ns")),
    "ms": ((1e3, "s"), (1, "ms"), (1e-3, "us"), (1e-6, "ns")),
    "byte": ((1e9, "GB"), (1e6, "MB"), (1e3, "KB"), (1, "B")),
    "byte/s": ((1e12, "TB/s"), (1e9, "GB/s"), (1e6, "MB/s"), (1, "B/s")),
}


# counts whose unit adds nothing to the label next to them ("registers/thread: 64")
_BARE_UNITS = {"register/thread", "register", "block", "thread", "request", "warp", "inst", "SM"}


def fmt_value(value: float | None, unit: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if unit in _BARE_UNITS:
        unit = ""
    if unit.startswith("byte/") and unit != "byte/s":  # byte/block: scale the bytes, keep the per-what
        return f"{fmt_value(value, 'byte')}/{unit.split('/', 1)[1]}"
    for factor, name in _SCALES.get(unit, ()):
        if abs(value) >= factor or factor == _SCALES[unit][-1][0]:
            return f"{value / factor:.4g} {name}"
    if unit == "%":
        return f"{value:.1f}%"
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}{(' ' + unit) if unit else ''}"
    return f"{value:.4g}{(' ' + unit) if unit else ''}"


def fmt_change(change_pct: float | None) -> str:
    if change_pct is None:
        return "-"
    return f"{change_pct:+.1f}%"


def fmt_ci(c: Comparison) -> str:
    if c.ci_low_pct is None or c.ci_high_pct is None:
        return ""
    return f"[{c.ci_low_pct:+.1f}, {c.ci_high_pct:+.1f}]"


def fmt_detects(c: Comparison) -> str:
    """The change a comparison catches: `≥ 1.3%` where the decision rule states it (caught with 80% power),
    `> 10%` for a tolerance."""
    if c.detects_pct is not None:
        return f"≥ {fmt_pct(c.detects_pct)}%"
    if c.threshold_pct is None:
        return "-"
    pct = "any" if c.threshold_pct == 0 else f"> {fmt_pct(c.threshold_pct)}%"
    return f"{pct} and ≥ {fmt_floor(c.min_change, c.unit)}" if c.min_change else pct


def fmt_floor(value: float, unit: str) -> str:
    """An absolute floor as it was set: 64 KiB, 1 point."""
    if unit == "%":
        return f"{value:g} point" + ("" if value == 1 else "s")
    if unit == "byte" and value >= 1024 and value % 1024 == 0:
        return f"{value / 1024:g} KiB"
    return fmt_value(value, unit)


def fmt_verdict(c: Comparison, loud: bool = False) -> str:
    """`regressed (2 processes)`, `unchanged (not gated)`: the verdict as the rule reached it."""
    text = c.verdict.value.upper() if loud else c.verdict.value
    if c.processes > 1:
        text += f" ({c.processes} processes)"
    if not c.gated:
        text += " (not gated)"
    return text


def fmt_pct(pct: float) -> str:
    """Two significant digits below 10 (1.3, 0.85), whole numbers above (12, 1000)."""
    return f"{pct:.0f}" if abs(pct) >= 10 else f"{pct:.2g}"


def shorten(name: str, width: int = 60) -> str:
    """A case id in `width` characters, cut only where a reader can fill in the cut: leading directories go
    first (`…/test_perf.py::test_softmax[bf16]`), then the middle of the test part (its start and its
    parameters kept); the file name is never cut. Names that are no case id keep their head and tail."""
    if len(name) <= width:
        return name
    path, sep, test = name.partition("::")
    if sep:
        dirs, slash, file = path.rpartition("/")
        kept = dirs.split("/") if slash else []
        while kept:  # drop directories from the left while the id is too long
            kept.pop(0)
            label = "…/" + "/".join([*kept, file]) + "::" + test
            if len(label) <= width:
                return label
        prefix = ("…/" if slash else "") + file + "::"
        if width - len(prefix) >= 16:
            return prefix + _middle_cut(test, width - len(prefix))
    return _middle_cut(name, width)


def _middle_cut(text: str, width: int) -> str:
    """Head and tail of `text` (the tail longer: parameters live there), `…` between."""
    keep = width - 1
    head = keep // 3
    return text[:head] + "…" + text[-(keep - head) :]


def distinct_short(names: Iterable[str], width: int = 60) -> dict[str, str]:
    """Each name shortened (`shorten`), except where two would read the same: those keep the part where
    they differ and their end (the parametrization), and the full name when even that collides. One pass
    over the names plus one over each colliding group."""
    unique = dict.fromkeys(names)
    labels = {n: shorten(n, width) for n in unique}
    groups: dict[str, list[str]] = {}
    for n, short in labels.items():
        groups.setdefault(short, []).append(n)
    for group in groups.values():
        if len(group) < 2:
            continue
        start = _common_prefix_len(min(group), max(group))  # the sorted extremes share what all share
        relabelled = {n: _around(n, start, width) for n in group}
        clash = len(set(relabelled.values())) < len(group)
        labels.update({n: n for n in group} if clash else relabelled)
    return labels


def _common_prefix_len(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def _around(name: str, start: int, width: int) -> str:
    """`…` + the name from a little before `start` (where it differs from its look-alikes), its end kept."""
    begin = max(0, start - 4)
    if len(name) - begin <= width - 1:
        return ("…" if begin else "") + name[begin:]
    tail = max(1, width // 2)
    return f"…{name[begin : begin + max(1, width - tail - 2)]}…{name[-tail:]}"


def metric_title(c: Comparison) -> str:
    title = label(c.metric)
    return f"{title} [{shorten(c.kernel, 30)}]" if c.kernel else title


def movement(c: Comparison) -> str:
    """`registers/thread 64 → 128` or `DRAM bytes read unchanged (33.6 MB)`; the static gate's and ncu's rows
    in their own words (`_matmul_kernel: registers 128 -> 168 per thread: occupancy ...`)."""
    if c.note and (c.metric.startswith(STATIC_PREFIX) or c.metric in (NCU_WHY, WINDOW_MODE)):
        return f"{kernel_label(c.kernel, 40)}: {c.note}" if c.kernel else c.note
    if c.baseline == c.current:
        return f"{metric_title(c)} unchanged ({fmt_value(c.current, c.unit)})"
    return f"{metric_title(c)} {fmt_value(c.baseline, c.unit)} → {fmt_value(c.current, c.unit)}"


def why_line(rows: Sequence[Comparison]) -> str:
    """A regressed case's "why" on one line: each row's movement, the static rows only by what changed (their
    notes, with why, are listed after it), one kernel's together: `_k: registers 216 -> 255 per thread, spills
    0 -> 13,020 bytes ...; DRAM bytes read 1 MB → 2 MB`."""
    from perfgate.gate.static import static_headline

    parts: list[tuple[str, list[str]]] = []
    for c in rows:
        if c.note and c.metric.startswith(STATIC_PREFIX):
            head, text = kernel_label(c.kernel, 40) if c.kernel else "", static_headline(c.note)
            if parts and head and parts[-1][0] == head:
                parts[-1][1].append(text)
            else:
                parts.append((head, [text]))
        else:
            parts.append(("", [movement(c)]))
    return "; ".join(f"{head}: {', '.join(texts)}" if head else ", ".join(texts) for head, texts in parts)


def kernel_label(name: str, width: int = 32, signature: bool = False) -> str:
    """`void at::native::vectorized_elementwise_kernel<4, ...>(int, T2, T3)` -> `vectorized_elementwise_kernel`:
    the function's own name, the same way in every chart and table. `signature=True` adds the template
    arguments without namespaces (`vectorized_elementwise_kernel<4, FillFunctor<int>, …`), to tell apart
    two kernels that share a name."""
    plain = name.removeprefix("void ").replace("<unnamed>::", "").replace("(anonymous namespace)::", "")
    head = _before_arguments(plain)
    qualified, _, args = head.partition("<")
    base = qualified.rsplit("::", 1)[-1] or name
    if not signature or not args:
        return shorten(base, width)
    full = f"{base}<{_NAMESPACE.sub('', args)}"
    return full if len(full) <= 2 * width else full[: 2 * width - 1] + "…"


_NAMESPACE = re.compile(r"\b\w+::")


def _before_arguments(signature: str) -> str:
    """The name and template arguments: everything before the first '(' outside template brackets."""
    depth = 0
    for i, ch in enumerate(signature):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth <= 0:
            return signature[:i]
    return signature


def case_label(case_id: str, width: int = 40) -> str:
    """`kernels/tests/test_perf.py::test_softmax[triton-bf16]` -> `test_softmax[triton-bf16]`; a named
    measurement keeps its test: `test_matmul::bf16`."""
    parts = case_id.split("::")
    tail = "::".join(parts[1:]) if len(parts) > 1 else case_id
    return shorten(tail, width)


def case_labels(case_ids: Sequence[str], width: int = 40) -> list[str]:
    """Labels for a chart: short where unique, the full case id where two would collide."""
    from perfgate.report.figures import unique_labels

    return unique_labels(case_ids, lambda c: case_label(c, width), lambda c: shorten(c, width + 20))
