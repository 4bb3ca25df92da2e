"""The Memories page: list, hybrid search with per-branch scores, edit, delete
one (confirm), delete all (confirm by typing), export JSON, empty state."""

from __future__ import annotations

import json
import uuid
from zoneinfo import ZoneInfo

import pytest

from core import conversations, memories, profiles, sessions
from core.conversations import TurnInput
from core.db import Scope
from core.errors import NotFound
from tests.support.panels import as_drawn, expand


@pytest.fixture
def captured_downloads(monkeypatch):
    """AppTest keeps st.download_button data in a per-run in-memory media store; keep a handle on it."""
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
    from streamlit.testing.v1 import app_test

    stores = []

    class Recording(MemoryMediaFileStorage):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            stores.append(self)

    monkeypatch.setattr(app_test, "MemoryMediaFileStorage", Recording)

    def read(url: str):
        """-> the stored file (.content bytes, .filename as the browser saves it)."""
        return stores[-1].get_file(url.rsplit("/", 1)[-1])

    return read


def _results(at):
    """The search's results table, with the page-wide table's columns (Slot, Vector rank, Vector RRF, …)."""
    return next(expand(t.value) for t in at.table if "Fused score" in t.value.columns)


def _search(at, query):
    at.text_input(key="u_mem_query").set_value(query)
    next(b for b in at.button if b.label == "Search" and b.form_id == "u_mem_search_form").click()
    at.run()


def _seeded(app):
    at = app("pages/memories.py")
    visitor = at.session_state["mp_visitor"]
    memories.remember(visitor.scope, "favorite_color", "teal")
    memories.remember(visitor.scope, "car", "Drives a blue 2019 Subaru Outback")
    memories.remember(visitor.scope, "allergy", "Allergic to peanuts")
    at.run()
    return at, visitor


def test_the_search_table_shows_a_memory_as_written_not_as_markdown(app):
    """Found in a fresh-clone walkthrough: the search's table (st.table draws Markdown) showed "*really*
    _good_" as italics, the stars and underscores gone."""
    at = app("pages/memories.py")
    visitor = at.session_state["mp_visitor"]
    memories.remember(visitor.scope, "coffee_opinion", "The house blend is *really* _good_ ~~cheap~~")
    at.run()
    _search(at, "what do I think of the house blend?")
    raw = next(t.value for t in at.table if "Fused score" in t.value.columns)
    cell = raw.iloc[0]["Memory"]
    assert "\\*really\\*" in cell and "\\_good\\_" in cell and "\\~\\~cheap" in cell  # escaped for Markdown
    assert as_drawn(cell) == "coffee_opinion: The house blend is *really* _good_ ~~cheap~~"


def test_list_search_and_export(app, captured_downloads):
    at, visitor = _seeded(app)
    assert not at.exception
    texts = [m.value for m in at.markdown]
    assert "teal" in texts and "Allergic to peanuts" in texts
    assert at.metric[0].value == "3"

    _search(at, "what car do I drive?")
    table = _results(at)
    assert table.iloc[0]["Slot"] == "car"
    # every number in five columns whose text wraps: nothing hidden behind a sideways scroll in half a page
    assert list(table.columns)[:5] == ["Memory", "Match", "Vector", "Text", "Fused score"]
    assert table.iloc[0]["Vector rank"] == "1"
    assert table["Fused score"].is_monotonic_decreasing
    assert table.iloc[0]["Fused score"] == pytest.approx(
        table.iloc[0]["Vector RRF"] + table.iloc[0]["Text RRF"], abs=2e-5
    )

    assert table.iloc[0]["Match"] != "nearest only"
    assert not any(i.value.startswith("Nothing matches") for i in at.info)

    # nothing matches: the table still ranks the nearest, and says they are only that
    _search(at, "pizza dough recipe")
    table = _results(at)
    assert set(table["Match"]) == {"nearest only"} and len(table) == 3
    assert any(i.value.startswith("Nothing matches “pizza dough recipe”") for i in at.info)
    _search(at, "what car do I drive?")

    at.segmented_control(key="u_mem_mode").set_value("text")
    at.run()
    table = _results(at)
    assert set(table["Slot"]) == {"car"}  # only the memory with a keyword match
    assert table.iloc[0]["Vector RRF"] == 0 and table.iloc[0]["Vector rank"] == "—"

    button = at.get("download_button")[0]
    download = captured_downloads(button.proto.url)
    assert download.filename == f"memories-{visitor.short_id}.json"
    exported = json.loads(download.content)
    assert exported["user_id"] == str(visitor.user_id)
    assert {m["memory_type"]: m["content"] for m in exported["memories"]} == {
        "favorite_color": "teal",
        "car": "Drives a blue 2019 Subaru Outback",
        "allergy": "Allergic to peanuts",
    }


def test_edit_and_delete_one_with_confirmation(app):
    at, visitor = _seeded(app)
    color = memories.recall(visitor.scope, "favorite_color")
    mid = str(color.id)

    at.button(key=f"u_mem_edit_{mid}").click()
    at.run()
    at.text_area(key=f"u_mem_text_{mid}").set_value("navy blue")
    next(b for b in at.button if b.label == "Save" and "u_mem_edit_form" in (b.form_id or "")).click()
    at.run()
    assert memories.recall(visitor.scope, "favorite_color").content == "navy blue"
    assert any("Saved" in s.value for s in at.success)
    # the edit re-embedded the memory: a search finds it by the new meaning
    _search(at, "navy")
    table = _results(at)
    assert table.iloc[0]["Slot"] == "favorite_color"

    at.button(key=f"u_mem_delete_{mid}").click()
    at.run()
    assert any(
        "No past conversation message mentions “navy blue” or what it said before (“teal”). This cannot be undone."
        in w.value
        for w in at.warning
    )
    at.button(key=f"u_mem_delete_no_{mid}").click()  # cancel keeps it
    at.run()
    assert memories.recall(visitor.scope, "favorite_color").content == "navy blue"

    # an earlier conversation said it too: deleting the memory deletes that mention (as the visitor, under RLS)
    past = f"past-{uuid.uuid4().hex[:8]}"
    conversations.store_turns(
        Scope.service(visitor.scope.user_id),
        [TurnInput(past, 0, "user", "I repainted the door navy blue."), TurnInput(past, 1, "user", "Nice weather.")],
    )
    at.button(key=f"u_mem_delete_{mid}").click()
    at.run()
    # it says how many messages go with it before asking (a common word can be in many)
    assert any(
        "**1 past conversation message** that mentions “navy blue” or what it said before (“teal”) is deleted too"
        in w.value
        for w in at.warning
    )
    at.button(key=f"u_mem_delete_yes_{mid}").click()
    at.run()
    with pytest.raises(NotFound):
        memories.recall(visitor.scope, "favorite_color")
    assert "navy blue" not in [m.value for m in at.markdown]
    assert any("and 1 past conversation message that mentioned it" in s.value for s in at.success)
    assert [t.content for t in conversations.list_turns(visitor.scope, past)] == ["Nice weather."]
    assert {m.memory_type for m in memories.list_memories(visitor.scope)} == {"car", "allergy"}


def test_deleting_a_memory_says_and_deletes_the_agents_replies_that_say_it_back(app):
    """The walkthrough: "I paid $5 for coffee and $10 for lunch" told in one session, asked about in the next.
    The dialog said 1 message went with the memory; the agent's two replies saying it back ("you paid ...")
    stayed, and a Sessions search for "coffee" still listed them. Now they go too, and the dialog says so:
    how many, whose, and in which words."""
    at = app("pages/memories.py")
    visitor = at.session_state["mp_visitor"]
    service = Scope.service(visitor.user_id)
    paid = "I paid $5 for coffee and $10 for lunch"
    told, asked = f"told-{uuid.uuid4().hex[:8]}", f"asked-{uuid.uuid4().hex[:8]}"
    conversations.store_turns(
        service,
        [
            TurnInput(told, 0, "user", paid),
            TurnInput(told, 1, "assistant", "Got it, I'll remember that you paid $5 for coffee and $10 for lunch."),
        ],
    )
    conversations.store_turns(
        service,
        [
            TurnInput(asked, 0, "user", "what did I pay for coffee?"),
            TurnInput(asked, 1, "assistant", "You told me you paid $5 for coffee and $10 for lunch."),
        ],
    )
    note = memories.remember(service, "note_paid_5_coffee", paid).memory
    at.run()

    at.button(key=f"u_mem_delete_{note.id}").click()
    at.run()
    assert any(
        "**3 past conversation messages** that mention “I paid \\$5 for coffee and \\$10 for lunch” are deleted "
        "too: 1 of yours and 2 of the agent's; 2 of them say it as “you paid \\$5 for coffee and \\$10 for lunch”."
        in w.value
        for w in at.warning
    ), [w.value for w in at.warning]
    at.button(key=f"u_mem_delete_yes_{note.id}").click()
    at.run()
    assert any("and 3 past conversation messages that mentioned it" in s.value for s in at.success)
    assert conversations.list_turns(visitor.scope, told) == []
    assert [t.content for t in conversations.list_turns(visitor.scope, asked)] == ["what did I pay for coffee?"]


def test_an_edited_memory_shows_what_it_said_before_and_deleting_it_deletes_those_mentions_too(app):
    """The walkthrough: teal edited to "dark teal", then deleted. Only the mentions of "dark teal" went, and in a
    new chat "what is my favorite color?" found "my favorite color is teal" in an earlier conversation, after
    the dialog had said "The agent will no longer know this"."""
    at, visitor = _seeded(app)
    color = memories.recall(visitor.scope, "favorite_color")
    mid = str(color.id)
    past = f"past-{uuid.uuid4().hex[:8]}"
    conversations.store_turns(
        Scope.service(visitor.user_id),
        [
            TurnInput(past, 0, "user", "my favorite color is teal"),
            TurnInput(past, 1, "assistant", "Teal it is."),
            TurnInput(past, 2, "user", "The weather was grey all week."),
        ],
    )
    at.button(key=f"u_mem_edit_{mid}").click()
    at.run()
    at.text_area(key=f"u_mem_text_{mid}").set_value("dark teal")
    next(b for b in at.button if b.label == "Save" and "u_mem_edit_form" in (b.form_id or "")).click()
    at.run()
    assert any(c.value == ":material/history: before: “teal”" for c in at.caption), [c.value for c in at.caption]

    at.button(key=f"u_mem_delete_{mid}").click()
    at.run()
    assert any(
        "**2 past conversation messages** that mention “dark teal” or what it said before (“teal”) are deleted "
        "too: 1 of yours and 1 of the agent's." in w.value
        for w in at.warning
    ), [w.value for w in at.warning]
    at.button(key=f"u_mem_delete_yes_{mid}").click()
    at.run()
    assert any("and 2 past conversation messages that mentioned it" in s.value for s in at.success)
    assert [t.content for t in conversations.list_turns(visitor.scope, past)] == ["The weather was grey all week."]


def test_a_card_lists_the_three_latest_earlier_texts_and_counts_the_rest(app):
    at, visitor = _seeded(app)
    for value in ("red", "green", "blue", "violet"):
        memories.remember(visitor.scope, "favorite_color", value)
    at.run()
    assert any(c.value == ":material/history: before: “blue”, “green”, “red” and 1 earlier" for c in at.caption)


def test_a_memory_whose_session_was_deleted_says_so_and_links_nowhere(app):
    """A memory outlives the session that wrote it. Once that session is deleted its card says so, with no
    Open button, "Sessions that wrote them" does not count it, and a stale link to it says it was deleted instead of
    quietly showing another session."""
    at = app("pages/memories.py")
    visitor = at.session_state["mp_visitor"]
    service = Scope.service(visitor.user_id)
    gone, kept = f"text-{uuid.uuid4().hex[:16]}", f"text-{uuid.uuid4().hex[:16]}"
    for session_id in (gone, kept):
        sessions.save_report(service, session_id, {"playground": {"turns": 1, "mode": "text"}})
    color = memories.remember(service, "favorite_color", "teal", session_id=gone).memory
    car = memories.remember(service, "car", "a blue Subaru", session_id=kept).memory
    sessions.delete_session(visitor.scope, gone)  # on the Sessions page, as the visitor
    at.run()
    assert not at.exception, at.exception

    captions = [c.value for c in at.caption]
    assert ":material/delete: the agent wrote it in a session you deleted" in captions
    assert f":material/forum: the agent wrote it in session `{kept}`" in captions
    assert not any(gone in c for c in captions)
    assert {b.key for b in at.button} >= {f"u_mem_open_{car.id}"}
    assert f"u_mem_open_{color.id}" not in {b.key for b in at.button}
    assert {m.label: m.value for m in at.metric}["Sessions that wrote them"] == "1"

    # a link made before the deletion (another tab, the Back button): the Sessions page says it is gone
    at.session_state["u_sessions_request"] = gone
    at.switch_page("pages/sessions.py")
    at.run()
    assert not at.exception, at.exception
    assert any(w.value.startswith(f"Session `{gone}` was deleted, so it cannot be opened") for w in at.warning)
    assert at.selectbox(key="u_sessions_pick").value != gone
    at.session_state["u_sessions_request"] = "text-never0stored00"
    at.run()
    assert any(w.value.startswith("Session `text-never0stored00` is not among your sessions") for w in at.warning)


def test_delete_all_needs_the_typed_confirmation_then_shows_the_empty_state(app):
    at, visitor = _seeded(app)
    past = f"past-{uuid.uuid4().hex[:8]}"
    conversations.store_turns(
        Scope.service(visitor.scope.user_id),
        [TurnInput(past, 0, "user", "I am allergic to peanuts."), TurnInput(past, 1, "user", "My car is a Subaru.")],
    )
    at.run()
    # before asking, it says how many past messages go with them (the first turn says a memory's text)
    assert any("**1 past conversation message** that mentions them is deleted too" in m.value for m in at.markdown)
    at.text_input(key="u_mem_delete_all_phrase").set_value("delete")  # not the exact phrase
    at.run()
    assert at.button(key="u_mem_delete_all").disabled
    assert len(memories.list_memories(visitor.scope)) == 3

    at.text_input(key="u_mem_delete_all_phrase").set_value("DELETE")
    at.run()
    assert not at.button(key="u_mem_delete_all").disabled
    at.button(key="u_mem_delete_all").click()
    at.run()
    assert memories.list_memories(visitor.scope) == []
    assert any("Deleted 3 memories and 1 past conversation message that mentioned them." in s.value for s in at.success)
    assert [t.content for t in conversations.list_turns(visitor.scope, past)] == ["My car is a Subaru."]
    assert any("Nothing remembered yet" in m.value for m in at.markdown)
    assert at.get("download_button")[0].proto.disabled


def test_delete_all_writes_large_counts_with_thousands_separators(app):
    """A heavy visitor read "20088 past conversation messages" (the rest of the app writes 2,000)."""
    import numpy as np

    at, visitor = _seeded(app)
    past = f"many-{uuid.uuid4().hex[:8]}"
    said = [TurnInput(past, i, "user", f"still allergic to peanuts, day {i}") for i in range(1_001)]
    unit = np.eye(384, dtype=np.float32)[0]  # only the words matter here
    for start in range(0, len(said), 400):
        conversations.store_turns(
            Scope.service(visitor.user_id),
            said[start : start + 400],
            embed=lambda texts: np.tile(unit, (len(texts), 1)),
        )
    at.run()
    assert any("**1,001 past conversation messages** that mention them are deleted too" in m.value for m in at.markdown)
    at.text_input(key="u_mem_delete_all_phrase").set_value("DELETE")
    at.run()
    at.button(key="u_mem_delete_all").click()
    at.run()
    assert any("Deleted 3 memories and 1,001 past conversation messages" in s.value for s in at.success)


def test_saving_an_edit_that_changes_nothing_says_so_and_leaves_the_memory_as_it_was(app):
    """A Save with nothing edited said "Saved", marked the memory "updated just now" and moved it first."""
    at, visitor = _seeded(app)
    car = memories.recall(visitor.scope, "car")
    at.button(key=f"u_mem_edit_{car.id}").click()
    at.run()
    at.text_area(key=f"u_mem_text_{car.id}").set_value(f"  {car.content} ")  # spaces around it are not kept
    next(b for b in at.button if b.label == "Save" and "u_mem_edit_form" in (b.form_id or "")).click()
    at.run()
    assert not at.exception
    assert [s.value for s in at.success] == ["Nothing to save: `car` already says that."]
    after = memories.recall(visitor.scope, "car")
    assert (after.content, after.updated_at, after.earlier_contents) == (car.content, car.updated_at, ())


def test_a_search_that_finds_nothing_quotes_it_as_typed_not_as_markdown(app):
    """The "Nothing matches" notice drew the search as Markdown: "[x](http://e.com)" became a live link."""
    at, _ = _seeded(app)
    _search(at, "**bold** [x](http://e.com) `code` $y$")
    notice = next(i.value for i in at.info if i.value.startswith("Nothing matches"))
    assert notice.startswith(r"Nothing matches “\*\*bold\*\* \[x\](http\://e.com) \`code\` \$y\$”"), notice


def test_an_empty_edit_is_refused_with_a_message_and_loses_nothing(app):
    at, visitor = _seeded(app)
    car = memories.recall(visitor.scope, "car")
    at.button(key=f"u_mem_edit_{car.id}").click()
    at.run()
    at.text_area(key=f"u_mem_text_{car.id}").set_value("   ")
    next(b for b in at.button if b.label == "Save" and "u_mem_edit_form" in (b.form_id or "")).click()
    at.run()
    assert not at.exception
    assert any("empty" in w.value for w in at.warning)
    assert memories.recall(visitor.scope, "car").content == "Drives a blue 2019 Subaru Outback"


def test_an_edit_over_the_limit_is_refused_with_a_message_and_keeps_the_text(app):
    """Found 2026-12-06: the box's max_chars made the browser drop a longer paste without a word."""
    at, visitor = _seeded(app)
    car = memories.recall(visitor.scope, "car")
    at.button(key=f"u_mem_edit_{car.id}").click()
    at.run()
    box = at.text_area(key=f"u_mem_text_{car.id}")
    assert not box.max_chars  # 0: no limit in the browser
    pasted = "a blue Subaru " * 200  # 2,800 characters
    box.set_value(pasted)
    next(b for b in at.button if b.label == "Save" and "u_mem_edit_form" in (b.form_id or "")).click()
    at.run()
    assert not at.exception
    assert f"The memory is too long (2799 characters; the limit is {memories.MAX_CONTENT_LENGTH})." in [
        w.value for w in at.warning
    ]
    assert at.text_area(key=f"u_mem_text_{car.id}").value == pasted  # nothing typed is lost
    assert memories.recall(visitor.scope, "car").content == "Drives a blue 2019 Subaru Outback"


def test_opening_a_second_edit_keeps_the_first_and_its_text(app):
    """Found in a fresh-clone walkthrough: Edit on a second memory closed the first one's form without a word,
    and what was typed in it was gone."""
    at, visitor = _seeded(app)
    car, allergy = memories.recall(visitor.scope, "car"), memories.recall(visitor.scope, "allergy")
    at.button(key=f"u_mem_edit_{car.id}").click()
    at.run()
    at.button(key=f"u_mem_edit_{allergy.id}").click()
    at.run()
    assert not at.exception
    # both open: the first form stays drawn, so the browser keeps what was typed in it (a form's text is the
    # browser's until Save; tests/app/test_browser_app.py types it there)
    assert at.text_area(key=f"u_mem_text_{car.id}").value == "Drives a blue 2019 Subaru Outback"
    assert at.text_area(key=f"u_mem_text_{allergy.id}").value == "Allergic to peanuts"
    at.text_area(key=f"u_mem_text_{car.id}").set_value("Drives a green 2021 Volvo")
    saves = [b for b in at.button if b.label == "Save" and "u_mem_edit_form" in (b.form_id or "")]
    next(b for b in saves if str(car.id) in b.form_id).click()
    at.run()
    assert memories.recall(visitor.scope, "car").content == "Drives a green 2021 Volvo"
    # the other form stays open; Delete on its card closes it, and the confirmation is for that memory
    assert [a.key for a in at.text_area if a.key.startswith("u_mem_text_")] == [f"u_mem_text_{allergy.id}"]
    at.button(key=f"u_mem_delete_{allergy.id}").click()
    at.run()
    assert not [a for a in at.text_area if a.key.startswith("u_mem_text_")]
    assert any(w.value.startswith("Delete `allergy`?") for w in at.warning)


def test_an_edit_of_a_memory_deleted_in_another_tab_says_so_and_keeps_the_text(app):
    # the card was no longer drawn once the memory was gone, so its form's Save went unhandled: no message, text lost
    at, visitor = _seeded(app)
    color = memories.recall(visitor.scope, "favorite_color")
    at.button(key=f"u_mem_edit_{color.id}").click()
    at.run()
    memories.delete_memory(visitor.scope, color.id)  # another tab of the same visitor
    at.text_area(key=f"u_mem_text_{color.id}").set_value("ramen")
    next(b for b in at.button if b.label == "Save" and "u_mem_edit_form" in (b.form_id or "")).click()
    at.run()
    assert not at.exception
    assert any("That memory was deleted while you were editing it" in w.value for w in at.warning)
    assert at.text_area(key=f"u_mem_text_{color.id}").value == "ramen"
    with pytest.raises(NotFound):  # nothing written yet: the visitor decides
        memories.recall(visitor.scope, "favorite_color")

    at.run()  # any other click keeps the form and the text
    assert at.text_area(key=f"u_mem_text_{color.id}").value == "ramen"
    next(b for b in at.button if b.label == "Save as a new memory").click()
    at.run()
    assert not at.exception
    assert memories.recall(visitor.scope, "favorite_color").content == "ramen"
    assert any("Saved `favorite_color` as a new memory" in s.value for s in at.success)
    assert not any(w.value.startswith("That memory was deleted") for w in at.warning)
    assert not [a for a in at.text_area if a.key == f"u_mem_text_{color.id}"]


def test_discarding_the_edit_of_a_deleted_memory_writes_nothing(app):
    at, visitor = _seeded(app)
    car = memories.recall(visitor.scope, "car")
    at.button(key=f"u_mem_edit_{car.id}").click()
    at.run()
    memories.delete_memory(visitor.scope, car.id)
    at.run()  # deleted before anything was typed: the form says so at once
    assert any("That memory was deleted while you were editing it" in w.value for w in at.warning)
    next(b for b in at.button if b.label == "Discard").click()
    at.run()
    assert not at.exception
    assert not any(w.value.startswith("That memory was deleted") for w in at.warning)
    assert not [a for a in at.text_area if a.key == f"u_mem_text_{car.id}"]
    assert {m.memory_type for m in memories.list_memories(visitor.scope)} == {"favorite_color", "allergy"}


def test_delete_everything_about_me_erases_memories_profile_and_sessions_and_the_agent_meets_a_stranger(app):
    from tests.app.conftest import settle
    from tests.app.test_chat import _assistant_texts, _say

    at = app()  # the chat page
    visitor = at.session_state["mp_visitor"]
    _say(at, "call me Jo")
    _say(at, "my dog is called Pixel")
    assert profiles.get_profile(visitor.scope).name == "Jo"
    at.button(key="u_chat_end").click()  # the report with "call me Jo" in its transcript is saved
    at.run()
    assert len(sessions.list_sessions(visitor.scope)) == 1
    next(b for b in at.button if b.label == "Start a new conversation").click()
    settle(at.run())
    assert any("Welcome back, Jo" in text for text in _assistant_texts(at))  # a new conversation (unsaved yet)

    at.switch_page("pages/memories.py")
    at.run()
    at.text_input(key="u_mem_erase_phrase").set_value("delete")  # not the exact phrase
    at.run()
    assert at.button(key="u_mem_erase_button").disabled
    at.text_input(key="u_mem_erase_phrase").set_value("DELETE")
    at.run()
    at.button(key="u_mem_erase_button").click()
    at.run()
    assert not at.exception
    # the open conversation was ended first, so nothing it wrote on the way out survives
    assert memories.list_memories(visitor.scope) == []
    assert sessions.list_sessions(visitor.scope) == []
    assert profiles.get_profile(visitor.scope).name is None
    # the new conversation, in which nothing was said yet, was no session: the one ended is the only report
    assert any("Deleted 2 memories, 1 session report with" in s.value for s in at.success)
    # new widgets, empty and closed: the browser kept drawing the old ones (DELETE typed, button greyed out)
    assert at.text_input(key="u_mem_erase_phrase_1").value == ""
    assert not [t for t in at.text_input if t.key == "u_mem_erase_phrase"]
    assert [e.label for e in at.expander if "Delete everything" in e.label]  # drawn again, under a new key

    at.switch_page("pages/chat.py")
    settle(at.run())
    greeting = " ".join(_assistant_texts(at))
    assert "Welcome back" not in greeting and "Jo" not in greeting


@pytest.mark.slow
def test_delete_everything_ends_the_visitors_voice_calls_first_and_their_reports_are_erased_too(app):
    """A call in another tab of the same visitor is ended (its report saved) before the erasure, so nothing it
    writes survives; another visitor's call goes on."""
    from agent.voice.calls import end_call, get_call, open_call
    from tests.app.test_chat import _say
    from tests.support.audio import FakeBrowser

    at = app()  # the chat page
    visitor = at.session_state["mp_visitor"]
    _say(at, "my dog is called Pixel")
    other = app()
    calls = {"mine": f"test-{uuid.uuid4().hex}", "other": f"test-{uuid.uuid4().hex}"}
    mine = open_call(calls["mine"], visitor.verified, greet=False)
    theirs = open_call(calls["other"], other.session_state["mp_visitor"].verified, greet=False)
    try:
        with FakeBrowser(mine):  # the call's reply is spoken: something must play it out
            mine.ready.result(timeout=120)
            mine.submit_text("call me Jo").result(timeout=120)  # written by the call
        assert profiles.get_profile(visitor.scope).name == "Jo"

        at.switch_page("pages/memories.py")
        at.run()
        at.text_input(key="u_mem_erase_phrase").set_value("DELETE")
        at.run()
        at.button(key="u_mem_erase_button").click()
        at.run()
        assert not at.exception
        assert not mine.active and get_call(calls["mine"]) is None
        assert mine.report is not None  # saved before the erasure, so erased with the rest
        assert sessions.list_sessions(visitor.scope) == []
        assert memories.list_memories(visitor.scope) == []
        assert profiles.get_profile(visitor.scope).name is None
        assert get_call(calls["other"]) is theirs
    finally:
        for key in calls.values():
            ended = end_call(key)
            if ended is not None:
                ended.result(timeout=60)


@pytest.mark.slow
def test_deleting_the_session_of_a_call_still_going_ends_that_call_only(app):
    """Deleting, on the Sessions page, the session of a call still going in another tab ends that call first
    (its report is saved, then deleted with the rest) so it cannot bring the session back; the visitor's
    other call goes on."""
    from agent.voice.calls import end_call, get_call, open_call
    from core import turn_indexer
    from tests.support.audio import FakeBrowser

    at = app()
    visitor = at.session_state["mp_visitor"]
    calls = {"doomed": f"test-{uuid.uuid4().hex}", "sibling": f"test-{uuid.uuid4().hex}"}
    doomed = open_call(calls["doomed"], visitor.verified, greet=False)
    sibling = open_call(calls["sibling"], visitor.verified, greet=False)
    try:
        with FakeBrowser(doomed):
            doomed.ready.result(timeout=120)
            doomed.submit_text("I went hiking on the Cedar Ridge trail").result(timeout=120)
        sibling.ready.result(timeout=120)
        assert turn_indexer.flush_queued()
        deleted = doomed.session_id

        at.switch_page("pages/sessions.py")
        at.run()
        at.selectbox(key="u_sessions_pick").set_value(deleted)
        at.run()
        at.button(key="u_session_delete").click()
        at.run()
        assert not at.exception, at.exception
        assert not doomed.active and get_call(calls["doomed"]) is None
        assert doomed.report is not None  # saved first, so deleted with the session
        assert doomed.report["playground"]["extraction"]["method"] is None  # no facts drawn from it on the way out
        assert get_call(calls["sibling"]) is sibling
        assert deleted not in {record.session_id for record in sessions.list_sessions(visitor.scope)}
    finally:
        for key in calls.values():
            ended = end_call(key)
            if ended is not None:
                ended.result(timeout=60)
    assert turn_indexer.flush_queued()
    assert deleted not in {record.session_id for record in sessions.list_sessions(visitor.scope)}


def test_a_long_list_shows_a_page_at_a_time_and_filters_by_slot_or_word(app):
    # every card was drawn on every click: with 300 memories a click took seconds
    from pages.memories import PAGE

    at = app()
    visitor = at.session_state["mp_visitor"]
    service = Scope.service(visitor.user_id)
    for number in range(PAGE + 12):
        memories.remember(service, f"note_{number:03d}", f"a thing worth keeping, number {number}")
    memories.remember(service, "dog_name", "Pixel")
    at.switch_page("pages/memories.py")
    at.run()

    def cards():
        return [button.key for button in at.button if (button.key or "").startswith("u_mem_edit_")]

    assert at.metric[0].value == str(PAGE + 13)  # the count is of all of them
    assert len(cards()) == PAGE
    assert any(c.value == f"Showing {PAGE} of {PAGE + 13}, newest first." for c in at.caption)
    at.button(key="u_mem_show_more").click()
    at.run()
    assert len(cards()) == PAGE + 13 and not [b for b in at.button if b.key == "u_mem_show_more"]

    at.text_input(key="u_mem_filter").set_value("DOG")
    at.run()
    assert cards() == [f"u_mem_edit_{memories.recall(visitor.scope, 'dog_name').id}"]
    at.text_input(key="u_mem_filter").set_value("number 7")
    at.run()
    assert len(cards()) == 4  # every word, anywhere: numbers 7, 17, 27 and 37
    at.text_input(key="u_mem_filter").set_value("cat")
    at.run()
    assert not cards() and any("No memory's slot or text contains “cat”" in c.value for c in at.caption)


def test_the_profile_details_the_agent_keeps_are_shown_and_can_be_cleared(app):
    """The agent greets by the profile's name: it is shown beside the memories, and Clear forgets it."""
    at, visitor = _seeded(app)
    assert not any("the agent also knows these" in m.value for m in at.markdown)  # nothing learned yet: no box
    profiles.update_profile(Scope.service(visitor.scope.user_id), "name", "Ada *the* [first]")
    profiles.update_profile(Scope.service(visitor.scope.user_id), "timezone", "Europe/Lisbon")
    at.run()
    shown = [m.value for m in at.markdown]
    # as typed: the Markdown characters are escaped, so nothing is read as formatting
    assert "name: Ada \\*the\\* \\[first\\]  \ntime zone: Europe/Lisbon" in shown
    at.button(key="u_mem_profile_clear").click()
    at.run()
    profile = profiles.get_profile(visitor.scope)
    assert (profile.name, profile.timezone) == (None, None)
    assert any("Cleared the profile details" in s.value for s in at.success)
    assert not any("time zone: Europe/Lisbon" in m.value for m in at.markdown)
    assert {m.memory_type for m in memories.list_memories(visitor.scope)} == {"favorite_color", "car", "allergy"}


def test_a_long_memory_shows_its_start_on_the_card_and_the_rest_on_request(app):
    at, visitor = _seeded(app)
    long_text = "Notes on my garden, " + " ".join(f"bed {n} has tomatoes and basil." for n in range(60))
    memories.remember(visitor.scope, "garden", long_text)
    at.run()
    card = next(m.value for m in at.markdown if m.value.startswith("Notes on my garden"))
    assert len(card) <= 400 and card.endswith("…")
    more = next(e for e in at.expander if e.label == f"All {len(long_text):,} characters")
    assert long_text in [m.value for m in more.markdown]  # no Markdown character in it: shown as is
    assert not any(e.label.startswith("All ") for e in at.expander if e.label != more.label)  # short ones: whole


def test_a_cards_time_is_in_the_users_time_zone(app):
    at = app("pages/memories.py")
    visitor = at.session_state["mp_visitor"]
    memory = memories.remember(visitor.scope, "favorite_color", "teal").memory
    at.run()
    assert any(c.value.endswith(memory.updated_at.strftime("%Y-%m-%d %H:%M UTC")) for c in at.caption)
    profiles.update_profile(visitor.scope, "timezone", "Pacific/Kiritimati")
    at.run()
    there = memory.updated_at.astimezone(ZoneInfo("Pacific/Kiritimati")).strftime("%Y-%m-%d %H:%M +14")
    assert any(c.value.endswith(there) for c in at.caption), [c.value for c in at.caption]


def test_a_search_of_only_spaces_says_it_searched_nothing(app):
    """Found in a fresh-clone walkthrough on 2026-12-07: it did nothing and said nothing (the Chat page
    says why it sent nothing; the Knowledge page showed only its usual hint)."""
    at, _ = _seeded(app)
    _search(at, "   ")
    assert not at.exception, at.exception
    assert [c.value for c in at.caption if "Nothing was searched: the box holds only spaces" in c.value]
    assert not [t for t in at.table if "Fused score" in t.value.columns]
    kb = app("pages/knowledge.py")
    kb.text_input(key="kb_query").set_value("  ")
    next(b for b in kb.button if b.label == "Search" and b.form_id == "knowledge_search_form").click()
    kb.run()
    assert [c.value for c in kb.caption if "Nothing was searched: the box holds only spaces" in c.value]
    _search(at, "")  # an empty box: Search did nothing, silently, until 2026-12-07 (here, on Knowledge, Sessions)
    assert [c.value for c in at.caption if "Nothing was searched: the box is empty. Type some words" in c.value]
    kb.text_input(key="kb_query").set_value("")
    next(b for b in kb.button if b.label == "Search" and b.form_id == "knowledge_search_form").click()
    kb.run()
    assert [c.value for c in kb.caption if "Nothing was searched: the box is empty" in c.value]
    kb.run()  # the next run of the page, with no click: the box is as it was before any search
    assert not [c.value for c in kb.caption if "Nothing was searched" in c.value]
    _search(at, "?!")  # and punctuation alone, which has no meaning to search for
    assert [c.value for c in at.caption if "Nothing was searched: “?!” has no letter or digit in it" in c.value]
    assert not [t for t in at.table if "Fused score" in t.value.columns]
