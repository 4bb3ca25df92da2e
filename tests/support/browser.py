"""Headless Chromium (Debian's, via Playwright; never a downloaded browser) and helpers for driving the app in it.

Loaded as a pytest plugin by tests/conftest.py. One Playwright for the whole session, started by the first
browser test: its sync API keeps an asyncio loop marked as running on the main thread while it is open,
and a second one cannot start inside it. tests/conftest.py runs the browser tests after every other test,
so no async test ever runs while it is open. Two browsers come from it: a plain one (`new_browser_page`)
and one whose microphone is a WAV file saying `MIC_SENTENCE` (`new_mic_page`).

Screenshots go to docs/screenshots/ only when MP_UPDATE_SCREENSHOTS=1 (`make screenshots`); otherwise to a
temporary folder, so a test run leaves the working tree as it found it.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import sync_playwright

from tests.support.app import APP_TIMEOUT, PROJECT_ROOT, server_log_tail
from tests.support.audio import piper_utterance, resample, write_wav
from ui.auth import COOKIE_NAME

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
FAKE_MICROPHONE_ARGS = [
    "--use-fake-ui-for-media-stream",
    "--use-fake-device-for-media-stream",
    "--autoplay-policy=no-user-gesture-required",
]
UPDATE_SCREENSHOTS = os.environ.get("MP_UPDATE_SCREENSHOTS") == "1"
SCREENSHOTS = (
    PROJECT_ROOT / "docs" / "screenshots" if UPDATE_SCREENSHOTS else Path(tempfile.gettempdir()) / "mp-screenshots"
)
TURN_TIMEOUT_MS = 90_000
# What the fake microphone says: long enough (4.3 s) for interim transcripts to show while it is said,
# with three short pauses at the commas that must not end the turn.
MIC_SENTENCE = "Hello, it is me again, back from my trip, and my favorite color is teal."
UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
WEBRTC_FRAME = 'iframe[title="streamlit_webrtc.component.webrtc_streamer"]'


# ---------------------------------------------------------------------------
# Fixtures
# ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def playwright():
    if not CHROMIUM.exists():
        pytest.skip("Debian chromium is not installed (apt-get install -y chromium; `make test` does it)")
    with sync_playwright() as running:
        yield running


@pytest.fixture(scope="session")
def browser(playwright):
    launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
    yield launched
    launched.close()


@pytest.fixture(scope="session")
def fake_microphone() -> Iterator[Path]:
    """A WAV the fake capture device loops: silence while the call connects, the sentence, then
    silence long enough for the agent to answer before the loop comes round again."""
    directory = Path(tempfile.mkdtemp(prefix="mp-fake-microphone-"))
    pcm = resample(piper_utterance(MIC_SENTENCE), 22_050, 48_000)
    yield write_wav(directory / "teal.wav", pcm, 48_000, lead_silence=6.0, tail_silence=18.0)
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def mic_browser(playwright, fake_microphone):
    args = [*CHROMIUM_ARGS, *FAKE_MICROPHONE_ARGS, f"--use-file-for-fake-audio-capture={fake_microphone}"]
    launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=args)
    yield launched
    launched.close()


@pytest.fixture(scope="session")
def quiet_mic_browser(playwright) -> Iterator[object]:
    """A browser whose microphone hears only silence: for calls that are about typing, where the looped
    sentence would talk over (and interrupt) the answers the test waits for."""
    directory = Path(tempfile.mkdtemp(prefix="mp-quiet-microphone-"))
    silence = write_wav(directory / "silence.wav", np.zeros(0, np.int16), 48_000, tail_silence=10.0)
    args = [*CHROMIUM_ARGS, *FAKE_MICROPHONE_ARGS, f"--use-file-for-fake-audio-capture={silence}"]
    launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=args)
    yield launched
    launched.close()
    shutil.rmtree(directory, ignore_errors=True)


PAGE_ERRORS: dict[int, list[str]] = {}  # id(page) -> the page's uncaught errors and console errors
OPEN_PAGES: list = []  # every page the factories below made and have not closed yet (see describe_open_pages)


def _keep_page_errors(page) -> None:
    """Note the page's uncaught exceptions and console errors (a failing test prints them)."""
    errors = PAGE_ERRORS.setdefault(id(page), [])
    page.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"[:2000]))
    page.on("console", lambda message: message.type == "error" and errors.append(f"console: {message.text}"[:2000]))


def _follow(page) -> None:
    _keep_page_errors(page)
    OPEN_PAGES.append(page)
    page.on("close", lambda closed: closed in OPEN_PAGES and OPEN_PAGES.remove(closed))  # a test's own close


def _page_factory(launched, *, microphone: bool) -> Iterator[Callable[..., object]]:
    contexts = []

    def make(viewport=(1600, 1000), *, init_script: str | None = None):
        context = launched.new_context(viewport={"width": viewport[0], "height": viewport[1]})
        if microphone:
            context.grant_permissions(["microphone"])
        if init_script:
            context.add_init_script(init_script)
        contexts.append(context)
        # every page of the context, a tab the test opens later included, is described when a test fails
        context.on("page", _follow)
        return context.new_page()

    yield make
    for context in contexts:
        for page in context.pages:
            PAGE_ERRORS.pop(id(page), None)
        context.close()  # closes its pages: each leaves OPEN_PAGES as it closes


@pytest.fixture
def new_browser_page(browser):
    """Factory: a page in a brand-new browser context (a new visitor with no cookies)."""
    yield from _page_factory(browser, microphone=False)


@pytest.fixture
def new_quiet_mic_page(quiet_mic_browser):
    """Factory: like new_mic_page, with a microphone that hears only silence."""
    yield from _page_factory(quiet_mic_browser, microphone=True)


@pytest.fixture
def new_mic_page(mic_browser):
    """Factory: like new_browser_page, in the browser whose microphone says `MIC_SENTENCE`."""
    yield from _page_factory(mic_browser, microphone=True)


# ---------------------------------------------------------------------------
# Driving the app
# ---------------------------------------------------------------------------


def wait_for_app(page, timeout_ms: int = APP_TIMEOUT * 1000) -> None:
    """Wait until Streamlit has finished running the script for this page."""
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout_ms)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=timeout_ms)


def wait_for_identity_cookie(page, timeout_ms: int = 90_000) -> None:
    """Wait until the browser holds the identity cookie and the page's run is over (a click during a run
    can be lost). 90 s: the first visit of a cold server runs the page while the warm-up loads torch; once,
    in a CI run, the cookie had not come after 30 s."""
    deadline = time.monotonic() + timeout_ms / 1000
    while not any(c["name"] == COOKIE_NAME for c in page.context.cookies()):
        if time.monotonic() > deadline:
            raise AssertionError(
                f"the browser never received the {COOKIE_NAME} cookie in {timeout_ms / 1000:.0f} s; "
                f"{what_the_page_went_through(page)}"
            )
        page.wait_for_timeout(200)
    page.wait_for_timeout(700)
    wait_for_app(page, timeout_ms)


def screenshot(page, name: str) -> Path:
    """<name>.png, scrolled to the top of the page: into docs/screenshots/ with MP_UPDATE_SCREENSHOTS=1."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.evaluate(
        "() => document.querySelectorAll('[data-testid=stAppScrollToBottomContainer], "
        "[data-testid=stMain]').forEach(e => e.scrollTop = 0)"
    )
    page.wait_for_timeout(800)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path


def user_id_of(page) -> str:
    page.get_by_text("User id:").first.wait_for(timeout=TURN_TIMEOUT_MS)
    match = UUID_RE.search(page.locator('[data-testid="stSidebar"]').inner_text())
    assert match, "no user id in the sidebar"
    return match.group(0)


def answered_turns(page):
    """The agent's finished answers on the chat page (the live "Thinking…" status is not one of them)."""
    return page.locator('[class*="st-key-chat_turn_"]')


def send(page, text: str) -> str:
    """Type a message on the chat page, wait for the agent's answer, return the answer's text."""
    before = answered_turns(page).count()
    box = page.locator('[data-testid="stChatInputTextArea"]')
    box.fill(text)
    box.press("Enter")
    page.wait_for_function(
        "n => document.querySelectorAll('[class*=st-key-chat_turn_]').length > n && "
        "!document.querySelector('[data-testid=stStatusWidget]')",
        arg=before,
        timeout=TURN_TIMEOUT_MS,
    )
    # The turn's container can be in the DOM a frame before its text; read the answer once it is drawn.
    page.wait_for_function(
        "() => { const turns = document.querySelectorAll('[class*=st-key-chat_turn_]');"
        " const body = turns[turns.length - 1].querySelector('[data-testid=stChatMessageContent]');"
        " return body !== null && body.innerText.trim().length > 0; }",
        timeout=TURN_TIMEOUT_MS,
    )
    return answered_turns(page).last.inner_text()


def grid_rows(page) -> list[list[str]]:
    """The cells of every st.dataframe on the page, from the grid's accessible table."""
    page.locator('[role="gridcell"]').first.wait_for(state="attached", timeout=30_000)
    return page.evaluate(
        "() => [...document.querySelectorAll('[role=row]')].map(r => "
        "[...r.querySelectorAll('[role=gridcell],[role=columnheader]')].map(c => c.textContent.trim()))"
    )


def table_rows(page) -> list[list[str]]:
    """The cells of every st.table on the page (the chat and voice panels' compact retrieval tables)."""
    page.locator('[data-testid="stTable"] td').first.wait_for(state="attached", timeout=30_000)
    return page.evaluate(
        "() => [...document.querySelectorAll('[data-testid=stTable] tr')].map(r => "
        "[...r.querySelectorAll('th,td')].map(c => c.textContent.trim()))"
    )


# What the page's own scripts note: the resend script's state per chat input (ui/resend.py) and the
# WebRTC call's connection states (ui/voice.WEBRTC_FRAME_FIXES).
_PAGE_SCRIPTS_STATE = """() => {
  const frame = [...document.querySelectorAll('iframe')].find(f => f.src.includes('webrtc_streamer'));
  const states = frame && frame.contentWindow ? frame.contentWindow.__mpConnectionStates : null;
  return {resend: window.__mpResend || null,
          connection: states ? states.map(s => s.state) : null,
          running: !!document.querySelector('[data-testid=stStatusWidget]'),
          boxes: [...document.querySelectorAll('[data-testid=stChatInputTextArea]')].map(b => b.value)};
}"""


_DOCUMENT_OUTLINE = """() => JSON.stringify({
  url: location.href,
  visibility: document.visibilityState,
  html: document.documentElement.outerHTML.length,
  app: !!document.querySelector('[data-testid=stApp]'),
  main: (document.querySelector('[data-testid=stMain]') || {}).textContent?.slice(0, 1500) ?? null,
  hidden: [...document.querySelectorAll('body, [data-testid=stApp], [data-testid=stMain]')]
    .map(e => [e.tagName, e.dataset.testid || '', getComputedStyle(e).display, getComputedStyle(e).visibility]),
})"""


def _first_and_last(errors: list[str], each: int = 6) -> list[str]:
    if len(errors) <= 2 * each:
        return errors
    return [*errors[:each], f"... {len(errors) - 2 * each} more ...", *errors[-each:]]


def describe_open_pages() -> str:
    """What every page still open shows, for any failing browser test's report (tests/conftest.py): a wait
    that timed out then says what the page said instead, not only what it did not say."""
    return "\n\n".join(
        f"page {number} of {len(OPEN_PAGES)} ({page.url}):\n{what_the_page_went_through(page)}"
        for number, page in enumerate(list(OPEN_PAGES), 1)
    )


def what_the_page_went_through(page) -> str:
    """For a failing browser test's message: what the page's scripts noted, its text, its server's log."""
    try:
        scripts = page.evaluate(_PAGE_SCRIPTS_STATE)
        text = page.locator("body").inner_text()[:3000]
        if not text.strip():  # nothing visible: say what the document holds
            text = "(nothing visible) " + page.evaluate(_DOCUMENT_OUTLINE)
        shot = Path(tempfile.gettempdir()) / f"mp-failure-{time.strftime('%H%M%S')}-{id(page):x}.png"
        page.screenshot(path=str(shot))
    except Exception as exc:  # a page that is gone still gets the server's log
        scripts, text, shot = f"(not readable: {exc})", "", None
    return (
        f"the page's errors: {_first_and_last(PAGE_ERRORS.get(id(page), []))}\n"
        f"the page's scripts noted: {scripts}\n"
        f"The page says:\n{text}\n"
        f"(screenshot: {shot})\n"
        f"The server's log ends:\n{server_log_tail(page.url, 120)}"
    )


def start_call(page, *, until_connected: bool = True, timeout_ms: int = 60_000) -> None:
    """Press the Voice page's **Start call** and (`until_connected`) wait for **End call**, which shows once
    the connection is up; if either does not show, fail with what the page went through."""
    webrtc = page.frame_locator(WEBRTC_FRAME)
    try:
        webrtc.get_by_role("button", name="Start call").click(timeout=timeout_ms)
    except Exception as exc:
        raise AssertionError(f"no Start call to press; {what_the_page_went_through(page)}") from exc
    if until_connected:
        try:
            webrtc.get_by_role("button", name="End call").wait_for(timeout=timeout_ms)
        except Exception as exc:
            raise AssertionError(f"the call did not connect; {what_the_page_went_through(page)}") from exc


def open_page(page, title: str) -> None:
    """Navigate with the app's own top navigation (the browser session stays the same)."""
    heading = page.get_by_role("heading", name=re.compile(title)).first
    # A click that lands while a run is in flight can be dropped by Streamlit;
    # clicking a nav link again is harmless, so retry a few times before failing.
    for attempt in range(3):
        page.locator('[data-testid="stTopNavLink"]', has_text=title).first.click()
        wait_for_app(page)
        try:
            heading.wait_for(timeout=TURN_TIMEOUT_MS // 3)
            return
        except Exception:
            if attempt == 2:
                page.screenshot(path=str(Path(tempfile.gettempdir()) / f"mp-browser-failure-{title}.png"))
                raise


def drop_first_message(page, needle: bytes, *, times: int = 1) -> list[float]:
    """Route the app's websocket through Playwright; the first `times` messages from the page holding
    `needle` are not forwarded. Returns the list that records when each was dropped (empty until then)."""
    dropped: list[float] = []

    def route(ws) -> None:
        server = ws.connect_to_server()

        def from_page(message) -> None:
            data = message if isinstance(message, bytes) else message.encode()
            if len(dropped) < times and needle in data:
                dropped.append(time.monotonic())
                return
            server.send(message)

        ws.on_message(from_page)  # the server's messages reach the page unchanged

    page.route_web_socket(re.compile(r".*/_stcore/stream"), route)
    return dropped
