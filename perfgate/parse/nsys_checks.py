"""What an Nsight Systems export's rows must mean before they are read: spans of integer nanoseconds that
end after they start and before 1e18 ns, and kernels of one stream that neither repeat another row (a
copied table, refused) nor overlap unnoticed (a note). Shared by both readers of the export."""

from __future__ import annotations

from typing import Any

from perfgate.errors import ReportFileError
from perfgate.parse.nsys_export import KERNEL_TABLE, NsysExport, text

# No timestamp or duration of a capture reaches 1e18 ns (31 years; the torch reader's bound, 1e15 us): a
# row past it is damaged, and summing such rows would report a GPU busy for centuries.
MAX_NS = 10**18
BAD_SPAN = "with a missing, negative or non-integer start or end, ending before they start, or past 1e18 ns (31 years)"
BAD_SIZE = "with a negative or non-integer size"
_SPAN_SQL = f"typeof(start) = 'integer' AND typeof(end) = 'integer' AND start >= 0 AND end >= start AND end < {MAX_NS}"


def kernel_stream_notes(ex: NsysExport) -> tuple[str, ...]:
    """Check the kernels of each (device, stream) against each other, in one sorted pass in SQLite.

    Rows that repeat another row exactly (start, end, device, stream, correlation id and process) are a
    copied table, not a capture: CUPTI writes one record per launch, and folding copies in would double
    every count and total, so the file is refused. Kernels of one stream that overlap in time are
    possible (parallel branches of a CUDA graph, programmatic dependent launch) but make the stream's
    kernel time exceed the time it was busy: a note says so instead of passing the sum silently."""
    cols = ex.columns(KERNEL_TABLE)
    dev, stream = (c if c in cols else "NULL" for c in ("deviceId", "streamId"))
    cursor = ex.con.execute(
        f"SELECT {dev}, {stream}, start, end, correlationId, globalPid FROM {KERNEL_TABLE} "
        f"WHERE {_SPAN_SQL} ORDER BY 1, 2, 3, 4, 5, 6"
    )
    sweep = _StreamSweep()
    while rows := cursor.fetchmany(65_536):
        sweep.add(rows)
    if sweep.duplicates:
        (d, st), first = sweep.first_duplicate
        raise ReportFileError(
            ex.path,
            f"{KERNEL_TABLE} holds {sweep.duplicates:,} row(s) repeating another row "
            f"exactly (start, end, device, stream, correlation id; the first at start "
            f"{first} ns on device {text(d)} stream {text(st)}): a copied table, not a "
            "capture",
        )
    return tuple(
        f"kernels on device {text(d)} stream {text(st)} overlap in time: their durations sum to "
        f"{summed:,} ns, more than the {busy:,} ns the stream was busy (CUDA graph branches or "
        "programmatic dependent launch; per-kernel totals count the overlap)"
        for (d, st), (summed, busy) in sweep.streams.items()
        if summed > busy
    )


class _StreamSweep:
    """Kernel rows sorted by (device, stream, start, end, correlation id, process): per stream, the sum of
    durations and the busy time (the union of the spans), exactly, in Python ints; and rows equal to the
    one before (sorting puts exact copies side by side)."""

    def __init__(self) -> None:
        self.streams: dict[tuple[Any, Any], tuple[int, int]] = {}
        self.duplicates = 0
        self.first_duplicate: tuple[tuple[Any, Any], int] = ((None, None), 0)
        self._prev: tuple[Any, ...] = ()
        self._key: tuple[Any, Any] | None = None
        self._summed = self._busy = self._reach = 0

    def add(self, rows: list[tuple[Any, ...]]) -> None:
        key, summed, busy, reach, prev = self._key, self._summed, self._busy, self._reach, self._prev
        for row in rows:
            d, st, start, end = row[0], row[1], row[2], row[3]
            if key is None or key[0] != d or key[1] != st:
                if key is not None:
                    self.streams[key] = (summed, busy)
                key, summed, busy, reach = (d, st), 0, 0, start
            elif row == prev:
                if not self.duplicates:
                    self.first_duplicate = (key, start)
                self.duplicates += 1
            summed += end - start
            if end > reach:
                busy += end - max(start, reach)
                reach = end
            prev = row
        if key is not None:
            self.streams[key] = (summed, busy)
        self._key, self._summed, self._busy, self._reach, self._prev = key, summed, busy, reach, prev


def is_span(start: Any, end: Any) -> bool:
    """SQLite hands back int, float, str, bytes or None: a span is two integers with 0 <= start <= end <
    MAX_NS (nsys timestamps count from 0; then every difference of two timestamps fits int64)."""
    return type(start) is int and type(end) is int and 0 <= start <= end < MAX_NS
