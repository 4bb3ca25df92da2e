"""Fixtures for the app's tests: AppTest runs of the real entry point, a real
`streamlit run` server on a free port (for browser tests; the voice tests reuse
it), and headless Chromium via Playwright.

Import what you need in a test module:

    from tests.app_fixtures import app, streamlit_server, browser, new_browser_page  # noqa: F401

`streamlit_server` starts after `database_uri`, so the test database is
migrated and seeded, and points the app at the same DATA_DIR (conftest sets
os.environ["DATA_DIR"]); hosted-service env vars are blank as in conftest.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent
APP_SCRIPT = PROJECT_ROOT / "streamlit_app.py"
SCREENSHOTS = PROJECT_ROOT / "docs" / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]
APP_TIMEOUT = 180  # first run loads the embedding model and starts the agent


# ---------------------------------------------------------------------------
# AppTest
# ---------------------------------------------------------------------------

@pytest.fixture
def v2_navigation(monkeypatch):
    """AppTest resets PagesManager.uses_pages_directory before every run, so with a
    `pages/` folder each rerun after the first would execute the page alone, as a
    v1 multipage app. A real server runs the entry script's st.navigation once and
    stays in v2 mode (streamlit/commands/navigation.py sets the flag to False);
    mirror that so the tests exercise what the browser gets."""
    from streamlit.runtime.pages_manager import PagesManager

    original = PagesManager.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    monkeypatch.setattr(PagesManager, "__init__", init)


@pytest.fixture
def app(database_uri, v2_navigation) -> Callable[..., object]:
    """Factory: a fresh AppTest of streamlit_app.py (a new browser session), already run once."""
    from streamlit.testing.v1 import AppTest

    created = []

    def make(page: str | None = None):
        at = AppTest.from_file(str(APP_SCRIPT), default_timeout=APP_TIMEOUT)
        if page:  # land on that page directly (our url paths are the file names)
            at.switch_page(page)
        at.run()
        created.append(at)
        return at

    yield make
    # End the conversations these browser sessions opened (their reports are saved).
    for at in created:
        chat = at.session_state["u_chat_session"] if "u_chat_session" in at.session_state else None
        if chat is not None:
            try:
                chat.close().result(timeout=60)
            except Exception:
                pass


# ---------------------------------------------------------------------------
# A real server
# ---------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_streamlit(extra_env: dict[str, str] | None = None, *, log_path: Path | None = None,
                    timeout: float = 90) -> tuple[subprocess.Popen, str]:
    """`streamlit run streamlit_app.py` on a free port with this test run's DATA_DIR; returns (process, url)."""
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1", **(extra_env or {})}
    log = open(log_path or Path(tempfile.mkstemp(prefix="mp-streamlit-", suffix=".log")[1]), "w")
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(APP_SCRIPT), "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"],
        cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited with {process.returncode}; see {log.name}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return process, url
        except OSError:
            time.sleep(0.5)
    stop_streamlit(process)
    raise RuntimeError(f"streamlit did not become healthy within {timeout} s; see {log.name}")


def stop_streamlit(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)  # its own process group: only what this fixture started
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


@pytest.fixture(scope="session")
def streamlit_server(database_uri) -> Iterator[str]:
    """Base URL of a `streamlit run` of the app against the test database."""
    process, url = start_streamlit()
    yield url
    stop_streamlit(process)


# ---------------------------------------------------------------------------
# Browser
# ---------------------------------------------------------------------------

# Module scope, not session: while Playwright's sync API is open it leaves an asyncio loop marked as
# running on the main thread, which would break every async test collected after the browser tests.
@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip("Debian chromium is not installed (apt-get install -y chromium; `make test` does it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def new_browser_page(browser):
    """Factory: a page in a brand-new browser context (a new visitor with no cookies)."""
    contexts = []

    def make(viewport=(1600, 1000)):
        context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
        contexts.append(context)
        return context.new_page()

    yield make
    for context in contexts:
        context.close()


def wait_for_app(page, timeout_ms: int = APP_TIMEOUT * 1000) -> None:
    """Wait until Streamlit has finished running the script for this page."""
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout_ms)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=timeout_ms)


def wait_for_identity_cookie(page, timeout_ms: int = 30_000) -> None:
    """Wait until the browser holds the identity cookie and the reruns its writer
    triggers are over (clicks during those reruns can be lost)."""
    from ui.auth import COOKIE_NAME

    deadline = time.monotonic() + timeout_ms / 1000
    while not any(c["name"] == COOKIE_NAME for c in page.context.cookies()):
        if time.monotonic() > deadline:
            raise AssertionError(f"the browser never received the {COOKIE_NAME} cookie")
        page.wait_for_timeout(200)
    page.wait_for_timeout(700)
    wait_for_app(page, timeout_ms)


def screenshot(page, name: str) -> Path:
    """Save docs/screenshots/<name>.png, scrolled to the top of the page."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.evaluate("() => document.querySelectorAll('[data-testid=stAppScrollToBottomContainer], "
                  "[data-testid=stMain]').forEach(e => e.scrollTop = 0)")
    page.wait_for_timeout(800)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path
