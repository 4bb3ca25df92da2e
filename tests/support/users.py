"""Real users for the tests: anonymous sign-ins through core.identity (real JWTs), and what the
database holds for a user, read as admin (to prove a refused statement changed nothing)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from psycopg.rows import dict_row

from core import db, identity
from core.db import Scope


@dataclass
class SignedInUser:
    session: identity.AuthSession
    verified: identity.VerifiedUser
    scope: Scope  # as the user: RLS decides

    @property
    def user_id(self) -> uuid.UUID:
        return self.verified.user_id

    @property
    def service(self) -> Scope:
        return Scope.service(self.user_id)


def sign_in() -> SignedInUser:
    """A brand-new anonymous user, signed in and verified."""
    session = identity.sign_in_anonymously()
    verified = identity.verify(session.access_token)
    return SignedInUser(session=session, verified=verified, scope=Scope.for_user(verified))


def delete_users(user_ids: Iterable[uuid.UUID]) -> None:
    with db.admin_connection() as conn:
        conn.execute("delete from auth.users where id = any(%s)", (list(user_ids),))


def stored_rows(user_id: uuid.UUID, *, table_counts: bool = False) -> dict[str, Any]:
    """Everything stored for a user (memories, profile, session reports), and with `table_counts` the row
    count of every table (only where nothing else writes meanwhile: a closing conversation saves a report)."""
    with db.admin_connection() as conn, conn.cursor(row_factory=dict_row) as cur:
        cur.execute(
            "select id, memory_type, content, session_id, embedding::text as embedding, updated_at "
            "from public.memories where user_id = %s order by memory_type",
            (user_id,),
        )
        mems = cur.fetchall()
        cur.execute("select * from public.profiles where id = %s", (user_id,))
        profile = cur.fetchone()
        cur.execute("select * from public.sessions where user_id = %s order by session_id", (user_id,))
        reports = cur.fetchall()
        rows = {"memories": mems, "profile": profile, "sessions": reports}
        if table_counts:
            cur.execute(
                "select (select count(*) from public.memories) as memories, "
                "(select count(*) from public.sessions) as sessions, "
                "(select count(*) from public.orders) as orders, "
                "(select count(*) from public.knowledge) as knowledge"
            )
            rows["counts"] = cur.fetchone()
    return rows
