"""Session reports: written by the service when a conversation ends, read by
the user (RLS: own rows only)."""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_exponential

from core.db import Scope, transaction
from core.errors import DatabaseUnavailable, InvalidInput, NotFound
from core.text import clean_text

log = logging.getLogger(__name__)
MAX_REPORT_BYTES = 5_000_000


@dataclass(frozen=True)
class SessionRecord:
    session_id: str
    user_id: uuid.UUID
    room_name: str | None
    report: dict[str, Any]
    started_at: datetime | None
    ended_at: datetime | None
    created_at: datetime

    @property
    def duration_seconds(self) -> float | None:
        if self.started_at and self.ended_at:
            return (self.ended_at - self.started_at).total_seconds()
        return None


_COLUMNS = "session_id, user_id, room_name, report, started_at, ended_at, created_at"


@retry(
    retry=retry_if_exception_type(DatabaseUnavailable),
    stop=stop_after_attempt(4),
    wait=wait_exponential(multiplier=0.5, max=4),
    reraise=True,
    before_sleep=lambda state: log.warning("saving session report failed; retrying (%s)", state.outcome.exception()),
)
def save_report(
    scope: Scope,
    session_id: str,
    report: dict[str, Any],
    *,
    room_name: str | None = None,
    started_at: datetime | None = None,
    ended_at: datetime | None = None,
) -> SessionRecord:
    """Insert or replace the report for `session_id` (service scope only).

    Retried on connection failures; the caller logs a final failure, so a
    report is never dropped silently.
    """
    if not scope.is_service:
        raise InvalidInput("Session reports are written by the service, not as the user.")
    session_id = clean_text(session_id, what="session id", max_length=200)
    encoded = json.dumps(report, default=str, ensure_ascii=False)
    if "\\u0000" in encoded:
        encoded = encoded.replace("\\u0000", "")  # Postgres jsonb cannot hold NUL; drop them, keep the rest
    if len(encoded.encode()) > MAX_REPORT_BYTES:
        raise InvalidInput("The session report is too large to store.")
    with transaction(scope) as cur:
        cur.execute(
            f"""
            insert into public.sessions (session_id, user_id, room_name, report, started_at, ended_at)
            values (%s, %s, %s, %s::jsonb, %s, %s)
            on conflict (session_id) do update
              set report = excluded.report, room_name = excluded.room_name,
                  started_at = excluded.started_at, ended_at = excluded.ended_at
              where public.sessions.user_id = excluded.user_id
            returning {_COLUMNS}
            """,
            (session_id, scope.user_id, room_name, encoded, started_at, ended_at),
        )
        row = cur.fetchone()
    if row is None:
        raise InvalidInput(f"Session {session_id} belongs to another user.")
    return SessionRecord(**row)


def list_sessions(scope: Scope, *, limit: int = 100) -> list[SessionRecord]:
    with transaction(scope) as cur:
        cur.execute(
            f"select {_COLUMNS} from public.sessions where user_id = %s order by created_at desc limit %s",
            (scope.user_id, max(1, min(int(limit), 1000))),
        )
        return [SessionRecord(**row) for row in cur.fetchall()]


def get_session(scope: Scope, session_id: str) -> SessionRecord:
    session_id = clean_text(session_id, what="session id", max_length=200)
    with transaction(scope) as cur:
        cur.execute(
            f"select {_COLUMNS} from public.sessions where session_id = %s and user_id = %s",
            (session_id, scope.user_id),
        )
        row = cur.fetchone()
    if row is None:
        raise NotFound(f"Session {session_id} not found.")
    return SessionRecord(**row)


def delete_session(scope: Scope, session_id: str) -> None:
    """Delete one of the user's session reports (as the user: RLS lets them delete only their own)."""
    session_id = clean_text(session_id, what="session id", max_length=200)
    with transaction(scope) as cur:
        cur.execute("delete from public.sessions where session_id = %s and user_id = %s", (session_id, scope.user_id))
        if cur.rowcount == 0:
            raise NotFound(f"Session {session_id} not found.")
