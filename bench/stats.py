"""Small helpers for percentiles and tables."""

from __future__ import annotations

import math
from collections.abc import Iterable


def percentile(values: Iterable[float], fraction: float) -> float | None:
    """Linear-interpolated percentile (numpy's default), None for no values."""
    ordered = sorted(v for v in values if v is not None and math.isfinite(v))
    if not ordered:
        return None
    position = (len(ordered) - 1) * fraction
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summary(values: Iterable[float]) -> dict[str, float | int | None]:
    values = [v for v in values if v is not None]
    return {
        "n": len(values),
        "p50": percentile(values, 0.5),
        "p95": percentile(values, 0.95),
        "max": max(values) if values else None,
    }


def fmt_ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:,.0f} ms" if value >= 10 else f"{value:.1f} ms"


def table(headers: list[str], rows: list[list[str]]) -> str:
    lines = [
        "| " + " | ".join(headers) + " |",
        "| " + " | ".join("---" if i == 0 else "---:" for i in range(len(headers))) + " |",
    ]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)
