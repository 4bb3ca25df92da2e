""" "Delete everything about me": a typed confirmation, then core.erasure as the user; and deleting one session.

On the Memories page and in the sidebar. The open conversation and the visitor's voice calls (in any
tab) are ended first (their reports and post-session facts are written), then everything is erased, so
nothing written on the way out survives; the next conversation meets a stranger. Deleting one session
that is still open (this tab's chat, another tab's, a call) ends that conversation first, its answer in
flight stopped and no facts extracted from it (Conversation.close): otherwise its report, written when it
ends, would bring the deleted session and its turns back, and its answer its memories.
"""

from __future__ import annotations

import logging

import streamlit as st

from agent import SESSION_DELETED, end_calls_of, get_runtime
from core import erasure
from ui import chat_state
from ui.errors import reported

log = logging.getLogger("memory_playground.ui.erase")

CONFIRM_PHRASE = "DELETE"
FLASH_KEY = "mp_erase_flash"  # survives the identity's "u_" state being dropped
_ERASED = "mp_erased_times"  # how many times this browser session deleted everything


def widget_key(base: str) -> str:
    """`base`, new after each "delete everything": its widgets' state is dropped with the rest, and the
    browser then kept drawing the old ones (the box open, DELETE typed, the button greyed out)."""
    times = st.session_state.get(_ERASED, 0)
    return f"{base}_{times}" if times else base


def forget_typed_when_closed(box_key: str, phrase_key: str) -> None:
    """An expander's or popover's on_change: closing it is cancelling, so the confirmation typed in it goes. It
    stayed, and reopening the box showed DELETE typed and the button live, one click from deleting."""
    if not st.session_state.get(box_key):
        st.session_state[phrase_key] = ""  # set, not dropped: the browser would go on showing what it holds


def render_delete_everything(visitor, *, key: str) -> None:
    """The typed confirmation and the button, in the current container (a popover or an expander)."""
    st.markdown(
        "This deletes **everything** the playground keeps about you: every memory, your profile details "
        "(name, email, time zone, language, preferences), every session report and transcript, and reports "
        "still waiting to be saved. Your user id stays. It cannot be undone."
    )
    typed = st.text_input(f"Type {CONFIRM_PHRASE} to confirm", key=widget_key(f"{key}_phrase"))
    if st.button(
        "Delete everything about me",
        key=widget_key(f"{key}_button"),
        type="primary",
        icon=":material/delete_forever:",
        disabled=typed.strip() != CONFIRM_PHRASE,
    ):
        with reported():
            with st.spinner("Ending the conversation and any voice call, and deleting…"):
                chat_state.close_chat_session(reason="delete everything", wait=True)
                for ended in end_calls_of(visitor.user_id):  # in any tab: no report may be written after
                    ended.result(timeout=chat_state.close_timeout_seconds())
                erased = erasure.delete_everything(visitor.scope)
            for state_key in [k for k in st.session_state if str(k).startswith("u_")]:
                del st.session_state[state_key]  # views of data that no longer exists
            st.query_params.clear()  # an address naming a deleted session (Sessions' ?session=…) names nothing now
            st.session_state[FLASH_KEY] = erased.summary()
            st.session_state[_ERASED] = st.session_state.get(_ERASED, 0) + 1
            st.rerun()


def take_flash() -> str | None:
    """What the last "delete everything" did, once, for the next run to show."""
    message = st.session_state.pop(FLASH_KEY, None)
    return message + " The agent will meet you as a stranger." if message else None


def delete_session(visitor, session_id: str) -> int:
    """End the session if it is still running in this process, then delete it; returns the turns deleted."""
    ending = []
    if (current := chat_state.current_chat_session()) is not None and current.session_id == session_id:
        ending.append(chat_state.close_chat_session(reason=SESSION_DELETED))  # this tab: a new chat
    # another tab's chat, and a local call's conversation: closed as deleted before the call is ended, so the
    # call's end extracts no facts from it either
    ending += get_runtime().close_session(visitor.user_id, session_id)
    ending += end_calls_of(visitor.user_id, session_id=session_id)
    for future in ending:
        try:
            future.result(timeout=chat_state.close_timeout_seconds())
        except Exception as exc:  # a report that failed to save waits on disk: erasure.delete_session removes it
            log.warning("ending session %s before deleting it: %s", session_id, exc)
    return erasure.delete_session(visitor.scope, session_id)
