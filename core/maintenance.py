"""The maintenance job behind `python -m core cleanup` (run by `make run` before the app starts)."""

from __future__ import annotations

import logging

from core import conversations, identity, session_store, sessions, vector_indexes
from core.config import get_settings
from core.db import admin_connection
from core.errors import EmbeddingUnavailable

log = logging.getLogger(__name__)


def cleanup(older_than_days: float | None = None, *, conninfo: str | None = None) -> dict[str, int]:
    """Delete anonymous users idle longer than ANON_USER_RETENTION_DAYS (with everything they own),
    session hand-offs older than the longest a session lasts, and the ids of sessions deleted more than
    30 days ago. Runs as the owner. Also embeds the conversation turns an earlier process stored without
    an embedding (core.conversations.embed_all_pending), and keeps the heavy users' vector indexes
    (core.vector_indexes), after the deletions so that a deleted user's goes with them."""
    removed = {"anonymous_users": identity.delete_idle_anonymous_users(older_than_days, conninfo=conninfo)}
    with admin_connection(conninfo) as conn:
        lifetime = get_settings().refresh_token_lifetime_days * 86400
        removed["session_handoffs"] = session_store.prune(conn, lifetime + 86400)
        removed["deleted_session_ids"] = sessions.prune_deleted(conn)
    try:
        removed["turns_embedded"] = conversations.embed_all_pending(conninfo=conninfo)
    except EmbeddingUnavailable as exc:  # the turns stay searchable by text; the next run tries again
        log.warning("conversation turns stored without an embedding are still waiting: %s", exc)
        removed["turns_embedded"] = 0
    changes = vector_indexes.keep_vector_indexes(conninfo=conninfo)
    removed["vector_indexes_built"], removed["vector_indexes_dropped"] = len(changes.built), len(changes.dropped)
    removed["vector_indexes_failed"] = len(changes.failed)
    return removed
