"""The event contract (agent/events.py): one builder per kind, every built event complete for its kind,
the JSON shape docs/AGENT.md documents, and decoding that refuses what is not an event."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime

import pytest

from agent import events
from agent.event_bus import EventBus, QueueSink
from core.retrieval import RrfParams
from tests.support.app import PROJECT_ROOT

BUILT = {
    "transcript": events.transcript("assistant", "Hi!", final=True, interrupted=False),
    "tool_call": events.tool_call("lookup_order", {"order_id": "1001"}, output="{}", error=None, duration_ms=3.21),
    "retrieval": events.skipped_recall("hello", RrfParams(), reason="over the 250 ms budget", latency_ms=251.0),
    "state": events.state("agent", "thinking"),
    "metric": events.metric("recall_ms", 12.345),
    "turn_done": events.turn_done(),
    "error": events.error("The LLM failed.", where="llm", kind="timeout", recoverable=False),
}


def test_every_kind_has_a_builder_and_its_events_are_complete():
    assert set(BUILT) == set(events.EVENT_TYPES)
    sink = QueueSink()
    bus = EventBus("session-1", [sink])
    for fields in BUILT.values():
        bus.emit(fields)
    published, _ = sink.since(0)
    assert [e["seq"] for e in published] == list(range(len(BUILT)))
    for event in published:
        assert events.missing_keys(event) == [], event
        assert events.decode_event(events.encode_event(event)) == event
    assert published[1]["duration_ms"] == 3.21 and published[4]["value"] == 12.35  # rounded as documented


def test_values_are_made_json_safe():
    fields = events.tool_call(
        "recall_detail",
        {"when": datetime(2026, 1, 1, tzinfo=UTC), "id": uuid.UUID(int=1), "score": float("nan")},
        output=None,
        error=None,
        duration_ms=1.0,
    )
    event = events.stamped(fields, ts=1.0, session_id="s", turn=1, seq=0)
    assert event["arguments"] == {"when": "2026-01-01T00:00:00+00:00", "id": str(uuid.UUID(int=1)), "score": None}


def test_docs_agent_md_lists_exactly_the_keys_of_each_kind():
    """The table under "## Events" in docs/AGENT.md: a row per kind, its keys (besides the common ones) in the
    second column, optional ones marked with a trailing "?"."""
    doc = (PROJECT_ROOT / "docs" / "AGENT.md").read_text(encoding="utf-8")
    table = doc.split("## Events", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| `(\w+)` \| ([^|]*) \|", table, re.M))
    assert set(rows) == set(events.EVENT_TYPES)
    common = events._Common.__required_keys__ | events._Common.__optional_keys__
    for kind, keys in rows.items():
        schema = events._SCHEMAS[kind]
        assert set(re.findall(r"`(\w+)`(?!\?)", keys)) == schema.__required_keys__ - common, kind
        assert set(re.findall(r"`(\w+)`\?", keys)) == schema.__optional_keys__ - common, kind


@pytest.mark.parametrize(
    "payload",
    [
        "nope",
        "[]",
        '{"type": "tool_call"}',
        '{"type": "gossip", "ts": 1, "session_id": "s", "turn": 0, "seq": 0}',
        '{"type": "state", "ts": 1, "session_id": "s", "turn": 0, "seq": 0, "who": "agent"}',
    ],
)
def test_decode_refuses_what_is_not_a_complete_event(payload):
    with pytest.raises(ValueError):
        events.decode_event(payload)
