"""A memory deleted while a conversation is open leaves that conversation too (agent/forgetting.py).

The conversation runs on the in-process runtime with the offline brain, against the real database; the
deletions are the Memories page's (core.memories as the user, RLS) and another process's (a plain SQL
delete, heard through the database's notification feed).
"""

from __future__ import annotations

import json

from core import conversations, memories, sessions, turn_indexer
from core.db import Scope, transaction
from core.errors import DatabaseUnavailable
from core.sessions import DELETED_TEXT
from tests.support.waiting import until

DOG = "Biscuitface"


def _model_reads(ps) -> str:
    """Everything the model would read on its next call: the shaped context, preload included."""
    request = ps.agent.shape_request(ps.agent.chat_ctx)
    return json.dumps(request.to_dict(exclude_function_call=False), ensure_ascii=False)


def _talk_about_the_dog(runtime, user, key: str):
    memories.remember(Scope.service(user.user_id), "dog_name", DOG)  # said in an earlier session
    chat = runtime.open_conversation(key, user.user_id)
    chat.ready.result(timeout=60)
    asked = chat.send("what's my dog's name?").result(timeout=60)
    told = chat.send(f"{DOG} was barking all night again").result(timeout=60)
    assert DOG in asked.reply and told.error is None
    assert DOG in _model_reads(chat.playground_session)
    return chat


def test_a_memory_deleted_on_the_memories_page_leaves_the_open_chat_its_model_and_its_report(runtime, new_user):
    user = new_user()
    chat = _talk_about_the_dog(runtime, user, "forget-page")
    ps, session_id = chat.playground_session, chat.session_id
    (dog,) = memories.list_memories(user.scope)

    deleted = memories.delete_memory(user.scope, dog.id)  # the Memories page, as the visitor

    assert deleted.mentions_removed == 2  # the stored question's answer and the barking
    assert until(lambda: chat.forgotten_messages == 2, timeout=15.0)
    assert [h["text"] for h in chat.history][1:] == [
        "what's my dog's name?",  # says nothing of the dog's name: kept
        DELETED_TEXT,
        DELETED_TEXT,
        "Noted. I haven't saved that as a memory, but our conversation is kept, so you can ask me about it later.",
    ]
    shown, _ = chat.events_since(0)  # the retrieval panel's hits and tool results too
    assert DOG not in json.dumps(shown) and DELETED_TEXT in json.dumps(shown)
    assert DOG not in _model_reads(ps)  # neither in the messages and tool results nor in the preload
    assert "Remembered facts" not in ps.agent.preload_text()  # the preload lists no memory now

    again = chat.send("what's my dog's name?").result(timeout=60)
    assert DOG not in again.reply and again.reply.startswith("I don't remember your dog's name")
    report = chat.close().result(timeout=60)

    assert DOG not in json.dumps(report)
    saved = sessions.get_session(user.scope, session_id).report
    assert DOG not in json.dumps(saved)
    stored = conversations.list_turns(user.scope, session_id)
    assert stored and all(DOG not in turn.content for turn in stored)
    assert memories.list_memories(user.scope) == []  # not extracted again from what was said


def test_a_greeting_that_said_a_memory_deleted_before_the_user_spoke_is_never_stored(runtime, new_user):
    """What the agent says before the user's first message is stored with that message (agent/turn_log.py): a
    greeting that named the user, whose name memory was deleted meanwhile, is not stored then."""
    user = new_user()
    memories.remember(Scope.service(user.user_id), "name", "Thibault")  # said in an earlier session
    chat = runtime.open_conversation("forget-greeting", user.user_id)
    assert "Thibault" in chat.ready.result(timeout=60)  # "Welcome back, Thibault! ..."
    (name,) = memories.list_memories(user.scope)
    memories.delete_memory(user.scope, name.id)
    assert until(lambda: chat.forgotten_messages == 1, timeout=15.0)
    assert chat.send("hello again").result(timeout=60).error is None
    assert turn_indexer.flush_queued()
    stored = conversations.list_turns(user.scope, chat.session_id)
    assert [(t.turn_index, t.speaker) for t in stored] == [(1, "user"), (2, "assistant")]  # no greeting
    chat.close().result(timeout=60)
    assert all("Thibault" not in t.content for t in conversations.list_turns(user.scope, chat.session_id))


def test_a_deletion_in_another_process_reaches_the_chat_through_the_database(runtime, new_user):
    """A plain SQL delete, as another process's would be heard: only the database's notification tells
    this process, and the chat deletes the stored turns that mention it itself."""
    user = new_user()
    chat = _talk_about_the_dog(runtime, user, "forget-elsewhere")
    session_id = chat.session_id
    assert until(lambda: any(DOG in t.content for t in conversations.list_turns(user.scope, session_id)), timeout=15.0)

    with transaction(Scope.service(user.user_id)) as cur:  # no in-process notice: core.memories is not used
        cur.execute("delete from public.memories where user_id = %s", (user.user_id,))

    assert until(lambda: chat.forgotten_messages == 2, timeout=15.0)
    assert DOG not in _model_reads(chat.playground_session)
    assert all(DOG not in t.content for t in conversations.list_turns(user.scope, session_id))
    chat.close().result(timeout=60)
    assert DOG not in json.dumps(sessions.get_session(user.scope, session_id).report)


def test_an_edited_memory_reaches_the_model_and_blanks_nothing(runtime, new_user):
    user = new_user()
    chat = _talk_about_the_dog(runtime, user, "forget-edit")
    (dog,) = memories.list_memories(user.scope)

    memories.update_memory(user.scope, dog.id, "Pixel")

    assert until(lambda: "dog_name: Pixel" in chat.playground_session.agent.preload_text(), timeout=15.0)
    assert DOG not in chat.playground_session.agent.preload_text()
    assert chat.forgotten_messages == 0
    assert any(DOG in h["text"] for h in chat.history)  # what was said stays said: an edit deletes nothing
    chat.close().result(timeout=60)


def test_the_agent_forgetting_says_what_it_forgot_and_the_model_then_loses_it(runtime, new_user):
    """ "forget my ..." in the chat: the earlier messages that said it are blanked before the model reads
    the tool's result (so the reply can name it); the turn after it, the model's context loses that too,
    and the confirmation's stored turn is deleted when the session ends."""
    user = new_user()
    chat = runtime.open_conversation("forget-tool", user.user_id)
    chat.ready.result(timeout=60)
    chat.send("my favorite color is teal").result(timeout=60)
    forgot = chat.send("forget my favorite color").result(timeout=60)
    ps, session_id = chat.playground_session, chat.session_id

    assert forgot.reply.startswith("Done, I've forgotten your favorite color")
    texts = [h["text"] for h in chat.history]
    assert texts[1:3] == [DELETED_TEXT, DELETED_TEXT]  # "my favorite color is teal" and its answer
    assert chat.forgotten_messages == 2
    assert "teal" in _model_reads(ps)  # the tool's result, read by the model for its reply

    after = chat.send("what is my favorite color?").result(timeout=60)
    assert "teal" not in after.reply
    assert "teal" not in _model_reads(ps)
    chat.close().result(timeout=60)
    stored = conversations.list_turns(user.scope, session_id)
    assert stored and all("teal" not in turn.content.lower() for turn in stored)
    assert "teal" not in json.dumps(sessions.get_session(user.scope, session_id).report)


def test_the_forget_tool_answers_even_when_the_conversation_cannot_check(runtime, new_user, monkeypatch):
    """The memory is deleted either way: a failed check (the database away a moment) is logged, not the
    tool's failure, and the end of the session checks again."""
    user = new_user()
    chat = runtime.open_conversation("forget-fails", user.user_id)
    chat.ready.result(timeout=60)
    chat.send("my favorite color is teal").result(timeout=60)
    known = chat.playground_session.forgetting.known
    real_changes = known.changes
    calls = []

    def unreachable():
        calls.append(1)
        if len(calls) <= 2:  # the check the deletion's notice starts, and the one the tool waits for
            raise DatabaseUnavailable("The database is not reachable right now.")
        return real_changes()

    monkeypatch.setattr(known, "changes", unreachable)
    forgot = chat.send("forget my favorite color").result(timeout=60)
    assert forgot.error is None and forgot.reply.startswith("Done, I've forgotten your favorite color")
    session_id = chat.session_id
    chat.close().result(timeout=60)
    assert calls and "teal" not in json.dumps(sessions.get_session(user.scope, session_id).report)


PAID = "I paid $5 for coffee and $10 for lunch"


def _told_then_asked(runtime, user, key: str):
    """The walkthrough: the fact told in one session (which ends), asked about in the next (still open)."""
    told = runtime.open_conversation(f"{key}-told", user.user_id)
    told.ready.result(timeout=60)
    assert told.send(PAID).result(timeout=60).reply == (
        "Got it, I'll remember that you paid $5 for coffee and $10 for lunch."
    )
    told.close().result(timeout=60)
    chat = runtime.open_conversation(f"{key}-asked", user.user_id)
    chat.ready.result(timeout=60)
    answer = chat.send("what did I pay for coffee?").result(timeout=60)
    assert answer.reply == "You told me you paid $5 for coffee and $10 for lunch."
    return told.session_id, chat


def _says_it(text: str) -> bool:
    return "$5 for coffee" in text


def test_the_agents_reply_saying_a_deleted_memory_back_leaves_the_open_chat_and_the_stored_turns(runtime, new_user):
    """A reply that says the fact back ("you paid $5 ...") is a mention of it: deleted on the Memories page, it
    goes from the earlier session's stored turns and from the open chat's screen, model and report alike."""
    user = new_user()
    told, chat = _told_then_asked(runtime, user, "paid-page")
    (note,) = memories.list_memories(user.scope)

    assert memories.delete_memory(user.scope, note.id).mentions_removed == 3  # the Memories page, as the user
    assert until(lambda: chat.forgotten_messages == 1, timeout=15.0)
    assert [h["text"] for h in chat.history][1:] == ["what did I pay for coffee?", DELETED_TEXT]
    shown, _ = chat.events_since(0)
    assert not _says_it(json.dumps(shown)) and not _says_it(_model_reads(chat.playground_session))
    assert [t.speaker for t in conversations.list_turns(user.scope, told)] == ["assistant"]  # the greeting
    session_id = chat.session_id
    chat.close().result(timeout=60)
    assert [t.content for t in conversations.list_turns(user.scope, session_id)][1:] == ["what did I pay for coffee?"]
    for sid in (told, session_id):
        assert not _says_it(json.dumps(sessions.get_session(user.scope, sid).report))


def test_the_agents_forget_takes_its_replies_saying_the_memory_back_too(runtime, new_user):
    """ "forget ..." said to the agent goes by the same rule as the Memories page."""
    user = new_user()
    told, chat = _told_then_asked(runtime, user, "paid-tool")
    forgot = chat.send("forget note_paid_5_coffee").result(timeout=60)
    assert forgot.reply.startswith("Done, I've forgotten")
    assert [h["text"] for h in chat.history][1:3] == ["what did I pay for coffee?", DELETED_TEXT]
    assert [t.speaker for t in conversations.list_turns(user.scope, told)] == ["assistant"]
    session_id = chat.session_id
    chat.close().result(timeout=60)
    stored = [t.content for t in conversations.list_turns(user.scope, session_id)]
    assert "what did I pay for coffee?" in stored and not any(_says_it(text) for text in stored)
    assert not _says_it(json.dumps(sessions.get_session(user.scope, session_id).report))


def test_a_memory_said_again_after_its_deletion_is_not_forgotten_again_by_the_next_one(runtime, new_user):
    """A walkthrough (2026-12-07): teal deleted on the Memories page, then said again in the same chat and
    remembered again. The next deletion of anything blanked the new messages about teal, and the end of the
    session deleted their stored turns, while teal was a memory again."""
    user = new_user()
    chat = runtime.open_conversation("forget-said-again", user.user_id)
    chat.ready.result(timeout=60)
    chat.send("my favorite color is teal").result(timeout=60)
    (color,) = memories.list_memories(user.scope)
    memories.delete_memory(user.scope, color.id)
    assert until(lambda: chat.forgotten_messages == 2, timeout=15.0)
    # the database's notice of the deletion checks once more (a check in a turn keeps that turn's message)
    assert until(lambda: not chat.playground_session.forgetting.checking, timeout=15.0)

    chat.send("my favorite color is teal").result(timeout=60)  # a memory again
    assert memories.recall(user.scope, "favorite_color").content == "teal"
    cello = memories.remember(Scope.service(user.user_id), "instrument", "the cello").memory
    memories.delete_memory(user.scope, cello.id)  # anything deleted: the conversation checks again
    assert until(lambda: "the cello" in chat.playground_session.forgetting.texts, timeout=15.0)
    assert [h["text"] for h in chat.history][3:5] == [
        "my favorite color is teal",
        "Got it, I'll remember that your favorite color is teal.",
    ]
    session_id = chat.session_id
    chat.close().result(timeout=60)
    stored = [turn.content for turn in conversations.list_turns(user.scope, session_id)]
    assert "my favorite color is teal" in stored
    written = sessions.get_session(user.scope, session_id).report["playground"]["memories_written"]
    assert [w["content"] for w in written] == ["teal", "teal"]  # a memory now: not blanked by the report either


def test_a_message_blanked_in_the_open_chat_is_deleted_where_it_is_stored_at_once(runtime, new_user):
    """A walkthrough (2026-12-07): after "forget where I live", "do you remember Lisbon?" was blanked in the
    chat at the next deletion, but the Sessions page listed and found it until the session ended."""
    user = new_user()
    chat = runtime.open_conversation("forget-later-mention", user.user_id)
    chat.ready.result(timeout=60)
    chat.send("I live in Lisbon").result(timeout=60)
    chat.send("forget where I live").result(timeout=60)
    chat.send("do you remember Lisbon?").result(timeout=60)
    other = memories.remember(Scope.service(user.user_id), "instrument", "the cello").memory
    memories.delete_memory(user.scope, other.id)
    assert until(lambda: DELETED_TEXT in [h["text"] for h in chat.history][5:6], timeout=15.0)
    said = [turn.content for turn in conversations.list_turns(user.scope, chat.session_id)]
    assert "do you remember Lisbon?" not in said and not any("Lisbon" in text for text in said)
    # the model reads a note in place of each; "so far" quoted it as something the user said
    so_far = chat.send("what did we talk about so far?").result(timeout=60)
    assert so_far.reply == "So far in this conversation you told me: “forget where I live”.", so_far.reply
    chat.close().result(timeout=60)


def test_a_check_in_the_middle_of_a_turn_spares_its_message_and_checks_it_once_the_turn_is_over(
    runtime, new_user, monkeypatch
):
    """Teal deleted, then "my favorite color is teal" said again: a check that ran in the middle of that turn
    (another deletion heard late), before teal was a memory again, blanked the message on the page and deleted
    it where it is stored, though teal was a memory again a moment later. The turn in progress is spared and
    checked once it is over; a mention that is still forgotten then goes as before."""
    user = new_user()
    chat = runtime.open_conversation("forget-mid-turn", user.user_id)
    chat.ready.result(timeout=60)
    chat.send("my favorite color is teal").result(timeout=60)
    chat.send(f"my dog is called {DOG}").result(timeout=60)
    for memory in memories.list_memories(user.scope):
        memories.delete_memory(user.scope, memory.id)
    forgetting = chat.playground_session.forgetting
    assert until(lambda: {"teal", DOG} <= set(forgetting.texts) and not forgetting.checking, timeout=15.0)
    remember, deleted_mid_turn = memories.remember, []

    def a_check_first(scope, memory_type, content, **kwargs):  # the agent's tool, on a worker thread
        if memory_type == "favorite_color" and deleted_mid_turn:
            memories.delete_memory(user.scope, deleted_mid_turn.pop().id)  # heard, and checked on the loop
            assert until(lambda: not forgetting.checking, timeout=15.0)
        return remember(scope, memory_type, content, **kwargs)

    def said_with_a_check_in_the_middle(text: str, other: str) -> None:
        deleted_mid_turn.append(remember(Scope.service(user.user_id), "instrument", other).memory)
        assert until(lambda: not forgetting.checking, timeout=15.0)
        assert chat.send(text).result(timeout=60).error is None
        assert other in forgetting.texts and not deleted_mid_turn  # the check did run in the middle of it
        assert until(lambda: not forgetting.checking, timeout=15.0)  # and once the turn was over

    monkeypatch.setattr(memories, "remember", a_check_first)
    said_with_a_check_in_the_middle("my favorite color is teal", "the cello")
    assert memories.recall(user.scope, "favorite_color").content == "teal" and "teal" not in forgetting.texts
    assert [h["text"] for h in chat.history][-2:] == [
        "my favorite color is teal",
        "Got it, I'll remember that your favorite color is teal.",
    ]
    stored = [turn.content for turn in conversations.list_turns(user.scope, chat.session_id)]
    assert "my favorite color is teal" in stored, stored

    # a message that also says what is still forgotten goes once the turn is over, as it would have before
    said_with_a_check_in_the_middle(f"My favorite color is teal. Is {DOG} a good dog?", "the viola")
    assert until(lambda: [h["text"] for h in chat.history][-2] == DELETED_TEXT, timeout=15.0)
    stored = [turn.content for turn in conversations.list_turns(user.scope, chat.session_id)]
    assert not any(DOG in text for text in stored) and "my favorite color is teal" in stored
    chat.close().result(timeout=60)
