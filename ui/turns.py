"""Group the agent's events (agent/events.py) into conversation turns for the
chat and voice pages: what was said, which tools ran, what was retrieved and
how long each step took. Pure Python, so it is easy to test."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from agent import Event, RetrievalEvent, ToolCallEvent, keep_metric

# Shown in place of a message of the open conversation that mentioned a memory the visitor deleted
FORGOTTEN_MESSAGE = "Deleted: it mentioned a memory you deleted."


@dataclass
class Turn:
    number: int  # 0 = the greeting
    user_text: str | None = None
    assistant_texts: list[str] = field(default_factory=list)
    tool_calls: list[ToolCallEvent] = field(default_factory=list)
    retrievals: list[RetrievalEvent] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    stopped: bool = False  # the visitor stopped the answer (Conversation.stop): not a failure
    done: bool = False
    started_ts: float | None = None  # when the user's message was said (None for the greeting)
    ended_ts: float | None = None  # the turn's latest event

    @property
    def assistant_text(self) -> str:
        return "\n\n".join(text for text in self.assistant_texts if text)

    @property
    def failed(self) -> bool:
        """Something went wrong in this turn (a failed model call, a tool call the model got wrong)."""
        return bool(self.errors)

    @property
    def summary(self) -> str:
        parts = ["failed"] if self.failed else ["stopped"] if self.stopped else []
        if self.tool_calls:
            # "update_profile ×2": which tool ran more than once (only the total said so)
            times = Counter(call["name"] for call in self.tool_calls)
            names = ", ".join(f"{name} ×{count}" if count > 1 else name for name, count in times.items())
            parts.append(f"{len(self.tool_calls)} tool call{'s' if len(self.tool_calls) != 1 else ''} ({names})")
        hits = sum(len(r["hits"]) for r in self.retrievals)
        if self.retrievals:
            parts.append(
                f"{len(self.retrievals)} search{'es' if len(self.retrievals) != 1 else ''}, {hits} hit"
                f"{'s' if hits != 1 else ''}"
            )
        # a text turn's whole time; a voice turn has none, and the span of its events ran on while the agent
        # waited for the user to speak again (27 s for an answer heard after 1.4 s): its latency instead
        if "turn_total_ms" in self.metrics:
            parts.append(f"{self.metrics['turn_total_ms']:.0f} ms")
        elif "e2e_ms" in self.metrics:
            parts.append(f"end of speech → first audio {self.metrics['e2e_ms']:.0f} ms")
        return " · ".join(parts) if parts else "no tools, no searches"


def group_turns(events: list[Event]) -> list[Turn]:
    turns: dict[int, Turn] = {}
    for event in events:
        number = event["turn"]
        turn = turns.setdefault(number, Turn(number=number))
        ts = event["ts"]
        turn.ended_ts = ts if turn.ended_ts is None else max(turn.ended_ts, ts)
        kind = event["type"]
        if kind == "transcript" and event["final"]:
            if event["role"] == "user":
                turn.user_text = event["text"]
                turn.started_ts = ts if turn.started_ts is None else turn.started_ts
            else:
                turn.assistant_texts.append(event["text"])
        elif kind == "tool_call":
            turn.tool_calls.append(event)
        elif kind == "retrieval":
            turn.retrievals.append(event)
        elif kind == "metric":  # the LLM calls' durations added up, of the rest the first (as every view)
            keep_metric(turn.metrics, event["name"], event["value"])
        elif kind == "error" and event.get("kind") == "stopped":
            turn.stopped = True
        elif kind == "error":
            turn.errors.append(event["message"])
        elif kind == "turn_done":
            turn.done = True
    return [turns[number] for number in sorted(turns)]
