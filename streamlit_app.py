"""Memory Playground: the server entry point (`make run`, `streamlit run streamlit_app.py`).

An ``st.App`` runs the page script ``app_script.py`` on every visit; its lifespan
(``ui/server.py``) registers the livekit plugins on the main thread and warms the
database, the models and the agent up in the background as the server starts.
"""

import streamlit as st

from ui.server import exit_on_bad_settings, lifespan, routes

exit_on_bad_settings()

app = st.App("app_script.py", lifespan=lifespan, routes=routes)
