"""A deleted memory's text leaves the session reports: those saved before the deletion (cleaned by it) and
those saved after (a session still running when the memory was deleted), as the user and as the service."""

from __future__ import annotations

import json
import uuid

from core import memories, sessions
from core.sessions import DELETED_TEXT
from tests.support.users import sign_in


def _report(*written) -> dict:
    """A report shaped like agent/reports.py's, saying teal in each place a report can."""
    return {
        "chat_history": {"items": [{"type": "message", "role": "user", "content": ["my favorite color is teal"]}]},
        "playground": {
            "transcript": [
                {"turn": 1, "role": "user", "text": "my favorite color is teal"},
                {"turn": 1, "role": "assistant", "text": "Noted."},
            ],
            "tool_calls": [
                {"name": "remember_detail", "arguments": {"memory_type": "favorite_color", "content": "teal"}}
            ],
            "retrievals": [
                {"query": "what is my favorite color", "hits": [{"slot": "favorite_color", "content": "teal"}]}
            ],
            "memories_written": list(written),
            "turns": 1,
        },
    }


def _says(record, text: str) -> bool:
    return text in json.dumps(record.report)


def _wrote(slot: str, content: str | None, previous: str | None = None, action: str = "remembered") -> dict:
    return {"action": action, "memory_type": slot, "content": content, "previous_content": previous, "turn": 1}


def test_deleting_a_memory_cleans_the_reports_saved_before_as_the_user_and_no_one_elses(database_uri):
    user, other = sign_in(), sign_in()
    mine, theirs = f"forget-{uuid.uuid4().hex[:8]}", f"forget-{uuid.uuid4().hex[:8]}"
    color = memories.remember(user.scope, "favorite_color", "teal", session_id=mine).memory
    memories.remember(other.scope, "favorite_color", "teal")
    sessions.save_report(user.service, mine, _report(_wrote("favorite_color", "teal")))
    sessions.save_report(other.service, theirs, _report(_wrote("favorite_color", "teal")))

    memories.delete_memory(user.scope, color.id)  # the Memories page: as the user, under RLS
    record = sessions.get_session(user.scope, mine)
    assert not _says(record, "teal")
    section = record.report["playground"]
    assert section["memories_written"][0]["content"] == DELETED_TEXT
    assert section["memories_written"][0]["memory_type"] == "favorite_color"  # the slot stays, not the text
    assert section["retrievals"][0]["hits"][0]["content"] == DELETED_TEXT
    assert section["transcript"][0]["text"] == DELETED_TEXT and section["transcript"][1]["text"] == "Noted."
    assert section["retrievals"][0]["query"] == "what is my favorite color" and section["turns"] == 1
    assert _says(sessions.get_session(other.scope, theirs), "teal")  # another user's report is theirs


def test_a_report_saved_after_the_deletion_leaves_the_deleted_memory_out(database_uri):
    """The QA case: remembered in a session, deleted on the Memories page, then the session ends."""
    user = sign_in()
    running = f"forget-{uuid.uuid4().hex[:8]}"
    color = memories.remember(user.service, "favorite_color", "teal", session_id=running).memory
    memories.remember(user.service, "car", "a blue Subaru", session_id=running)
    memories.delete_memory(user.scope, color.id)
    report = _report(_wrote("favorite_color", "teal"), _wrote("car", "a blue Subaru"))
    record = sessions.save_report(user.service, running, report)
    assert not _says(record, "teal") and not _says(sessions.get_session(user.scope, running), "teal")
    assert _says(record, "a blue Subaru")  # a memory still kept stays in the report


def test_the_agents_reply_saying_a_deleted_memory_back_leaves_the_reports_too(database_uri):
    """ "I paid $5 ..." comes back from the agent as "you paid $5 ...": the report's copy of that reply goes
    with the memory, in a report saved before the deletion and in one saved after; a reply that only asks
    about it stays."""
    user = sign_in()
    before, after = f"paid-{uuid.uuid4().hex[:8]}", f"paid-{uuid.uuid4().hex[:8]}"
    paid = "I paid $5 for coffee and $10 for lunch"
    note = memories.remember(user.service, "note_paid_5_coffee", paid, session_id=before).memory
    report = _report(_wrote("note_paid_5_coffee", paid))
    report["playground"]["transcript"] = [
        {"turn": 1, "role": "user", "text": paid},
        {
            "turn": 1,
            "role": "assistant",
            "text": "Got it, I'll remember that you paid $5 for coffee and $10 for lunch.",
        },
        {"turn": 2, "role": "assistant", "text": "What did you pay for lunch?"},
    ]
    sessions.save_report(user.service, before, report)
    memories.remember(user.service, "note_paid_5_coffee", paid, session_id=after)

    memories.delete_memory(user.scope, note.id)  # the Memories page, as the user
    sessions.save_report(user.service, after, report)  # a session still running then ends
    for session_id in (before, after):
        section = sessions.get_session(user.scope, session_id).report["playground"]
        assert [line["text"] for line in section["transcript"]] == [
            DELETED_TEXT,
            DELETED_TEXT,
            "What did you pay for lunch?",
        ]


def test_a_replaced_value_is_not_a_deleted_one_and_the_agents_forget_cleans_too(database_uri):
    user = sign_in()
    first, second = f"forget-{uuid.uuid4().hex[:8]}", f"forget-{uuid.uuid4().hex[:8]}"
    memories.remember(user.service, "favorite_color", "navy", session_id=first)
    written = (_wrote("favorite_color", "teal"), _wrote("favorite_color", "navy", "teal", "updated"))
    assert _says(sessions.save_report(user.service, first, _report(*written)), "teal")  # replaced, kept

    # "forget my favorite color" in a later session: the agent's tool, as the service
    sessions.save_report(user.service, second, _report(_wrote("favorite_color", "navy")))
    memories.forget(user.service, "favorite_color")
    assert not _says(sessions.get_session(user.scope, second), "navy")
    assert not _says(sessions.get_session(user.scope, first), "navy")
    assert _says(sessions.get_session(user.scope, first), "teal")  # not what was deleted


def test_delete_all_cleans_every_report(database_uri):
    user = sign_in()
    session_id = f"forget-{uuid.uuid4().hex[:8]}"
    memories.remember(user.scope, "favorite_color", "teal")
    memories.remember(user.scope, "pet", "a dog named Pixel")
    report = _report(_wrote("favorite_color", "teal"), _wrote("pet", "a dog named Pixel"))
    sessions.save_report(user.service, session_id, report)
    assert memories.delete_all(user.scope).memories == 2
    record = sessions.get_session(user.scope, session_id)
    assert not _says(record, "teal") and not _says(record, "Pixel")


def test_a_deleted_text_of_only_stop_words_leaves_every_report_as_it_was(database_uri):
    """'my favorite color is the' stores "the": deleting it must not blank every report string with "the" in
    it (the rule the turns follow: core.conversations.forgettable)."""
    user = sign_in()
    saved, running = f"stop-{uuid.uuid4().hex[:8]}", f"stop-{uuid.uuid4().hex[:8]}"
    color = memories.remember(user.scope, "favorite_color", "the", session_id=saved).memory
    report = _report(_wrote("favorite_color", "the"))
    report["playground"]["transcript"][1]["text"] = "Noted, the color is the."
    sessions.save_report(user.service, saved, report)
    memories.delete_memory(user.scope, color.id)
    assert sessions.get_session(user.scope, saved).report["playground"] == report["playground"]
    # a session still running when it was deleted: its report keeps its words too
    memories.remember(user.scope, "favorite_color", "the", session_id=running)
    memories.forget(user.service, "favorite_color")
    sessions.save_report(user.service, running, report)
    assert sessions.get_session(user.scope, running).report["playground"] == report["playground"]
    assert not _says(sessions.get_session(user.scope, running), DELETED_TEXT)


def test_the_pattern_functions_are_gone_and_one_rule_cleans_turns_and_reports(database_uri):
    """A visitor could call public.forget_in_session_reports(patterns, words) on their own reports; with
    both cleanings on core.conversations.Mentions (migration 20261128080000) it has no caller and is gone.
    A report saved after the deletion is cleaned by the same rule as the turns: whole words, any case."""
    import psycopg
    import pytest

    from core.db import transaction

    user = sign_in()
    with transaction(user.scope) as cur, pytest.raises(psycopg.errors.UndefinedFunction):
        cur.execute("select public.forget_in_session_reports(%s, %s)", (["."], ["%"]))
    with transaction(user.service) as cur, pytest.raises(psycopg.errors.UndefinedFunction):
        cur.execute("select memory_playground_private.redact_mentions('{}'::jsonb, %s, %s)", (["."], "x"))

    session_id = f"rule-{uuid.uuid4().hex[:8]}"
    memories.remember(user.service, "coffee", "Oat Flat White", session_id=session_id)
    memories.forget(user.scope, "coffee")  # deleted before the session's report is saved
    report = _report(_wrote("coffee", "Oat Flat White"))
    report["playground"]["transcript"] += [
        {"turn": 2, "role": "user", "text": "an OAT   flat white, please"},  # any case, any spaces: said
        {"turn": 2, "role": "assistant", "text": "oat flat whites are popular"},  # not as whole words
    ]
    sessions.save_report(user.service, session_id, report)
    section = sessions.get_session(user.scope, session_id).report["playground"]
    assert [line["text"] for line in section["transcript"]][-2:] == [DELETED_TEXT, "oat flat whites are popular"]
    assert section["memories_written"][0] == {**section["memories_written"][0], "content": DELETED_TEXT}


def test_delete_all_of_many_memories_blanks_exactly_what_they_said(database_uri):
    """More texts than Postgres keeps compiled regular expressions (32): Delete all of a heavy visitor's
    memories used to test every report string against every pattern in SQL and never finished; the strings
    are now found by their words first (core.conversations.Mentions). Whole words, any case, as before."""
    user = sign_in()
    session_id = f"many-{uuid.uuid4().hex[:8]}"
    texts = [f"reminder {i} about lunch at noon" for i in range(60)] + ["Teal", "oat flat white", "C++ (old)"]
    for index, text in enumerate(texts):
        memories.remember(user.service, f"slot_{index}", text)
    report = _report(*(_wrote(f"slot_{i}", text) for i, text in enumerate(texts)))
    said = report["playground"]["transcript"]
    said += [
        {"turn": 2, "role": "user", "text": "I ordered an OAT FLAT WHITE today"},
        {"turn": 2, "role": "assistant", "text": "An oat flat whitener? Teals and reminder 7 about lunch"},
        {"turn": 3, "role": "user", "text": "I still code in C++ (old) style"},
        {"turn": 3, "role": "assistant", "text": "reminder 61 about lunch at noon"},  # not one of the texts
    ]
    sessions.save_report(user.service, session_id, report)

    assert memories.delete_all(user.scope).memories == len(texts)
    section = sessions.get_session(user.scope, session_id).report["playground"]
    assert [entry["content"] for entry in section["memories_written"]] == [DELETED_TEXT] * len(texts)
    assert [entry["text"] for entry in section["transcript"]] == [
        DELETED_TEXT,  # "my favorite color is teal"
        "Noted.",
        DELETED_TEXT,
        "An oat flat whitener? Teals and reminder 7 about lunch",  # no deleted text as whole words
        DELETED_TEXT,
        "reminder 61 about lunch at noon",
    ]
    assert section["memories_written"][3]["memory_type"] == "slot_3"  # the slots stay, not the texts


def test_a_visitor_blanks_only_strings_of_their_own_reports_and_only_into_the_marker(database_uri):
    """The function the Memories page blanks report strings through (users may not update reports)."""
    import psycopg
    import pytest

    from core.db import transaction

    user, other = sign_in(), sign_in()
    mine, theirs = f"blank-{uuid.uuid4().hex[:8]}", f"blank-{uuid.uuid4().hex[:8]}"
    sessions.save_report(user.service, mine, _report())
    sessions.save_report(other.service, theirs, _report())
    with transaction(user.scope) as cur:
        cur.execute("select public.blank_strings_in_session_reports(%s, %s) as n", ([mine, theirs], ["Noted.", "teal"]))
        assert cur.fetchone()["n"] == 1  # their one report; the other user's session id is not theirs to touch
    section = sessions.get_session(user.scope, mine).report["playground"]
    assert section["transcript"][1]["text"] == DELETED_TEXT
    assert section["transcript"][0]["text"] == "my favorite color is teal"  # exact strings only, not words
    assert sessions.get_session(other.scope, theirs).report["playground"]["transcript"][1]["text"] == "Noted."
    with transaction(user.scope) as cur, pytest.raises(psycopg.errors.InsufficientPrivilege):
        cur.execute("select memory_playground_private.blank_strings('{}'::jsonb, '{}'::jsonb)")


def test_a_text_is_tried_only_on_strings_holding_all_its_words(database_uri, monkeypatch):
    """Memories share words ("coffee"): keyed by its longest word alone, every text sharing it was tried on
    every report string saying it, and a heavy visitor's Delete all (1,500 texts, 150 reports of 1 MB) took
    100 s in core. A text's pattern now runs only on strings holding all of its words; what is blanked is the
    same."""
    import re
    import types

    from core import conversations

    tried: list[str] = []

    class Counted:
        def __init__(self, pattern):
            self._pattern = pattern

        def search(self, text):
            tried.append(text)
            return self._pattern.search(text)

    counting_re = types.SimpleNamespace(**{name: getattr(re, name) for name in dir(re) if not name.startswith("__")})
    counting_re.compile = lambda pattern, *flags: Counted(re.compile(pattern, *flags))
    monkeypatch.setattr(conversations, "re", counting_re)
    user = sign_in()
    session_id = f"shared-{uuid.uuid4().hex[:8]}"
    texts = [f"coffee beans batch {i}" for i in range(200)]
    for index, text in enumerate(texts):
        memories.remember(user.service, f"slot_{index}", text)
    report = _report()
    report["playground"]["transcript"] += [
        {"turn": 2, "role": "user", "text": f"my coffee order number {i} was cold"} for i in range(50)
    ] + [{"turn": 3, "role": "user", "text": "COFFEE  beans batch 7, please"}]
    sessions.save_report(user.service, session_id, report)

    assert memories.delete_all(user.scope).memories == len(texts)
    said = [entry["text"] for entry in sessions.get_session(user.scope, session_id).report["playground"]["transcript"]]
    assert said[-1] == DELETED_TEXT and said[2] == "my coffee order number 0 was cold"
    # the turns' and the reports' searches each try the one string holding every word of "coffee beans batch 7"
    assert 1 <= len(tried) <= 4, f"{len(tried)} patterns tried: {tried[:5]}"
