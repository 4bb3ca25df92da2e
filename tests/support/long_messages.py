"""Messages exactly as long as the chat allows (2,000 characters, twice a search query's limit), each asking
for one of the agent's searches at its start or at its end, with a pasted-in text between."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from agent import MAX_MESSAGE_LENGTH
from core import conversations, memories
from core.conversations import TurnInput
from core.db import Scope

PASTED = "The weather was grey and the streets were quiet that morning. "


def as_long_as_allowed(start: str, end: str) -> str:
    room = MAX_MESSAGE_LENGTH - len(start) - len(end) - 2
    return f"{start} {(PASTED * (room // len(PASTED) + 1))[:room]} {end}"


# (message, the tool the offline brain and the stand-in model call for it, what the answer quotes)
LONG_MESSAGES = {
    "knowledge": (
        as_long_as_allowed("Some background first.", "How much does shipping to Canada cost?"),
        "search_knowledge",
        "$24.95",
    ),
    "memories": (
        as_long_as_allowed("search my memories for my usual drink and", "that is all."),
        "search_memories",
        "oat flat white",
    ),
    "past conversations": (
        as_long_as_allowed("Some background first.", "What was the name of that trail I mentioned last week?"),
        "search_past_conversations",
        "Cedar Creek Loop",
    ),
}


def remember_what_they_ask_about(user) -> None:
    """A slot and a past turn of last week for the long messages to find."""
    memories.remember(user.scope, "favorite_drink", "oat flat white")
    last_week = datetime.now(UTC).replace(microsecond=0) - timedelta(days=7)
    said = "We hiked the Cedar Creek Loop on Saturday."
    conversations.store_turns(
        Scope.service(user.user_id), [TurnInput(f"earlier-{uuid.uuid4().hex}", 0, "user", said, last_week)]
    )
