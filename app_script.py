"""Memory Playground: the page script the server (``streamlit_app.py``) runs on every visit and rerun.

Every run: verify (or restore, or create) the visitor's identity, draw the
sidebar, keep the identity cookie current, then run the selected page. Pages
are thin views over core/ (and agent/ for the in-process agent).
"""

import streamlit as st

# An emoji, not a Material icon: Streamlit draws an emoji favicon in the page, but fetches a Material
# one from fonts.gstatic.com, which an offline machine cannot reach (tests/app/test_browser_offline.py)
st.set_page_config(page_title="Memory Playground", page_icon="🧠", layout="wide", initial_sidebar_state="auto")

from ui import shell  # noqa: E402 - st.set_page_config must run before anything else Streamlit does

shell.render_shell()

pages = [
    st.Page("pages/chat.py", title="Chat", icon=":material/chat:", default=True),
    st.Page("pages/voice.py", title="Voice", icon=":material/mic:"),
    st.Page("pages/memories.py", title="Memories", icon=":material/neurology:"),
    st.Page("pages/sessions.py", title="Sessions", icon=":material/history:"),
    st.Page("pages/knowledge.py", title="Knowledge", icon=":material/menu_book:"),
    st.Page("pages/livekit.py", title="LiveKit", icon=":material/podcasts:"),
]
navigation = st.navigation(pages, position="top")
shell.page_follows()
navigation.run()
