"""A typed message that never reaches the server is sent again by the page, and only once.

Streamlit now and then loses a chat submission on its way to a script run (once in roughly a hundred cold
starts, in CI: no bubble, no answer, an empty box). Here the loss is made to happen: the websocket
between Chromium and `streamlit run` is routed through Playwright, which drops the visitor's first
submission. The page's resend script (ui/resend.py) must notice and send it again; the server must
keep exactly one copy, without the script's invisible mark."""

from __future__ import annotations

import uuid

import pytest
from playwright.sync_api import expect

from tests.support.browser import (
    TURN_TIMEOUT_MS,
    answered_turns,
    drop_first_message,
    user_id_of,
    wait_for_identity_cookie,
)
from tests.support.users import stored_rows
from ui import resend

pytestmark = [pytest.mark.browser, pytest.mark.slow]
CHAT_INPUT = '[data-testid="stChatInputTextArea"]'


def _send_after_the_greeting(page, server: str, message: str):
    """Open the app as a new visitor, wait for the agent's greeting, send `message`; returns the chat box."""
    page.goto(server)
    wait_for_identity_cookie(page)
    answered_turns(page).first.wait_for(timeout=TURN_TIMEOUT_MS)
    box = page.locator(CHAT_INPUT)
    box.fill(message)
    box.press("Enter")
    return box


def test_a_message_lost_on_its_way_is_sent_again_and_kept_once(streamlit_server, new_browser_page):
    page = new_browser_page()
    dropped = drop_first_message(page, b"ochre")
    page.goto(streamlit_server)
    wait_for_identity_cookie(page)
    answered_turns(page).first.wait_for(timeout=TURN_TIMEOUT_MS)  # the greeting
    visitor = user_id_of(page)

    message = "my favorite color is ochre"
    box = page.locator(CHAT_INPUT)
    box.fill(message)
    box.press("Enter")
    expect(box).to_have_value("")  # Streamlit cleared the box: from here on only the page remembers it
    page.wait_for_timeout(1500)
    assert dropped, "the submission was not dropped: the test did not test anything"
    bubbles = page.locator('[data-testid="stChatMessage"]', has_text=message)
    expect(bubbles).to_have_count(0)  # lost, as in the failure seen in CI

    answer = answered_turns(page).filter(has_text="ochre")
    expect(answer.first).to_be_visible(timeout=TURN_TIMEOUT_MS)  # sent again and answered
    page.wait_for_timeout(6000)  # long enough for a second resend, if the page were to make one
    expect(bubbles).to_have_count(1)
    assert bubbles.first.inner_text().strip().endswith(message)  # the mark is not shown
    stored = [m for m in stored_rows(uuid.UUID(visitor))["memories"] if m["memory_type"] == "favorite_color"]
    assert [m["content"] for m in stored] == ["ochre"]  # stored once, without the mark


def test_a_message_that_never_gets_through_goes_back_into_the_box(streamlit_server, new_browser_page):
    """The first submission and every one of the page's tries are lost: the text is put back into the box,
    unsent, instead of disappearing."""
    page = new_browser_page()
    dropped = drop_first_message(page, b"russet", times=1 + resend.MAX_RESENDS)
    message = "my favorite color is russet"
    box = _send_after_the_greeting(page, streamlit_server, message)
    expect(box).to_have_value("")
    expect(box).to_have_value(message, timeout=(resend.MAX_RESENDS + 3) * resend.RESEND_AFTER_MS + 10_000)
    assert len(dropped) == 1 + resend.MAX_RESENDS
    expect(page.locator('[data-testid="stChatMessage"]', has_text=message)).to_have_count(0)


def test_a_message_that_arrived_is_not_sent_again(streamlit_server, new_browser_page):
    """Nothing dropped: several quick messages, each kept once (the resend script stays quiet)."""
    page = new_browser_page()
    page.goto(streamlit_server)
    wait_for_identity_cookie(page)
    answered_turns(page).first.wait_for(timeout=TURN_TIMEOUT_MS)
    box = page.locator(CHAT_INPUT)
    messages = ["my favorite color is umber", "I live in Porto", "what is my favorite color?"]
    for message in messages:
        box.fill(message)
        box.press("Enter")
    expect(answered_turns(page)).to_have_count(len(messages) + 1, timeout=TURN_TIMEOUT_MS)
    page.wait_for_timeout(6000)
    for message in messages:
        expect(page.locator('[data-testid="stChatMessage"]', has_text=message)).to_have_count(1)
    expect(answered_turns(page)).to_have_count(len(messages) + 1)


def test_a_message_lost_between_two_that_arrived_is_sent_again(streamlit_server, new_browser_page):
    """Three quick messages, the middle one lost. Streamlit loses one that way: a submission that reaches the
    server while the rerun asked for by the one before is still waiting to start is folded into it, and only
    the newer text is kept (CI lost one of three quick messages so). Later messages arriving must not count
    as the lost one's acknowledgement: the page's script sees which texts arrived and sends it again."""
    page = new_browser_page()
    dropped = drop_first_message(page, b"Porto")
    page.goto(streamlit_server)
    wait_for_identity_cookie(page)
    answered_turns(page).first.wait_for(timeout=TURN_TIMEOUT_MS)
    visitor = user_id_of(page)
    box = page.locator(CHAT_INPUT)
    messages = ["my favorite color is umber", "I live in Porto", "where is order 1001?"]
    for message in messages:
        box.fill(message)
        box.press("Enter")
        expect(box).to_have_value("")
    expect(answered_turns(page).filter(has_text="1001").first).to_be_visible(timeout=TURN_TIMEOUT_MS)
    expect(answered_turns(page)).to_have_count(len(messages) + 1, timeout=TURN_TIMEOUT_MS)  # Porto sent again
    # asked only now: once in a CI run the Enter on "I live in Porto" was lost in the browser itself, so
    # nothing held it by the time 1001 was answered; the page's resend then sent it, and that was dropped
    assert dropped, "the middle message was not dropped: the test did not test anything"
    page.wait_for_timeout(resend.RESEND_AFTER_MS + 2000)  # long enough for a needless second resend
    for message in messages:
        expect(page.locator('[data-testid="stChatMessage"]', has_text=message)).to_have_count(1)
    expect(answered_turns(page)).to_have_count(len(messages) + 1)
    stored = {m["memory_type"]: m["content"] for m in stored_rows(uuid.UUID(visitor))["memories"]}
    assert stored.get("favorite_color") == "umber" and stored.get("home_city") == "Porto", stored


def test_the_page_and_the_server_fingerprint_a_text_alike(streamlit_server, new_browser_page):
    """The browser acknowledges a message by its fingerprint (ui.resend.fingerprint): both sides must agree,
    on accents, emoji (two UTF-16 units) and spaces Streamlit may trim."""
    texts = ["plain", "  spaced out \n", "café ☕ 🚲 naïve", "Zoë\u2019s \u2063mark\u200b", "", "x" * 5000]
    page = new_browser_page()
    page.goto(streamlit_server)
    wait_for_identity_cookie(page)
    page.wait_for_function("() => typeof window.__mpFingerprint === 'function'", timeout=TURN_TIMEOUT_MS)
    in_the_browser = page.evaluate("texts => texts.map(t => window.__mpFingerprint(t))", texts)
    assert in_the_browser == [resend.fingerprint(text) for text in texts]
    assert len(set(in_the_browser)) == len(texts)
    assert resend.fingerprint("  spaced out \n") == resend.fingerprint("spaced out")


def test_a_draft_survives_a_reload_unsent(streamlit_server, new_browser_page):
    """Text typed but not sent is put back into the box after a reload (the visitor's, or the page recovering
    from a frontend crash), and is not sent by itself."""
    page = new_browser_page()
    page.goto(streamlit_server)
    wait_for_identity_cookie(page)
    answered_turns(page).first.wait_for(timeout=TURN_TIMEOUT_MS)
    draft = "my sister Ana moved to Porto last"
    page.locator(CHAT_INPUT).fill(draft)
    page.reload()
    wait_for_identity_cookie(page)
    expect(page.locator(CHAT_INPUT)).to_have_value(draft, timeout=30_000)
    page.wait_for_timeout(3000)
    expect(page.locator('[data-testid="stChatMessage"]', has_text="Ana moved")).to_have_count(0)  # not sent


def test_a_lost_message_is_put_back_after_a_reload_and_one_that_arrived_is_not(streamlit_server, new_browser_page):
    """A message lost on its way, with the page reloaded before it was sent again: the new page puts it back into
    the box, unsent, and it can be sent from there. A message that arrived is never put back."""
    page = new_browser_page()
    dropped = drop_first_message(page, b"sienna")
    page.goto(streamlit_server)
    wait_for_identity_cookie(page)
    answered_turns(page).first.wait_for(timeout=TURN_TIMEOUT_MS)
    visitor = user_id_of(page)

    message = "my favorite color is sienna"
    box = page.locator(CHAT_INPUT)
    box.fill(message)
    box.press("Enter")
    expect(box).to_have_value("")
    page.wait_for_timeout(1000)  # before the page would send it again
    assert dropped, "the submission was not dropped: the test did not test anything"
    page.reload()
    wait_for_identity_cookie(page)
    box = page.locator(CHAT_INPUT)
    expect(box).to_have_value(message, timeout=30_000)  # back in the box
    bubbles = page.locator('[data-testid="stChatMessage"]', has_text=message)
    page.wait_for_timeout(3000)
    expect(bubbles).to_have_count(0)  # and not sent by itself
    assert not [m for m in stored_rows(uuid.UUID(visitor))["memories"] if m["memory_type"] == "favorite_color"]

    box.press("Enter")  # the visitor sends it
    expect(answered_turns(page).filter(has_text="sienna").first).to_be_visible(timeout=TURN_TIMEOUT_MS)
    page.reload()  # it arrived: the reloaded page shows it in the conversation, and the box stays empty
    wait_for_identity_cookie(page)
    expect(bubbles).to_have_count(1, timeout=30_000)
    page.wait_for_timeout(3000)
    expect(page.locator(CHAT_INPUT)).to_have_value("")
    stored = [m for m in stored_rows(uuid.UUID(visitor))["memories"] if m["memory_type"] == "favorite_color"]
    assert [m["content"] for m in stored] == ["sienna"]


def test_a_message_that_arrived_in_markdown_is_not_put_back_after_a_reload(streamlit_server, new_browser_page):
    """The reload came between the message's arrival and the page hearing of it (the tab still holds it as
    unacknowledged). The reloaded conversation shows it as typed (the visitor's words are not read as
    Markdown), and it must count as shown (compared as plain words: the resend script also works where a
    bubble renders Markdown), not be put back."""
    page = new_browser_page()
    message = "my favorite color is **teal** — _really_"
    _send_after_the_greeting(page, streamlit_server, message)
    expect(answered_turns(page).filter(has_text="teal").first).to_be_visible(timeout=TURN_TIMEOUT_MS)
    # what the tab holds when the reload wins the race with the page's acknowledgement
    page.evaluate(
        "text => sessionStorage.setItem('mpSent:u_chat_input', JSON.stringify({text, at: Date.now()}))", message
    )
    page.reload()
    wait_for_identity_cookie(page)
    bubbles = page.locator('[data-testid="stChatMessage"]', has_text=message)
    expect(bubbles).to_have_count(1, timeout=30_000)  # the conversation was taken over, shown as typed
    page.wait_for_timeout(resend.RESTORE_AFTER_MS + 3000)
    expect(page.locator(CHAT_INPUT)).to_have_value("")
