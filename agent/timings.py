"""How a turn's timings (`metric` events, agent/events.py) are kept when a turn records one more than once,
the same in every view: the chat panel, the Sessions page, a voice call's latency table, `TurnResult.timings`."""

from __future__ import annotations

# Each LLM call of a turn with tools has its own duration, each reply its own first token, first audio and
# end-to-end latency: the calls' durations are added up (the turn's LLM time), of everything else the first
# is kept (when the answer began).
ADDED_UP_METRICS = frozenset({"llm_duration_ms"})


def keep_metric(values: dict[str, float], name: str, value: float) -> None:
    """Put one of a turn's timings into `values` (name -> ms) as every view keeps it (ADDED_UP_METRICS)."""
    if name in ADDED_UP_METRICS:
        values[name] = values.get(name, 0.0) + float(value)
    else:
        values.setdefault(name, float(value))
