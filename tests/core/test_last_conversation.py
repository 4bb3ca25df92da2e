"""core.conversations.last_conversation: the turns of the user's most recent earlier session, what "what did
we talk about last time?" is about. Real database, as the user (RLS) and as the scoped service."""

from __future__ import annotations

import uuid

from core import conversations, sessions
from core.conversations import TurnInput
from core.db import Scope


def _said(user, lines: list[tuple[str, str]]) -> str:
    session_id = f"text-{uuid.uuid4().hex[:16]}"
    conversations.store_turns(
        Scope.service(user.user_id),
        [TurnInput(session_id, index, speaker, text) for index, (speaker, text) in enumerate(lines)],
    )
    return session_id


def test_the_latest_earlier_session_with_something_said_in_it(new_user):
    user = new_user()
    assert conversations.last_conversation(user.scope) == []  # a first visit: nothing earlier
    older = _said(user, [("assistant", "Hi!"), ("user", "I hiked the Bear Creek trail")])
    latest = _said(user, [("assistant", "Hi!"), ("user", "Booked my flights to Lisbon"), ("assistant", "Nice!")])
    _said(user, [("assistant", "Hi! What can I do for you?")])  # opened, greeted, nothing said: not a conversation
    current = _said(user, [("assistant", "Hi!"), ("user", "what did we talk about last time?")])

    for scope in (user.scope, Scope.service(user.user_id)):
        turns = conversations.last_conversation(scope, before_session_id=current)
        assert [(t.session_id, t.turn_index, t.speaker, t.content) for t in turns] == [
            (latest, 0, "assistant", "Hi!"),
            (latest, 1, "user", "Booked my flights to Lisbon"),
            (latest, 2, "assistant", "Nice!"),
        ]
    # without a current session, the latest one with something said is the current one
    assert conversations.last_conversation(user.scope)[0].session_id == current
    sessions.delete_session(user.scope, latest)  # deleted: the one before it is the last conversation now
    assert {t.session_id for t in conversations.last_conversation(user.scope, before_session_id=current)} == {older}


def test_another_users_conversations_are_never_the_last_one(new_user):
    mine, theirs = new_user(), new_user()
    _said(theirs, [("user", "my secret plans for Friday")])
    assert conversations.last_conversation(mine.scope) == []
    assert conversations.last_conversation(Scope.service(mine.user_id)) == []
    said = _said(mine, [("user", "I like tea")])
    assert {t.session_id for t in conversations.last_conversation(mine.scope, before_session_id="other")} == {said}


def test_the_last_conversation_is_the_one_the_user_spoke_in_last_not_the_one_started_last(new_user):
    """Found in a walkthrough (2026-12-07): a conversation started in a second tab and left open was "last
    time" for the conversation ended after it in the first tab, which went on longer."""
    from datetime import UTC, datetime, timedelta

    user = new_user()
    start = datetime.now(UTC) - timedelta(hours=1)
    first_tab, second_tab = f"text-{uuid.uuid4().hex[:16]}", f"text-{uuid.uuid4().hex[:16]}"
    store = Scope.service(user.user_id)
    conversations.store_turns(store, [TurnInput(first_tab, 0, "user", "I hiked the Bear Creek trail", start)])
    conversations.store_turns(
        store, [TurnInput(second_tab, 0, "user", "I live in Lisbon", start + timedelta(minutes=5))]
    )
    conversations.store_turns(
        store, [TurnInput(first_tab, 1, "user", "and then we had lunch in Boulder", start + timedelta(minutes=9))]
    )
    turns = conversations.last_conversation(user.scope, before_session_id="text-now")
    assert [t.content for t in turns] == ["I hiked the Bear Creek trail", "and then we had lunch in Boulder"]
