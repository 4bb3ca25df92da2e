"""core.conversations.conversations_within: the user's earlier conversations held on some days, what "what
did we talk about yesterday?" is about. Real database, as the user (RLS) and as the scoped service."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from core import conversations, sessions
from core.conversations import TurnInput
from core.date_window import DateWindow
from core.db import Scope

DAY = date(2026, 11, 30)  # a Monday
TOKYO = ZoneInfo("Asia/Tokyo")  # UTC+9


def _said(user, at: datetime, lines: list[tuple[str, str]]) -> str:
    session_id = f"text-{uuid.uuid4().hex[:16]}"
    conversations.store_turns(
        Scope.service(user.user_id),
        [
            TurnInput(session_id, index, speaker, text, at + timedelta(minutes=index))
            for index, (speaker, text) in enumerate(lines)
        ],
    )
    return session_id


def _at(day: date, hour: int, minute: int = 0) -> datetime:
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=UTC)


def _held(scope, window, **kwargs):
    found, count = conversations.conversations_within(scope, window, **kwargs)
    return [(c.session_id, [(t.speaker, t.content) for t in c.turns], c.turn_count) for c in found], count


def test_the_conversations_of_a_day_in_order_without_the_one_going_on(new_user):
    user, someone_else = new_user(), new_user()
    morning = _said(user, _at(DAY, 8), [("assistant", "Hi!"), ("user", "I hiked the Bear Creek trail")])
    evening = _said(user, _at(DAY, 19), [("user", "Booked my flights to Lisbon"), ("assistant", "Nice!")])
    _said(user, _at(DAY, 12), [("assistant", "Hi! What can I do for you?")])  # greeted, nothing said
    _said(user, _at(DAY - timedelta(days=1), 10), [("user", "Sunday's news")])
    _said(someone_else, _at(DAY, 9), [("user", "my secret plans for Friday")])
    current = _said(user, _at(DAY, 21), [("user", "what did we talk about today?")])
    monday = DateWindow(DAY, DAY, said_as="Monday")

    for scope in (user.scope, Scope.service(user.user_id)):
        assert _held(scope, monday, except_session_id=current) == (
            [
                (morning, [("assistant", "Hi!"), ("user", "I hiked the Bear Creek trail")], 2),
                (evening, [("user", "Booked my flights to Lisbon"), ("assistant", "Nice!")], 2),
            ],
            2,
        )
    assert [s for s, _, _ in _held(user.scope, monday)[0]] == [morning, evening, current]
    assert _held(someone_else.scope, monday, except_session_id=current)[0][0][1] == [
        ("user", "my secret plans for Friday")
    ]
    assert _held(user.scope, DateWindow(DAY + timedelta(days=1), DAY + timedelta(days=1), said_as="Tuesday")) == (
        [],
        0,
    )
    sessions.delete_session(user.scope, morning)  # deleted: not held any more
    assert [s for s, _, _ in _held(user.scope, monday, except_session_id=current)[0]] == [evening]


def test_the_latest_conversations_and_their_first_turns_when_there_are_many(new_user):
    user = new_user()
    lines = [("user" if i % 2 == 0 else "assistant", f"line {i}") for i in range(6)]
    held = [_said(user, _at(DAY, hour), lines) for hour in (7, 9, 11)]
    found, count = _held(user.scope, DateWindow(DAY, DAY, said_as="Monday"), most=2, turns_each=3)
    assert count == 3  # all three were held that day; the latest two are shown, oldest first
    assert found == [(held[1], lines[:3], 6), (held[2], lines[:3], 6)]


def test_the_days_are_of_the_windows_time_zone_and_a_conversation_over_midnight_is_split(new_user):
    user = new_user()
    # 14:30 UTC on Monday is 23:30 in Tokyo: of its 33 turns a minute apart, the last 3 are Tuesday there
    lines = [("user", "late one"), ("assistant", "Still up?")] + [("user", f"line {i}") for i in range(31)]
    over_midnight = _said(user, _at(DAY, 14, 30), lines)
    tokyo_monday = DateWindow(DAY, DAY, said_as="Monday", zone=TOKYO)
    tokyo_tuesday = DateWindow(DAY + timedelta(days=1), DAY + timedelta(days=1), said_as="Tuesday", zone=TOKYO)
    assert _held(user.scope, tokyo_monday) == ([(over_midnight, lines[:12], 30)], 1)
    assert _held(user.scope, tokyo_tuesday) == ([(over_midnight, lines[30:], 3)], 1)
    assert _held(user.scope, DateWindow(DAY, DAY, said_as="Monday"), turns_each=50)[0] == [
        (over_midnight, lines, 33)  # in UTC all of it was Monday
    ]


def test_a_greeting_is_neither_held_nor_the_last_conversation(new_user):
    """What the agent said before the user's first words (an opening: "Welcome back, Nora!") is in the
    transcript, but "what did we talk about" reads what was talked about: it quoted the greeting first."""
    user = new_user()
    session_id = f"text-{uuid.uuid4().hex[:16]}"
    at = _at(DAY, 8)
    conversations.store_turns(
        Scope.service(user.user_id),
        [
            TurnInput(session_id, 0, "assistant", "Welcome back, Nora!", at, True),
            TurnInput(session_id, 1, "user", "I hiked the Bear Creek trail", at + timedelta(minutes=1)),
            TurnInput(session_id, 2, "assistant", "Sounds lovely!", at + timedelta(minutes=2)),
        ],
    )
    monday = DateWindow(DAY, DAY, said_as="Monday")
    said = [("user", "I hiked the Bear Creek trail"), ("assistant", "Sounds lovely!")]
    for scope in (user.scope, Scope.service(user.user_id)):
        assert _held(scope, monday) == ([(session_id, said, 2)], 1)
        assert [(t.speaker, t.content) for t in conversations.last_conversation(scope)] == said
    assert len(conversations.list_turns(user.scope, session_id)) == 3  # the transcript keeps it
