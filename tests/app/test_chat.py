"""The chat page with the in-process agent (offline brain, real database), its
retrieval panel and RRF sliders, ending a session, and the Sessions page."""

from __future__ import annotations

import json
import re
import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from agent import MAX_MESSAGE_LENGTH, SESSION_DELETED, get_runtime
from core import conversations, db, memories, memory_changes, sessions, turn_indexer
from core.erasure import delete_everything
from core.errors import NotFound
from core.retrieval import RrfParams
from tests.app.conftest import settle
from tests.support.long_messages import LONG_MESSAGES, remember_what_they_ask_about
from tests.support.panels import expand
from tests.support.waiting import until
from ui import chat_state, resend
from ui.format import session_ref
from ui.turns import FORGOTTEN_MESSAGE


def _say(at, text):
    at.chat_input(key="u_chat_input").set_value(text)
    at.run()
    settle(at)
    assert not at.exception, at.exception


def _assistant_texts(at):
    return [m.value for message in at.chat_message if message.name == "assistant" for m in message.markdown]


def _memory_panels(at):
    """The side panel's compact retrieval tables of slot memories, read back into the full table's columns."""
    return [expand(t.value) for t in at.table if {"Memory", "Vector", "Text", "Fused score"} <= set(t.value.columns)]


def test_a_chat_turn_shows_the_retrieval_panel_with_scores(app):
    at = app()
    visitor = at.session_state["mp_visitor"]
    assert any("offline demo brain" in text for text in _assistant_texts(at))  # the greeting says what it is

    _say(at, "my favorite color is teal")
    assert any("teal" in text for text in _assistant_texts(at)[1:])
    stored = memories.recall(visitor.scope, "favorite_color")  # the real tool wrote the row, as this user
    assert stored.content == "teal"
    assert any("remember_detail" in m.value for m in at.markdown)  # the tool call is shown beside the turn

    _say(at, "what is my favorite color?")
    assert "teal" in _assistant_texts(at)[-1].lower() or any("teal" in t for t in _assistant_texts(at)[-2:])
    panels = _memory_panels(at)
    assert panels, "no retrieval panel with scores"
    table = panels[0]
    assert any("favorite_color: teal" in memory for memory in table["Memory"])  # the remembered text is shown
    row = table[table["Slot"].str.contains("favorite_color")].iloc[0]
    # the numbers are the RRF formula's, with the default weights 0.5 / 0.5 and k (shown to 5 decimals)
    k = RrfParams().k
    assert row["Vector RRF"] == pytest.approx(0.5 / (k + int(row["Vector rank"])), rel=1e-3)
    if row["Text rank"] == "—":  # not a keyword match: the text branch adds nothing
        assert row["Text RRF"] == 0
    else:
        assert row["Text RRF"] == pytest.approx(0.5 / (k + int(row["Text rank"])), rel=1e-3)
    assert row["Fused score"] == pytest.approx(row["Vector RRF"] + row["Text RRF"], abs=2e-5)
    assert at.get("arrow_vega_lite_chart") or at.get("vega_lite_chart")  # the stacked bar chart


def test_the_sliders_change_the_agents_searches_live(app):
    at = app()
    _say(at, "my favorite color is teal")
    at.slider(key="rrf_vector_weight").set_value(1.5)
    at.slider(key="rrf_k").set_value(10)
    at.run()
    chat = at.session_state["u_chat_session"]
    assert (chat.rrf.vector_weight, chat.rrf.text_weight, chat.rrf.k) == (1.5, 0.5, 10)
    _say(at, "what is my favorite color?")
    events, _ = chat.events_since(0)
    last_search = [e for e in events if e["type"] == "retrieval" and e["source"] == "memories"][-1]
    assert last_search["params"] == {"vector_weight": 1.5, "text_weight": 0.5, "k": 10}
    row = _memory_panels(at)[0].iloc[0]
    assert row["Vector RRF"] == pytest.approx(1.5 / (10 + int(row["Vector rank"])), rel=1e-3)
    # both weights at zero is refused with a message; the previous weights stay in force
    at.slider(key="rrf_vector_weight").set_value(0.0)
    at.slider(key="rrf_text_weight").set_value(0.0)
    at.run()
    assert any("At least one weight" in w.value for w in at.warning)
    assert chat.rrf.vector_weight == 1.5 or chat.rrf.text_weight == 0.5


def test_what_the_end_of_a_session_remembered_is_said_where_it_ended(app):
    """The fact extraction runs once the session ends and may remember what no turn did ("By the way I live in
    Denver", said with an order question): the page that ended it says so, with the way to Memories. A voice
    call whose every answer failed saved "favorite_color: teal" that way, and nothing said it."""
    at = app()
    visitor = at.session_state["mp_visitor"]
    _say(at, "I live in Boston.")  # the tool writes it
    _say(at, "Where is order 1001? By the way I live in Denver.")
    assert memories.recall(visitor.scope, "home_city").content == "Boston"  # the turn looked the order up
    at.button(key="u_chat_end").click()
    at.run()
    # said after the tool wrote Boston: the user's latest word (it was dropped as the tools' slot)
    assert memories.recall(visitor.scope, "home_city").content == "Denver"
    said = [m.value for m in at.markdown if "Remembered when it ended" in m.value]
    assert len(said) == 1 and "`home_city` Denver (was Boston)" in said[0], [m.value for m in at.markdown]
    assert any("Memories" in str(link.proto.label) for link in at.get("page_link"))
    next(b for b in at.button if b.label == "Start a new conversation").click()  # the notice goes with it
    at.run()
    assert not [m.value for m in at.markdown if "Remembered when it ended" in m.value]


def test_end_session_saves_the_report_and_the_sessions_page_shows_it(app):
    at = app()
    visitor = at.session_state["mp_visitor"]
    _say(at, "my favorite color is teal")
    _say(at, "where is order 1001?")
    session_id = at.session_state["u_chat_session"].session_id
    at.button(key="u_chat_end").click()
    at.run()
    # the id as the Sessions page shows it (it was shown as `texta50283de052c`, hyphen and end cut off)
    assert any(s.value.startswith(f"Session `{session_id}` ended and its report was saved") for s in at.success)
    record = sessions.get_session(visitor.scope, session_id)  # stored, readable by this user (RLS)
    assert record.report["playground"]["user_id"] == str(visitor.user_id)

    at.switch_page("pages/sessions.py")
    at.run()
    assert not at.exception
    overview = at.dataframe[0].value
    listed = overview[overview["Session"] == session_id].iloc[0]
    assert listed["Turns"] == 2
    assert "remember_detail" in listed["Tools used"] and "lookup_order" in listed["Tools used"]
    # detail: transcript, tool calls, retrieval events with scores, memories written
    transcript = [m.value for message in at.chat_message for m in message.markdown]
    assert "my favorite color is teal" in transcript and "where is order 1001?" in transcript
    tools = next(df.value for df in at.dataframe if "Tool" in df.value.columns)
    assert set(tools["Tool"]) >= {"remember_detail", "lookup_order"}
    assert any("1001" in str(result) for result in tools["Result"])
    # the arguments as the chat panel writes them, not JSON (its braces and quoted keys cut the column)
    assert 'order_id="1001"' in set(tools[tools["Tool"] == "lookup_order"]["Arguments"])
    written = next(df.value for df in at.dataframe if "Slot" in df.value.columns and "Action" in df.value.columns)
    assert "favorite_color" in set(written["Slot"])
    assert any(e.label.startswith("Turn") for e in at.expander)  # retrieval events, each with its scores

    # a memory links to the session that wrote it
    at.switch_page("pages/memories.py")
    at.run()
    color = memories.recall(visitor.scope, "favorite_color")
    assert color.session_id == session_id
    at.button(key=f"u_mem_open_{color.id}").click()
    at.run()
    assert at.selectbox(key="u_sessions_pick").value == session_id

    # the conversation is over: the next message starts a new one
    at.switch_page("pages/chat.py")
    at.run()
    _say(at, "what is my favorite color?")
    assert at.session_state["u_chat_session"].session_id != session_id


def test_open_it_on_the_sessions_page_opens_the_session_just_ended_not_the_newest(app, new_user):
    """Found in a fresh-clone walkthrough on 2026-12-07: another tab's conversation, started later, was the
    newest session, and the link after End session opened that one."""
    at = app()
    visitor = at.session_state["mp_visitor"]
    _say(at, "my favorite color is teal")
    ended = at.session_state["u_chat_session"].session_id
    at.button(key="u_chat_end").click()
    at.run()
    later = f"text-{uuid.uuid4().hex[:16]}"  # another tab's conversation, newer than the one just ended
    sessions.save_report(db.Scope.service(visitor.user_id), later, {"playground": {"turns": 0}})
    assert sessions.list_sessions(visitor.scope)[0].session_id == later  # the newest: what a plain link showed
    at.button(key="u_chat_open_ended").click()
    at.run()
    assert not at.exception, at.exception
    assert at.selectbox(key="u_sessions_pick").value == ended


def test_a_conversation_the_visitor_said_nothing_in_is_no_session(app):
    """Found in a fresh-clone walkthrough (2026-12-07): opening Chat (the greeting only) added a session to the
    Sessions page ("in progress · 0 turns", later "3 min 01 s · 0 turns"), one visit to Chat after Delete
    everything brought one back, and after a deletion the page chose one of them. A conversation is a session
    from the visitor's first message on: before it, nothing of it is stored or listed, and ending it keeps
    nothing (no report, no turn)."""
    at = app()
    visitor = at.session_state["mp_visitor"]
    greeted = at.session_state["u_chat_session"].session_id
    assert _assistant_texts(at)  # the agent's greeting
    assert turn_indexer.flush_queued()
    at.query_params["session"] = greeted  # its link, too
    at.switch_page("pages/sessions.py")
    at.run()
    assert not at.exception, at.exception
    assert any("No sessions yet" in m.value for m in at.markdown)
    assert any(w.value.startswith(f"Session `{greeted}` is not among your sessions") for w in at.warning)
    assert sessions.count_sessions(visitor.scope) == 0 and conversations.list_turns(visitor.scope, greeted) == []

    at.switch_page("pages/chat.py")
    at.run()
    settle(at)
    at.button(key="u_chat_end").click()
    at.run()
    assert not at.exception, at.exception
    assert any(i.value.startswith(f"Session `{greeted}` ended before you said anything") for i in at.info)
    assert not any("report was saved" in s.value for s in at.success)
    assert "u_chat_open_ended" not in {b.key for b in at.button}  # there is nothing to open on the Sessions page
    with pytest.raises(NotFound):  # no report row left behind...
        sessions.get_session(visitor.scope, greeted)
    assert conversations.list_turns(visitor.scope, greeted) == []  # ...nor its greeting

    # the next conversation is a session from the visitor's first message on, its greeting included
    next(b for b in at.button if b.label == "Start a new conversation").click()
    at.run()
    settle(at)
    chat = at.session_state["u_chat_session"]
    assert turn_indexer.flush_queued() and sessions.count_sessions(visitor.scope) == 0
    _say(at, "my favorite color is teal")
    assert turn_indexer.flush_queued()
    stored = conversations.list_turns(visitor.scope, chat.session_id)
    assert [(t.turn_index, t.speaker, t.opening) for t in stored] == [
        (0, "assistant", True),
        (1, "user", False),
        (2, "assistant", False),
    ]
    at.switch_page("pages/sessions.py")
    at.run()
    assert not at.exception, at.exception
    assert list(at.dataframe[0].value["Session"]) == [chat.session_id]  # in progress, with its greeting
    assert at.selectbox(key="u_sessions_pick").options == [
        at.selectbox(key="u_sessions_pick").format_func(chat.session_id)
    ]
    assert "1 session with their transcripts, and everything else." in [c.value for c in at.caption]
    delete_everything(visitor.scope)


def test_a_memory_deleted_before_the_session_ends_is_not_in_its_report(app):
    """Remembered in a chat, deleted on the Memories page ("The agent will no longer know this"), then End
    session: the saved report said it under Memories written, in the retrieval events and the tool calls."""
    at = app()
    visitor = at.session_state["mp_visitor"]
    _say(at, "my favorite color is teal")
    _say(at, "what is my favorite color?")
    session_id = at.session_state["u_chat_session"].session_id
    color = memories.recall(visitor.scope, "favorite_color")
    memories.delete_memory(visitor.scope, color.id)  # what the Memories page's "Yes, delete" calls
    at.button(key="u_chat_end").click()
    at.run()
    report = sessions.get_session(visitor.scope, session_id).report
    assert "teal" not in json.dumps(report).casefold()
    assert report["playground"]["memories_written"][0]["content"] == sessions.DELETED_TEXT

    at.switch_page("pages/sessions.py")
    at.run()
    at.selectbox(key="u_sessions_pick").set_value(session_id)
    at.run()
    assert not at.exception, at.exception
    written = next(df.value for df in at.dataframe if "Slot" in df.value.columns and "Action" in df.value.columns)
    assert list(written["Content"]) == [sessions.DELETED_TEXT] and list(written["Slot"]) == ["favorite_color"]
    shown = (
        [df.value.to_json() for df in at.dataframe] + [e.label for e in at.expander] + [m.value for m in at.markdown]
    )
    assert not [text for text in shown if "teal" in text.casefold()]


def test_a_memory_deleted_while_the_chat_is_open_leaves_the_chat_on_screen(app):
    """Deleted on the Memories page while the chat goes on: the messages and panel rows that said it are
    blanked in the open chat (agent/forgetting.py), as the deletion did in the stored conversations."""
    at = app()
    visitor = at.session_state["mp_visitor"]
    _say(at, "my favorite color is teal")
    _say(at, "what is my favorite color?")
    chat = at.session_state["u_chat_session"]
    memories.delete_memory(visitor.scope, memories.recall(visitor.scope, "favorite_color").id)

    assert until(lambda: chat.forgotten_messages >= 3, timeout=15)
    at.run()
    settle(at)
    assert not at.exception, at.exception
    said = [m.value for message in at.chat_message for m in message.markdown]
    assert "what is my favorite color?" in said  # says nothing of the color: kept
    # what the visitor said, the agent's "Got it" and its answer
    assert [c.value for c in at.caption].count(f":material/delete: {FORGOTTEN_MESSAGE}") == 3
    shown = said + [t.value.to_json() for t in at.table] + [df.value.to_json() for df in at.dataframe]
    assert not [text for text in shown if "teal" in text.casefold()]


def test_a_new_visitor_has_no_sessions_and_sees_none_of_anothers(app):
    first = app()
    _say(first, "my favorite color is teal")
    first.button(key="u_chat_end").click()
    first.run()
    second = app("pages/sessions.py")
    assert any("No sessions yet" in m.value for m in second.markdown)
    second.switch_page("pages/memories.py")
    second.run()
    assert any("Nothing remembered yet" in m.value for m in second.markdown)
    assert not any(m.value == "teal" for m in second.markdown)  # no memory card of the first visitor's


def test_a_conversation_whose_browser_session_went_away_is_closed_and_reported(new_user):
    user = new_user()
    key = f"text:gone-browser-session:{user.user_id}"
    chat = get_runtime().open_conversation(key, user.user_id)
    chat.ready.result(timeout=120)
    chat.send("my favorite color is teal").result(timeout=120)
    chat_state._track(key, "gone-browser-session")

    # still connected: nothing happens; gone but within the grace period (a reload): nothing happens
    def gone(sid):  # only this browser session is gone; other tests' sessions stay connected
        return sid != "gone-browser-session"

    assert chat_state.close_gone_sessions(lambda sid: True, now=1000.0) == []
    assert chat_state.close_gone_sessions(gone, now=1000.0, grace=120) == []
    assert chat_state.close_gone_sessions(gone, now=1060.0, grace=120) == []
    assert not chat.closed
    # gone for longer than the grace period: closed, and its report saved
    assert chat_state.close_gone_sessions(gone, now=1121.0, grace=120) == [key]
    chat.close().result(timeout=60)
    record = sessions.get_session(user.scope, chat.session_id)
    assert record.report["playground"]["turns"] == 1


def test_a_message_of_only_spaces_is_not_sent_and_the_page_says_why(app):
    """The box clears itself on Enter: a message of only spaces went nowhere without a word."""
    at = app()
    _say(at, "   ")
    assert any("only spaces" in info.value for info in at.info), [i.value for i in at.info]
    assert not [m for m in at.chat_message if m.name == "user"]
    _say(at, "Where is order 1001?")  # said once: the next message clears it
    assert "1001" in _assistant_texts(at)[-1]
    assert not any("only spaces" in info.value for info in at.info)


def test_a_suggested_first_message_is_sent_with_one_click(app):
    at = app()
    at.pills(key="u_chat_suggestion").set_value("Where is order 1001?")
    at.run()
    assert not at.exception
    assert "1001" in _assistant_texts(at)[-1]
    assert not at.pills  # the suggestions are for an empty conversation only


def test_the_sliders_rerank_the_turn_on_screen_and_a_score_of_0_is_never_starred(app):
    at = app()
    visitor = at.session_state["mp_visitor"]
    memories.remember(visitor.scope, "favorite_color", "teal")
    memories.remember(visitor.scope, "home_city", "Lisbon")
    _say(at, "what is my favorite color?")
    shown = _memory_panels(at)
    assert len(shown) == 1  # the turn's per-turn recall only
    # the sliders move: the same turn is re-ranked at once, with no new message
    at.slider(key="rrf_vector_weight").set_value(0.0)
    at.slider(key="rrf_text_weight").set_value(1.0)
    at.run()
    assert any("What if" in m.value for m in at.markdown)
    what_if = _memory_panels(at)[1]
    assert (what_if["Vector RRF"] == 0).all()
    color = what_if[what_if["Slot"] == "favorite_color"].iloc[0]
    assert color["Text RRF"] == pytest.approx(1.0 / (RrfParams().k + int(color["Text rank"])), rel=1e-3)
    # a turn searched with those weights: a memory found only by the vector branch scores 0, never starred
    _say(at, "what is my favorite color?")
    recall = _memory_panels(at)[0]
    assert (recall["Fused score"] == 0).any()
    assert not recall[recall["Memory"].str.startswith("★")]["Fused score"].eq(0).any()
    assert recall[recall["Memory"].str.startswith("★")]["Slot"].tolist() == ["favorite_color"]


def _too_long_warnings(at):
    return [w.value for w in at.warning if "too long" in w.value or "can be up to" in w.value]


def test_a_message_as_long_as_the_box_allows_is_answered_and_its_turn_reranked(app):
    """A 2,000-character message (a search query may be 1,000) gets a real answer, and its per-turn recall
    is re-ranked with the sliders with the same part of the message the recall searched with."""
    at = app()
    remember_what_they_ask_about(at.session_state["mp_visitor"])
    message, _tool, answer = LONG_MESSAGES["memories"]
    _say(at, message)
    assert any(answer in text for text in _assistant_texts(at)[1:])
    assert not at.error and _too_long_warnings(at) == []
    at.slider(key="rrf_vector_weight").set_value(0.0)
    at.slider(key="rrf_text_weight").set_value(1.0)
    at.run()
    assert not at.exception and not at.error and _too_long_warnings(at) == []
    assert sum("What if" in m.value for m in at.markdown) == 2  # the recall's and the search tool's
    assert any("favorite_drink: oat flat white" in memory for memory in _memory_panels(at)[1]["Memory"])


def test_a_long_paste_sent_in_parts_offers_its_last_part_to_send(app):
    """A 5,000-character paste goes to the draft; "Send the first 2,000 characters" twice leaves a part within
    the limit, which is offered to send as it is (never called too long), and every part gets a real answer."""
    at = app()
    paste = ("I keep notes about coffee. " * 200)[:5000]
    _say(at, paste)
    assert any("5,000 characters long; messages can be up to 2,000" in w for w in _too_long_warnings(at))
    assert at.button(key="u_chat_draft_send").disabled
    for _part in range(2):
        at.button(key="u_chat_draft_part").click()
        at.run()
        settle(at)
    rest = at.session_state["u_chat_draft"]
    assert 0 < len(rest) <= MAX_MESSAGE_LENGTH and paste.endswith(rest)
    assert _too_long_warnings(at) == []  # a part within the limit is not "too long"
    assert any(f"{len(rest):,} characters" in i.value for i in at.info)
    assert not at.button(key="u_chat_draft_send").disabled
    assert "u_chat_draft_part" not in [b.key for b in at.button]  # nothing more to cut
    at.button(key="u_chat_draft_send").click()
    at.run()
    settle(at)
    assert "u_chat_draft" not in at.session_state
    history = at.session_state["u_chat_session"].history
    assert [h["text"] for h in history if h["role"] == "user"] == _user_texts(at)
    assert "".join(_user_texts(at)).replace(" ", "") == paste.replace(" ", "")  # all of it, in three parts
    answers = [h["text"] for h in history if h["role"] == "assistant"][1:]  # after the greeting
    assert len(answers) == 3 and not any("didn't work" in answer for answer in answers), answers
    # a message that fits once its outer spaces are left out (as the agent leaves them out) is sent at once
    _say(at, "x" * MAX_MESSAGE_LENGTH + "\n")
    assert "u_chat_draft" not in at.session_state and len(_user_texts(at)) == 4


def _user_texts(at):
    return [m.value for message in at.chat_message if message.name == "user" for m in message.markdown]


def test_a_message_the_browser_sends_again_is_kept_once_and_without_its_mark(app):
    """ui/resend.py: the browser sends a message again, marked with how many it had seen acknowledged,
    when the acknowledgement is late. One that had arrived is dropped; one that had not is kept."""
    at = app()
    _say(at, "my favorite color is sepia")
    _say(at, resend.mark("my favorite color is sepia", 0))  # arrived after the browser's count of 0
    assert _user_texts(at).count("my favorite color is sepia") == 1
    _say(at, resend.mark("where is order 1001?", 1))  # lost: nothing arrived since the count of 1
    assert _user_texts(at)[-1] == "where is order 1001?"  # kept, without the invisible mark
    assert "1001" in _assistant_texts(at)[-1]
    _say(at, "my favorite color is sepia")  # the visitor says it again: that is never dropped
    assert _user_texts(at).count("my favorite color is sepia") == 2


@pytest.mark.parametrize("seen", [0, 1, 2, 7, 1000])
def test_the_resend_mark_is_read_back_exactly(seen):
    text = "it costs 12\u200b€ (sic)"
    assert resend.unmark(resend.mark(text, seen)) == (text, seen)
    assert resend.unmark(text) == (text, None)
    assert resend.unmark("\u2063\u200b\u2063 in front is not a mark") == (
        "\u2063\u200b\u2063 in front is not a mark",
        None,
    )
    assert resend.already_received("a", 1, ["a", "b"]) is False
    assert resend.already_received("b", 1, ["a", "b"]) is True


def test_one_submission_handed_over_twice_or_its_late_original_is_kept_once():
    """A cold start once stored the first message twice, both copies plain (tests/app/test_first_visit.py):
    the same submission handed to the callback twice, or the original arriving after the page's resend of it.
    Both are dropped; the visitor repeating a message once the first was sent never is."""
    received, arrivals = [], []
    sepia = "my favorite color is sepia"
    assert resend.take(sepia, received, arrivals, now=100.0) == sepia
    # handed over again while the first copy still waits for the agent (a cold start): one submission
    assert resend.take(sepia, received, arrivals, still_waiting=[sepia], now=100.4) is None
    # the first was sent already: the visitor said it again, however soon
    assert resend.take(sepia, received, arrivals, now=100.8) == sepia
    assert resend.take("yes", received, arrivals, still_waiting=["yes"], now=103.0) == "yes"
    assert resend.take("yes", received, arrivals, still_waiting=["yes"], now=106.0) == "yes"  # 3 s later: kept
    # the original held up on its way: the page's resend of it is kept first, then the original arrives
    order = "where is order 1001?"
    assert resend.take(resend.mark(order, len(received)), received, arrivals, now=110.0) == order
    assert resend.take(order, received, arrivals, now=115.0) is None
    assert resend.take(order, received, arrivals, now=150.0) == order  # half a minute later: said again
    assert received == [sepia, sepia, "yes", "yes", order, order]
    assert [resent for _, resent in arrivals] == [False, False, False, False, True, False]


def test_deleting_the_session_still_open_in_the_chat_ends_it_and_nothing_of_it_comes_back(app):
    # it used to stay open: the next turns and the report saved at its end brought the deleted
    # session back, with the deleted turns in its report
    at = app()
    visitor = at.session_state["mp_visitor"]
    _say(at, "my favorite color is teal")
    _say(at, "I went hiking on the Cedar Ridge trail with Nora")
    deleted = at.session_state["u_chat_session"].session_id
    assert turn_indexer.flush_queued()  # the turns are stored off the turn's path; the page lists them once stored

    at.switch_page("pages/sessions.py")
    at.run()
    assert at.selectbox(key="u_sessions_pick").value == deleted
    assert any("still open, so it is ended first" in m.value for m in at.markdown)
    at.button(key="u_session_delete").click()
    at.run()
    assert not at.exception, at.exception
    assert any(f"Deleted session {deleted}" in s.value for s in at.success)
    assert chat_state.current_chat_session() is None or at.session_state["u_chat_session"].closed

    at.switch_page("pages/chat.py")
    at.run()
    _say(at, "what is my favorite color?")
    kept = at.session_state["u_chat_session"].session_id
    assert kept != deleted
    at.button(key="u_chat_end").click()
    at.run()
    assert any("ended and its report was saved" in s.value for s in at.success)

    assert [record.session_id for record in sessions.list_sessions(visitor.scope)] == [kept]
    report = sessions.get_session(visitor.scope, kept).report
    assert report["playground"]["turns"] == 1  # the deleted turns are not carried into the next session
    said = [turn.content for turn in conversations.list_turns(visitor.scope, kept)]
    assert said and not any("Cedar Ridge" in text for text in said)
    assert conversations.list_turns(visitor.scope, deleted) == []


def test_a_long_conversation_picks_the_turn_to_inspect_from_a_drop_down(app):
    # more than MAX_TURN_BUTTONS turn buttons filled the panel's height before its contents began
    from pages.chat import MAX_TURN_BUTTONS

    at = app()
    asked = ["what is my favorite color?", "where is order 1001?", "how long is the warranty?"]
    for number in range(1, MAX_TURN_BUTTONS + 1):
        _say(at, asked[number % len(asked)])
    assert not [box for box in at.selectbox if box.key == "u_chat_inspect_turn"]  # still buttons

    _say(at, "my favorite color is teal")
    picker = at.selectbox(key="u_chat_inspect_turn")
    assert picker.value == MAX_TURN_BUTTONS + 1  # the newest turn, as with the buttons
    assert len(picker.options) == MAX_TURN_BUTTONS + 1
    assert picker.options[-1] == f"Turn {MAX_TURN_BUTTONS + 1} · “my favorite color is teal”"
    picker.set_value(2)
    at.run()
    assert at.selectbox(key="u_chat_inspect_turn").value == 2
    assert any("1 tool call (search_knowledge)" in caption.value for caption in at.caption)  # turn 2's


def _turn_shown(at):
    """The turn the panel beside the conversation shows: its picker's value and the line that quotes it."""
    quoted = next(c.value for c in at.caption if c.value.startswith("“"))
    return at.segmented_control(key="u_chat_inspect_turn").value, quoted


def _visit_knowledge_and_come_back(at):
    at.switch_page("pages/knowledge.py")
    at.run()
    at.switch_page("pages/chat.py")
    at.run()
    assert not at.exception, at.exception


def test_back_from_another_page_the_panel_shows_the_newest_turn_or_the_one_picked(app):
    # it showed turn 1: the picker's key had held 1 as plain session state while one turn needed no
    # picker, and that value came back when Streamlit dropped the picker's state on the page change
    at = app()
    for text in ["My favorite color is magenta", "Where is order 1001?", "What is my favorite color?"]:
        _say(at, text)
    assert _turn_shown(at)[0] == 3

    _visit_knowledge_and_come_back(at)
    number, quoted = _turn_shown(at)
    assert number == 3 and quoted.startswith("“What is my favorite color?”")

    at.segmented_control(key="u_chat_inspect_turn").set_value(2)
    at.run()
    _visit_knowledge_and_come_back(at)
    number, quoted = _turn_shown(at)
    assert number == 2 and quoted.startswith("“Where is order 1001?”")  # the turn the visitor was reading

    _say(at, "How long does shipping take?")  # a new answer: the panel follows it again
    assert _turn_shown(at)[0] == 4
    _visit_knowledge_and_come_back(at)
    assert _turn_shown(at)[0] == 4


def test_a_reloaded_page_takes_over_its_conversation_and_only_its_own_users(new_user):
    """A reload makes a new Streamlit session; it takes over the visitor's conversation whose browser session
    left, so the conversation goes on. A tab still open keeps its own; another user's is never taken."""
    user, other = new_user(), new_user()
    key = f"text:left-tab:{user.user_id}"
    chat = get_runtime().open_conversation(key, user.user_id)
    chat.ready.result(timeout=120)
    chat_state._track(key, "left-tab")

    def connected(sid):
        return sid != "left-tab"

    # still open in its tab: a second tab starts its own
    assert chat_state.take_over_left_conversation(user.user_id, "second-tab", lambda sid: True) is None
    # another user never gets it, left or not
    assert chat_state.take_over_left_conversation(other.user_id, "other-tab", connected) is None
    # the tab reloaded: the new session takes it over, and is now the one watched
    assert chat_state.take_over_left_conversation(user.user_id, "reloaded-tab", connected) is chat
    assert chat_state._tracked[key] == "reloaded-tab"
    # once taken, it is the reloaded tab's (connected): nobody else takes it
    assert chat_state.take_over_left_conversation(user.user_id, "third-tab", connected) is None
    # an ended conversation is never taken over
    chat_state._track(key, "left-tab")
    chat.close().result(timeout=60)
    assert chat_state.take_over_left_conversation(user.user_id, "fourth-tab", connected) is None
    chat_state._tracked.pop(key, None)


def test_a_tab_whose_conversation_another_tab_took_over_starts_a_new_one(app):
    """A tab that loses its connection for a while, as another tab of the visitor opens: the new tab takes the
    conversation over (it looked left). When the first tab is back, the conversation goes on in one tab only:
    the first says where it went and starts a new one, instead of both tabs showing and sending into it."""
    at = app()
    _say(at, "my favorite color is teal")
    chat = at.session_state[chat_state.CHAT_KEY]
    assert chat_state.owned_by(chat.key, "another-tab") is False  # this tab's
    with chat_state._watch_lock:
        chat_state._tracked[chat.key] = "another-tab"  # what take_over_left_conversation does for the new tab
    try:
        at.run()
        settle(at)
        assert not at.exception, at.exception
        here = at.session_state[chat_state.CHAT_KEY]
        assert here is not chat and here.session_id != chat.session_id
        assert not chat.closed  # it goes on in the other tab
        notices = [i.value for i in at.info if "went on in another tab" in i.value]
        assert notices and session_ref(chat.session_id) in notices[0]
        assert not any("teal" in text for text in _assistant_texts(at))  # this tab shows its new conversation
        _say(at, "what is my favorite color?")  # memories are the visitor's: the new conversation knows them
        assert any("teal" in text.lower() for text in _assistant_texts(at))
        assert not [i for i in at.info if "went on in another tab" in i.value]  # said until the new one starts
        assert at.session_state[chat_state.CHAT_KEY] is here
    finally:
        chat.close().result(timeout=60)
        with chat_state._watch_lock:
            chat_state._tracked.pop(chat.key, None)


def test_a_tab_left_open_says_its_conversation_was_deleted_when_its_next_message_is_answered(app):
    """Found in a fresh-clone walkthrough: a Chat tab left open while another deleted everything learnt of it
    only when a message was sent there, and that message's answer took the notice away before it was drawn:
    the old conversation vanished without a word."""
    at = app()
    _say(at, "my favorite city is Lisbon")
    chat = at.session_state[chat_state.CHAT_KEY]
    assert turn_indexer.flush_queued()
    memory_changes.follow_database(db.service_url())
    with db.admin_connection() as conn:
        conn.execute("delete from public.sessions where session_id = %s", (chat.session_id,))
    deadline = time.monotonic() + 10
    while not chat.closed and time.monotonic() < deadline:
        time.sleep(0.05)
    assert chat.closed and chat.close_reason == SESSION_DELETED

    _say(at, "what is my favorite city?")  # no run of this tab in between: the message is what finds out
    assert not at.exception, at.exception
    notices = [i.value for i in at.info if "was deleted in another tab or window" in i.value]
    assert notices and session_ref(chat.session_id) in notices[0]
    assert any("lisbon" in text.lower() for text in _assistant_texts(at))  # answered, in the new conversation
    _say(at, "thanks")
    assert not [i for i in at.info if "was deleted in another tab or window" in i.value]  # until the next answer
    assert turn_indexer.flush_queued()


def test_a_tab_whose_session_was_deleted_elsewhere_says_so_and_goes_on_in_a_new_one(app):
    """Deleted in another app process (or another tab): the database announces it, the conversation ends,
    and the tab says why on its next run instead of silently showing an empty new conversation."""
    at = app()
    _say(at, "my favorite color is teal")
    chat = at.session_state[chat_state.CHAT_KEY]
    assert turn_indexer.flush_queued()
    memory_changes.follow_database(db.service_url())
    with db.admin_connection() as conn:  # what another app process's Sessions page does, as far as this one sees
        conn.execute("delete from public.sessions where session_id = %s", (chat.session_id,))
    deadline = time.monotonic() + 10
    while not chat.closed and time.monotonic() < deadline:
        time.sleep(0.05)
    assert chat.closed and chat.close_reason == SESSION_DELETED

    at.run()
    settle(at)
    assert not at.exception, at.exception
    notices = [i.value for i in at.info if "was deleted in another tab or window" in i.value]
    assert notices and session_ref(chat.session_id) in notices[0]
    for _ in range(2):  # any click reruns the page: the notice is still said until the next answer
        at.run()
        assert [i.value for i in at.info if "was deleted in another tab or window" in i.value] == notices
    here = at.session_state[chat_state.CHAT_KEY]
    assert here is not chat and here.session_id != chat.session_id
    assert not any("teal" in text for text in _assistant_texts(at))
    _say(at, "what is my favorite color?")  # the memory is the visitor's, not the session's: still known
    assert any("teal" in text.lower() for text in _assistant_texts(at))
    assert not [i for i in at.info if "was deleted in another tab or window" in i.value]  # said until the first answer
    chat.close().result(timeout=60)
    assert turn_indexer.flush_queued()
    visitor = at.session_state["mp_visitor"]
    assert [record.session_id for record in sessions.list_sessions(visitor.scope)] == [here.session_id]


def _user_texts(at):
    return [m.value for message in at.chat_message if message.name == "user" for m in message.markdown]


def test_what_the_visitor_typed_is_shown_as_typed_not_read_as_markdown(app):
    """ "' OR 1=1 --" showed as "' OR 1=1 —" and "**bold**" lost its stars: the user's words are escaped, so
    Markdown shows each character; the agent's replies keep their formatting."""
    at = app()
    typed = "' OR 1=1 -- **bold** <b>x</b> [link](u) :rocket:\n- item"
    _say(at, typed)
    # "--" between spaces: a word joiner, as no escape keeps Streamlit from making it "—" (the browser test
    # tests/app/test_browser_app.py shows what is drawn)
    # and a line break stays one (Markdown joined the lines into one until 2026-12-07: two spaces end a line)
    escaped = "' OR 1=1 -\u2060- \\*\\*bold\\*\\* \\<b\\>x\\</b\\> \\[link\\](u) \\:rocket\\:  \n\\- item"
    assert escaped in _user_texts(at)
    turn_indexer.flush_queued(timeout=10)
    stored = conversations.list_turns(
        at.session_state["mp_visitor"].scope, at.session_state["u_chat_session"].session_id
    )
    assert typed in [t.content for t in stored]  # stored exactly as typed: only the display escapes it


def _slow_brain(monkeypatch, *, seconds: float) -> None:
    """A slow model: a message that says "slowly" is answered `seconds` after its tools ran."""
    from agent.brain import llm as brain_llm

    compose = brain_llm.compose_reply

    def slowly(user_text, *args, **kwargs):
        if "slowly" in user_text:
            time.sleep(seconds)
        return compose(user_text, *args, **kwargs)

    monkeypatch.setattr(brain_llm, "compose_reply", slowly)


def test_while_the_agent_thinks_its_status_spins_and_is_never_marked_done(app, monkeypatch):
    """The status drawn while a slow model answers showed ✓ (`with st.status(...)` marks it complete on
    leaving the block), as if the answer had come."""
    _slow_brain(monkeypatch, seconds=3)
    at = app()
    settle(at)
    at.chat_input(key="u_chat_input").set_value("where is order 1001, slowly")
    at.run()
    seen = []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not (seen and not _thinking(at)):
        time.sleep(0.3)
        at.run()
        seen += _thinking(at)
    assert seen, "the page never showed the agent thinking"
    assert {(status.proto.icon, status.proto.state) for status in seen} == {("spinner", seen[0].proto.RUNNING)}
    settle(at)
    assert "1001" in _assistant_texts(at)[-1]


def test_the_thinking_time_of_each_turn_counts_from_its_own_message(app, monkeypatch):
    """The second turn's "Thinking… N s" counted from the first turn's start (a walkthrough saw "Thinking… 35 s"
    two seconds in, and past 272 s the warning that the agent has not answered, 10 s into a turn)."""
    _slow_brain(monkeypatch, seconds=2)
    at = app()
    settle(at)
    for order in ("1001", "1002"):
        at.chat_input(key="u_chat_input").set_value(f"where is order {order}, slowly")
        at.run()
        seconds = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (seconds and not _thinking(at)):
            time.sleep(0.3)
            at.run()
            seconds += [int(re.search(r"(\d+) s", s.label)[1]) for s in _thinking(at)]
        assert seconds and max(seconds) <= 4, (order, seconds)
        settle(at)
        assert order in _assistant_texts(at)[-1]
        time.sleep(4)  # the second turn starts well after the first one's start


def test_a_conversation_the_apps_restart_ended_is_said_until_the_new_one_is_under_way(app):
    """A walkthrough (2026-12-07): after the app restarted, the Chat page quietly showed a new conversation,
    the one before it gone from view with no word of where it went."""
    from agent import APP_STOPPED

    at = app("pages/memories.py")
    visitor = at.session_state["mp_visitor"]
    service = db.Scope.service(visitor.user_id)
    ended = datetime.now(UTC) - timedelta(minutes=2)

    def saved(session_id: str, ended_by: str, when: datetime) -> None:
        report = {"playground": {"turns": 2, "mode": "text", "duration_s": 60.0, "ended_by": ended_by}}
        sessions.save_report(service, session_id, report, started_at=when - timedelta(minutes=1), ended_at=when)

    saved("text-restart000000001", APP_STOPPED, ended - timedelta(hours=3))  # too long ago to say
    saved("text-restart000000002", APP_STOPPED, ended)
    at.switch_page("pages/chat.py")
    at.run()
    settle(at)
    notices = [i.value for i in at.info if "ended when the app restarted" in i.value]
    assert notices == [
        "Your conversation `text-restart000000002` ended when the app restarted; its report and transcript are on "
        "the Sessions page, and what you told the agent is remembered. This is a new conversation."
    ]
    _say(at, "hello")
    assert not any("ended when the app restarted" in i.value for i in at.info)

    # a conversation that ended otherwise, or a visit that had a conversation here before: nothing to say
    other = app("pages/memories.py")
    mine = db.Scope.service(other.session_state["mp_visitor"].user_id)
    report = {"playground": {"turns": 2, "mode": "text", "duration_s": 60.0, "ended_by": "ended"}}
    sessions.save_report(mine, "text-restart000000003", report, started_at=ended, ended_at=ended)
    other.switch_page("pages/chat.py")
    other.run()
    settle(other)
    assert not any("ended when the app restarted" in i.value for i in other.info)


def test_a_failed_turn_can_be_tried_again_without_typing_it_again(app, monkeypatch):
    """A walkthrough (2026-12-07): a turn the model failed had no way to send it again but to retype it."""
    from agent.brain import llm as brain_llm

    compose, failing = brain_llm.compose_reply, [True]

    def breaks(user_text, *args, **kwargs):
        if "1001" in user_text and failing:
            raise RuntimeError("the model fell over")
        return compose(user_text, *args, **kwargs)

    monkeypatch.setattr(brain_llm, "compose_reply", breaks)
    at = app()
    _say(at, "where is order 1001?")
    assert at.error, "the turn did not fail"
    retry = [b for b in at.button if b.label == "Try again"]
    assert len(retry) == 1
    failing.clear()  # the model is back
    retry[0].click().run()
    settle(at)
    assert "1001" in _assistant_texts(at)[-1]
    assert [b for b in at.button if b.label == "Try again"] == []  # the newest turn was answered
    users = [m.value for message in at.chat_message if message.name == "user" for m in message.markdown]
    assert [text for text in users if "1001" in text] == ["where is order 1001?"] * 2  # sent again, as typed


def _thinking(at):
    return [status for status in at.get("status") if status.label.startswith("Thinking")]


def test_what_the_user_typed_shows_as_typed_in_the_panel_beside_the_conversation(app):
    """Found in a walkthrough (2026-12-07): "# Heading / - item / `code`" typed in the chat was drawn as a
    heading and a list in the panel's line that quotes the turn, and a backtick in a tool's arguments ended
    their code span, the rest drawn as Markdown."""
    at = app()
    # (a backtick inside a word: the offline brain reads `code` quoted by backticks as plain "code")
    _say(at, "# Heading - item co`de [click](javascript:alert(1))")
    quoted = next(c.value for c in at.caption if c.value.startswith("“"))
    assert quoted.startswith("“\\# Heading") and "\\[click\\]" in quoted  # escaped: drawn as typed
    lines = [m.value for m in at.markdown if "**`search_knowledge`**" in m.value]
    assert lines and all("``(" in line and ")``" in line for line in lines), lines  # one span, backtick inside
