"""Delete everything about a user: what "Delete everything about me" runs (as the user, under RLS).

One function, so a new kind of user data is erased by adding it here: a table with a `user_id` column
gets a line in USER_TABLES (tests/core/test_erasure.py finds every such table from the catalog and fails
until it is erased); a table whose rows hang off another one by a foreign key with ON DELETE CASCADE
(conversation turns under sessions; their word statistics through a trigger) goes with its parent. The
profile row stays (it belongs to the account, created by a trigger) with every field the user or the agent
filled cleared; pending session reports on disk (kept after a failed save) are deleted too, and turns
still queued in this process's turn indexer are stored first, so they are erased too.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from psycopg import sql

from core import sessions, turn_indexer
from core.config import get_settings
from core.db import Scope, transaction

log = logging.getLogger(__name__)

# Tables holding rows keyed by `user_id`, children before parents.
USER_TABLES = ("memories", "sessions")
# Profile fields set by the user or the agent, and what they go back to.
PROFILE_RESET = {"name": None, "email": None, "preferred_language": None, "timezone": None, "preferences": "{}"}


@dataclass(frozen=True)
class Erased:
    rows: dict[str, int] = field(default_factory=dict)  # table -> rows deleted
    turns: int = 0  # conversation turns that went with the sessions
    profile_cleared: bool = False
    pending_reports: int = 0

    @property
    def total(self) -> int:
        return sum(self.rows.values()) + self.turns + self.pending_reports

    def summary(self) -> str:
        memories, sessions = self.rows.get("memories", 0), self.rows.get("sessions", 0)
        return (
            f"Deleted {memories} memor{'y' if memories == 1 else 'ies'}, {sessions} session report"
            f"{'' if sessions == 1 else 's'} with {self.turns} conversation turn{'' if self.turns == 1 else 's'}"
            " and your profile details."
        )


def pending_reports_dir() -> Path:
    """Where session reports wait after a failed save (agent/reports.py writes them, retries them later)."""
    return get_settings().data_dir / "pending_reports"


def delete_pending_reports(user_id: uuid.UUID, *, session_id: str | None = None) -> int:
    """Delete the user's session reports (of `session_id` only, if given) still waiting on disk, or set
    aside (``rejected/``); returns how many."""
    directory = pending_reports_dir()
    if not directory.is_dir():
        return 0
    deleted = 0
    for path in [*directory.rglob("*.json"), *directory.rglob("*.bad")]:
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
            owner, session = payload.get("user_id"), payload.get("session_id")
        except (OSError, ValueError, AttributeError) as exc:
            log.warning("pending report %s could not be read while erasing a user: %s", path.name, exc)
            continue
        if owner == str(user_id) and (session_id is None or session == session_id):
            path.unlink(missing_ok=True)
            path.with_suffix(".reason.txt").unlink(missing_ok=True)  # a rejected report's note beside it
            deleted += 1
    return deleted


def delete_session(scope: Scope, session_id: str) -> int:
    """Delete one of `scope`'s sessions: its report, every turn of it (queued turns are stored first, so they
    go too instead of bringing the session back) and a report of it still waiting on disk. Returns how many
    turns went with it; NotFound if the user has no such session. A conversation or call still running this
    session is the caller's to end first (ui/erase.py), or its report would bring the session back."""
    if not turn_indexer.flush_queued():
        log.warning("some conversation turns were still queued when deleting session %s", session_id)
    turns = sessions.delete_session(scope, session_id)
    delete_pending_reports(scope.user_id, session_id=session_id)
    return turns


def delete_everything(scope: Scope) -> Erased:
    """Erase every row and file about `scope`'s user in one transaction (files after it commits)."""
    # turns said just before (in another tab, say) may still wait in this process's indexer: stored first,
    # they are erased with the rest instead of arriving after
    if not turn_indexer.flush_queued():
        log.warning("some conversation turns were still queued when erasing %s", scope.user_id)
    rows: dict[str, int] = {}
    with transaction(scope) as cur:
        cur.execute("select count(*) as n from public.conversation_turns where user_id = %s", (scope.user_id,))
        turns = cur.fetchone()["n"]
        for table in USER_TABLES:
            cur.execute(
                sql.SQL("delete from public.{} where user_id = %s").format(sql.Identifier(table)), (scope.user_id,)
            )
            rows[table] = cur.rowcount
        assignments = sql.SQL(", ").join(sql.SQL("{} = %s").format(sql.Identifier(column)) for column in PROFILE_RESET)
        cur.execute(
            sql.SQL("update public.profiles set {} where id = %s").format(assignments),
            (*PROFILE_RESET.values(), scope.user_id),
        )
        profile_cleared = cur.rowcount == 1
    return Erased(
        rows=rows, turns=turns, profile_cleared=profile_cleared, pending_reports=delete_pending_reports(scope.user_id)
    )
