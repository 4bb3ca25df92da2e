"""The Voice page in a real browser: headless Chromium with a fake microphone
that plays a Piper-recorded "Hello, it is me again, back from my trip, and my
favorite color is teal." into a running app (`streamlit run`, the test database). The WebRTC call starts,
the transcript shows the words while they are said (an interim line) and then the
whole sentence, the memory is stored for the signed-in visitor, and the agent's
audio comes back to the browser (WebRTC getStats)."""

from __future__ import annotations

import re
import tempfile
import time
import uuid
from pathlib import Path

import pytest
from playwright.sync_api import expect

from core import db, memories, sessions
from core.db import Scope
from tests.support.app import free_port, start_streamlit, stop_streamlit
from tests.support.browser import (
    WEBRTC_FRAME,
    drop_first_message,
    open_page,
    screenshot,
    start_call,
    user_id_of,
    wait_for_app,
    wait_for_identity_cookie,
    what_the_page_went_through,
)
from ui.voice import DISCONNECT_GRACE_MS

# A WebRTC call between headless Chromium and aiortc on this 2-core machine, at the end of the full suite,
# now and then never came up, or a message typed as it connected was not shown in time. One cause was
# found (2026-11-26): Streamlit 1.67's frontend crashes now and then with "Cannot set a node at a delta
# path" while the Voice page's fragments rerun beside a full rerun; the app is unmounted, the WebRTC frame
# with it, so the call ends (docs/VOICE.md, "Notes and limits"). The page reloads itself (ui/recovery.py),
# but the call is gone. Streamlit cannot be fixed from here, so each test gets two more tries in a fresh
# browser: a behaviour that is broken fails all three, and the run ends with why each try was needed.
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.flaky(reruns=2, reruns_delay=2)]

CALL_TIMEOUT_MS = 150_000  # the first call in a fresh server loads Silero, Whisper and Piper

# Runs in every frame before its scripts: keep each RTCPeerConnection so the test can read its stats.
RECORD_PEER_CONNECTIONS = """
(() => {
  const Original = window.RTCPeerConnection;
  if (!Original) return;
  window.__peerConnections = [];
  window.RTCPeerConnection = function (...args) {
    const pc = new Original(...args);
    window.__peerConnections.push(pc);
    return pc;
  };
  window.RTCPeerConnection.prototype = Original.prototype;
  Object.setPrototypeOf(window.RTCPeerConnection, Original);
})();
"""

# Notes every text the user's transcript line shows, with when it was shown: an interim line
# (italic, ending in " …") lives for about a second, between two polls of a test.
WATCH_USER_TRANSCRIPT = """
() => {
  window.__userLines = [];
  const seen = new Set();
  const note = () => {
    for (const message of document.querySelectorAll('[data-testid="stChatMessage"]')) {
      if (!message.querySelector('[data-testid="stChatMessageAvatarUser"]')) continue;
      const interim = message.querySelector('[data-testid="stMarkdownContainer"] em');
      const body = message.querySelector('[data-testid="stMarkdownContainer"]');
      const text = (interim || body || message).innerText.trim();
      const key = (interim ? 'i:' : 'f:') + text;
      if (!text || seen.has(key)) continue;
      seen.add(key);
      window.__userLines.push({text, interim: !!interim, at: Date.now()});
    }
  };
  new MutationObserver(note).observe(document.body, {subtree: true, childList: true, characterData: true});
}
"""

INBOUND_AUDIO_STATS = """
async () => {
  const out = [];
  for (const pc of (window.__peerConnections || [])) {
    const stats = await pc.getStats();
    stats.forEach(r => { if (r.type === 'inbound-rtp' && r.kind === 'audio')
      out.push({bytes: r.bytesReceived || 0, energy: r.totalAudioEnergy || 0, level: r.audioLevel || 0}); });
  }
  return out;
}
"""


# What ui/resend.py's browser script holds, and whether a script run is showing, for a failure message.


def _webrtc_frame(page):
    return next(f for f in page.frames if "webrtc_streamer" in f.url)


def _inbound_audio(page) -> dict:
    stats = _webrtc_frame(page).evaluate(INBOUND_AUDIO_STATS)
    return {"bytes": sum(s["bytes"] for s in stats), "energy": sum(s["energy"] for s in stats)}


def test_voice_call_in_the_browser_remembers_what_was_said(streamlit_server, new_mic_page):
    page = new_mic_page((1600, 1000), init_script=RECORD_PEER_CONNECTIONS)
    page.goto(streamlit_server)
    wait_for_app(page)
    page.get_by_text("User id").first.wait_for(timeout=60_000)
    user_id = uuid.UUID(re.search(r"User id:\s*([0-9a-f-]{36})", page.inner_text("body")).group(1))
    wait_for_identity_cookie(page)
    # a nav click that lands while a run is starting can be dropped: click again if so
    for attempt in range(3):
        page.get_by_role("link", name="Voice").click()
        try:
            page.get_by_text("Local pipeline").first.wait_for(timeout=30_000)
            break
        except Exception:
            if attempt == 2:
                raise

    page.evaluate(WATCH_USER_TRANSCRIPT)
    webrtc = page.frame_locator(WEBRTC_FRAME)
    start_call(page)

    messages = page.locator('[data-testid="stChatMessage"]')
    try:
        messages.filter(has_text=re.compile(r"favorite colou?r.*teal", re.I)).first.wait_for(timeout=CALL_TIMEOUT_MS)
        messages.filter(has_text=re.compile(r"remember.*teal", re.I)).first.wait_for(timeout=60_000)
    except Exception as exc:
        page.screenshot(path=str(Path(tempfile.gettempdir()) / "voice-browser-failure.png"))
        raise AssertionError(
            f"transcript so far: {messages.all_inner_texts()}; "
            f"status: {page.locator('[data-testid=stCaptionContainer]').all_inner_texts()}"
        ) from exc

    # the words showed while they were being said, before the final transcript replaced them
    lines = page.evaluate("window.__userLines")
    final_at = min(line["at"] for line in lines if not line["interim"] and re.search(r"teal", line["text"], re.I))
    interims = [line for line in lines if line["interim"] and line["at"] < final_at]
    assert interims, lines
    assert all(line["text"].endswith("…") for line in interims)
    assert any(re.search(r"\b(hello|again|back|trip|favou?rite)\b", line["text"], re.I) for line in interims), interims

    stored = memories.recall(Scope.service(user_id), "favorite_color")  # as the page's verified visitor
    assert stored.content == "teal"

    # the agent's voice reached the browser: audio bytes and energy on the inbound track
    deadline = time.monotonic() + 30
    audio = _inbound_audio(page)
    while audio["energy"] <= 0 and time.monotonic() < deadline:
        time.sleep(1)
        audio = _inbound_audio(page)
    assert audio["bytes"] > 10_000 and audio["energy"] > 0, audio
    # the retrieval panel caught up; it shows the latest answered turn, and the fake microphone plays its file in
    # a loop, so by now that can be the sentence said again (a CI run's first try waited for "Turn 1:" in vain)
    page.get_by_text(re.compile(r"^Turn \d+:")).first.wait_for(timeout=30_000)
    # the call's latency so far follows the call: opened now, it has the answered turn, drawn after the page
    page.get_by_text("Latency of this call so far").click()
    table = page.locator('.st-key-u_voice_call_latency [role="columnheader"]')
    table.first.wait_for(state="attached", timeout=30_000)  # the grid draws the columns in view
    assert {"Turn", "End-of-utterance delay", "Speech-to-text"} <= {h.strip() for h in table.all_text_contents()}
    cells = page.locator('.st-key-u_voice_call_latency [role="gridcell"]').all_text_contents()
    assert any(re.fullmatch(r"[\d,.]+ ms", cell.strip()) for cell in cells), cells
    screenshot(page, "voice")

    webrtc.get_by_role("button", name="End call").click()
    page.get_by_text("its report (transcript, tool calls, per-turn latencies) was saved").wait_for(timeout=90_000)
    reports = sessions.list_sessions(Scope.service(user_id))
    voice = [r for r in reports if r.session_id.startswith("voice-")]
    assert voice and voice[0].report["voice"]["pipeline"] == "local"
    assert voice[0].report["voice"]["speech_recognition"]["interims"] >= 1
    assert voice[0].report["voice"]["turn_latency_ms"][0]["e2e_ms"] > 0


@pytest.mark.parametrize("lost", [False, True], ids=["delivered", "lost-on-the-way"])
def test_a_message_typed_while_the_call_connects_is_shown_at_once_and_answered(
    streamlit_server, new_quiet_mic_page, lost
):
    """The Voice page's text box during a call: typed the moment it appears (the call's agent still
    connecting), the message shows in the transcript at once, once, and the agent answers it. With
    `lost`, the websocket drops the submission: the page sends it again (ui/resend.py), once. The
    microphone is silent: the looped sentence would barge in on the answer (and once, on a loaded
    machine, cut it before its first words, so it never showed)."""
    page = new_quiet_mic_page((1600, 1000))
    dropped = drop_first_message(page, b"1003") if lost else []
    page.goto(streamlit_server)
    wait_for_app(page)
    open_page(page, "Voice")
    webrtc = page.frame_locator(WEBRTC_FRAME)
    start_call(page, until_connected=False)  # the text box is used the moment it shows

    box = page.locator('[data-testid="stChatInputTextArea"]')  # shown with the call
    box.wait_for(state="visible", timeout=60_000)
    message = "Where is order 1003?"
    box.fill(message)
    box.press("Enter")

    messages = page.locator('[data-testid="stChatMessage"]')
    mine = messages.filter(has_text=message)
    try:
        expect(mine.first).to_be_visible(timeout=30_000 if lost else 15_000)
    except AssertionError as exc:
        raise AssertionError(f"not shown; {what_the_page_went_through(page)}") from exc
    assert bool(dropped) == lost
    answer = messages.filter(has_text="1003").filter(has_not_text=message)
    expect(answer.first).to_be_visible(timeout=CALL_TIMEOUT_MS)
    expect(mine).to_have_count(1)
    # streamlit-webrtc's own listener goes through the frame's patch (ui/voice.WEBRTC_FRAME_FIXES)
    assert "connected" in [s["state"] for s in _webrtc_frame(page).evaluate("() => window.__mpConnectionStates")]
    webrtc.get_by_role("button", name="End call").click()
    page.get_by_text("its report (transcript, tool calls, per-turn latencies) was saved").wait_for(timeout=90_000)


# In the WebRTC frame: two peer connections whose state the test sets, each with a listener that notes
# what it hears, as streamlit-webrtc's own listener would (the frame's patched addEventListener wraps both).
FAKE_CONNECTIONS = """() => {
  const make = () => {
    const pc = new RTCPeerConnection();
    let state = 'new';
    Object.defineProperty(pc, 'connectionState', {get: () => state});
    const heard = [];
    pc.addEventListener('connectionstatechange', () => heard.push(pc.connectionState));
    return {heard, set: (s) => { state = s; pc.dispatchEvent(new Event('connectionstatechange')); }};
  };
  window.__mpFake = {blip: make(), gone: make()};
}"""


def test_a_call_hears_disconnected_only_when_it_lasts(streamlit_server, new_browser_page):
    """streamlit-webrtc ends a call the moment the browser's connection says "disconnected", a state ICE
    leaves by itself when packets flow again (a pause of 8 s in the app's process ended a call here).
    The Voice page's script in the WebRTC frame holds "disconnected" back for DISCONNECT_GRACE_MS and
    passes it on only if the connection is still disconnected then; every other state at once."""
    page = new_browser_page((1600, 1000))
    page.goto(streamlit_server)
    wait_for_app(page)
    open_page(page, "Voice")
    page.frame_locator(WEBRTC_FRAME).get_by_role("button", name="Start call").wait_for(timeout=60_000)
    frame = _webrtc_frame(page)
    frame.wait_for_function("() => RTCPeerConnection.prototype.mpPatient === true", timeout=10_000)
    frame.evaluate(FAKE_CONNECTIONS)
    heard = "() => ({blip: __mpFake.blip.heard, gone: __mpFake.gone.heard})"

    frame.evaluate("() => { __mpFake.blip.set('connected'); __mpFake.gone.set('connected'); }")
    frame.evaluate("() => { __mpFake.blip.set('disconnected'); __mpFake.gone.set('disconnected'); }")
    page.wait_for_timeout(2_000)
    assert frame.evaluate(heard) == {"blip": ["connected"], "gone": ["connected"]}  # held back
    frame.evaluate("() => __mpFake.blip.set('connected')")  # the blip is over
    assert frame.evaluate(heard)["blip"] == ["connected", "connected"]

    page.wait_for_timeout(DISCONNECT_GRACE_MS - 2_000 + 1_500)
    assert frame.evaluate(heard) == {
        "blip": ["connected", "connected"],  # never told of the blip
        "gone": ["connected", "disconnected"],  # still disconnected after the grace: the call ends
    }
    frame.evaluate("() => __mpFake.blip.set('failed')")
    assert frame.evaluate(heard)["blip"][-1] == "failed"  # at once
    states = [s["state"] for s in frame.evaluate("() => window.__mpConnectionStates")]
    assert states.count("disconnected") == 2 and states[-1] == "failed"


def _voice_sessions(user_id: uuid.UUID, *, reported: bool = False) -> list[str]:
    """The user's voice sessions (`reported`: only those whose report is saved, not still going)."""
    return [
        r.session_id
        for r in sessions.list_sessions(Scope.service(user_id))
        if r.session_id.startswith("voice-") and (r.report or not reported)
    ]


def _until(check, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not check() and time.monotonic() < deadline:
        time.sleep(0.25)
    return check()


def test_a_call_whose_session_is_deleted_elsewhere_says_so_and_goes_on_in_a_new_session(
    streamlit_server, new_quiet_mic_page
):
    """The session of a running call is deleted by another app process (here: SQL straight to the database):
    the call's conversation ends, and the page says why and goes on in a new session while the browser
    still streams, instead of going silent; the notice goes once the visitor has said something in it."""
    page = new_quiet_mic_page((1600, 1000))
    page.goto(streamlit_server)
    wait_for_app(page)
    page.get_by_text("User id").first.wait_for(timeout=60_000)
    user_id = uuid.UUID(re.search(r"User id:\s*([0-9a-f-]{36})", page.inner_text("body")).group(1))
    open_page(page, "Voice")
    start_call(page)
    box = page.locator('[data-testid="stChatInputTextArea"]')
    box.fill("Where is order 1001?")  # a call is a session from the visitor's first words on
    box.press("Enter")
    assert _until(lambda: len(_voice_sessions(user_id)) == 1, timeout=60), "the call's turns were not stored"
    [deleted] = _voice_sessions(user_id)
    with db.admin_connection() as conn:
        conn.execute("delete from public.sessions where session_id = %s", (deleted,))

    notice = page.get_by_text("its session was deleted (Delete this session or Delete everything)")
    try:
        notice.first.wait_for(timeout=30_000)
    except Exception as exc:
        raise AssertionError(f"no notice; {what_the_page_went_through(page)}") from exc
    # the notice stays until the visitor's first turn in the new session, then goes; the new session is
    # listed from that turn on
    expect(notice.first).to_be_visible()
    assert _voice_sessions(user_id) == []
    box.fill("Where is order 1003?")
    box.press("Enter")
    answer = page.locator('[data-testid="stChatMessage"]').filter(has_text="1003").filter(has_not_text="Where is")
    expect(answer.first).to_be_visible(timeout=CALL_TIMEOUT_MS)
    expect(notice).to_have_count(0, timeout=10_000)
    assert _until(lambda: len(_voice_sessions(user_id)) == 1 and _voice_sessions(user_id) != [deleted], timeout=90)
    [new] = _voice_sessions(user_id)
    page.frame_locator(WEBRTC_FRAME).get_by_role("button", name="End call").click()
    page.get_by_text("its report (transcript, tool calls, per-turn latencies) was saved").wait_for(timeout=90_000)
    assert _voice_sessions(user_id) == [new] and sessions.get_session(Scope.service(user_id), new).report


@pytest.fixture(scope="module")
def unreachable_livekit_server(database_uri):
    """The app with LiveKit configured at a port where nothing listens (no LiveKit server can run here)."""
    closed_port = free_port()
    env = {
        "LIVEKIT_URL": f"ws://127.0.0.1:{closed_port}",
        "LIVEKIT_API_KEY": "devkey",
        "LIVEKIT_API_SECRET": "secret-that-is-long-enough-for-hs256-0123456789",
        "LLM_MODEL": "offline",
        "STT_MODEL": "local",
        "TTS_MODEL": "local",
    }
    process, url = start_streamlit(env)
    try:
        yield url, env["LIVEKIT_URL"]
    finally:
        stop_streamlit(process)


def test_a_livekit_call_that_cannot_join_the_room_says_why(unreachable_livekit_server, new_quiet_mic_page):
    """The failed call is no longer live, so the page's live panels showed nothing at all: End call and an
    empty page, for as long as one waited."""
    url, livekit_url = unreachable_livekit_server
    page = new_quiet_mic_page((1600, 1000))
    page.goto(url)
    wait_for_app(page)
    open_page(page, "Voice")
    start_call(page)
    alert = page.locator('[data-testid="stAlert"]', has_text="Could not join the LiveKit room")
    alert.first.wait_for(timeout=60_000)
    assert livekit_url in alert.first.inner_text() and "LIVEKIT_URL" in alert.first.inner_text()
    expect(page.get_by_text("then Start call to try again")).to_be_visible()

    # ending it does not claim a room was left and a report will be saved
    page.frame_locator(WEBRTC_FRAME).get_by_role("button", name="End call").click()
    page.get_by_text("The call ended without joining the LiveKit room").wait_for(timeout=30_000)
    expect(page.get_by_text("You left the LiveKit room")).to_have_count(0)


def test_a_call_says_that_another_page_ends_it_and_leaving_saves_its_report(streamlit_server, new_quiet_mic_page):
    """Leaving the Voice page mid-call ends the call (the WebRTC connection lives in the page); nothing said so.
    Coming straight back, the page says the call ended and its report was saved: the first run back was cut
    short by a rerun while it waited for the report, and the page said nothing of the call."""
    page = new_quiet_mic_page((1600, 1000))
    page.goto(streamlit_server)
    wait_for_app(page)
    user_id = uuid.UUID(user_id_of(page))
    open_page(page, "Voice")
    start_call(page)
    page.get_by_text("another page or a reload ends the call").wait_for(timeout=60_000)
    box = page.locator('[data-testid="stChatInputTextArea"]')  # a call is kept once the visitor says something
    box.fill("Where is order 1003?")
    box.press("Enter")
    messages = page.locator('[data-testid="stChatMessage"]')
    expect(messages.filter(has_text="1003").filter(has_not_text="Where is").first).to_be_visible(
        timeout=CALL_TIMEOUT_MS
    )
    open_page(page, "Chat")
    open_page(page, "Voice")
    ended = page.get_by_text(re.compile(r"Call voice-\w+ ended; its report .* was saved"))
    try:
        ended.first.wait_for(timeout=30_000)
    except Exception as exc:
        raise AssertionError(f"no word of the call that ended; {what_the_page_went_through(page)}") from exc
    assert _until(lambda: len(_voice_sessions(user_id, reported=True)) == 1, 60), "the call's report was not saved"
    assert _voice_sessions(user_id)[0] in ended.first.inner_text()


def test_the_page_does_not_say_connecting_while_the_agent_greets(streamlit_server, new_quiet_mic_page):
    """A local call's `ready` resolves once the greeting has been spoken, and the page said "Connecting the
    agent" until then, under the greeting it was saying (10 s with two calls at once)."""
    page = new_quiet_mic_page((1600, 1000))
    page.goto(streamlit_server)
    wait_for_app(page)
    open_page(page, "Voice")
    start_call(page)
    greeting = page.locator('[data-testid="stChatMessage"]', has=page.get_by_test_id("stChatMessageAvatarAssistant"))
    try:
        greeting.first.wait_for(timeout=CALL_TIMEOUT_MS)
    except Exception as exc:
        raise AssertionError(f"no greeting; {what_the_page_went_through(page)}") from exc
    # the status fragment redraws twice a second: the greeting takes longer than this to say
    expect(page.get_by_text("Connecting the agent")).to_have_count(0, timeout=1_500)
    page.frame_locator(WEBRTC_FRAME).get_by_role("button", name="End call").click()
    # the visitor said nothing: the call is not kept, and the page says so (no report, no Sessions link)
    page.get_by_text(re.compile(r"Call voice-\w+ ended before you said anything")).wait_for(timeout=90_000)
    expect(page.get_by_text("Open it on the Sessions page")).to_have_count(0)
