"""LiveKit connection panel: a token for the verified user (identity = user id,
one room per session) whose room configuration dispatches the agent worker with
metadata {"user_id": <verified id>}. Use it with LiveKit's hosted Agents
Playground or Meet. Nothing on this page can choose the user id."""

from __future__ import annotations

import json

import streamlit as st

from core import profiles
from core.config import get_settings
from core.livekit_tokens import AGENTS_PLAYGROUND_URL, mint_user_token
from ui import auth
from ui.errors import reported
from ui.format import literal, when
from ui.shell import run_page
from ui.sidebar import configuration_checks
from ui.style import page_header

TOKEN_KEY = "u_livekit_token"


def _not_configured() -> None:
    st.info(
        "**LiveKit is not configured**, so this playground runs the agent in-process (Chat and Voice pages). "
        "To talk to the same agent through a LiveKit room — LiveKit Cloud or `livekit-server --dev` — set these "
        "and restart the app:",
        icon=":material/podcasts:",
    )
    st.code(
        "LIVEKIT_URL=wss://<your-project>.livekit.cloud\nLIVEKIT_API_KEY=<key>\nLIVEKIT_API_SECRET=<secret>\n"
        "AGENT_NAME=memory-playground   # optional",
        language="bash",
    )
    st.markdown(
        "Then run the worker next to the app: `python -m agent dev`. This page will mint a token for **you** "
        "(identity = your verified user id) for a fresh room, and the room will dispatch the worker with your "
        "user id in its metadata, so the agent remembers you there too."
    )


def _server_unreachable() -> None:
    """What the sidebar's LiveKit check found, when it failed: a token mints without the server, so the page
    looked ready while nothing could join (found in a fresh-clone walkthrough)."""
    report = configuration_checks().report
    found = next((row for row in report.results if row.name == "livekit"), None) if report else None
    if found is not None and found.failed:
        st.warning(
            f"The configuration check of LiveKit failed: {literal(found.summary.rstrip('.'))}"
            + (f"; {literal(found.fix.rstrip('.'))}." if found.fix else ".")
            + " A token still mints, but nothing can join its room until the check passes.",
            icon=":material/cloud_off:",
        )


def main() -> None:
    visitor = auth.current_visitor()
    settings = get_settings()
    page_header(
        "LiveKit",
        "Connect to the agent through a LiveKit room with a token minted for your verified identity.",
        icon=":material/podcasts:",
    )
    if not settings.livekit_configured:
        _not_configured()
        return

    info, action = st.columns([3, 2], gap="large")
    with info:
        st.markdown(
            f"**Server** `{settings.livekit_url}`  \n**Agent a room dispatches** `{settings.agent_name}`  \n"
            f"**Your identity** `{visitor.user_id}` (from your verified session; it cannot be changed here)"
        )
        _server_unreachable()
    with action:
        if st.button(
            "Mint a token for a new room", key="u_livekit_mint", type="primary", icon=":material/key:", width="stretch"
        ):
            with reported():
                st.session_state[TOKEN_KEY] = mint_user_token(visitor.verified)
        st.caption("Each token opens a new room: one room per conversation.")

    minted = st.session_state.get(TOKEN_KEY)
    if minted is None or minted.identity != str(visitor.user_id):
        st.caption("No token yet.")
        return
    zone = profiles.time_zone(visitor.scope)  # the user's calendar, as on the Memories and Sessions pages
    st.success(
        f"Token for room `{minted.room_name}`, valid until {when(minted.expires_at, zone)}.",
        icon=":material/check_circle:",
    )
    st.markdown("**Access token**")
    st.code(minted.token, language=None, wrap_lines=True)
    details, links = st.columns([3, 2], gap="large")
    with details:
        st.markdown("**What the token says**")
        st.json(
            {
                "identity": minted.identity,
                "room": minted.room_name,
                "room_config.agents": [
                    {"agent_name": minted.agent_name, "metadata": json.dumps(minted.dispatch_metadata)}
                ],
            }
        )
    with links:
        st.markdown("**Use it**")
        st.link_button(
            "Open LiveKit Agents Playground", AGENTS_PLAYGROUND_URL, icon=":material/open_in_new:", width="stretch"
        )
        st.caption("In the playground choose the manual connection, paste the server URL above and this token.")
        st.link_button("Join the room in LiveKit Meet", minted.meet_url, icon=":material/call:", width="stretch")
        st.caption("Make sure the worker is running (`python -m agent dev`); the room dispatches it on join.")


run_page(main)
