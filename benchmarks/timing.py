"""Summaries of measured durations."""

from __future__ import annotations

import math
import statistics


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile: with 30 samples, p95 is the 29th smallest, a real sample."""
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def describe(values: list[float]) -> str:
    """Median, p95, min and max of durations in seconds, printed in milliseconds."""
    return (
        f"median {statistics.median(values) * 1e3:8.1f} ms   "
        f"p95 {percentile(values, 0.95) * 1e3:8.1f} ms   "
        f"min {min(values) * 1e3:8.1f} ms   max {max(values) * 1e3:8.1f} ms   "
        f"(n={len(values)})"
    )


def milliseconds(seconds: float) -> str:
    """A duration as a table cell."""
    return f"{seconds * 1e3:.1f} ms"


def duration_cells(values: list[float]) -> list[str]:
    """Median, p95, min and max of durations in seconds, as table cells in milliseconds."""
    return [milliseconds(value) for value in (statistics.median(values),
                                              percentile(values, 0.95), min(values),
                                              max(values))]
