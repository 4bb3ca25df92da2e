"""Per-turn latency of a voice call, from its metric events (for the call's report and the Voice page)."""

from __future__ import annotations

import statistics
from typing import Any

from agent.events import Event, of_type
from agent.timings import keep_metric

LATENCY_METRICS = ("eou_delay_ms", "transcription_delay_ms", "stt_ms", "recall_ms", "llm_ttft_ms",
                   "tts_ttfb_ms", "e2e_ms")  # fmt: skip


def per_turn_latency(events: list[Event]) -> list[dict[str, Any]]:
    """One row per user turn with the latency metrics recorded for it (ms).

    Speech-to-text finishes before the user's message starts its turn, so it is
    matched to the first user message committed after it, whatever turn it is
    stamped with (the session stamps the upcoming turn; stored reports may carry
    the previous one).
    """
    user_messages = [
        (e["ts"], e["turn"]) for e in of_type(events, "transcript") if e.get("role") == "user" and e.get("final")
    ]
    rows: dict[int, dict[str, Any]] = {}
    for event in of_type(events, "metric"):
        if event.get("name") not in LATENCY_METRICS:
            continue
        turn = event.get("turn")
        if event["name"] == "stt_ms":
            turn = next((t for ts, t in user_messages if ts >= event["ts"] and ts - event["ts"] < 10), None)
        if not turn:
            continue
        keep_metric(rows.setdefault(turn, {"turn": turn}), event["name"], event["value"])  # the first reply's
    return [rows[turn] for turn in sorted(rows)]


def latency_summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    summary = {}
    for name in LATENCY_METRICS:
        values = sorted(row[name] for row in rows if name in row)
        if values:
            summary[name] = {
                "count": len(values),
                "p50": round(statistics.median(values), 1),
                "max": round(values[-1], 1),
            }
    return summary
