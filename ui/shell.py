"""What every run needs before a page body: styles, the verified visitor, the
sidebar and the identity cookie.

The entry script renders it and then runs the selected page. A page may also be
run *without* the entry script: Streamlit treats an app with a `pages/` folder
as a v1 multipage app until `st.navigation` has run once in the process, so the
very first request of a fresh server for a deep link (e.g. /memories) executes
pages/memories.py directly. `run_page` notices that, switches Streamlit to
`st.navigation` mode (setting the flag st.navigation itself sets) and reruns,
so the entry script runs and a page never runs without the verified visitor.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager

from core.errors import AuthError, AuthUnavailable
from ui import auth, button_names, recovery, sidebar, style
from ui.errors import run_guarded, show_error

# The auth server refuses new anonymous visitors; saved accounts can still sign in.
_NO_NEW_VISITORS = {"anonymous_provider_disabled", "signup_disabled", "over_request_rate_limit"}

_RENDERED_THIS_RUN = "mp_shell_rendered"
_PAGE = "mp_shell_page"  # the page (file and function) the latest run started
_PAGE_BEFORE = "mp_shell_page_before"  # and the one the run before it started
_REDRAW = "mp_shell_redraw"  # the next run is the page catching up with the server, not a visitor's action
# A tab whose identity another tab left: the notice is read, then the page reloads as the browser's identity
_RELOAD_SOON = "<script>setTimeout(() => (window.parent || window).location.reload(), 1500);</script>"


def render_shell() -> auth.Visitor:
    style.apply()
    redraw = st.session_state.pop(_REDRAW, False)
    try:
        visitor = auth.require_visitor()
    except auth.ChangedInAnotherTab as exc:  # the reload restores the browser's identity from the cookie
        st.title(":material/neurology: Memory Playground", anchor=False)
        st.info(str(exc), icon=":material/sync:")
        st.html(_RELOAD_SOON, unsafe_allow_javascript=True)
        st.stop()
    except Exception as exc:  # database or auth server down: say so (and retry by itself)
        st.title(":material/neurology: Memory Playground", anchor=False)
        show_error(exc)
        if isinstance(exc, AuthUnavailable):
            st.button("Try again", key="auth_retry", icon=":material/refresh:")  # a click reruns the gate
        elif isinstance(exc, AuthError) and exc.code in _NO_NEW_VISITORS:
            with st.container(border=True, key="gate_sign_in"):
                st.markdown("**Saved your memories with an email?** Sign in:")
                sidebar.sign_in_form(key="gate_sign_in")
        st.stop()
    with st.sidebar:
        # First, so that nothing drawn after it (slow on a cold start, or failing) keeps the browser from
        # holding the identity: without the cookie, every reload would make a new anonymous visitor.
        auth.sync_cookie()
        recovery.install()  # a page whose frontend crashed reloads instead of staying blank
        button_names.install()  # accessible names: sliders said their label twice
    sidebar.render(visitor, redraw=redraw)
    return visitor


def redraw_page() -> None:
    """Run the whole page again for what changed on the server (the agent started or answered). The sidebar
    says again what it said the run before: only something the visitor does clears it."""
    st.session_state[_REDRAW] = True
    st.rerun(scope="app")


def page_follows() -> None:
    """The entry script calls this right before `navigation.run()`."""
    st.session_state[_RENDERED_THIS_RUN] = True


def run_page(body: Callable[[], None]) -> None:
    """Run a page body; if the entry script did not run first, rerun through it."""
    if not st.session_state.pop(_RENDERED_THIS_RUN, False):
        PagesManager.uses_pages_directory = False  # exactly what st.navigation() does first
        st.rerun()
    st.session_state[_PAGE_BEFORE] = st.session_state.get(_PAGE)
    st.session_state[_PAGE] = f"{body.__code__.co_filename}:{body.__name__}"
    run_guarded(body)


def stayed_on_page() -> bool:
    """Whether the run before this one ran the same page (not a first visit, not back from another page).
    Fragment reruns do not count: they run no page."""
    before = st.session_state.get(_PAGE_BEFORE)
    return before is not None and before == st.session_state.get(_PAGE)
