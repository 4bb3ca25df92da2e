"""The in-process text conversation of this browser session.

One agent Conversation per browser session and verified user, kept
across reruns: the runtime finds it again by a key made of the Streamlit
session id and the user id. A reload makes a new Streamlit session: the
new one takes over the visitor's conversation whose browser session has just
gone away, so a reload (or the page recovering from a frontend crash) shows
the same conversation and goes on with it. The runtime closes sessions idle
for 30 minutes and all sessions at exit; the watcher here also closes (and so
reports) a conversation soon after its browser session has gone away.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import streamlit as st
from streamlit.runtime import Runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx

from agent import APP_STOPPED, SESSION_DELETED, Conversation, get_runtime, llm_wait_seconds
from core import sessions

log = logging.getLogger("memory_playground.ui.chat")

CHAT_KEY = "u_chat_session"  # "u_" prefix: dropped when the identity changes (after closing it)
MOVED_KEY = "u_chat_moved"  # the session id of this tab's conversation that another tab took over
DELETED_KEY = "u_chat_deleted"  # the session id of this tab's conversation whose session was deleted elsewhere
RESTARTED_KEY = "u_chat_restarted"  # the visitor's conversation the app's restart ended, just before this one
RESTART_NOTICE_SECONDS = 30 * 60  # a conversation a restart ended longer ago than this goes unmentioned
START_TIMEOUT_SECONDS = 90  # first use loads the embedding model
CLOSE_TIMEOUT_SECONDS = 60
GONE_GRACE_SECONDS = 120  # a reload reconnects within this; after it the browser session is gone
WATCH_INTERVAL_SECONDS = 15

_tracked: dict[str, str] = {}  # runtime key -> Streamlit session id
_inactive_since: dict[str, float] = {}
_watch_lock = threading.Lock()
_watcher: threading.Thread | None = None


def browser_session_id() -> str:
    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else "no-browser-session"


def session_key(user_id) -> str:
    return f"text:{browser_session_id()}:{user_id}"


def get_chat_session(visitor, rrf=None) -> Conversation:
    """The open conversation for this browser session and the verified user (created once)."""
    chat = st.session_state.get(CHAT_KEY)
    if chat is not None and chat.user_id == visitor.user_id and not chat.closed:
        if owned_by(chat.key, browser_session_id()):
            return chat
        # This tab lost its connection for a while, and another tab of the visitor took the conversation
        # over meanwhile: it goes on there only, never in two tabs at once. This tab starts a new one.
        log.info("conversation %s went on in another browser session; a new one starts here", chat.session_id)
        st.session_state.pop(CHAT_KEY, None)
        st.session_state[MOVED_KEY] = chat.session_id or ""
    elif chat is not None and chat.close_reason == SESSION_DELETED:
        # deleted elsewhere (another tab, another app process; Delete this session or Delete everything): this
        # tab goes on in a new one
        st.session_state.pop(CHAT_KEY, None)
        st.session_state[DELETED_KEY] = chat.session_id or ""
    chat = take_over_left_conversation(visitor.user_id, browser_session_id(), _session_is_connected)
    if chat is None:
        _note_a_restart(visitor)
        key = base = session_key(visitor.user_id)
        for generation in range(1, 1000):  # a key another tab took over stays its: this tab takes the next
            if owned_by(key, browser_session_id()):
                break
            key = f"{base}:{generation}"
        chat = get_runtime().open_conversation(key, visitor.user_id, rrf=rrf)
        _track(key, browser_session_id())
    st.session_state[CHAT_KEY] = chat
    return chat


def _note_a_restart(visitor) -> None:
    """Before a new conversation: when the app's restart ended the visitor's last one a moment ago, the page
    says so (the chat quietly showed a new conversation, the one before it gone from view)."""
    if st.session_state.get(CHAT_KEY) is not None or RESTARTED_KEY in st.session_state:
        return  # this browser session had a conversation, or has been told: no restart in between
    try:
        ended = sessions.newest_ended_by(visitor.scope, APP_STOPPED, within_seconds=RESTART_NOTICE_SECONDS)
    except Exception as exc:  # a notice, never a reason for the chat not to start
        log.warning("could not read the visitor's last session: %s", exc)
        return
    st.session_state[RESTARTED_KEY] = ended.session_id if ended is not None else None


def owned_by(key: str, streamlit_session_id: str) -> bool:
    """Whether the conversation `key` is (still) this browser session's: not taken over by another."""
    with _watch_lock:
        owner = _tracked.get(key)
    return owner is None or owner == streamlit_session_id


def _session_is_connected(streamlit_session_id: str) -> bool:
    # AppTest / bare mode has no browser sessions to tell apart: every one counts as connected
    return not Runtime.exists() or Runtime.instance().is_active_session(streamlit_session_id)


def take_over_left_conversation(user_id, streamlit_session_id: str, is_connected) -> Conversation | None:
    """The visitor's open conversation whose browser session is disconnected (the newest, if several),
    now tracked as this browser session's; None if there is none. A reload or a second tab of a closed
    one lands here; a tab that is still open keeps its own conversation (`is_connected`). The user id is
    the verified visitor's: a conversation is only ever taken over by its own user."""
    runtime = get_runtime()
    with _watch_lock:
        left = [
            (key, sid, chat)
            for key, sid in _tracked.items()
            if (chat := runtime.get_conversation(key)) is not None
            and not chat.closed
            and str(chat.user_id) == str(user_id)
            and sid != streamlit_session_id
            and not is_connected(sid)
        ]
        if not left:
            return None
        key, sid, chat = max(left, key=lambda item: item[2].last_active)
        _tracked[key] = streamlit_session_id  # under the lock: two new tabs cannot both take it
        _inactive_since.pop(key, None)
    log.info(
        "browser session %s takes over conversation %s (its browser session %s left)",
        streamlit_session_id,
        chat.session_id,
        sid,
    )
    return chat


def current_chat_session() -> Conversation | None:
    chat = st.session_state.get(CHAT_KEY)
    return None if chat is None or chat.closed else chat


def close_chat_session(*, reason: str = "ended", wait: bool = False) -> Any:
    """Close the chat session (its report is saved); with wait=True return the report. `reason` is its
    close_reason: SESSION_DELETED stops the answer in flight (Conversation.close)."""
    chat = st.session_state.pop(CHAT_KEY, None)
    if chat is None:
        return None
    with _watch_lock:
        _tracked.pop(chat.key, None)
    log.info("closing chat session %s (%s)", chat.session_id, reason)
    future = chat.close(reason=reason)
    return future.result(timeout=close_timeout_seconds()) if wait else future


def close_timeout_seconds() -> float:
    """Closing runs the fact extraction, one more model call: wait as long as that call may take."""
    return max(CLOSE_TIMEOUT_SECONDS, llm_wait_seconds(calls=1))


# ---------------------------------------------------------------------------
# Close conversations whose browser session went away
# ---------------------------------------------------------------------------


def _track(key: str, streamlit_session_id: str) -> None:
    global _watcher
    with _watch_lock:
        _tracked[key] = streamlit_session_id
        if _watcher is None or not _watcher.is_alive():
            _watcher = threading.Thread(target=_watch_forever, name="chat-session-watcher", daemon=True)
            _watcher.start()


def close_gone_sessions(is_active, now: float | None = None, grace: float = GONE_GRACE_SECONDS) -> list[str]:
    """One sweep: close tracked conversations whose browser session has been inactive
    for `grace` seconds. `is_active(session_id) -> bool`. Returns the closed keys."""
    now = time.monotonic() if now is None else now
    closed = []
    with _watch_lock:
        items = list(_tracked.items())
    for key, sid in items:
        if is_active(sid):
            _inactive_since.pop(key, None)
            continue
        first = _inactive_since.setdefault(key, now)
        if now - first < grace:
            continue
        with _watch_lock:
            _tracked.pop(key, None)
        _inactive_since.pop(key, None)
        log.info("browser session %s is gone; closing its conversation", sid)
        get_runtime().close_conversation(key)
        closed.append(key)
    return closed


def _watch_forever() -> None:
    while True:
        time.sleep(WATCH_INTERVAL_SECONDS)
        if not Runtime.exists():
            continue  # AppTest / bare mode: there are no browser sessions to watch
        try:
            close_gone_sessions(Runtime.instance().is_active_session)
        except Exception:
            log.exception("closing conversations of departed browser sessions failed")
