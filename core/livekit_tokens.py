"""LiveKit access tokens for the verified user.

The token's identity is the verified user id, it admits one participant to one
room (a fresh room per conversation), and its room configuration dispatches the
agent worker (`AGENT_NAME`) with metadata `{"user_id": <verified id>}`. The
worker scopes every query by that id, so the id must only ever come from
`core.identity.verify()`: this module accepts a VerifiedUser and nothing else.

`livekit.api` (the server SDK, not the agents framework) is imported lazily so
`import core` stays free of LiveKit.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from core.config import Settings, get_settings
from core.errors import ConfigurationError, InvalidInput
from core.identity import VerifiedUser

DEFAULT_TTL = timedelta(hours=1)
MAX_TTL = timedelta(hours=24)
ROOM_PREFIX = "mp"
_ROOM_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
# LiveKit's hosted Agents Playground accepts a server URL and a token pasted in by hand.
AGENTS_PLAYGROUND_URL = "https://agents-playground.livekit.io/"
MEET_CUSTOM_URL = "https://meet.livekit.io/custom"


@dataclass(frozen=True)
class LiveKitToken:
    token: str = field(repr=False)
    server_url: str
    room_name: str
    identity: str
    agent_name: str
    dispatch_metadata: dict[str, Any]
    expires_at: datetime

    @property
    def meet_url(self) -> str:
        """LiveKit Meet's custom-server page, pre-filled with this server and token."""
        return f"{MEET_CUSTOM_URL}?{urlencode({'liveKitUrl': self.server_url, 'token': self.token})}"


def new_room_name(verified: VerifiedUser) -> str:
    """One room per conversation: a short user prefix (for operators reading
    room lists) plus randomness (so rooms are never shared or guessed)."""
    return f"{ROOM_PREFIX}-{verified.user_id.hex[:8]}-{secrets.token_hex(6)}"


def _require_verified(verified: Any) -> VerifiedUser:
    # A bare id or a dict could come from a form or a query string; refuse anything
    # that did not come out of core.identity.verify().
    if not isinstance(verified, VerifiedUser):
        raise InvalidInput("A LiveKit token can only be minted for a verified user.")
    if str(verified.claims.get("sub")) != str(verified.user_id):
        raise InvalidInput("The identity's claims do not match its user id.")
    return verified


def mint_user_token(
    verified: VerifiedUser,
    *,
    room_name: str | None = None,
    ttl: timedelta = DEFAULT_TTL,
    display_name: str | None = None,
    settings: Settings | None = None,
) -> LiveKitToken:
    """A join token for `verified` whose room configuration dispatches the agent
    with the verified user id. Raises ConfigurationError when LiveKit is not set up."""
    verified = _require_verified(verified)
    settings = settings or get_settings()
    if not settings.livekit_configured:
        raise ConfigurationError(
            "LiveKit is not configured: set LIVEKIT_URL, LIVEKIT_API_KEY and LIVEKIT_API_SECRET "
            "(env vars or .streamlit/secrets.toml) and restart the app."
        )
    room_name = room_name or new_room_name(verified)
    if not isinstance(room_name, str) or not _ROOM_NAME_RE.fullmatch(room_name):  # match() allowed "name\n"
        raise InvalidInput("A room name may only use letters, digits, '-' and '_' (at most 128 characters).")
    if not isinstance(ttl, timedelta) or not timedelta(minutes=1) <= ttl <= MAX_TTL:
        raise InvalidInput("A LiveKit token must live between 1 minute and 24 hours.")

    from livekit import api  # the server SDK; lazy so core imports no LiveKit code by default

    user_id = str(verified.user_id)
    metadata = {"user_id": user_id}
    room_config = api.RoomConfiguration(
        agents=[api.RoomAgentDispatch(agent_name=settings.agent_name, metadata=json.dumps(metadata))],
    )
    token = (
        api.AccessToken(settings.livekit_api_key, settings.livekit_api_secret)
        .with_identity(user_id)
        .with_name(display_name or f"Visitor {user_id[:8]}")
        .with_grants(
            api.VideoGrants(room_join=True, room=room_name, can_publish=True, can_subscribe=True, can_publish_data=True)
        )
        .with_room_config(room_config)
        .with_ttl(ttl)
        .to_jwt()
    )
    return LiveKitToken(
        token=token,
        server_url=settings.livekit_url,
        room_name=room_name,
        identity=user_id,
        agent_name=settings.agent_name,
        dispatch_metadata=metadata,
        expires_at=datetime.now(UTC) + ttl,
    )
