"""The shared knowledge base: ingest (service), browse and search (as the user)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from core import embeddings
from core.db import Scope, admin_connection, transaction, vector_literal
from core.errors import InvalidInput
from core.retrieval import KnowledgeSearch, search_knowledge
from core.text import clean_int, clean_text


@dataclass(frozen=True)
class Document:
    id: int
    title: str
    content: str
    category: str


def _clean_document(doc: dict[str, Any]) -> dict[str, str]:
    return {
        "title": clean_text(doc.get("title"), what="document title", max_length=300),
        "content": clean_text(doc.get("content"), what="document content", max_length=20000),
        "category": clean_text(doc.get("category") or "general", what="category", max_length=64).lower(),
    }


def ingest(
    documents: Iterable[dict[str, Any]],
    *,
    conninfo: str | None = None,
    batch_size: int = 16,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Add documents whose title is not in the table yet; returns how many were added.

    Runs on the admin connection: knowledge is shared, no user writes it.
    Titles already present are skipped before embedding, so re-running is cheap.
    """
    cleaned = [_clean_document(doc) for doc in documents]
    with admin_connection(conninfo) as conn:
        existing = {row[0] for row in conn.execute("select title from public.knowledge").fetchall()}
        todo = [doc for doc in cleaned if doc["title"] not in existing]
        added = 0
        for start in range(0, len(todo), batch_size):
            batch = todo[start : start + batch_size]
            vectors = embeddings.embed([f"{d['title']}\n{d['content']}" for d in batch])
            with conn.transaction():
                for doc, vector in zip(batch, vectors, strict=True):
                    cur = conn.execute(
                        "insert into public.knowledge (title, content, category, embedding) "
                        "values (%s, %s, %s, %s::extensions.vector) on conflict (title) do nothing",
                        (doc["title"], doc["content"], doc["category"], vector_literal(vector)),
                    )
                    added += cur.rowcount
            if progress:
                progress(min(start + batch_size, len(todo)), len(todo))
    return added


def list_documents(scope: Scope, *, category: str | None = None, limit: int = 200) -> list[Document]:
    if category is not None:
        category = clean_text(category, what="category", max_length=64)
    limit = clean_int(limit, what="number of documents", minimum=1, maximum=1000)
    with transaction(scope) as cur:
        cur.execute(
            "select id, title, content, category from public.knowledge "
            "where (%s::text is null or category = %s) order by category, title limit %s",
            (category, category, limit),
        )
        return [Document(**row) for row in cur.fetchall()]


def categories(scope: Scope) -> list[str]:
    with transaction(scope) as cur:
        cur.execute("select distinct category from public.knowledge order by 1")
        return [row["category"] for row in cur.fetchall()]


def search(scope: Scope, query: str, *, limit: int = 5, category: str | None = None) -> KnowledgeSearch:
    if category == "":
        raise InvalidInput("Choose a category or none.")
    return search_knowledge(scope, query, limit=limit, category=category)
