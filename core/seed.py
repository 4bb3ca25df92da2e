"""Demo data: the Kestrel Coffee knowledge base, ten orders and a demo user
with a few memories. Idempotent: what is already there is left alone."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from core import embeddings, knowledge, memories
from core.config import SEED_DIR, get_settings
from core.db import Scope, admin_connection, parse_user_id
from core.errors import ConfigurationError

DEMO_EMAIL = "alex.demo@kestrelcoffee.example"
DEMO_NAME = "Alex"


def read_jsonl(path: Path) -> list[dict]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ConfigurationError(f"{path}:{number}: not valid JSON ({exc.msg}).") from None
    return rows


def demo_user_file() -> Path:
    return get_settings().data_dir / "demo_user_id"


def demo_user_id() -> uuid.UUID:
    """DEMO_USER_ID, else the id `python -m core seed` wrote to DATA_DIR/demo_user_id."""
    settings = get_settings()
    if settings.demo_user_id:
        return parse_user_id(settings.demo_user_id)
    path = demo_user_file()
    if path.exists():
        return parse_user_id(path.read_text().strip())
    raise ConfigurationError("No demo user: run `python -m core seed` or set DEMO_USER_ID.")


def seed_orders(conninfo: str | None = None) -> int:
    added = 0
    with admin_connection(conninfo) as conn, conn.transaction():
        for order in read_jsonl(SEED_DIR / "orders.jsonl"):
            cur = conn.execute(
                "insert into public.orders (order_id, customer_name, status, items, total, currency, carrier, "
                "tracking_number, placed_at, estimated_delivery) "
                "values (%s, %s, %s, %s::jsonb, %s, %s, %s, %s, %s, %s) "
                "on conflict (order_id) do nothing",
                (
                    order["order_id"],
                    order["customer_name"],
                    order["status"],
                    json.dumps(order["items"]),
                    order["total"],
                    order.get("currency", "USD"),
                    order.get("carrier"),
                    order.get("tracking_number"),
                    order["placed_at"],
                    order.get("estimated_delivery"),
                ),
            )
            added += cur.rowcount
    return added


def ensure_demo_user(conninfo: str | None = None) -> uuid.UUID:
    """The demo user: DEMO_USER_ID if set, else the id kept in DATA_DIR/demo_user_id."""
    settings = get_settings()
    path = demo_user_file()
    wanted = settings.demo_user_id or (path.read_text().strip() if path.exists() else None)
    with admin_connection(conninfo) as conn, conn.transaction():
        if wanted:
            if conn.execute("select 1 from auth.users where id = %s", (wanted,)).fetchone():
                user_id = uuid.UUID(wanted)
                _write_demo_file(path, user_id)
                return user_id
            if settings.demo_user_id:
                raise ConfigurationError(f"DEMO_USER_ID={wanted} is not a user in this database.")
        existing = conn.execute("select id from auth.users where email = %s", (DEMO_EMAIL,)).fetchone()
        if existing:
            user_id = existing[0]
        else:
            user_id = conn.execute(
                "insert into auth.users (email, is_anonymous, raw_user_meta_data) values (%s, false, %s::jsonb) "
                "returning id",
                (DEMO_EMAIL, json.dumps({"name": DEMO_NAME, "demo": True})),
            ).fetchone()[0]
        conn.execute(
            "update public.profiles set name = coalesce(name, %s), email = coalesce(email, %s) where id = %s",
            (DEMO_NAME, DEMO_EMAIL, user_id),
        )
    _write_demo_file(path, user_id)
    return user_id


def _write_demo_file(path: Path, user_id: uuid.UUID) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text().strip() != str(user_id):
        path.write_text(f"{user_id}\n")


def seed_demo_memories(user_id: uuid.UUID) -> int:
    scope = Scope.service(user_id)
    present = {m.memory_type for m in memories.list_memories(scope)}
    added = 0
    for row in read_jsonl(SEED_DIR / "demo_memories.jsonl"):
        if row["memory_type"] not in present:
            memories.remember(scope, row["memory_type"], row["content"], session_id="seed")
            added += 1
    return added


def seed_all(echo=print) -> uuid.UUID:
    documents = read_jsonl(SEED_DIR / "knowledge.jsonl")
    with admin_connection() as conn:
        # Fail before writing anything if the model and vector(384) disagree.
        embeddings.check_schema_dimensions(conn.cursor())

    def progress(done: int, total: int) -> None:
        echo(f"  embedding knowledge {done}/{total}")

    added_docs = knowledge.ingest(documents, progress=progress)
    added_orders = seed_orders()
    user_id = ensure_demo_user()
    added_memories = seed_demo_memories(user_id)
    echo(f"seed: {added_docs} knowledge document(s), {added_orders} order(s), {added_memories} demo memory(ies) added")
    echo(f"demo user: {user_id}  (DEMO_USER_ID; kept in {demo_user_file()})")
    return user_id
