"""The Sessions page's list reads only what its overview shows of each report: a long session's report is
about 1 MB (every event, retrieval and metric), and reading 100 of them whole took 6 to 11 s per page run."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

from agent import events, reports
from core import conversations, sessions
from core.conversations import TurnInput
from core.db import Scope
from ui.report_view import read_report


def _long_report(session_id: str, turns: int) -> dict:
    published, seq = [], 0
    for turn in range(1, turns + 1):
        for fields in (
            events.transcript("user", f"message {turn}: where is order 100{turn % 10}?"),
            events.tool_call(
                "lookup_order", {"order_id": f"100{turn % 10}"}, output="shipped", error=None, duration_ms=3
            ),
            events.metric("llm_ttft_ms", 40 + turn),
            events.metric("recall_ms", 20),
            events.transcript("assistant", f"Order 100{turn % 10} has shipped. " + "Details follow. " * 40),
            events.turn_done(),
        ):
            published.append(events.stamped(fields, ts=1000.0 + turn, session_id=session_id, turn=turn, seq=seq))
            seq += 1
    section = reports.playground_section(
        session_id=session_id,
        user_id=uuid.uuid4(),
        mode="text",
        events=published,
        started_at=1000.0,
        ended_at=1000.0 + 10 * turns,
        memories_written=[{"action": "remembered", "memory_type": "favorite_color", "content": "teal", "turn": 1}],
    )
    return {"playground": section, "events": published, "chat_history": {"items": [{"type": "message"}] * turns}}


def _overview(view):
    return view.user_turns, dict(view.tools_used), len(view.memories_written), view.mode, view.duration_ms


def test_the_list_reads_what_the_overview_shows_and_not_the_events(new_user):
    user = new_user()
    service = Scope.service(user.user_id)
    now = datetime.now(UTC)
    long_id, worker_id = f"long-{uuid.uuid4().hex[:12]}", f"worker-{uuid.uuid4().hex[:12]}"
    sessions.save_report(service, long_id, _long_report(long_id, 60), started_at=now - timedelta(minutes=10))
    worker = {  # a LiveKit worker's report, without our section: read from livekit's chat history
        "duration_ms": 5000,
        "chat_history": {"items": [{"type": "message", "role": "user", "content": ["hello"]}]},
    }
    sessions.save_report(service, worker_id, worker, started_at=now - timedelta(minutes=5))
    open_id = f"open-{uuid.uuid4().hex[:12]}"
    conversations.store_turns(service, [TurnInput(open_id, 0, "user", "still talking", now)])

    whole = {record.session_id: record for record in sessions.list_sessions(user.scope)}
    brief = {record.session_id: record for record in sessions.list_sessions(user.scope, brief=True)}
    assert set(brief) == {long_id, worker_id, open_id}
    for session_id in (long_id, worker_id):
        assert _overview(read_report(brief[session_id].report)) == _overview(read_report(whole[session_id].report))
    assert _overview(read_report(brief[long_id].report)) == (60, {"lookup_order": 60}, 1, "text", 600_000.0)
    assert brief[open_id].is_open and whole[open_id].is_open
    # what makes a long report large is not read for the list
    assert len(json.dumps(brief[long_id].report)) < len(json.dumps(whole[long_id].report)) / 3
    assert "events" not in brief[long_id].report["playground"] and "events" not in brief[long_id].report
