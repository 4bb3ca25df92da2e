"""The Voice page opened where a browser refuses the microphone, in headless Chromium against a real
`streamlit run`: over plain http by a name that is not this machine's loopback (as a phone on the LAN opens
a demo), the page says why before Start call is pressed, and the WebRTC component's device form says it in
the app's words; opened on 127.0.0.1 it says nothing of the kind. A browser that refuses the microphone at
Start call (blocked for the site, or busy) gets the app's explanation, not the browser's error name."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest

from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, TURN_TIMEOUT_MS, WEBRTC_FRAME, wait_for_identity_cookie
from ui.voice import MICROPHONE_ERRORS, MICROPHONE_MESSAGES

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LAN_NAME = "playground-demo.test"  # resolved to 127.0.0.1 by the browser only (--host-resolver-rules)
BLOCKED = re.compile("Your browser will not give this page a microphone")


@pytest.fixture
def lan_browser(playwright):
    args = [*CHROMIUM_ARGS, f"--host-resolver-rules=MAP {LAN_NAME} 127.0.0.1"]
    launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=args)
    yield launched
    launched.close()


@pytest.fixture(scope="module")
def denying_browser(playwright):
    """A browser with a (fake) microphone that asks before giving it: headless, the ask is refused."""
    args = [*CHROMIUM_ARGS, "--use-fake-device-for-media-stream"]
    launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=args)
    yield launched
    launched.close()


# The operating system's side of a microphone another program holds cannot be made here: the browser's
# getUserMedia is made to fail as it then does.
MICROPHONE_BUSY = """navigator.mediaDevices.getUserMedia = () =>
  Promise.reject(new DOMException('Could not start audio source', 'NotReadableError'));"""


def _voice_page(browser, url: str, *, init_script: str | None = None):
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    if init_script:
        context.add_init_script(init_script)
    page = context.new_page()
    page.goto(url)
    wait_for_identity_cookie(page)
    page.frame_locator(WEBRTC_FRAME).get_by_role("button", name=re.compile("start call", re.I)).wait_for(
        timeout=TURN_TIMEOUT_MS
    )
    return page


def test_plain_http_from_another_name_says_why_there_is_no_microphone(streamlit_server, lan_browser):
    port = urlsplit(streamlit_server).port
    page = _voice_page(lan_browser, f"http://{LAN_NAME}:{port}/voice")
    assert page.evaluate("() => window.isSecureContext") is False  # what a LAN address over http is
    warning = page.get_by_text(BLOCKED)
    warning.wait_for(timeout=30_000)
    assert f"http://localhost:{port}" in warning.inner_text()
    assert page.get_by_text("Press Start call and allow the microphone").count() == 0  # it could not be allowed

    frame = page.frame_locator(WEBRTC_FRAME)
    frame.get_by_role("button", name=re.compile("select device", re.I)).click()
    frame.get_by_text(MICROPHONE_MESSAGES["media_api_not_available"]).wait_for(timeout=30_000)


def test_on_this_machine_the_page_does_not_warn(streamlit_server, lan_browser):
    page = _voice_page(lan_browser, f"{streamlit_server}/voice")
    assert page.evaluate("() => window.isSecureContext") is True
    page.get_by_text("Press Start call and allow the microphone").first.wait_for(timeout=30_000)
    assert page.get_by_text(BLOCKED).count() == 0
    page.get_by_text("The call does not start?").click()
    page.get_by_text(re.compile(MICROPHONE_ERRORS["NotAllowedError"][0])).wait_for(timeout=10_000)


@pytest.mark.parametrize("refusal", ["NotAllowedError", "NotReadableError"])
def test_a_refused_microphone_says_what_happened_and_what_to_do(streamlit_server, denying_browser, refusal):
    """The component showed the browser's "NotAllowedError: Permission denied" under Start call; what it
    meant was only in a collapsed expander."""
    page = _voice_page(
        denying_browser,
        f"{streamlit_server}/voice",
        init_script=MICROPHONE_BUSY if refusal == "NotReadableError" else None,
    )
    frame = page.frame_locator(WEBRTC_FRAME)
    frame.get_by_role("button", name=re.compile("start call", re.I)).click()
    headline = MICROPHONE_ERRORS[refusal][0]
    alert = frame.get_by_role("alert")
    alert.wait_for(timeout=30_000)
    said = alert.inner_text()
    assert said.startswith(headline) and "press Start call again" in said and "Chat page works without" in said, said
    assert refusal not in said
    frame.get_by_role("button", name=re.compile("start call", re.I)).wait_for(timeout=10_000)  # can try again
