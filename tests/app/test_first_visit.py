"""The first visit after the app starts, in Chromium: a freshly started `streamlit run` whose embedded
database is stopped (so the app starts it, loads the embedding model and starts the agent while the
visitor is already typing). The first message, typed the moment the chat input appears, is shown at
once as the visitor's bubble, answered, and stored; five times, each from a cold start."""

from __future__ import annotations

import time
from pathlib import Path

import psycopg
import pytest
from playwright.sync_api import expect

from core import embedded_pg
from tests.support.app import postmaster, start_streamlit, stop_streamlit, wait_until_stopped
from tests.support.browser import TURN_TIMEOUT_MS, answered_turns, user_id_of, what_the_page_went_through

# One more try in a fresh cold start: on 2026-11-26 the first message showed twice in 3 of about 50 cold
# starts (with and without that day's changes; it did not happen in 40 starts run to catch it). On 2026-11-27
# the diagnostics below showed it stored twice (sent twice in one browser session); ui.resend.take now drops
# such a second copy (docs/APP.md), but which path made it is not proven, so the second try stays.
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.flaky(reruns=1, reruns_delay=2)]
COLD_STARTS = 5
CHAT_INPUT = '[data-testid="stChatInputTextArea"]'


def _owner_uri(pgdata: Path) -> str:
    info = postmaster(pgdata)
    assert info is not None, "the app's database is not running"
    endpoint = embedded_pg.Endpoint(socket_dir=Path(info.socket_dir), port=info.port or 5432)
    return embedded_pg.uri(pgdata.parent, endpoint, embedded_pg.OWNER_ROLE)  # the app's data dir holds its password


def _stored_turns(pgdata: Path, user_id: str) -> list[tuple]:
    with psycopg.connect(_owner_uri(pgdata), autocommit=True) as conn:
        return conn.execute(
            "select session_id, turn_index, speaker, content from public.conversation_turns where user_id = %s "
            "order by created_at",
            (user_id,),
        ).fetchall()


def _stored_color(pgdata: Path, user_id: str) -> str | None:
    with psycopg.connect(_owner_uri(pgdata), autocommit=True) as conn:
        row = conn.execute(
            "select content from public.memories where user_id = %s and memory_type = 'favorite_color'", (user_id,)
        ).fetchone()
    return row[0] if row else None


@pytest.mark.parametrize("start", range(1, COLD_STARTS + 1))
def test_the_first_message_typed_while_the_app_warms_up_is_answered_and_stored(
    start, cold_data_dir, new_browser_page, tmp_path
):
    pgdata = cold_data_dir / "pg"
    assert postmaster(pgdata) is None, "the database should be stopped before the app starts"
    process, url = start_streamlit({"DATA_DIR": str(cold_data_dir)}, log_path=tmp_path / "streamlit.log")
    try:
        page = new_browser_page((1600, 1000))
        page.goto(url)
        box = page.locator(CHAT_INPUT)
        box.wait_for(state="visible", timeout=TURN_TIMEOUT_MS)
        message = "my favorite color is vermilion"  # each start is a new visitor, with nothing stored yet
        box.fill(message)
        box.press("Enter")

        # shown at once as the visitor's bubble, whatever the agent is still doing
        user_bubble = page.locator('[data-testid="stChatMessage"]', has_text=message)
        expect(user_bubble.first).to_be_visible(timeout=15_000)
        # answered (the greeting is turn 0; the answer is the turn that mentions the colour)
        answer = answered_turns(page).filter(has_text="vermilion")
        expect(answer.first).to_be_visible(timeout=TURN_TIMEOUT_MS)
        # and stored, as this visitor's memory
        visitor = user_id_of(page)
        assert _stored_color(pgdata, visitor) == "vermilion"
        # once, not repeated by a rerun
        deadline = time.monotonic() + 5
        while user_bubble.count() != 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        if user_bubble.count() != 1:
            bubbles = [b.inner_text() for b in page.locator('[data-testid="stChatMessage"]').all()]
            raise AssertionError(
                f"the message shows {user_bubble.count()} times.\nBubbles: {bubbles}\n"
                f"Stored turns: {_stored_turns(pgdata, visitor)}\n{what_the_page_went_through(page)}"
            )
    finally:
        stop_streamlit(process, pgdata)
    wait_until_stopped(pgdata)
