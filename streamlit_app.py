"""Memory Playground: the server entry point (`make run`, `streamlit run streamlit_app.py`).

An ``st.App`` runs the page script ``app_script.py`` on every visit; its lifespan
(``ui/server.py``) registers the livekit plugins on the main thread and warms the
database, the models and the agent up in the background as the server starts.
"""

import sys

import streamlit as st

from core.config import check_settings
from core.errors import PlaygroundError
from ui.server import lifespan, routes

try:  # a setting that does not parse stops the server with one line naming it, as `make run` does
    check_settings()
except PlaygroundError as exc:
    print(f"error: {exc}", file=sys.stderr)
    raise SystemExit(2) from None

app = st.App("app_script.py", lifespan=lifespan, routes=routes)
