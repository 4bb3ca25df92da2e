"""What every test folder shares: one throwaway embedded Postgres per test run (migrated and seeded),
real anonymous users with real JWTs, the Supabase Auth stand-in, and (from tests/support/app.py and
tests/support/browser.py) the app under `streamlit run` and headless Chromium.

Folders: core/ (database, identity, retrieval, config, doctor), agent/ (the agent, its brain, runtime,
worker, LLM path), voice/ (audio, local models, voice calls), app/ (AppTest and browser tests of the
pages). Tests marked `browser` run after all the others (see pytest_collection_modifyitems).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

# Decide settings before anything imports core.config: a private DATA_DIR, the
# embedded database and the embedded issuer, whatever the developer's .env says.
_TEST_DATA_DIR = Path(tempfile.mkdtemp(prefix="mp-test-data-"))
os.environ["DATA_DIR"] = str(_TEST_DATA_DIR)
for _name in (
    "DATABASE_URL",
    "SUPABASE_URL",
    "SUPABASE_ANON_KEY",
    "SUPABASE_JWT_SECRET",
    "DEMO_USER_ID",
    "LIVEKIT_URL",
    "LIVEKIT_API_KEY",
    "LIVEKIT_API_SECRET",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "LLM_MODEL",
    "EMBEDDING_MODEL",
    "VOICE_ICE_SERVERS",
):
    os.environ[_name] = ""
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Every AppTest and browser session signs in from one address ("local"); the throttle's own
# tests set their limits explicitly.
os.environ["ANON_SIGNIN_BURST"] = "100000"
os.environ["ANON_SIGNIN_PER_MINUTE"] = "1000000"

# pytest's process registers the livekit plugins at start, as every entry point does
# (agent/plugins.py); the subprocess tests prove the entry points themselves.
from agent import plugins  # noqa: E402 - after the settings above

plugins.register()

from core import config, db, identity, memory_changes  # noqa: E402 - after the settings above
from core.seed import demo_user_file, seed_all  # noqa: E402 - after the settings above
from tests.support.supabase_standin import SupabaseAuthStandIn  # noqa: E402 - after the settings above
from tests.support.users import SignedInUser, sign_in  # noqa: E402 - after the settings above

pytest_plugins = ["tests.support.app", "tests.support.browser"]


_SECOND_TRIES: list[str] = []  # why a test marked flaky needed its documented second try


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.outcome == "rerun":
        # The last exception of a chain is the test's own message (with what the page and the server said).
        # Taken from pytest's chain, not by splitting the text: a server log quoted in the message can hold
        # a chained traceback of its own, and its last part is not the test's message.
        chain = getattr(report.longrepr, "chain", None)
        crash = chain[-1][1] if chain else None
        if crash is not None:
            errors = [line.strip() for line in crash.message.splitlines()]
        else:
            errors = [line[1:].strip() for line in (report.longreprtext or "").splitlines() if line.startswith("E ")]
        why = "\n    ".join(errors)[:6000] if errors else "no message"
        _SECOND_TRIES.append(f"{report.nodeid}: {why}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A browser test that fails says what its pages showed then (their text, errors, a screenshot, the
    server's log), while they are still open: a CI run's report is often all there is to go on."""
    report = yield
    if report.when == "call" and report.failed and item.get_closest_marker("browser") is not None:
        from tests.support.browser import OPEN_PAGES, describe_open_pages

        if OPEN_PAGES:
            report.sections.append(("what the open pages showed when the test failed", describe_open_pages()))
    return report


def pytest_terminal_summary(terminalreporter) -> None:
    """Say why each second try was needed: a rerun that passes is green, but its cause should be on record."""
    if _SECOND_TRIES:
        terminalreporter.section("why the second tries were needed")
        for line in _SECOND_TRIES:
            terminalreporter.write_line(line)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Browser tests last: while Playwright's sync API is open it leaves an asyncio loop marked as running
    on the main thread, which breaks any async test run after it. With the browser tests at the end, the
    one Playwright of the session (tests/support/browser.py) is open only when no async test follows."""
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)


@pytest.fixture(scope="session")
def database_uri() -> Iterator[str]:
    """Start the test server (deleted at exit), apply the shim and migrations, seed."""
    config.reload_settings()
    uri = db.start_embedded(_TEST_DATA_DIR / "pg", cleanup_mode="delete")
    db.migrate(echo=lambda *_: None)
    seed_all(echo=lambda *_: None)
    yield uri
    db.close_pools()


@pytest.fixture(scope="session", autouse=True)
def _cleanup_data_dir() -> Iterator[None]:
    yield
    # the pg/ subdirectory is deleted by pgserver when the last handle exits
    for child in _TEST_DATA_DIR.iterdir():
        if child.name == "pg":
            continue
        if child.is_dir():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


# Registered after pgserver's own exit hook (which deletes pg/), so it runs before it:
# remove the directory once pgserver has finished, whichever order atexit picks.
def _remove_empty_data_dir() -> None:
    # while pg/ is still there pgserver's hook removes it, and the empty parent stays in /tmp
    with contextlib.suppress(OSError):
        _TEST_DATA_DIR.rmdir()


atexit.register(_remove_empty_data_dir)


@pytest.fixture(autouse=True)
def _no_database_feed_left_running() -> Iterator[None]:
    """A voice call starts this process's listener on the database's memory changes (core.memory_changes,
    as in the app); it ends with the test, so the next test gets no notices it did not ask for."""
    yield
    memory_changes.stop_following()


@pytest.fixture
def new_user(database_uri):
    """Factory: each call signs in a brand-new anonymous user."""

    def make() -> SignedInUser:
        return sign_in()

    return make


@pytest.fixture
def demo_user_id(database_uri) -> uuid.UUID:
    return uuid.UUID(demo_user_file().read_text().strip())


@pytest.fixture
def supabase_auth(database_uri, monkeypatch) -> Iterator[SupabaseAuthStandIn]:
    """The settings point at a running Supabase Auth stand-in that auto-confirms emails (the Supabase CLI's
    local default); tests of the hosted default (confirm email on) switch it off."""
    with SupabaseAuthStandIn(mailer_autoconfirm=True) as standin:
        for name, value in standin.env().items():
            monkeypatch.setenv(name, value)
        config.reload_settings()
        identity._verified_cache.clear()
        try:
            yield standin
        finally:
            monkeypatch.undo()
            config.reload_settings()
            identity._verified_cache.clear()
