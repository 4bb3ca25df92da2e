""" "Delete everything about me": a typed confirmation, then core.erasure as the user.

On the Memories page and in the sidebar. The open conversation and the visitor's voice calls (in any
tab) are ended first (their reports and post-session facts are written), then everything is erased, so
nothing written on the way out survives; the next conversation meets a stranger.
"""

from __future__ import annotations

import streamlit as st

from agent import end_calls_of
from core import erasure
from ui import chat_state
from ui.errors import reported

CONFIRM_PHRASE = "DELETE"
FLASH_KEY = "mp_erase_flash"  # survives the identity's "u_" state being dropped


def render_delete_everything(visitor, *, key: str) -> None:
    """The typed confirmation and the button, in the current container (a popover or an expander)."""
    st.markdown(
        "This deletes **everything** the playground keeps about you: every memory, your profile details "
        "(name, email, time zone, language, preferences), every session report and transcript, and reports "
        "still waiting to be saved. Your user id stays. It cannot be undone."
    )
    typed = st.text_input(f"Type {CONFIRM_PHRASE} to confirm", key=f"{key}_phrase")
    if st.button(
        "Delete everything about me",
        key=f"{key}_button",
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
            st.session_state[FLASH_KEY] = erased.summary()
            st.rerun()


def show_flash() -> None:
    """The result of the last "delete everything", once, on the next run."""
    message = st.session_state.pop(FLASH_KEY, None)
    if message:
        st.success(message + " The agent will meet you as a stranger.", icon=":material/check_circle:")
