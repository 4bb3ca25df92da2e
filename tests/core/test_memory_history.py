"""A memory keeps the texts it held before (supabase/migrations/20261207140000_memories_keep_earlier_values.sql),
and deleting it deletes their mentions too: "teal" edited to "dark teal" and then deleted took only the
mentions of "dark teal", and the agent went on finding "my favorite color is teal" in the transcripts. Against
the real embedded Postgres, as the user (RLS) and as the scoped service."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from agent.forgetting import KnownMemories
from core import conversations, memories, sessions
from core.conversations import TurnInput
from core.db import transaction
from core.retrieval import search_conversations
from tests.support.users import sign_in

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
TOLD = [
    ("user", "My favorite color is teal."),
    ("assistant", "Got it: teal."),
    ("user", "I live in Lisbon, near the river."),
    ("user", "Actually, dark teal, not plain."),
    ("user", "We moved! I live in Porto now."),
    ("user", "The weather was grey all week."),  # mentions neither: stays
]


def _store(user, session_id: str, said=TOLD) -> None:
    rows = [
        TurnInput(session_id, i, speaker, text, T0 + timedelta(minutes=i)) for i, (speaker, text) in enumerate(said)
    ]
    conversations.store_turns(user.service, rows)


def _left(user, session_id: str) -> list[str]:
    return [turn.content for turn in conversations.list_turns(user.scope, session_id)]


def test_every_change_of_text_keeps_the_one_it_replaced_once_oldest_first_never_the_current(database_uri):
    user = sign_in()
    first = memories.remember(user.service, "favorite_color", "teal").memory
    assert first.earlier_contents == ()
    memories.remember(user.service, "favorite_color", "blue")  # the agent, told a new value
    edited = memories.update_memory(user.scope, first.id, "dark teal")  # the Memories page, as the user
    assert edited.earlier_contents == ("teal", "blue")
    assert memories.remember(user.service, "favorite_color", "dark teal").unchanged  # said again: no change
    back = memories.remember(user.service, "favorite_color", "teal").memory  # back to an earlier one
    assert back.content == "teal" and back.earlier_contents == ("blue", "dark teal")
    assert memories.list_memories(user.scope)[0].earlier_contents == ("blue", "dark teal")
    exported = memories.export(user.scope)["memories"][0]
    assert exported["content"] == "teal" and exported["earlier_contents"] == ["blue", "dark teal"]


def test_the_list_is_the_databases_own_a_client_cannot_write_or_clear_it(database_uri):
    """Through RLS a user may update their memory rows; the list they would set is ignored, on insert too."""
    user = sign_in()
    memory = memories.remember(user.service, "city", "Lisbon").memory
    memories.update_memory(user.scope, memory.id, "Porto")
    with transaction(user.scope) as cur:
        cur.execute("update public.memories set earlier_contents = '{}' where id = %s", (memory.id,))
        cur.execute(
            "update public.memories set earlier_contents = '{planted}', content = 'Braga' where id = %s", (memory.id,)
        )
        cur.execute(
            "insert into public.memories (user_id, memory_type, content, embedding, earlier_contents) "
            "select user_id, 'pet', 'a corgi', embedding, '{a cat}' from public.memories where id = %s",
            (memory.id,),
        )
    by_slot = {m.memory_type: m for m in memories.list_memories(user.scope)}
    assert by_slot["city"].earlier_contents == ("Lisbon", "Porto")
    assert by_slot["pet"].earlier_contents == ()


def test_at_most_the_hundred_latest_texts_are_kept(database_uri):
    user = sign_in()
    memory = memories.remember(user.service, "note", "value 0").memory
    with transaction(user.scope) as cur:  # 130 edits without 130 embeddings: the trigger is what is tested
        for i in range(1, 131):
            cur.execute("update public.memories set content = %s where id = %s", (f"value {i}", memory.id))
    kept = memories.recall(user.scope, "note").earlier_contents
    assert len(kept) == 100 and kept[0] == "value 30" and kept[-1] == "value 129"


@pytest.mark.parametrize("how", ["Memories page", "forget tool"])
def test_deleting_an_edited_memory_deletes_the_mentions_of_what_it_said_before(database_uri, how):
    user, other = sign_in(), sign_in()
    sid = f"history-{uuid.uuid4().hex[:8]}"
    _store(user, sid)
    _store(other, sid + "-other")
    color = memories.remember(user.service, "favorite_color", "teal", session_id=sid).memory
    memories.update_memory(user.scope, color.id, "dark teal")
    memories.remember(user.service, "home_city", "Lisbon")
    memories.remember(user.service, "home_city", "Porto")
    assert (
        conversations.mention_count(user.scope, memories.recall(user.scope, "favorite_color").every_content).total == 3
    )

    if how == "Memories page":
        gone = memories.delete_memory(user.scope, color.id)
    else:
        gone = memories.forget(user.service, "favorite_color")
    assert gone.memory.earlier_contents == ("teal",) and gone.mentions_removed == 3
    assert _left(user, sid) == [TOLD[i][1] for i in (2, 4, 5)]
    assert not search_conversations(user.scope, "what is my favorite color, teal?", limit=5, mode="text").hits

    # "forget where I live" after a move: Lisbon goes with Porto, and the count says both
    assert memories.forget(user.service, "home_city").mentions_removed == 2
    assert _left(user, sid) == [TOLD[5][1]]
    assert _left(other, sid + "-other") == [text for _, text in TOLD]  # the other user said the same: nothing of theirs


def test_deleting_all_memories_deletes_the_mentions_of_every_earlier_text_in_turns_and_reports(database_uri):
    user = sign_in()
    sid = f"history-{uuid.uuid4().hex[:8]}"
    _store(user, sid)
    report = {"playground": {"transcript": [{"turn": 1, "role": "user", "text": "I live in Lisbon, near the river."}]}}
    sessions.save_report(user.service, sid, report)
    memories.remember(user.service, "home_city", "Lisbon")
    memories.remember(user.service, "home_city", "Porto")
    memories.remember(user.service, "favorite_color", "teal")

    deleted = memories.delete_all(user.scope)
    assert deleted.memories == 2 and deleted.mentions_removed == 5  # teal 3 ("dark teal" says it), Lisbon, Porto
    assert _left(user, sid) == [TOLD[5][1]]
    saved = json.dumps(sessions.get_session(user.scope, sid).report)
    assert "Lisbon" not in saved and sessions.DELETED_TEXT in saved


def test_an_open_conversation_is_told_the_earlier_texts_of_a_memory_deleted_meanwhile(database_uri):
    """agent/forgetting.py blanks a deleted memory's mentions in the conversation still open: its events, the
    model's context and its report. It learns what to blank from KnownMemories."""
    user = sign_in()
    color = memories.remember(user.service, "favorite_color", "teal").memory
    known = KnownMemories(user.service)
    known.read()
    memories.update_memory(user.scope, color.id, "dark teal")
    gone, edited, slots = known.changes()
    assert gone == [] and edited == [("favorite_color", "dark teal")] and slots == {"favorite_color"}
    memories.delete_memory(user.scope, color.id)
    gone, edited, slots = known.changes()
    assert gone == ["dark teal", "teal"] and edited == [] and slots == set()


def test_another_user_cannot_read_the_earlier_texts(database_uri):
    user, other = sign_in(), sign_in()
    memory = memories.remember(user.service, "pin_hint", "my dog's name").memory
    memories.update_memory(user.scope, memory.id, "my first car")
    with transaction(other.scope) as cur:
        cur.execute("select earlier_contents from public.memories where id = %s", (memory.id,))
        assert cur.fetchall() == []
    assert memories.recall(user.scope, "pin_hint").earlier_contents == ("my dog's name",)
