"""Memory Playground: the entry point.

Every run: verify (or restore, or create) the visitor's identity, draw the
sidebar, keep the identity cookie current, then run the selected page. Pages
are thin views over core/ (and agent/ for the in-process agent).
"""

from pathlib import Path

import streamlit as st

st.set_page_config(page_title="Memory Playground", page_icon=":material/neurology:", layout="wide",
                   initial_sidebar_state="expanded")

from ui import shell  # noqa: E402  (set_page_config must come first)

APP_DIR = Path(__file__).resolve().parent

shell.render_shell()

pages = [st.Page("pages/chat.py", title="Chat", icon=":material/chat:", default=True)]
if (APP_DIR / "pages" / "voice.py").exists():  # written by the voice work; optional until it lands
    pages.append(st.Page("pages/voice.py", title="Voice", icon=":material/mic:"))
pages += [
    st.Page("pages/memories.py", title="Memories", icon=":material/neurology:"),
    st.Page("pages/sessions.py", title="Sessions", icon=":material/history:"),
    st.Page("pages/knowledge.py", title="Knowledge", icon=":material/menu_book:"),
    st.Page("pages/livekit.py", title="LiveKit", icon=":material/podcasts:"),
]
navigation = st.navigation(pages, position="top")
shell.page_follows()
navigation.run()
