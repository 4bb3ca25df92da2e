"""The user's remembered facts: one row per (user, slot).

Every function takes a Scope: as the user (RLS decides) or as the service
(bypasses RLS; every statement here filters by scope.user_id, which only
ever comes from a verified token or the agent's dispatch metadata).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from psycopg import errors as pg_errors

from core import conversations, embeddings, memory_changes, sessions, turn_indexer
from core.config import get_settings
from core.db import Scope, transaction, vector_literal
from core.errors import InvalidInput, NotFound, SessionDeleted
from core.text import clean_text, describe, normalize_slot

MAX_CONTENT_LENGTH = 2000
MAX_SESSION_ID_LENGTH = 200
MAX_PROFILE_NAME_LENGTH = 200  # public.profiles.name's check; a longer `name` memory leaves the profile as it is
_COLUMNS = "id, memory_type, content, session_id, created_at, updated_at, earlier_contents"


@dataclass(frozen=True)
class Memory:
    id: uuid.UUID
    memory_type: str
    content: str
    session_id: str | None
    created_at: datetime
    updated_at: datetime
    # the texts it held before, oldest first (the database keeps them: 20261207140000_memories_keep_earlier_values)
    earlier_contents: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "earlier_contents", tuple(self.earlier_contents or ()))

    @property
    def every_content(self) -> list[str]:
        """Its text and every text it held before: what deleting it takes out of past turns and reports."""
        return [self.content, *self.earlier_contents]

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "memory_type": self.memory_type,
            "content": self.content,
            "earlier_contents": list(self.earlier_contents),
            "session_id": self.session_id,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
        }


@dataclass(frozen=True)
class Forgotten:
    memory: Memory
    mentions_removed: int  # past conversation turns that said it (or a text it held before), deleted with it


@dataclass(frozen=True)
class DeletedAll:
    memories: int
    mentions_removed: int  # past conversation turns that said any of them, deleted with them
    profile_cleared: bool = False  # the profile details the agent keeps (name, language, ...) went too


# The profile details the agent learns in conversation ("call me Ada") and says back; to the user they are
# memories, so deleting all memories clears them (the email stays: in hosted mode it is the sign-in address).
LEARNED_PROFILE_FIELDS = ("name", "preferred_language", "timezone", "preferences")
_CLEAR_LEARNED_PROFILE = (
    "update public.profiles set name = null, preferred_language = null, timezone = null, preferences = '{}' "
    "where id = %s and (name is not null or preferred_language is not null or timezone is not null "
    "or preferences <> '{}')"
)


@dataclass(frozen=True)
class Remembered:
    memory: Memory
    created: bool  # False: an existing slot was overwritten
    previous_content: str | None

    @property
    def unchanged(self) -> bool:
        """The slot already held these exact words: nothing was written (remember)."""
        return not self.created and self.previous_content == self.memory.content


def _clean_session_id(session_id: str | None) -> str | None:
    if session_id is None:
        return None
    return clean_text(session_id, what="session id", max_length=MAX_SESSION_ID_LENGTH)


def remember(
    scope: Scope, memory_type: str, content: str, *, session_id: str | None = None, embed=embeddings.embed_one
) -> Remembered:
    """Upsert the slot. The embedding is computed before the transaction, so a
    failure there leaves nothing written.

    Concurrent calls for one user are serialised (a transaction-scoped advisory lock on
    the user), so `created` and `previous_content` describe exactly what this call did,
    and the per-user limit (MAX_MEMORIES_PER_USER) cannot be overshot by a race.

    SessionDeleted, and nothing written, when `session_id` names a session its owner deleted
    (supabase/migrations/20261129000000_memories_of_deleted_sessions_refused.sql)."""
    slot = normalize_slot(memory_type)
    content = clean_text(content, what="memory", max_length=MAX_CONTENT_LENGTH)
    session_id = _clean_session_id(session_id)
    vector = vector_literal(embed(embeddings.memory_text(slot, content)))
    limit = get_settings().max_memories_per_user
    try:
        with transaction(scope) as cur:
            cur.execute("select pg_advisory_xact_lock(hashtextextended(%s::text, 727431003))", (scope.user_id,))
            cur.execute(
                f"select {_COLUMNS} from public.memories where user_id = %s and memory_type = %s", (scope.user_id, slot)
            )
            previous = cur.fetchone()
            if previous is not None and previous["content"] == content:
                # said again: not a write (a report listed "updated · green · before: green"), and the memory
                # keeps the session that wrote it
                return Remembered(memory=Memory(**previous), created=False, previous_content=content)
            if previous is None:
                cur.execute("select count(*) as n from public.memories where user_id = %s", (scope.user_id,))
                if cur.fetchone()["n"] >= limit:
                    raise InvalidInput(
                        f"You have reached the limit of {limit:,} remembered facts; "
                        "forget some (or update an existing one) first."
                    )
            cur.execute(
                f"""
                insert into public.memories (user_id, memory_type, content, embedding, session_id)
                values (%s, %s, %s, %s::extensions.vector, %s)
                on conflict (user_id, memory_type) do update
                  set content = excluded.content,
                      embedding = excluded.embedding,
                      session_id = coalesce(excluded.session_id, public.memories.session_id)
                returning {_COLUMNS}, (xmax = 0) as inserted
                """,
                (scope.user_id, slot, content, vector, session_id),
            )
            row = cur.fetchone()
            if row is not None:
                _name_to_profile(cur, scope.user_id, slot, content)
    except pg_errors.ForeignKeyViolation:
        raise NotFound("There is no such user to remember this for.") from None
    if row is None:  # the database skips a memory of a session its owner deleted (an answer still running it)
        raise SessionDeleted(f"Session {session_id} was deleted by its owner; nothing of it is remembered.")
    created = row.pop("inserted")
    memory_changes.notify(scope.user_id)
    return Remembered(
        memory=Memory(**row),
        created=created,
        previous_content=None if created or previous is None else previous["content"],
    )


def recall(scope: Scope, memory_type: str) -> Memory:
    slot = normalize_slot(memory_type)
    with transaction(scope) as cur:
        cur.execute(
            f"select {_COLUMNS} from public.memories where user_id = %s and memory_type = %s", (scope.user_id, slot)
        )
        row = cur.fetchone()
    if row is None:
        raise NotFound(f"Nothing is remembered under {slot!r}.")
    return Memory(**row)


def _store_queued_turns() -> None:
    """Turns said just now may still wait in this process's turn indexer (it stores them once turns stop
    arriving for a moment): stored first, the mentions of a memory being deleted are deleted with it."""
    turn_indexer.flush_queued(timeout=2.0)


def forget(scope: Scope, memory_type: str) -> Forgotten:
    """Delete the slot and the past conversation turns that mention its text or a text it held before (so it
    cannot come back from the conversation tier), in one transaction."""
    slot = normalize_slot(memory_type)
    _store_queued_turns()
    with transaction(scope) as cur:
        cur.execute(
            f"delete from public.memories where user_id = %s and memory_type = %s returning {_COLUMNS}",
            (scope.user_id, slot),
        )
        row = cur.fetchone()
        if row is None:
            raise NotFound(f"Nothing is remembered under {slot!r}, so there was nothing to forget.")
        forgotten = _forget_deleted(cur, scope, row)
    memory_changes.notify(scope.user_id)
    return forgotten


def _forget_deleted(cur, scope: Scope, row: dict[str, Any]) -> Forgotten:
    """In the deletion's transaction: the past turns and report strings that say the deleted memory's text or
    a text it held before go too, and so does the profile's name when it was the `name` slot."""
    forgotten = Memory(**row)
    mentions = conversations.delete_mentions(cur, scope.user_id, forgotten.every_content)
    _forget_profile_name(cur, scope.user_id, forgotten.memory_type)
    sessions.forget_in_reports(cur, scope, forgotten.every_content)
    return Forgotten(forgotten, mentions)


def list_memories(scope: Scope) -> list[Memory]:
    with transaction(scope) as cur:
        cur.execute(
            f"select {_COLUMNS} from public.memories where user_id = %s order by updated_at desc, memory_type",
            (scope.user_id,),
        )
        return [Memory(**row) for row in cur.fetchall()]


def most_recent(scope: Scope, limit: int) -> tuple[list[Memory], int]:
    """The `limit` most recently updated memories, and how many the user has in all."""
    with transaction(scope) as cur:
        cur.execute(
            f"select {_COLUMNS}, count(*) over () as total from public.memories where user_id = %s "
            "order by updated_at desc, memory_type limit %s",
            (scope.user_id, max(1, limit)),
        )
        rows = cur.fetchall()
    total = rows[0].pop("total") if rows else 0
    for row in rows[1:]:
        row.pop("total")
    return [Memory(**row) for row in rows][:limit], total


def _parse_memory_id(memory_id) -> uuid.UUID:
    if isinstance(memory_id, uuid.UUID):
        return memory_id
    try:
        if not isinstance(memory_id, str) or len(memory_id) > 100:
            raise ValueError
        return uuid.UUID(memory_id.strip())
    except ValueError:
        raise InvalidInput(f"Not a memory id: {describe(memory_id)}.") from None


def update_memory(scope: Scope, memory_id, content: str, *, embed=embeddings.embed_one) -> Memory:
    """Edit a memory's text (the slot stays); re-embeds it. The same text as it holds changes nothing (its
    `updated_at` stays): a Save with nothing edited marked the memory "updated just now" and moved it first."""
    memory_id = _parse_memory_id(memory_id)
    content = clean_text(content, what="memory", max_length=MAX_CONTENT_LENGTH)
    with transaction(scope) as cur:
        cur.execute(
            f"select {_COLUMNS} from public.memories where id = %s and user_id = %s", (memory_id, scope.user_id)
        )
        row = cur.fetchone()
    if row is None:
        raise NotFound("That memory no longer exists.")
    if row["content"] == content:
        return Memory(**row)
    vector = vector_literal(embed(embeddings.memory_text(row["memory_type"], content)))
    with transaction(scope) as cur:
        cur.execute(
            f"update public.memories set content = %s, embedding = %s::extensions.vector "
            f"where id = %s and user_id = %s returning {_COLUMNS}",
            (content, vector, memory_id, scope.user_id),
        )
        updated = cur.fetchone()
        if updated is not None:
            _name_to_profile(cur, scope.user_id, updated["memory_type"], content)
    if updated is None:
        raise NotFound("That memory was deleted while you were editing it.")
    memory_changes.notify(scope.user_id)
    return Memory(**updated)


def delete_memory(scope: Scope, memory_id) -> Forgotten:
    """Delete one memory and the past conversation turns that mention its text or a text it held before, in one
    transaction."""
    memory_id = _parse_memory_id(memory_id)
    _store_queued_turns()
    with transaction(scope) as cur:
        cur.execute(
            f"delete from public.memories where id = %s and user_id = %s returning {_COLUMNS}",
            (memory_id, scope.user_id),
        )
        row = cur.fetchone()
        if row is None:
            raise NotFound("That memory no longer exists.")
        forgotten = _forget_deleted(cur, scope, row)
    memory_changes.notify(scope.user_id)
    return forgotten


def _name_to_profile(cur, user_id, slot: str, content: str) -> None:
    """The `name` slot and the profile's name are one fact: a new name said to the agent, or edited on the
    Memories page, is the one the greeting uses too (it went on greeting by the old one)."""
    if slot == "name" and len(content) <= MAX_PROFILE_NAME_LENGTH:
        cur.execute(
            "update public.profiles set name = %s where id = %s and name is distinct from %s",
            (content, user_id, content),
        )


def _forget_profile_name(cur, user_id, slot: str) -> None:
    """The `name` slot and the profile's name are one fact to the user (the greeting says the profile's):
    forgetting the slot clears both, so the agent does not go on greeting them by it."""
    if slot == "name":
        cur.execute("update public.profiles set name = null where id = %s and name is not null", (user_id,))


def delete_all(scope: Scope) -> DeletedAll:
    """Delete every memory of the user, the past conversation turns that mention them and the profile
    details the agent learned (LEARNED_PROFILE_FIELDS), in one transaction."""
    _store_queued_turns()
    with transaction(scope) as cur:
        cur.execute(
            "delete from public.memories where user_id = %s returning content, earlier_contents", (scope.user_id,)
        )
        rows = cur.fetchall()
        said = [text for row in rows for text in (row["content"], *row["earlier_contents"])]
        mentions = conversations.delete_mentions(cur, scope.user_id, said)
        sessions.forget_in_reports(cur, scope, said)
        cur.execute(_CLEAR_LEARNED_PROFILE, (scope.user_id,))
        profile_cleared = cur.rowcount == 1
    memory_changes.notify(scope.user_id)
    return DeletedAll(len(rows), mentions, profile_cleared)


def learned_profile(scope: Scope) -> dict[str, Any]:
    """The profile details the agent learned and uses (LEARNED_PROFILE_FIELDS) that are set; as the user."""
    with transaction(scope) as cur:
        cur.execute(
            "select name, preferred_language, timezone, preferences from public.profiles where id = %s",
            (scope.user_id,),
        )
        row = cur.fetchone() or {}
    return {field: row[field] for field in LEARNED_PROFILE_FIELDS if row.get(field)}


def clear_learned_profile(scope: Scope) -> bool:
    """Clear the profile details the agent learned (the Memories page's Clear); True if any was set."""
    with transaction(scope) as cur:
        cur.execute(_CLEAR_LEARNED_PROFILE, (scope.user_id,))
        cleared = cur.rowcount == 1
    memory_changes.notify(scope.user_id)
    return cleared


def export(scope: Scope) -> dict[str, Any]:
    """Everything remembered about the user, as JSON-ready data."""
    memories = list_memories(scope)
    return {
        "user_id": str(scope.user_id),
        "exported_at": datetime.now(UTC).isoformat(),
        "count": len(memories),
        "memories": [memory.as_dict() for memory in memories],
    }
