"""Tell whatever runs a session in this process that its owner deleted it, so that it ends.

A deleted session stays deleted whoever still runs it (the database skips its late turns and report), but
a call that goes on talking into it keeps nothing and tells the user nothing. Deleting a session sends a
notification from the database (supabase/migrations/20261127120000_session_deletion_notifications.sql),
which this process's database feed (:func:`core.memory_changes.follow_database`) hands to the listeners
here: the app's agent runtime (its chats and voice calls) and a LiveKit worker's job. A turn the database
skipped because its session was deleted tells them too (core.conversations.store_turns), should the feed have
missed the notice. Listeners (:class:`core.listeners.Listeners`) are called on the feed's thread or on the turn
indexer's.
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import Protocol

from core.listeners import Listeners

log = logging.getLogger(__name__)

CHANNEL = "session_deletions"


class Listener(Protocol):
    def session_deleted(self, user_id: uuid.UUID | None, session_id: str | None) -> None:
        """`user_id`'s session `session_id` was deleted. Both None: deletions may have been missed (the
        database was out of reach for a while), so a listener checks its own sessions
        (`core.sessions.was_deleted`)."""


_listeners = Listeners("session_deleted")
subscribe = _listeners.subscribe
unsubscribe = _listeners.unsubscribe


def notify(user_id: uuid.UUID | None, session_id: str | None) -> None:
    _listeners.notify(user_id, session_id)


def notify_missed() -> None:
    notify(None, None)


def parse_payload(payload: str) -> tuple[uuid.UUID, str] | None:
    """(user id, session id) of a notification, or None for anything else (logged)."""
    try:
        note = json.loads(payload)
        user_id, session_id = uuid.UUID(note["user_id"]), note["session_id"]
        if not isinstance(session_id, str) or not session_id:
            raise ValueError("no session id")
    except (ValueError, TypeError, KeyError, AttributeError):
        log.warning("ignored a %s notification that does not name a user and a session: %r", CHANNEL, payload[:120])
        return None
    return user_id, session_id
