"""Look and feel: a little CSS for projector-friendly pages, page headers and
empty states."""

from __future__ import annotations

import streamlit as st

# the key of the search half of Memories and Knowledge: the CSS below lets the two halves wrap
SEARCH_SIDE = "u_search_side"

_CSS = """
<style>
/* The cookie writer is a script with nothing to show; keep it from taking space. */
.st-key-mp_cookie_writer { display: none !important; }
/* A demo, not a deployment: no Deploy button; less empty space above the title. */
[data-testid="stAppDeployButton"] { display: none !important; }
[data-testid="stMainBlockContainer"] { padding-top: 3.2rem; }
/* Keyboard focus on the top navigation: Streamlit gives a focused link the grey of the page you are on, so
   Tab showed no change on it; the ring every other control gets. */
[data-testid="stTopNavLink"]:focus-visible { outline: 2px solid #0f766e; outline-offset: 2px; }
/* Headings a touch bolder and tighter for projectors. */
h1 { letter-spacing: -0.01em; }
div[data-testid="stMetricValue"] { font-size: 1.6rem; }
/* A per-turn recall's two tiers (ui.retrieval.render_recall_tiers): side by side only when both tables fit.
   The flex item of the row is the layout wrapper Streamlit puts around each tier, so the minimum width goes
   on it; on the tier alone, the wrappers shrank and the second tier was drawn over the first. No wider than
   the panel, though: the chat's panel is narrower than 22rem at 1024 px with the sidebar open, and the
   tables stuck out of it. */
div[data-testid="stLayoutWrapper"]:has(> div[class*="_slots_tier"]),
div[data-testid="stLayoutWrapper"]:has(> div[class*="_conversations_tier"]) {
  flex: 1 1 22rem !important; min-width: min(22rem, 100%) !important;
}
/* Memories and Knowledge: the list and the search side by side only when both fit (the row whose column holds
   the search half, keyed SEARCH_SIDE); beside an open sidebar at 1024 px each half was 278 px wide, and the
   results' numbers were cut off. */
div[data-testid="stHorizontalBlock"]:has(> div[data-testid="stColumn"] .st-key-u_search_side) {
  flex-wrap: wrap; row-gap: 1.5rem;
}
div[data-testid="stHorizontalBlock"]:has(> div[data-testid="stColumn"] .st-key-u_search_side)
  > div[data-testid="stColumn"] { flex: 1 1 22rem !important; min-width: min(22rem, 100%) !important; }
/* A word longer than its column (a code, a link, "xxxx…") wraps, and never pushes the numbers beside it out
   of a table: at 1024 px beside the sidebar they were cut off with no way to scroll to them. Only the text
   column gives way inside a word (its header too, in the narrowest panel); the numbers and their headers keep
   theirs whole ("Vecto r", "0.083 33" read as two things). */
[data-testid="stTable"] :is(th, td, th *, td *) { overflow-wrap: break-word !important; }
[data-testid="stTable"] :is(th:first-child, td:first-child, th:first-child *, td:first-child *) {
  overflow-wrap: anywhere !important;
}
div[class*="_slots_tier"], div[class*="_conversations_tier"] { min-width: 0 !important; width: 100%; }
/* ...but on a phone not to a few letters a line: at 390 px the past conversations' first column was 51 px wide
   ("rame n plac e I men tione d?") beside four columns of numbers, which now sit closer together instead.
   Only there: a wider screen's narrow panels (1024 px, the sidebar open) have no room for it. */
@media (max-width: 640px) {
  [data-testid="stTable"] td:first-child { min-width: min(6.5rem, 28vw); }
  [data-testid="stTable"] :is(th, td) { padding-left: 0.3rem !important; padding-right: 0.3rem !important; }
}
/* On a phone the chat's columns stack (Streamlit's 640 px breakpoint): the panel under the conversation
   then grows with the page instead of being a second scroll box inside the scrolling page. */
@media (max-width: 640px) {
  .st-key-u_chat_panel, div:has(> .st-key-u_chat_panel) {
    height: auto !important; max-height: none !important; overflow: visible !important;
  }
}
</style>
"""


def apply() -> None:
    st.html(_CSS)


def page_header(title: str, subtitle: str | None = None, *, icon: str | None = None) -> None:
    st.title(f"{icon} {title}" if icon else title, anchor=False)
    if subtitle:
        st.caption(subtitle)


def empty_state(icon: str, title: str, body: str, *, link: tuple[str, str, str] | None = None) -> None:
    with st.container(border=True, horizontal_alignment="center"):
        st.markdown(f"#### {icon} {title}", anchors=False)
        st.markdown(body)
        if link:
            page, label, link_icon = link
            st.page_link(page, label=label, icon=link_icon)
