"""Measure memory retrieval on your own labelled data.

    python -m core.eval_retrieval --memories M.jsonl --queries Q.jsonl [--qrels R.jsonl]
        [--as-turns] [--top-k 10] [--mode hybrid|vector|text] [--weights V,T] [--rrf-k K]
        [--candidates N] [--text-match any|all] [--database-url URL]

The memories are loaded into a throwaway database (a fresh embedded server in a
temporary directory, deleted at exit) with one auth user per distinct `user`,
and every query runs through public.match_memories_hybrid, the SQL function the
app and the agent call, as that user's service scope. With --as-turns each line
is a conversation turn instead ({"user", "id", "session", "turn", "speaker",
"date", "content"}), stored the way the agent stores turns and searched through
public.match_conversation_turns_hybrid.

stdout: one JSON line per query, {"id", "hits": [{"id", "rrf_score",
"vector_rank", "text_rank"}, ...], "latency_ms"} (with --as-turns each hit also
has "context_rank": its rank as the turn with its reply, a hybrid search's third
list, null otherwise; and "repeats": how many of the ranked turns say its words,
itself included, folded into this one hit as the app folds them); with --qrels, one last line
{"summary": {...}} with recall@k, hit@k and MRR for the vector, text and hybrid
modes (all three are run for the summary whatever --mode says) and the latency
percentiles of the printed run. Progress and a readable table go to stderr.

Exit codes: 0 done; 2 bad input (files, JSON lines, ids, options); 1 the
database or the embedding model could not be used.
"""

from __future__ import annotations

import argparse
import atexit
import json
import math
import shutil
import signal
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import psycopg
from psycopg.conninfo import conninfo_to_dict

from core import conversations, db, embeddings
from core.config import get_settings
from core.errors import InvalidInput, PlaygroundError
from core.memories import MAX_CONTENT_LENGTH
from core.retrieval import MAX_QUERY_LENGTH, RrfParams, search_conversations, search_memories
from core.text import clean_text, describe, normalize_slot

MODES = ("vector", "text", "hybrid")
MAX_TOP_K = 200  # what match_memories_hybrid returns at most
CUTOFFS = (1, 3, 5, 10)  # reported in the summary when <= --top-k (plus --top-k itself)
EMBED_BATCH = 64
# Marks the auth users this tool creates, so they can be recognised (and removed) in a shared database.
EVAL_MARKER = "eval_retrieval"


class EvalInputError(InvalidInput):
    """The evaluation files or options are unusable; the message says where and why (exit code 2)."""


# ---------------------------------------------------------------------------
# Input files
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class EvalMemory:
    id: str
    user: str
    memory_type: str  # normalized exactly as core.memories.remember would store it
    content: str


@dataclass(frozen=True)
class EvalTurn:
    id: str
    user: str
    session: str
    turn: int
    speaker: str
    content: str
    date: datetime | None


@dataclass(frozen=True)
class EvalQuery:
    id: str
    user: str
    query: str


def read_jsonl(path: Path, what: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ("file:line", object) for every non-blank line."""
    path = Path(path)
    if not path.is_file():
        raise EvalInputError(f"The {what} file {path} does not exist (or is not a file).")
    try:
        with path.open(encoding="utf-8-sig") as handle:  # a BOM, as Windows editors save UTF-8, is not JSON
            for number, line in enumerate(handle, start=1):
                where = f"{path}:{number}"
                if not line.strip():
                    continue
                try:
                    value = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise EvalInputError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno}).") from None
                except RecursionError:
                    raise EvalInputError(f"{where}: the JSON is nested too deeply.") from None
                except ValueError as exc:  # e.g. an integer with more digits than Python converts
                    raise EvalInputError(f"{where}: not usable JSON ({exc}).") from None
                if not isinstance(value, dict):
                    raise EvalInputError(f"{where}: each line must be a JSON object, got {type(value).__name__}.")
                yield where, value
    except UnicodeDecodeError as exc:
        raise EvalInputError(f"The {what} file {path} is not UTF-8 text ({exc.reason}).") from None
    except OSError as exc:
        raise EvalInputError(f"Could not read the {what} file {path}: {exc.strerror or exc}.") from None


def _field(where: str, obj: dict[str, Any], name: str) -> str:
    """A required string field; numbers are accepted for ids and users and kept as text."""
    if name not in obj:
        raise EvalInputError(f"{where}: missing the {name!r} field.")
    value = obj[name]
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise EvalInputError(f"{where}: {name!r} must be a string, got {describe(value)}.")
    value = str(value).strip()
    if not value:
        raise EvalInputError(f"{where}: {name!r} is empty.")
    if name in ("id", "user"):  # stored (as metadata) and printed: the same rules as any stored text
        value = _clean(where, value, f"{name!r} field", 200)
    return value


def _clean(where: str, value: str, what: str, max_length: int) -> str:
    try:
        return clean_text(value, what=what, max_length=max_length)
    except InvalidInput as exc:
        raise EvalInputError(f"{where}: {exc}") from None


def load_memories(path: Path) -> list[EvalMemory]:
    found: list[EvalMemory] = []
    seen_ids: dict[str, str] = {}
    seen_slots: dict[tuple[str, str], tuple[str, str]] = {}
    for where, obj in read_jsonl(path, "memories"):
        memory_id = _field(where, obj, "id")
        user = _field(where, obj, "user")
        raw_type = _field(where, obj, "memory_type")
        content = _clean(where, _field(where, obj, "content"), "memory content", MAX_CONTENT_LENGTH)
        if memory_id in seen_ids:
            raise EvalInputError(f"{where}: memory id {memory_id!r} was already used at {seen_ids[memory_id]}.")
        try:
            slot = normalize_slot(raw_type)
        except InvalidInput as exc:
            raise EvalInputError(f"{where}: {exc}") from None
        # The app keeps one row per (user, slot): a second memory in the same slot would overwrite the first.
        if (user, slot) in seen_slots:
            other_id, other_where = seen_slots[(user, slot)]
            raise EvalInputError(
                f"{where}: user {user!r} already has a memory in slot {slot!r} ({other_id!r} at {other_where}); "
                "the app keeps one memory per slot, so give each memory of a user its own memory_type."
            )
        seen_ids[memory_id] = where
        seen_slots[(user, slot)] = (memory_id, where)
        found.append(EvalMemory(id=memory_id, user=user, memory_type=slot, content=content))
    if not found:
        raise EvalInputError(f"The memories file {path} has no memories.")
    return found


def _parse_date(where: str, value: Any) -> datetime | None:
    """ISO 8601 (a date or a date and time), or a looser human form ("1:56 pm on 8 May, 2023").
    A time without a zone is taken as UTC."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise EvalInputError(
            f"{where}: 'date' must be a string such as 2024-03-05T14:30:00, got {json.dumps(value)[:60]}."
        )
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        import dateutil.parser  # only for non-ISO dates

        try:
            parsed = dateutil.parser.parse(value)
        except (ValueError, OverflowError):
            raise EvalInputError(
                f"{where}: 'date' {value[:60]!r} is not a date; use ISO 8601, e.g. 2024-03-05T14:30:00."
            ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def load_turns(path: Path) -> list[EvalTurn]:
    """Conversation turns: {"user", "id", "session", "turn", "speaker", "date", "content"}."""
    found: list[EvalTurn] = []
    seen_ids: dict[str, str] = {}
    seen_turns: dict[tuple[str, str, int], tuple[str, str]] = {}
    for where, obj in read_jsonl(path, "memories"):
        turn_id = _field(where, obj, "id")
        user = _field(where, obj, "user")
        session = _clean(where, _field(where, obj, "session"), "session", conversations.MAX_SESSION_ID_LENGTH - 60)
        raw_turn = obj.get("turn")
        if isinstance(raw_turn, str) and raw_turn.strip().isdigit():
            raw_turn = int(raw_turn.strip())
        if isinstance(raw_turn, bool) or not isinstance(raw_turn, int) or raw_turn < 0:
            raise EvalInputError(
                f"{where}: 'turn' must be the turn's position in its session, a whole number "
                f"of 0 or more (got {json.dumps(raw_turn)[:60]})."
            )
        speaker = _clean(where, _field(where, obj, "speaker"), "speaker", conversations.MAX_SPEAKER_LENGTH)
        content_field = "content" if "content" in obj else "text"
        content = _clean(where, _field(where, obj, content_field), "turn text", conversations.MAX_TURN_LENGTH)
        date = _parse_date(where, obj.get("date"))
        if turn_id in seen_ids:
            raise EvalInputError(f"{where}: turn id {turn_id!r} was already used at {seen_ids[turn_id]}.")
        key = (user, session, raw_turn)
        if key in seen_turns:
            other_id, other_where = seen_turns[key]
            raise EvalInputError(
                f"{where}: user {user!r} already has turn {raw_turn} in session {session!r} "
                f"({other_id!r} at {other_where})."
            )
        seen_ids[turn_id] = where
        seen_turns[key] = (turn_id, where)
        found.append(
            EvalTurn(id=turn_id, user=user, session=session, turn=raw_turn, speaker=speaker, content=content, date=date)
        )
    if not found:
        raise EvalInputError(f"The memories file {path} has no turns.")
    return found


def load_queries(path: Path, users: set[str]) -> list[EvalQuery]:
    found: list[EvalQuery] = []
    seen: dict[str, str] = {}
    for where, obj in read_jsonl(path, "queries"):
        query_id = _field(where, obj, "id")
        user = _field(where, obj, "user")
        text = _clean(where, _field(where, obj, "query"), "query", MAX_QUERY_LENGTH)
        if query_id in seen:
            raise EvalInputError(f"{where}: query id {query_id!r} was already used at {seen[query_id]}.")
        if user not in users:
            raise EvalInputError(
                f"{where}: query {query_id!r} is for user {user!r}, who has no memories in the memories file "
                f"(users there: {', '.join(sorted(users)[:10])}{', ...' if len(users) > 10 else ''})."
            )
        seen[query_id] = where
        found.append(EvalQuery(id=query_id, user=user, query=text))
    if not found:
        raise EvalInputError(f"The queries file {path} has no queries.")
    return found


def load_qrels(
    path: Path, queries: Sequence[EvalQuery], memories: Sequence[EvalMemory | EvalTurn]
) -> dict[str, list[str]]:
    query_user = {q.id: q.user for q in queries}
    memory_user = {m.id: m.user for m in memories}
    qrels: dict[str, list[str]] = {}
    seen: dict[str, str] = {}
    for where, obj in read_jsonl(path, "qrels"):
        query_id = _field(where, obj, "id")
        relevant = obj.get("relevant")
        if query_id in seen:
            raise EvalInputError(f"{where}: query id {query_id!r} already has judgements at {seen[query_id]}.")
        if query_id not in query_user:
            raise EvalInputError(f"{where}: qrels refer to query {query_id!r}, which is not in the queries file.")
        if (
            not isinstance(relevant, list)
            or not relevant
            or not all(isinstance(m, (str, int)) and not isinstance(m, bool) for m in relevant)
        ):
            raise EvalInputError(f"{where}: 'relevant' must be a non-empty list of memory ids.")
        relevant = list(dict.fromkeys(_clean(where, str(m), "memory id", 200) for m in relevant))
        for memory_id in relevant:
            if memory_id not in memory_user:
                raise EvalInputError(
                    f"{where}: qrels for query {query_id!r} refer to memory {memory_id!r}, "
                    "which is not in the memories file."
                )
            if memory_user[memory_id] != query_user[query_id]:
                raise EvalInputError(
                    f"{where}: memory {memory_id!r} belongs to user {memory_user[memory_id]!r} but query "
                    f"{query_id!r} is asked by {query_user[query_id]!r}; a search only sees the asker's memories."
                )
        seen[query_id] = where
        qrels[query_id] = relevant
    return qrels


def parse_params(weights: str | None, rrf_k: int | None) -> RrfParams:
    defaults = RrfParams.from_settings()
    if weights is None:
        weights = f"{defaults.vector_weight:g},{defaults.text_weight:g}"
    if rrf_k is None:
        rrf_k = defaults.k
    parts = [p.strip() for p in weights.split(",")]
    if len(parts) != 2:
        raise EvalInputError(f"--weights must be two numbers, vector then text, like 0.7,0.3 (got {weights!r}).")
    try:
        vector_weight, text_weight = (float(p) for p in parts)
    except ValueError:
        raise EvalInputError(
            f"--weights must be two numbers, vector then text, like 0.7,0.3 (got {weights!r})."
        ) from None
    if not all(math.isfinite(w) for w in (vector_weight, text_weight)):
        raise EvalInputError(f"--weights must be finite numbers (got {weights!r}).")
    try:
        return RrfParams(vector_weight, text_weight, rrf_k).validated()
    except InvalidInput as exc:
        raise EvalInputError(f"{exc} (--weights {weights}, --rrf-k {rrf_k})") from None


# ---------------------------------------------------------------------------
# The throwaway database
# ---------------------------------------------------------------------------


def _progress(message: str, stream: TextIO = sys.stderr) -> None:
    print(message, file=stream, flush=True)


@contextmanager
def throwaway_embedded() -> Iterator[str]:
    """A fresh embedded server in a temporary directory; stopped and deleted when the process exits."""
    tmpdir = Path(tempfile.mkdtemp(prefix="mp-eval-"))
    # atexit runs last-registered first: pgserver's own handler (registered when the server
    # starts, below) stops the server and deletes pgdata, then this removes the rest.
    atexit.register(shutil.rmtree, tmpdir, ignore_errors=True)
    _progress(f"starting a throwaway embedded database in {tmpdir}")
    uri = db.start_embedded(tmpdir / "pg", cleanup_mode="delete")
    db.migrate(uri, embedded=True, echo=lambda line: _progress(f"  {line}"))
    yield uri


def prepare_external(conninfo: str) -> None:
    """Apply this project's migrations to `conninfo` unless they are already there."""
    pending = [row for row in db.status(conninfo) if not row["applied"]]
    if not pending:
        return
    with db.admin_connection(conninfo) as conn:
        has_auth = conn.execute("select to_regclass('auth.users') is not null").fetchone()[0]
    # A Supabase project has auth.users; a bare Postgres needs the local shim first.
    _progress(
        f"applying {len(pending)} migration(s) to the --database-url database"
        + ("" if has_auth else " (with the local auth shim: it has no auth.users)")
    )
    db.migrate(conninfo, embedded=not has_auth, echo=lambda line: _progress(f"  {line}"))


def create_users(conninfo: str, users: Sequence[str]) -> dict[str, uuid.UUID]:
    """One anonymous auth user per eval user, marked so they are recognisable as this tool's."""
    created: dict[str, uuid.UUID] = {}
    with db.admin_connection(conninfo) as conn, conn.transaction():
        for user in users:
            row = conn.execute(
                "insert into auth.users (is_anonymous, raw_app_meta_data, raw_user_meta_data) "
                "values (true, %s::jsonb, %s::jsonb) returning id",
                (json.dumps({"provider": EVAL_MARKER}), json.dumps({EVAL_MARKER: user})),
            ).fetchone()
            created[user] = row[0]
    return created


def remove_users(conninfo: str, user_ids: Sequence[uuid.UUID]) -> int:
    """Delete the users this run created; their profiles and memories go with them (on delete cascade)."""
    if not user_ids:
        return 0
    with db.admin_connection(conninfo) as conn:
        return conn.execute("delete from auth.users where id = any(%s)", (list(user_ids),)).rowcount


def embed_memories(memories: Sequence[EvalMemory]) -> np.ndarray:
    texts = [embeddings.memory_text(m.memory_type, m.content) for m in memories]
    chunks = []
    for start in range(0, len(texts), EMBED_BATCH):
        chunks.append(embeddings.embed(texts[start : start + EMBED_BATCH]))
        _progress(f"  embedded {min(start + EMBED_BATCH, len(texts))}/{len(texts)} memories")
    return np.concatenate(chunks)


def insert_memories(
    conninfo: str, memories: Sequence[EvalMemory], vectors: np.ndarray, user_ids: dict[str, uuid.UUID]
) -> dict[uuid.UUID, str]:
    """Insert all memories in one transaction; return {database row id: eval memory id}."""
    row_ids: dict[uuid.UUID, str] = {}
    with db.admin_connection(conninfo) as conn, conn.transaction(), conn.cursor() as cur:
        cur.executemany(
            "insert into public.memories (user_id, memory_type, content, embedding, session_id) "
            "values (%s, %s, %s, %s::extensions.vector, %s) returning id",
            [
                (user_ids[m.user], m.memory_type, m.content, db.vector_literal(v), EVAL_MARKER)
                for m, v in zip(memories, vectors, strict=True)
            ],
            returning=True,
        )
        for memory in memories:
            row_ids[cur.fetchone()[0]] = memory.id
            cur.nextset()
    return row_ids


def embed_turns(turns: Sequence[EvalTurn]) -> np.ndarray:
    """The same text the app embeds for a turn (core.conversations.embedding_text)."""
    texts = [conversations.embedding_text(t.speaker, t.content) for t in turns]
    chunks = []
    for start in range(0, len(texts), EMBED_BATCH * 4):
        chunks.append(embeddings.embed(texts[start : start + EMBED_BATCH * 4]))
        _progress(f"  embedded {min(start + EMBED_BATCH * 4, len(texts))}/{len(texts)} turns")
    return np.concatenate(chunks)


def eval_session_id(user_id: uuid.UUID, session: str) -> str:
    """Session ids are unique across users in the app; an eval session label is unique per eval user."""
    return f"{EVAL_MARKER}:{user_id}:{session}"


def insert_turns(
    conninfo: str, turns: Sequence[EvalTurn], vectors: np.ndarray, user_ids: dict[str, uuid.UUID]
) -> dict[int, str]:
    """Insert all turns (and their sessions) in one transaction; return {database row id: eval turn id}."""
    by_key = {(user_ids[t.user], eval_session_id(user_ids[t.user], t.session), t.turn): t.id for t in turns}
    with db.admin_connection(conninfo) as conn, conn.transaction(), conn.cursor() as cur:
        sessions = sorted({(eval_session_id(user_ids[t.user], t.session), user_ids[t.user]) for t in turns})
        cur.executemany(
            "insert into public.sessions (session_id, user_id, room_name) values (%s, %s, %s)",
            [(s, u, EVAL_MARKER) for s, u in sessions],
        )
        # One COPY: the lexicon statistics are updated once for the whole load.
        with cur.copy(
            "copy public.conversation_turns (user_id, session_id, turn_index, speaker, content, "
            "created_at, embedding) from stdin"
        ) as copy:
            for t, v in zip(turns, vectors, strict=True):
                user_id = user_ids[t.user]
                copy.write_row(
                    (
                        user_id,
                        eval_session_id(user_id, t.session),
                        t.turn,
                        t.speaker,
                        t.content,
                        t.date or datetime.now(UTC),
                        db.vector_literal(v),
                    )
                )
        cur.execute(
            "select id, user_id, session_id, turn_index from public.conversation_turns where user_id = any(%s)",
            (sorted(set(user_ids.values())),),
        )
        return {row[0]: by_key[(row[1], row[2], row[3])] for row in cur.fetchall()}


# ---------------------------------------------------------------------------
# Running the queries and scoring them
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class QueryResult:
    id: str
    # {"id", "rrf_score", "vector_rank", "text_rank"} (+ "context_rank", "repeats" for turns)
    hits: list[dict[str, Any]]
    latency_ms: float

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "hits": self.hits, "latency_ms": round(self.latency_ms, 2)}


class QueryEmbeddings:
    """Embeds each query once; later modes reuse the vector, so only the first run's latency includes it."""

    def __init__(self) -> None:
        self._cache: dict[str, np.ndarray] = {}

    def __call__(self, text: str) -> np.ndarray:
        vector = self._cache.get(text)
        if vector is None:
            vector = self._cache[text] = embeddings.embed_one(text)
        return vector


def run_queries(
    conninfo: str,
    queries: Sequence[EvalQuery],
    user_ids: dict[str, uuid.UUID],
    row_ids: dict[Any, str],
    *,
    mode: str,
    params: RrfParams,
    top_k: int,
    text_match: str,
    embed: Callable[[str], np.ndarray],
    as_turns: bool = False,
    candidates: int | None = None,
    on_result: Callable[[QueryResult], None] | None = None,
) -> list[QueryResult]:
    results = []
    for number, query in enumerate(queries, start=1):
        scope = db.Scope.service(user_ids[query.user])
        if as_turns:
            search = search_conversations(
                scope,
                query.query,
                limit=top_k,
                params=params,
                mode=mode,
                text_match=text_match,
                candidates=candidates,
                embed=embed,
                conninfo=conninfo,
            )
        else:
            search = search_memories(
                scope,
                query.query,
                limit=top_k,
                params=params,
                mode=mode,
                text_match=text_match,
                embed=embed,
                conninfo=conninfo,
            )
        if search.degraded_reason:
            raise PlaygroundError(search.degraded_reason)  # a measurement must not silently change mode
        hits = [
            {
                "id": row_ids.get(hit.id, str(hit.id)),
                "rrf_score": hit.rrf_score,
                "vector_rank": hit.vector_rank,
                "text_rank": hit.text_rank,
            }
            for hit in search.hits
        ]
        if as_turns:  # the turn-in-context ranking, the third list a hybrid search of turns fuses
            for line, hit in zip(hits, search.hits, strict=True):
                line["context_rank"] = hit.context_rank
                line["repeats"] = hit.repeats  # the turns that say the same words, folded into this hit
        result = QueryResult(id=query.id, hits=hits, latency_ms=search.latency_ms)
        results.append(result)
        if on_result:
            on_result(result)
        if number % 50 == 0 or number == len(queries):
            _progress(f"  {mode}: {number}/{len(queries)} queries")
    return results


def cutoffs_for(top_k: int) -> list[int]:
    return sorted({c for c in CUTOFFS if c <= top_k} | {top_k})


def score(results: Sequence[QueryResult], qrels: dict[str, list[str]], top_k: int) -> dict[str, float]:
    """Mean recall@k, hit@k and MRR (reciprocal rank of the first relevant hit within top_k) over judged queries."""
    judged = [r for r in results if r.id in qrels]
    metrics: dict[str, float] = {}
    if not judged:
        return metrics
    ranked = [[hit["id"] for hit in r.hits[:top_k]] for r in judged]
    relevant = [set(qrels[r.id]) for r in judged]
    for k in cutoffs_for(top_k):
        metrics[f"recall@{k}"] = float(
            np.mean([len(rel & set(ids[:k])) / len(rel) for ids, rel in zip(ranked, relevant, strict=True)])
        )
    for k in cutoffs_for(top_k):
        metrics[f"hit@{k}"] = float(
            np.mean([bool(rel & set(ids[:k])) for ids, rel in zip(ranked, relevant, strict=True)])
        )
    reciprocal = []
    for ids, rel in zip(ranked, relevant, strict=True):
        first = next((rank for rank, memory_id in enumerate(ids, start=1) if memory_id in rel), None)
        reciprocal.append(1.0 / first if first else 0.0)
    metrics["mrr"] = float(np.mean(reciprocal))
    return {name: round(value, 4) for name, value in metrics.items()}


def latency_summary(results: Sequence[QueryResult]) -> dict[str, float]:
    values = np.array([r.latency_ms for r in results], dtype=float)
    return {
        "p50": round(float(np.percentile(values, 50)), 2),
        "p95": round(float(np.percentile(values, 95)), 2),
        "mean": round(float(values.mean()), 2),
        "max": round(float(values.max()), 2),
    }


def format_table(modes: dict[str, dict[str, float]]) -> str:
    names = list(next(iter(modes.values())).keys())
    lines = ["mode    " + "".join(f"{n:>11}" for n in names)]
    for mode, metrics in modes.items():
        lines.append(f"{mode:<8}" + "".join(f"{metrics[n]:>11.3f}" for n in names))
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m core.eval_retrieval",
        description="Measure memory retrieval (vector, full-text and hybrid RRF) on your own labelled data, "
        "through the same SQL function the app uses.",
        epilog=(
            'Files are JSON Lines. memories: {"user", "id", "memory_type", "content"}, or with '
            '--as-turns {"user", "id", "session", "turn", "speaker", "date", "content"}; '
            'queries: {"user", "id", "query"}; qrels: {"id": query id, "relevant": [memory ids]}. '
            "Without --database-url the memories go into a fresh embedded Postgres in a temporary directory "
            "that is deleted at exit. With --database-url, this project's migrations are applied there if they "
            "are missing, one anonymous auth.users row per eval user is created (marked "
            f"raw_app_meta_data.provider = '{EVAL_MARKER}'), and those users, with their profiles and memories, "
            "are deleted again at the end, also after an error or Ctrl-C. "
            "Exit codes: 0 done, 2 bad input, 1 database or model unavailable."
        ),
    )
    parser.add_argument("--memories", required=True, type=Path, metavar="M.jsonl", help="the memories to search")
    parser.add_argument(
        "--as-turns",
        action="store_true",
        help="read the memories file as conversation turns (user, id, session, turn, speaker, "
        "date, content) and search them through the conversation tier",
    )
    parser.add_argument("--queries", required=True, type=Path, metavar="Q.jsonl", help="the questions to ask")
    parser.add_argument(
        "--qrels",
        type=Path,
        metavar="R.jsonl",
        help="relevance judgements; adds a summary of all three modes at the end",
    )
    parser.add_argument("--top-k", type=int, default=10, metavar="K", help="hits per query (1-200, default 10)")
    parser.add_argument(
        "--mode",
        choices=("hybrid", "vector", "text"),
        default="hybrid",
        help="which ranking the per-query lines show (default hybrid)",
    )
    settings = get_settings()
    parser.add_argument(
        "--weights",
        default=None,
        metavar="V,T",
        help="RRF weights of the vector and text branches (default: the app's, "
        f"{settings.rrf_vector_weight:g},{settings.rrf_text_weight:g})",
    )
    parser.add_argument(
        "--rrf-k", type=int, default=None, metavar="K", help=f"RRF k constant (default: the app's, {settings.rrf_k})"
    )
    parser.add_argument(
        "--candidates",
        type=int,
        default=None,
        metavar="N",
        help="with --as-turns: turns each branch ranks before fusion (default 4 * --top-k)",
    )
    parser.add_argument(
        "--text-match",
        choices=("any", "all"),
        default="any",
        help="text branch: 'any' ORs the query's lexemes (the app's default); "
        "'all' is websearch_to_tsquery's AND of every term",
    )
    parser.add_argument(
        "--database-url",
        metavar="URL",
        help="use this Postgres instead of a throwaway embedded one (see below: it gets "
        "temporary users that are removed at the end)",
    )
    return parser


def _raise_on_sigterm(signum, frame):
    raise SystemExit(128 + signum)  # runs the finally blocks and atexit handlers: users and temp dirs go


@dataclass(frozen=True)
class _Inputs:
    params: RrfParams
    memories: list[EvalMemory] | list[EvalTurn]
    users: list[str]
    queries: list[EvalQuery]
    qrels: dict[str, list[str]] | None


def _read_inputs(args: argparse.Namespace) -> _Inputs:
    """Every input file read and checked before any database work (EvalInputError names the problem)."""
    if not 1 <= args.top_k <= MAX_TOP_K:
        raise EvalInputError(f"--top-k must be between 1 and {MAX_TOP_K} (got {args.top_k}).")
    params = parse_params(args.weights, args.rrf_k)
    if args.database_url is not None:
        try:  # a typo here is bad input (exit 2), not "the database refused an operation" (exit 1)
            conninfo_to_dict(args.database_url)
        except psycopg.ProgrammingError as exc:
            raise EvalInputError(
                f"--database-url is not a connection string ({exc}); "
                "write it like postgresql://user:password@host:5432/postgres."
            ) from None
    if args.candidates is not None and not args.as_turns:
        raise EvalInputError("--candidates applies to conversation turns; add --as-turns.")
    if args.candidates is not None and not 1 <= args.candidates <= 1000:
        raise EvalInputError(f"--candidates must be between 1 and 1000 (got {args.candidates}).")
    memories = load_turns(args.memories) if args.as_turns else load_memories(args.memories)
    users = list(dict.fromkeys(m.user for m in memories))
    queries = load_queries(args.queries, set(users))
    qrels = load_qrels(args.qrels, queries, memories) if args.qrels else None
    return _Inputs(params, memories, users, queries, qrels)


def _evaluate(
    args: argparse.Namespace, inputs: _Inputs, conninfo: str, created: dict[str, uuid.UUID], out: TextIO
) -> None:
    """Load the memories for temporary users (recorded in `created` as they are made), print one line per
    query, and with qrels the summary of every mode."""
    what = "turns" if args.as_turns else "memories"
    _progress(f"{len(inputs.memories)} {what} of {len(inputs.users)} users, {len(inputs.queries)} queries")
    vectors = embed_turns(inputs.memories) if args.as_turns else embed_memories(inputs.memories)
    created.update(create_users(conninfo, inputs.users))
    if args.as_turns:
        row_ids = insert_turns(conninfo, inputs.memories, vectors, created)
    else:
        row_ids = insert_memories(conninfo, inputs.memories, vectors, created)

    def emit(result: QueryResult) -> None:
        out.write(json.dumps(result.as_dict()) + "\n")
        out.flush()

    # One unmeasured search first, so the first query's latency is not the pool's and the planner's warm-up.
    warm_scope = db.Scope.service(created[inputs.queries[0].user])
    if args.as_turns:
        search_conversations(
            warm_scope,
            "warm up",
            limit=args.top_k,
            params=inputs.params,
            text_match=args.text_match,
            candidates=args.candidates,
            conninfo=conninfo,
        )
    else:
        search_memories(
            warm_scope,
            "warm up",
            limit=args.top_k,
            params=inputs.params,
            text_match=args.text_match,
            conninfo=conninfo,
        )
    run = {
        "conninfo": conninfo,
        "queries": inputs.queries,
        "user_ids": created,
        "row_ids": row_ids,
        "params": inputs.params,
        "top_k": args.top_k,
        "text_match": args.text_match,
        "embed": QueryEmbeddings(),
        "as_turns": args.as_turns,
        "candidates": args.candidates,
    }
    printed = run_queries(mode=args.mode, on_result=emit, **run)
    if inputs.qrels is not None:
        by_mode = {args.mode: printed}
        for mode in MODES:
            if mode not in by_mode:
                by_mode[mode] = run_queries(mode=mode, **run)
        _print_summary(args, inputs, by_mode, out)


def _print_summary(
    args: argparse.Namespace, inputs: _Inputs, by_mode: dict[str, list[QueryResult]], out: TextIO
) -> None:
    modes = {mode: score(by_mode[mode], inputs.qrels, args.top_k) for mode in MODES}
    printed = by_mode[args.mode]
    summary = {
        "queries": len(inputs.queries),
        "judged": sum(1 for q in inputs.queries if q.id in inputs.qrels),
        "memories": len(inputs.memories),
        "tier": "conversation turns" if args.as_turns else "memories",
        "users": len(inputs.users),
        "top_k": args.top_k,
        "text_match": args.text_match,
        "weights": [inputs.params.vector_weight, inputs.params.text_weight],
        "rrf_k": inputs.params.k,
        **({"candidates": args.candidates or 4 * args.top_k} if args.as_turns else {}),
        "modes": modes,
        "latency_ms": {"mode": args.mode, **latency_summary(printed)},
    }
    out.write(json.dumps({"summary": summary}) + "\n")
    out.flush()
    if summary["judged"]:
        _progress(format_table(modes))
    _progress(
        f"latency ({args.mode}, incl. query embedding): p50 {summary['latency_ms']['p50']} ms, "
        f"p95 {summary['latency_ms']['p95']} ms"
    )


def _remove_eval_users(conninfo: str, created: dict[str, uuid.UUID]) -> None:
    try:
        removed = remove_users(conninfo, list(created.values()))
        _progress(f"removed the {removed} evaluation user(s) and their memories and turns")
    except (PlaygroundError, psycopg.Error) as exc:
        print(
            f"warning: could not remove the evaluation users ({exc}); they are marked "
            f"raw_app_meta_data.provider = '{EVAL_MARKER}'",
            file=sys.stderr,
        )


def main(argv: list[str] | None = None, *, stdout: TextIO | None = None) -> int:
    out = stdout or sys.stdout
    args = build_parser().parse_args(argv)
    try:
        inputs = _read_inputs(args)
    except EvalInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    created: dict[str, uuid.UUID] = {}
    conninfo = args.database_url
    try:
        if conninfo:
            prepare_external(conninfo)
            context = nullcontext(conninfo)
        else:
            context = throwaway_embedded()
        with context as conninfo:
            _evaluate(args, inputs, conninfo, created, out)
    except EvalInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except PlaygroundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except psycopg.Error as exc:
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        print(f"error: the database refused an operation: {first_line}", file=sys.stderr)
        return 1
    except Exception as exc:  # never a traceback: one line that says what failed
        print(
            f"error: the evaluation failed unexpectedly ({type(exc).__name__}: {ascii(str(exc))[:200]})",
            file=sys.stderr,
        )
        return 1
    finally:
        if created and args.database_url:
            _remove_eval_users(conninfo, created)
        db.close_pools()
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _raise_on_sigterm)
    raise SystemExit(main())
