"""How errors reach the visitor: a clear message with what to do, never a
traceback wall. A database outage gets a panel that checks again by itself and
continues the page when the database is back."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import streamlit as st

from core import db
from core.date_window import user_zone, zone_name
from core.errors import AuthError, DatabaseUnavailable, EmbeddingUnavailable, InvalidInput, NotFound, PlaygroundError
from ui.fragments import timed_fragment

log = logging.getLogger("memory_playground.ui")
DB_RETRY_SECONDS = 2  # the page is back within a few seconds of the database (see docs/SECURITY.md)
_HEADLINE = "The database is not reachable right now"


def show_error(exc: BaseException) -> None:
    """One user-facing message per error type; str(PlaygroundError) is user-safe."""
    if isinstance(exc, DatabaseUnavailable):
        database_down(exc)
    elif isinstance(exc, InvalidInput):
        st.warning(str(exc), icon=":material/edit_note:")
    elif isinstance(exc, NotFound):
        st.info(f"{exc} Refresh the list to see the current state.", icon=":material/search_off:")
    elif isinstance(exc, EmbeddingUnavailable):
        st.error(f"{exc} Text search still works; check EMBEDDING_MODEL and restart the app.", icon=":material/hub:")
    elif isinstance(exc, AuthError):
        st.error(f"{exc}", icon=":material/lock:")
    elif isinstance(exc, PlaygroundError):
        st.error(str(exc), icon=":material/error:")
    else:
        log.exception("unexpected error in the app", exc_info=exc)
        st.error(
            "Something unexpected went wrong. Reload the page; if it happens again, the server log has the details.",
            icon=":material/bug_report:",
        )
        with st.expander("Technical details"):
            st.exception(exc)


def database_down(exc: BaseException) -> None:
    # core's message starts with the same headline: said once, then what core knows of why
    detail = str(exc).removeprefix(_HEADLINE).lstrip(":. ")
    st.error(
        f"**{_HEADLINE}.** {detail[:1].upper()}{detail[1:]}\n\n"
        # Not "nothing was lost": a form's text sent with the click that met the outage is not kept (the panel
        # draws none of the page's boxes, so Streamlit resets them); a chat message is (its outbox).
        "Everything saved before is safe. A chat message you sent is kept and answered when the database is "
        "back; anything else you were saving did not go through, so do it again then. This page checks again "
        f"every {DB_RETRY_SECONDS} seconds and continues by itself.",
        icon=":material/cloud_off:",
    )
    st.session_state["mp_db_watch_started"] = time.monotonic()
    _watch_database()


@timed_fragment(run_every=DB_RETRY_SECONDS)
def _watch_database() -> None:
    # The first call happens inside the failing run itself: checking then could loop
    # (reachable database, failing page). Check only on the timed reruns.
    started = st.session_state.get("mp_db_watch_started", 0.0)
    if time.monotonic() - started < DB_RETRY_SECONDS * 0.8:
        st.caption(f"Checking again in {DB_RETRY_SECONDS} seconds…")
        return
    try:
        db.ping()
    except PlaygroundError:
        st.caption(still_unreachable(st.context.timezone))
        if st.button("Try again now", key="db_retry_now", icon=":material/refresh:"):
            st.rerun(scope="app")
        return
    st.cache_data.clear()
    st.rerun(scope="app")


def still_unreachable(browser_zone: str | None, now: datetime | None = None) -> str:
    """When the last check failed, in the time zone the visitor's browser reports (the profile's is in the
    database that is down); in UTC, said so, when it reports none."""
    zone = user_zone(browser_zone)
    checked = (now or datetime.now(UTC)).astimezone(zone)
    return f"Still unreachable at {checked:%H:%M:%S}{' UTC' if zone_name(zone) == 'UTC' else ''}."


def run_guarded(body: Callable[[], None]) -> None:
    """Run a page body; any error becomes a message instead of a stack trace."""
    try:
        body()
    except Exception as exc:  # Streamlit's stop/rerun are BaseExceptions and pass through
        show_error(exc)


@contextmanager
def reported() -> Iterator[None]:
    """Wrap one action (save, delete, search): its error is shown where it happened
    and the rest of the page still renders."""
    try:
        yield
    except Exception as exc:
        show_error(exc)
