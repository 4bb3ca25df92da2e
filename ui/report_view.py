"""Read a stored session report into what the Sessions page shows.

A report (agent/reports.py) is livekit's `SessionReport.to_dict()` plus our
`playground` section: transcript, tool calls, retrievals, metrics and errors
(the agent's events, agent/events.py), memories written, turns, duration, mode;
a voice call adds a `voice` part with per-turn latency. A report without a
`playground` section (livekit's part alone) is read from its `chat_history`.
Reports are stored JSON, so each part is checked as it is read: a missing or
malformed part becomes empty, never an exception. Pure Python (no Streamlit).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from agent import ErrorEvent, MetricEvent, RetrievalEvent, ToolCallEvent, events


@dataclass
class ReportView:
    transcript: list[dict[str, Any]] = field(default_factory=list)  # {role, text, turn}
    tool_calls: list[ToolCallEvent] = field(default_factory=list)  # or {turn, name, ...} from chat_history
    retrievals: list[RetrievalEvent] = field(default_factory=list)
    metrics: list[MetricEvent] = field(default_factory=list)
    memories_written: list[dict[str, Any]] = field(default_factory=list)
    errors: list[ErrorEvent] = field(default_factory=list)
    stopped: int = 0  # answers the visitor stopped (error events of kind "stopped": not errors)
    user_turns: int = 0
    duration_ms: float | None = None
    mode: str | None = None  # "text" | "voice" | ... when the writer says so
    # a voice call's per-turn latency (agent/voice/latency.py): {turn, eou_delay_ms, stt_ms, llm_ttft_ms, ...}
    voice_latency: list[dict[str, Any]] = field(default_factory=list)
    voice_latency_summary: dict[str, dict[str, float]] = field(default_factory=dict)  # name -> {count, p50, max}

    @property
    def tools_used(self) -> Counter:
        return Counter(call["name"] for call in self.tool_calls if call.get("name"))


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _events_of(section: dict[str, Any], key: str, kind: str) -> list[Any]:
    """The section's list `key` of `kind` events, each complete (events.missing_keys)."""
    return [e for e in _dicts(section.get(key)) if e.get("type") == kind and not events.missing_keys(e)]


def _from_playground_section(section: dict[str, Any], view: ReportView) -> None:
    view.transcript = [
        {"role": line.get("role"), "text": line["text"], "turn": line.get("turn", 0)}
        for line in _dicts(section.get("transcript"))
        if line.get("text")
    ]
    view.tool_calls = _events_of(section, "tool_calls", "tool_call")
    view.retrievals = _events_of(section, "retrievals", "retrieval")
    view.metrics = _events_of(section, "metrics", "metric")
    errors = _events_of(section, "errors", "error")
    view.errors = [e for e in errors if e.get("kind") != "stopped"]
    view.stopped = len(errors) - len(view.errors)
    view.memories_written = _dicts(section.get("memories_written"))


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            part if isinstance(part, str) else str(part.get("text") or part.get("transcript") or "")
            for part in content
            if part is not None
        ).strip()
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
            view.tool_calls.append(
                {
                    "turn": turn,
                    "name": item.get("name"),
                    "arguments": item.get("arguments"),
                    "output": output.get("output"),
                    "error": output.get("output") if output.get("is_error") else None,
                    "duration_ms": None,
                }
            )


def read_report(report: dict[str, Any] | None) -> ReportView:
    report = report if isinstance(report, dict) else {}
    section = report.get("playground") if isinstance(report.get("playground"), dict) else {}
    view = ReportView()
    _from_playground_section(section, view)
    if not view.transcript:
        _from_chat_history(report, view)
    user_turns = section.get("turns", report.get("user_turns"))
    counted = sum(1 for line in view.transcript if line.get("role") == "user")
    view.user_turns = max(int(user_turns), counted) if isinstance(user_turns, int) else counted
    if _is_number(section.get("duration_s")):
        view.duration_ms = float(section["duration_s"]) * 1000
    elif _is_number(report.get("duration_ms")):
        view.duration_ms = float(report["duration_ms"])
    mode = section.get("mode")
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
    for name, stats in summary.items() if isinstance(summary, dict) else []:
        if isinstance(stats, dict):
            numbers = {k: float(v) for k, v in stats.items() if k in ("count", "p50", "max") and _is_number(v)}
            if "p50" in numbers:
                view.voice_latency_summary[str(name)] = numbers


def remembered_at_the_end(report: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The memories the fact extraction wrote once the session ended (source "extraction": remembered or
    updated). Nothing in the conversation said so, so the page that ended it does (a voice call whose every
    answer failed still saved "favorite_color: teal", unseen)."""
    section = (report or {}).get("playground") if isinstance(report, dict) else None
    written = _dicts(section.get("memories_written")) if isinstance(section, dict) else []
    return [m for m in written if m.get("source") == "extraction" and m.get("action") in ("remembered", "updated")]


def extraction_failure(report: dict[str, Any] | None) -> str | None:
    """Why the fact extraction at the end of the session failed, if it did."""
    section = (report or {}).get("playground") if isinstance(report, dict) else None
    extraction = section.get("extraction") if isinstance(section, dict) else None
    error = extraction.get("error") if isinstance(extraction, dict) else None
    return str(error) if error else None
