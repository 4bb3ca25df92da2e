"""Session reports: written by the service when a conversation ends, read by
the user (RLS: own rows only)."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_exponential

from core.conversations import Mentions, forgettable
from core.db import Scope, transaction
from core.errors import DatabaseUnavailable, InvalidInput, NotFound, SessionDeleted
from core.text import clean_int, clean_text, sanitize_json

log = logging.getLogger(__name__)
MAX_REPORT_BYTES = 5_000_000
DELETED_TEXT = "[deleted]"  # what a string of a report that said a deleted memory becomes (and in the SQL)
# Saving a report and deleting a memory take this per-user lock, so a report saved while a memory is deleted
# is either cleaned by the deletion (saved first) or sees the memory gone (saved after).
_REPORTS_LOCK = 727431004


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
    def is_open(self) -> bool:
        """Still going (or ended without its report saved yet): its turns are stored as they happen
        (core.conversations), its report is written when it ends."""
        return not self.report and self.ended_at is None

    @property
    def duration_seconds(self) -> float | None:
        if self.started_at and self.ended_at:
            return (self.ended_at - self.started_at).total_seconds()
        return None


_COLUMN_NAMES = ("session_id", "user_id", "room_name", "report", "started_at", "ended_at", "created_at")
_COLUMNS = ", ".join(_COLUMN_NAMES)


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
    if room_name is not None:
        room_name = clean_text(room_name, what="room name", max_length=200, allow_empty=True) or None
    for name, value in (("start", started_at), ("end", ended_at)):
        if value is not None and not isinstance(value, datetime):
            raise InvalidInput(f"The session's {name} time must be a date and time.")
    if not isinstance(report, dict):
        raise InvalidInput("A session report must be a JSON object.")
    # What jsonb cannot hold (NaN, NUL, broken Unicode) is replaced, not refused: a report is never lost for it.
    encoded = json.dumps(sanitize_json(report), ensure_ascii=False, allow_nan=False)
    if len(encoded.encode()) > MAX_REPORT_BYTES:
        raise InvalidInput(
            f"The session report is too large to store ({len(encoded.encode()):,} bytes; "
            f"the limit is {MAX_REPORT_BYTES:,})."
        )
    try:
        row = _upsert_report(scope, session_id, encoded, _written(report), room_name, started_at, ended_at)
    except pg_errors.ForeignKeyViolation:
        raise NotFound("There is no such user to save a session report for.") from None
    except psycopg.DataError as exc:  # anything else Postgres cannot store
        raise InvalidInput(f"The database refused the session report ({str(exc).strip().splitlines()[0]}).") from None
    if row is None:
        if was_deleted(scope, session_id):
            raise SessionDeleted(f"Session {session_id} was deleted by its owner; its report is not kept.")
        raise InvalidInput(f"Session {session_id} belongs to another user.")
    return SessionRecord(**row)


DELETED_IDS_KEPT_DAYS = 30  # longer than a call lasts or a report waits on disk for the database


def prune_deleted(conn, older_than_days: float = DELETED_IDS_KEPT_DAYS) -> int:
    """Forget the ids of sessions deleted more than `older_than_days` ago (the cleanup job, as the owner)."""
    return conn.execute(
        "delete from memory_playground_private.deleted_sessions where deleted_at < now() - make_interval(secs => %s)",
        (float(older_than_days) * 86400,),
    ).rowcount


def was_deleted(scope: Scope, session_id: str) -> bool:
    """Whether the scope's user deleted this session (in the last 30 days): a session or turn inserted under its
    id is skipped by the database (supabase/migrations/20261127000000_deleted_sessions_stay_deleted.sql)."""
    if not scope.is_service:
        raise InvalidInput("Deleted sessions are looked up by the service, not as the user.")
    with transaction(scope) as cur:
        cur.execute(
            "select 1 from memory_playground_private.deleted_sessions where session_id = %s and user_id = %s",
            (session_id, scope.user_id),
        )
        return cur.fetchone() is not None


def deleted_ids(scope: Scope, session_ids) -> set[str]:
    """Which of these ids name sessions the scope's user deleted (ids are kept DELETED_IDS_KEPT_DAYS): as the
    user through public.deleted_session_ids (the table is private), as the service directly."""
    ids = sorted({clean_text(s, what="session id", max_length=200) for s in session_ids})
    if not ids:
        return set()
    with transaction(scope) as cur:
        if scope.is_service:
            cur.execute(
                "select session_id from memory_playground_private.deleted_sessions "
                "where user_id = %s and session_id = any(%s)",
                (scope.user_id, ids),
            )
        else:
            cur.execute("select t.session_id from public.deleted_session_ids(%s) as t(session_id)", (ids,))
        return {row["session_id"] for row in cur.fetchall()}


def _written(report: dict[str, Any]) -> dict[str, str]:
    """Slot -> the last text the report says the session wrote to it (a "forgotten" entry: what it forgot)."""
    section = report.get("playground")
    entries = section.get("memories_written") if isinstance(section, dict) else None
    last: dict[str, str] = {}
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict):
            slot, text = entry.get("memory_type"), entry.get("content") or entry.get("previous_content")
            if isinstance(slot, str) and isinstance(text, str) and text.strip():
                last[slot] = text
    return last


def forget_in_reports(cur, scope: Scope, texts) -> int:
    """Replace every string of the scope's user's session reports that says one of `texts` (whole words, any
    case) with DELETED_TEXT: a deleted memory leaves the reports as it leaves the turns. Runs in the caller's
    transaction, as the user (public.blank_strings_in_session_reports: users cannot update reports) or the
    service; returns how many reports changed."""
    says = Mentions(forgettable(cur, texts))
    if not says:
        return 0
    # an ilike filter on each text's longest word (JSON never escapes a \w character): a cheap first pass
    words = [f"%{Mentions.key_word(text)}%" for text in says.texts]
    cur.execute("select pg_advisory_xact_lock(hashtextextended(%s::text, %s))", (scope.user_id, _REPORTS_LOCK))
    # The strings are found here, not by a regular expression per text in SQL: Postgres keeps 32 compiled
    # ones, so Delete all (up to 1,000 texts) recompiled every pattern on every string and never finished.
    # Few texts: only the reports holding one of their words are read (ilike over many words costs more).
    few = len(words) <= 32
    cur.execute(
        "select session_id, report::text as report from public.sessions where user_id = %s and report is not null"
        + (" and report::text ilike any (%s)" if few else ""),
        (scope.user_id, words) if few else (scope.user_id,),
    )
    # Every distinct string once, through the word index (Mentions.among): tried one by one, texts sharing
    # a longest word ("coffee") were each tried on every string saying it, and a heavy visitor's Delete all
    # ran millions of regular expressions (100 s).
    sessions_saying: dict[str, set[str]] = {}
    for row in cur.fetchall():
        for string in _strings_in(json.loads(row["report"])):
            sessions_saying.setdefault(string, set()).add(row["session_id"])
    distinct = list(sessions_saying)
    strings = {distinct[position] for position in says.among(distinct)}
    if not strings:
        return 0
    session_ids = sorted({session_id for string in strings for session_id in sessions_saying[string]}, key=str)
    if not scope.is_service:
        cur.execute("select public.blank_strings_in_session_reports(%s, %s) as n", (session_ids, sorted(strings)))
        return int(cur.fetchone()["n"])
    cur.execute(
        """
        update public.sessions s set report = r.report
        from (
          select x.session_id, memory_playground_private.blank_strings(x.report, %(lookup)s::jsonb) as report
          from public.sessions x where x.user_id = %(user)s and x.session_id = any (%(ids)s)
        ) r
        where s.session_id = r.session_id and s.user_id = %(user)s and s.report is distinct from r.report
        """,
        {"lookup": json.dumps(dict.fromkeys(strings, True)), "user": scope.user_id, "ids": session_ids},
    )
    return cur.rowcount


def _strings_in(doc: Any):
    """Every string value of a decoded JSON document (not the keys: they are the report's own names)."""
    if isinstance(doc, str):
        yield doc
    elif isinstance(doc, dict):
        for value in doc.values():
            yield from _strings_in(value)
    elif isinstance(doc, list):
        for value in doc:
            yield from _strings_in(value)


def blanked(doc: Any, says: Callable[[str], bool], marker: str = DELETED_TEXT) -> Any:
    """The decoded JSON document with every string value that `says` (a Mentions, say) replaced by `marker`."""
    if isinstance(doc, str):
        return marker if says(doc) else doc
    if isinstance(doc, dict):
        return {key: blanked(value, says, marker) for key, value in doc.items()}
    if isinstance(doc, list):
        return [blanked(value, says, marker) for value in doc]
    return doc


def _upsert_report(
    scope: Scope, session_id: str, encoded: str, written: dict[str, str], room_name, started_at, ended_at
):
    with transaction(scope) as cur:
        # a memory the session wrote and the user deleted before the report was saved: its text is left out
        cur.execute("select pg_advisory_xact_lock(hashtextextended(%s::text, %s))", (scope.user_id, _REPORTS_LOCK))
        gone: list[str] = []
        if written:
            cur.execute(
                "select memory_type from public.memories where user_id = %s and memory_type = any(%s)",
                (scope.user_id, list(written)),
            )
            kept = {row["memory_type"] for row in cur.fetchall()}
            gone = [text for slot, text in written.items() if slot not in kept]
        says = Mentions(forgettable(cur, gone))
        if says:  # the same rule as a deletion applies to the reports saved before it (forget_in_reports)
            encoded = json.dumps(blanked(json.loads(encoded), says), ensure_ascii=False, allow_nan=False)
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
        return cur.fetchone()


# A list's reports hold only what the overview reads (turns, tools, memories written, mode, duration): a long
# session's report is about 1 MB, mostly every event, retrieval and metric, and decoding 100 of them whole
# took 6 to 11 s on every run of the Sessions page. A report without our section keeps livekit's chat history,
# which the transcript and tools are read from then.
_BRIEF_REPORT = """case when report is null or report = '{}'::jsonb then report
  when jsonb_typeof(report->'playground') = 'object' then jsonb_build_object(
    'user_turns', report->'user_turns', 'duration_ms', report->'duration_ms', 'voice', report->'voice',
    'playground', jsonb_build_object(
      'turns', report#>'{playground,turns}', 'duration_s', report#>'{playground,duration_s}',
      'mode', report#>'{playground,mode}', 'transcript', report#>'{playground,transcript}',
      'tool_calls', report#>'{playground,tool_calls}',
      'memories_written', report#>'{playground,memories_written}'))
  else report - 'events' end as report"""


def list_sessions(scope: Scope, *, limit: int = 100, brief: bool = False) -> list[SessionRecord]:
    """The newest sessions; `brief`: their reports without the per-event parts (_BRIEF_REPORT), for a list
    (get_session reads one whole)."""
    columns = ", ".join(_BRIEF_REPORT if name == "report" else name for name in _COLUMN_NAMES) if brief else _COLUMNS
    with transaction(scope) as cur:
        cur.execute(
            f"select {columns} from public.sessions where user_id = %s order by created_at desc limit %s",
            (scope.user_id, clean_int(limit, what="number of sessions", minimum=1, maximum=1000)),
        )
        return [SessionRecord(**row) for row in cur.fetchall()]


def newest_ended_by(scope: Scope, reason: str, *, within_seconds: float) -> SessionRecord | None:
    """The user's newest session when it ended for `reason` (its report's `playground.ended_by`) within the last
    `within_seconds`, after the user said something in it; None otherwise. Its report is left out (not read)."""
    with transaction(scope) as cur:
        cur.execute(
            "select session_id, user_id, room_name, '{}'::jsonb as report, started_at, ended_at, created_at "
            "from (select * from public.sessions where user_id = %s order by created_at desc limit 1) newest "
            "where report #>> '{playground,ended_by}' = %s and ended_at > now() - make_interval(secs => %s) "
            "and coalesce((report #>> '{playground,turns}')::int, 0) > 0",
            (scope.user_id, reason, float(within_seconds)),
        )
        row = cur.fetchone()
    return SessionRecord(**row) if row else None


def count_sessions(scope: Scope) -> int:
    with transaction(scope) as cur:
        cur.execute("select count(*) as n from public.sessions where user_id = %s", (scope.user_id,))
        return int(cur.fetchone()["n"])


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


def delete_session(scope: Scope, session_id: str) -> int:
    """Delete one of the scope's sessions: its report and every turn of its conversation (they cascade);
    returns how many turns went with it. (core.erasure.delete_session also takes what waits in queues.)"""
    session_id = clean_text(session_id, what="session id", max_length=200)
    with transaction(scope) as cur:
        cur.execute(
            "select count(*) as n from public.conversation_turns where session_id = %s and user_id = %s",
            (session_id, scope.user_id),
        )
        turns = int(cur.fetchone()["n"])
        cur.execute("delete from public.sessions where session_id = %s and user_id = %s", (session_id, scope.user_id))
        deleted = cur.rowcount
    if not deleted:
        raise NotFound(f"Session {session_id} not found.")
    return turns


def delete_all_sessions(scope: Scope) -> int:
    """Delete all of the scope's sessions, their reports and conversation turns; returns how many sessions."""
    with transaction(scope) as cur:
        cur.execute("delete from public.sessions where user_id = %s", (scope.user_id,))
        return cur.rowcount
