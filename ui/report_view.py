"""Read a stored session report into what the Sessions page shows.

Reports come from two writers with one shape at their core: the LiveKit
worker (`ctx.make_session_report().to_dict()`: chat_history, events, usage,
duration_ms, user_turns...) and the in-process sessions (the same keys plus
the agent's own events — see agent/events.py — and the memories written).
This module reads either defensively: a missing part becomes an empty list,
never an exception. Pure Python (no Streamlit), so it is easy to test.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

AGENT_EVENT_TYPES = {"transcript", "tool_call", "retrieval", "state", "metric", "turn_done", "error"}
_EVENT_LIST_KEYS = ("playground_events", "agent_events", "events", "timeline")
_MEMORY_LIST_KEYS = ("memories_written", "memories", "written_memories")


@dataclass
class ReportView:
    transcript: list[dict[str, Any]] = field(default_factory=list)  # {role, text, turn}
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # {turn, name, arguments, output, error, duration_ms}
    retrievals: list[dict[str, Any]] = field(default_factory=list)  # agent retrieval events
    metrics: list[dict[str, Any]] = field(default_factory=list)  # {turn, name, value}
    memories_written: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    user_turns: int = 0
    duration_ms: float | None = None
    mode: str | None = None  # "text" | "voice" | ... when the writer says so
    # a voice call's per-turn latency (agent/voice_runtime.py): {turn, eou_delay_ms, stt_ms, llm_ttft_ms, ...}
    voice_latency: list[dict[str, Any]] = field(default_factory=list)
    voice_latency_summary: dict[str, dict[str, float]] = field(default_factory=dict)  # name -> {count, p50, max}

    @property
    def tools_used(self) -> Counter:
        return Counter(call["name"] for call in self.tool_calls if call.get("name"))


def _agent_events(report: dict[str, Any]) -> list[dict[str, Any]]:
    section = report.get("playground") if isinstance(report.get("playground"), dict) else {}
    for source, key in [(section, "events"), *((report, k) for k in _EVENT_LIST_KEYS)]:
        candidate = source.get(key)
        if isinstance(candidate, list):
            events = [e for e in candidate if isinstance(e, dict) and e.get("type") in AGENT_EVENT_TYPES
                      and ("turn" in e or "seq" in e)]
            if events:
                return sorted(events, key=lambda e: (e.get("seq") if isinstance(e.get("seq"), int) else 0,
                                                     e.get("ts") or 0))
    return []


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(part if isinstance(part, str) else str(part.get("text") or part.get("transcript") or "")
                        for part in content if part is not None).strip()
    return "" if content is None else str(content)


def _from_chat_history(report: dict[str, Any], view: ReportView) -> None:
    """Fallback when no agent events were stored (e.g. a worker report)."""
    history = report.get("chat_history")
    items = history.get("items") if isinstance(history, dict) else history if isinstance(history, list) else []
    turn = 0
    outputs = {}
    for item in items or []:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            outputs[item.get("call_id")] = item
    for item in items or []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") in ("user", "assistant"):
            if item["role"] == "user":
                turn += 1
            text = _message_text(item.get("content"))
            if text:
                view.transcript.append({"role": item["role"], "text": text, "turn": turn})
        elif kind == "function_call" and not view.tool_calls:
            output = outputs.get(item.get("call_id"), {})
            view.tool_calls.append({
                "turn": turn, "name": item.get("name"), "arguments": item.get("arguments"),
                "output": output.get("output"), "error": output.get("output") if output.get("is_error") else None,
                "duration_ms": None,
            })


def read_report(report: dict[str, Any] | None) -> ReportView:
    report = report if isinstance(report, dict) else {}
    view = ReportView()
    for event in _agent_events(report):
        kind, turn = event.get("type"), event.get("turn", 0)
        if kind == "transcript" and event.get("final", True) and event.get("text"):
            view.transcript.append({"role": event.get("role"), "text": event.get("text"), "turn": turn})
        elif kind == "tool_call":
            view.tool_calls.append({key: event.get(key) for key in
                                    ("turn", "name", "arguments", "output", "error", "duration_ms")})
        elif kind == "retrieval":
            view.retrievals.append(event)
        elif kind == "metric" and isinstance(event.get("value"), (int, float)):
            view.metrics.append({"turn": turn, "name": event.get("name"), "value": float(event["value"])})
        elif kind == "error":
            view.errors.append(event)
    if not view.transcript:
        _from_chat_history(report, view)
    section = report.get("playground") if isinstance(report.get("playground"), dict) else {}
    for source, key in [(section, "memories_written"), *((report, k) for k in _MEMORY_LIST_KEYS)]:
        written = source.get(key)
        if isinstance(written, list):
            view.memories_written = [m for m in written if isinstance(m, dict)]
            break
    user_turns = section.get("turns", report.get("user_turns"))
    counted = sum(1 for line in view.transcript if line.get("role") == "user")
    view.user_turns = max(int(user_turns), counted) if isinstance(user_turns, int) else counted
    if isinstance(section.get("duration_s"), (int, float)):
        view.duration_ms = float(section["duration_s"]) * 1000
    elif isinstance(report.get("duration_ms"), (int, float)):
        view.duration_ms = float(report["duration_ms"])
    mode = section.get("mode") or report.get("mode")
    view.mode = str(mode) if mode else None
    _voice_latency(report, view)
    return view


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _voice_latency(report: dict[str, Any], view: ReportView) -> None:
    voice = report.get("voice")
    if not isinstance(voice, dict):
        return
    rows = voice.get("turn_latency_ms")
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, dict) and _is_number(row.get("turn")):
            values = {k: float(v) for k, v in row.items() if k != "turn" and _is_number(v)}
            if values:
                view.voice_latency.append({"turn": int(row["turn"]), **values})
    view.voice_latency.sort(key=lambda row: row["turn"])
    summary = voice.get("latency_summary")
    for name, stats in (summary.items() if isinstance(summary, dict) else []):
        if isinstance(stats, dict):
            numbers = {k: float(v) for k, v in stats.items() if k in ("count", "p50", "max") and _is_number(v)}
            if "p50" in numbers:
                view.voice_latency_summary[str(name)] = numbers
