"""The app in Chromium with a real LLM endpoint configured, as a user runs it:
`streamlit run` with OPENAI_BASE_URL / OPENAI_API_KEY / LLM_MODEL pointing at
the OpenAI-compatible stand-in (tests/support/openai_standin.py).

The Chat page teaches and recalls through the model, shows the retrieval
panel, and its report reaches the Sessions page; every way the model can fail
shows as one sentence in the conversation and in the turn panel, and the
report keeps the errors; the Voice page runs a call (fake microphone, local
Whisper and Piper) with the same model. The openai plugin is registered in
that server process the way every user's is (ui/shell.py -> agent/plugins.py).
"""

from __future__ import annotations

import re
import uuid

import pytest
from playwright.sync_api import expect

from core import memories, sessions
from core.db import Scope
from tests.support.app import start_streamlit, stop_streamlit
from tests.support.browser import (
    WEBRTC_FRAME,
    answered_turns,
    open_page,
    screenshot,
    send,
    start_call,
    table_rows,
    user_id_of,
    wait_for_app,
    wait_for_identity_cookie,
    what_the_page_went_through,
)
from tests.support.llm_requests import (
    NO_RECALL_SKIPS,
    assert_agent_requests,
    assert_recall_carries,
    first_request_for,
    last_user_text,
)
from tests.support.openai_standin import OpenAIStandIn

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TIMEOUT_SECONDS = 3  # LLM_TIMEOUT_SECONDS for this server, so the timeout case is quick


@pytest.fixture(scope="module")
def llm_app(database_uri, tmp_path_factory):
    """(app url, stand-in): a `streamlit run` whose LLM is the stand-in."""
    server = OpenAIStandIn(slow_seconds=30).start()
    env = {**server.env(), **NO_RECALL_SKIPS, "LLM_TIMEOUT_SECONDS": str(TIMEOUT_SECONDS), "LLM_MAX_RETRIES": "1"}
    log = tmp_path_factory.mktemp("llm-app") / "streamlit.log"
    process, url = start_streamlit(env, log_path=log)
    try:
        yield url, server
    finally:
        stop_streamlit(process)
        server.stop()
        assert "Plugins must be registered on the main thread" not in log.read_text()


def _open_chat(page, url: str) -> str:
    page.goto(url)
    wait_for_identity_cookie(page)
    answered_turns(page).first.wait_for(timeout=90_000)  # the model's greeting
    return user_id_of(page)


def test_chat_page_teaches_and_recalls_through_the_llm(llm_app, new_mic_page):
    url, server = llm_app
    server.reset()
    page = new_mic_page((1920, 1080))
    visitor = _open_chat(page, url)
    expect(page.get_by_text(f"OpenAI-compatible: gpt-4o-mini at {server.base_url}").first).to_be_visible()
    assert page.get_by_text("not an LLM").count() == 0
    assert "Hi! I'm the Kestrel Coffee assistant" in answered_turns(page).first.inner_text()

    assert "Got it, I'll remember that your favorite color is teal." in send(page, "my favorite color is teal")
    assert "your favorite color is teal." in send(page, "what is my favorite color?")
    rows = table_rows(page)  # the retrieval panel for this turn, with its scores
    header = next(row for row in rows if "Fused score" in row)
    assert any("favorite_color" in cell for row in rows for cell in row)
    assert {"Memory", "Vector", "Text", "Fused score"} <= set(header)  # the side panel's compact table

    page.get_by_role("button", name="End session").click()
    page.get_by_text("report was saved").wait_for(timeout=90_000)
    open_page(page, "Sessions")
    page.get_by_text("Latency per turn").wait_for(timeout=30_000)
    assert page.get_by_text("what is my favorite color?").count() >= 1

    scope = Scope.service(uuid.UUID(visitor))
    report = sessions.list_sessions(scope)[0].report
    assert report["playground"]["models"]["llm_backend"] == "openai"
    assert report["playground"]["errors"] == []
    assert memories.recall(scope, "favorite_color").content == "teal"
    requests = [r for r in server.chat_requests() if r.status == 200]
    assert_agent_requests(requests)
    assert last_user_text(requests[0]).startswith("<instructions>\nGreet the user")
    assert_recall_carries(first_request_for(requests, "what is my favorite color?"), "- favorite_color: teal")


def _failed_turn(page, text: str, sentence: str) -> None:
    """Send `text`; the turn must show `sentence` (and no traceback) in the conversation."""
    answer = send(page, text)
    assert sentence in answer, answer
    assert "Traceback" not in page.inner_text("body")


def test_chat_page_shows_each_llm_failure_as_one_sentence_and_keeps_the_session(llm_app, new_mic_page):
    url, server = llm_app
    page = new_mic_page((1920, 1080))
    visitor = _open_chat(page, url)
    where = server.base_url

    server.fail("unauthorized")
    _failed_turn(page, "where is order 1001?", f"The LLM at {where} refused the API key (401): check OPENAI_API_KEY.")
    server.clear()
    models = server.models
    server.models = ("some-other-model",)
    _failed_turn(
        page, "where is order 1002?", f"The LLM at {where} has no model named 'gpt-4o-mini' (404): check LLM_MODEL."
    )
    server.models = models
    server.fail("rate_limited", times=2, when="order 1003")
    _failed_turn(page, "where is order 1003?", f"The LLM at {where} is rate-limiting requests (429)")
    server.fail("slow", times=2, when="order 1004")
    _failed_turn(
        page,
        "where is order 1004?",
        f"The LLM at {where} did not answer within {TIMEOUT_SECONDS} s: check that the server is running "
        "and the model is loaded, or raise LLM_TIMEOUT_SECONDS.",
    )
    server.fail("cut", times=1, when="favorite color is teal")
    _failed_turn(page, "my favorite color is teal", f"The LLM at {where} stopped in the middle of its answer")
    server.fail("malformed_arguments", times=1, when="what is my favorite color")
    _failed_turn(
        page,
        "what is my favorite color?",
        "The LLM called recall_detail with arguments that are not valid JSON, so that call was skipped",
    )
    server.fail("unknown_tool", times=1, when="order 1005")
    _failed_turn(
        page,
        "where is order 1005?",
        "The LLM asked for a tool that does not exist (transfer_to_billing), so that call was skipped",
    )
    server.stop()
    unreachable = f"The LLM at {where} could not be reached: check OPENAI_BASE_URL and that the server is running."
    _failed_turn(page, "where is order 1001?", unreachable)
    # the turn panel beside it shows the newest turn as failed, with the same sentence
    page.get_by_text(re.compile(r"· failed · ")).first.wait_for(timeout=30_000)
    assert page.get_by_text(unreachable).count() >= 2  # the conversation and the turn panel
    screenshot(page, "chat-llm-error")

    server.start()  # the server is back: the same conversation goes on
    assert "Order 1002 is shipped" in send(page, "where is order 1002?")
    page.get_by_role("button", name="End session").click()
    page.get_by_text("report was saved").wait_for(timeout=90_000)
    open_page(page, "Sessions")
    page.get_by_text("8 error(s) during the session").wait_for(timeout=30_000)

    report = sessions.list_sessions(Scope.service(uuid.UUID(visitor)))[0].report
    kinds = [(e["turn"], e["kind"]) for e in report["playground"]["errors"]]
    assert kinds == [
        (1, "auth"),
        (2, "model"),
        (3, "rate_limit"),
        (4, "timeout"),
        (5, "cut"),
        (6, "tool_arguments"),
        (7, "unknown_tool"),
        (8, "unreachable"),
    ]


def test_a_slow_answer_can_be_stopped_and_the_conversation_goes_on(llm_app, new_mic_page):
    url, server = llm_app
    server.reset()
    page = new_mic_page((1600, 1000))
    _open_chat(page, url)
    server.fail("slow", times=2, when="order 1003")  # no answer for 30 s (the timeout would end it in 3 s, twice)
    box = page.locator('[data-testid="stChatInputTextArea"]')
    box.fill("where is order 1003?")
    box.press("Enter")
    page.get_by_role("button", name="Stop", exact=True).click(timeout=10_000)
    stopped = answered_turns(page).last
    expect(stopped).to_contain_text("You stopped this answer.", timeout=15_000)
    assert "did not answer within" not in stopped.inner_text()  # stopped, not timed out
    expect(page.get_by_role("button", name="Stop", exact=True)).to_have_count(0)
    # the conversation goes on, and the next question is asked on its own
    assert "Order 1002 is shipped" in send(page, "where is order 1002?")
    assert last_user_text(server.chat_requests()[-1]).endswith("where is order 1002?")
    assert "1003" not in last_user_text(server.chat_requests()[-1])


# A WebRTC call in headless Chromium at the end of the full suite: the same documented flakiness as
# tests/voice/test_voice_browser.py (Streamlit's frontend crash; docs/VOICE.md, "Notes and limits"; once here the
# call's Start button did not show within 60 s), so two more tries in a fresh browser; a broken call fails all three.
@pytest.mark.flaky(reruns=2, reruns_delay=2)
def test_voice_call_with_the_llm(llm_app, new_mic_page):
    url, server = llm_app
    server.reset()
    page = new_mic_page((1600, 1000))
    page.goto(url)
    wait_for_app(page)
    page.get_by_text("User id").first.wait_for(timeout=60_000)
    user_id = uuid.UUID(re.search(r"User id:\s*([0-9a-f-]{36})", page.inner_text("body")).group(1))
    wait_for_identity_cookie(page)
    for attempt in range(3):  # a nav click during a run can be dropped
        page.get_by_role("link", name="Voice").click()
        try:
            page.get_by_text("Local pipeline").first.wait_for(timeout=30_000)
            break
        except Exception:
            if attempt == 2:
                raise
    webrtc = page.frame_locator(WEBRTC_FRAME)
    messages = page.locator('[data-testid="stChatMessage"]')
    start_call(page)
    try:
        messages.filter(has_text=re.compile(r"remember.*teal", re.I)).first.wait_for(timeout=150_000)
    except Exception as exc:
        raise AssertionError(f"the memory was not confirmed; {what_the_page_went_through(page)}") from exc
    assert memories.recall(Scope.service(user_id), "favorite_color").content == "teal"

    webrtc.get_by_role("button", name="End call").click()
    page.get_by_text("its report (transcript, tool calls, per-turn latencies) was saved").wait_for(timeout=90_000)
    voice = [r for r in sessions.list_sessions(Scope.service(user_id)) if r.session_id.startswith("voice-")]
    assert voice[0].report["playground"]["models"]["llm_backend"] == "openai"
    assert voice[0].report["playground"]["errors"] == []
    requests = [r for r in server.chat_requests() if r.status == 200]
    assert_agent_requests(requests)
    # what Whisper heard reached the model as the user's turn, after the greeting
    heard = [
        r
        for r in requests
        if r.messages[-1]["role"] == "user" and re.search(r"favou?rite colou?r.{0,4}teal", last_user_text(r), re.I)
    ]
    assert heard and heard[0].messages[0]["role"] == "system"
