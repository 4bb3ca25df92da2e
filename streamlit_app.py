"""Entry point (placeholder until the playground pages land): signs the visitor
in anonymously and shows who they are and whether the database is up."""

import streamlit as st

from core import db, identity
from core.config import get_settings
from core.errors import PlaygroundError

st.set_page_config(page_title="Memory Playground", page_icon=":material/memory:", layout="wide")
st.title("Memory Playground")

settings = get_settings()
try:
    health = db.ping()
    if "auth_session" not in st.session_state:
        st.session_state.auth_session = identity.sign_in_anonymously()
    verified = identity.verify(st.session_state.auth_session.access_token)
except PlaygroundError as exc:
    st.error(str(exc))
    st.stop()

st.success(f"Signed in anonymously as `{verified.user_id}`")
st.write(f"Mode: **{settings.mode_label}** · PostgreSQL {health['server_version']} · "
         f"{health['applied_migrations']} migration(s) applied")
