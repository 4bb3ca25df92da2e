"""Hostile input through every public service and the eval CLI (Hypothesis, real Postgres).

Each call must end in a correct result or one of the project's own typed errors
(PlaygroundError), never another exception, and a refused call must leave the
user's rows exactly as they were (never a partial row).

The number of cases per test is HOSTILE_INPUT_EXAMPLES (default 30: a few
hundred in all for `make test`; `make bench` runs thousands). The total is
printed at the end of the module.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import config, db, eval_retrieval, identity, knowledge, livekit_tokens, memories, orders, profiles, sessions
from core.db import Scope
from core.errors import PlaygroundError
from core.retrieval import RrfParams, search_knowledge, search_memories

EXAMPLES = int(os.environ.get("HOSTILE_INPUT_EXAMPLES", "30"))
CASES: dict[str, int] = {}
HOSTILE = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)


# ---------------------------------------------------------------------------
# What an attacker (or an unlucky caller) sends
# ---------------------------------------------------------------------------

SPECIAL_TEXT = [
    "",
    "   ",
    "\x00",
    "a\x00b",
    "\ud800",
    "x\udfffy",
    "\ud83d",
    "\u202eevil",
    "' or 1=1 --",
    "%s %(x)s",
    "{}",
    "[]",
    "null",
    "NaN",
    "Infinity",
    "\\",
    "\n\r\t",
    "😀" * 700,
    "x" * 2001,
    "x" * 100_000,
    "Favorite Color",
    "favorite_color",
    "order 1001",
    "1001",
    "#1003",
    "Europe/Paris",
    "../../etc/passwd",
    "a@b.co",
    "teal",
]
any_text = st.one_of(
    st.sampled_from(SPECIAL_TEXT),
    st.text(max_size=60),
    st.text(st.characters(categories=["Cs", "Cc", "Zs", "So", "Mn"]), max_size=30),  # surrogates, controls
)
numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(
        [0, 1, -1, 10, 200, 201, 10_000, float("nan"), float("inf"), -float("inf"), 2**63, 1e308, 0.5, True, False]
    ),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    numbers,
    any_text,
    st.binary(max_size=16),
    st.sampled_from([object(), b"\x00", bytearray(b"x"), uuid.UUID(int=0), datetime(2000, 1, 1)]),
)


def _nested(depth: int, kind: str):
    value: object = "bottom"
    for _ in range(depth):
        value = [value] if kind == "list" else {"k": value}
    return value


json_like = st.recursive(
    st.one_of(st.none(), st.booleans(), numbers, any_text),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(any_text, st.integers(), st.none()), children, max_size=4),
    ),
    max_leaves=16,
)
deep = st.builds(_nested, st.integers(min_value=19, max_value=3000), st.sampled_from(["list", "dict"]))
hostile = st.one_of(scalars, json_like, deep)


OUTCOMES = {"calls": 0, "results": 0, "typed errors": 0}


def _count(name: str) -> None:
    CASES[name] = CASES.get(name, 0) + 1


def _typed_or_ok(call, *args, **kwargs):
    """Run the call: a result, or PlaygroundError (returned). Anything else fails the test."""
    OUTCOMES["calls"] += 1
    try:
        result = call(*args, **kwargs)
    except PlaygroundError as exc:
        assert str(exc).strip(), "a typed error must say what went wrong"
        OUTCOMES["typed errors"] += 1
        return None, exc
    OUTCOMES["results"] += 1
    return result, None


@pytest.fixture(scope="module", autouse=True)
def _report_case_count(pytestconfig):
    yield
    total = sum(CASES.values())
    untyped = OUTCOMES["calls"] - OUTCOMES["results"] - OUTCOMES["typed errors"]
    line = (
        f"hostile input: {total} cases ({', '.join(f'{k} {v}' for k, v in sorted(CASES.items()))}); "
        f"{OUTCOMES['calls']} service calls: {OUTCOMES['results']} results, {OUTCOMES['typed errors']} typed "
        f"errors, {untyped} other exceptions (each fails its test)"
    )
    capture = pytestconfig.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        print(f"\n{line}")


@pytest.fixture(scope="module")
def user(database_uri):
    session = identity.sign_in_anonymously()
    verified = identity.verify(session.access_token)
    scope = Scope.for_user(verified)
    memories.remember(scope, "favorite_color", "teal")
    memories.remember(scope, "hometown", "Porto")
    return session, verified, scope


def _snapshot(user_id) -> tuple:
    with db.admin_connection() as conn:
        return (
            conn.execute(
                "select memory_type, content, session_id, embedding::text from public.memories "
                "where user_id = %s order by memory_type",
                (user_id,),
            ).fetchall(),
            conn.execute(
                "select name, email, preferred_language, timezone, preferences::text from public.profiles "
                "where id = %s",
                (user_id,),
            ).fetchone(),
            conn.execute(
                "select session_id, report::text, room_name from public.sessions where user_id = %s "
                "order by session_id",
                (user_id,),
            ).fetchall(),
        )


def _unchanged_if_refused(user_id, call, *args, **kwargs):
    before = _snapshot(user_id)
    result, error = _typed_or_ok(call, *args, **kwargs)
    if error is not None:
        assert _snapshot(user_id) == before, f"refused ({error}) but the rows changed"
    return result, error


# ---------------------------------------------------------------------------
# memories
# ---------------------------------------------------------------------------


@HOSTILE
@given(
    slot=st.one_of(hostile, st.sampled_from(["note", "favorite_color"])),
    content=st.one_of(hostile, st.text(min_size=1, max_size=40)),
    session_id=st.one_of(st.none(), hostile),
)
def test_remember(user, slot, content, session_id):
    _count("remember")
    _, verified, scope = user
    result, error = _unchanged_if_refused(
        verified.user_id, memories.remember, scope, slot, content, session_id=session_id
    )
    if error is None:
        stored = memories.recall(scope, result.memory.memory_type)
        assert stored.content == result.memory.content  # what was reported is what is stored, whole
        if result.memory.memory_type not in ("favorite_color", "hometown"):
            memories.forget(scope, result.memory.memory_type)  # keep the user's row count small


@HOSTILE
@given(slot=hostile, memory_id=hostile, content=hostile)
def test_recall_forget_update_delete(user, slot, memory_id, content):
    _count("recall/forget/update/delete")
    _, verified, scope = user
    _typed_or_ok(memories.recall, scope, slot)
    _, error = _unchanged_if_refused(verified.user_id, memories.forget, scope, slot)
    if error is None:  # it really forgot one: put the fixture's rows back
        memories.remember(scope, "favorite_color", "teal")
        memories.remember(scope, "hometown", "Porto")
    _unchanged_if_refused(verified.user_id, memories.update_memory, scope, memory_id, content)
    _unchanged_if_refused(verified.user_id, memories.delete_memory, scope, memory_id)


@HOSTILE
@given(
    query=st.one_of(hostile, st.just("teal")),
    limit=st.one_of(hostile, st.just(5)),
    weights=st.tuples(st.one_of(numbers, scalars), st.one_of(numbers, scalars), st.one_of(numbers, scalars)),
    mode=st.one_of(hostile, st.sampled_from(["hybrid", "vector", "text"])),
    text_match=st.one_of(hostile, st.sampled_from(["any", "all"])),
)
def test_search_memories(user, query, limit, weights, mode, text_match):
    _count("search_memories")
    _, _, scope = user
    result, error = _typed_or_ok(
        search_memories, scope, query, limit=limit, params=RrfParams(*weights), mode=mode, text_match=text_match
    )
    if error is None:
        assert all(math.isfinite(hit.rrf_score) for hit in result.hits)
        owned = {m.id for m in memories.list_memories(scope)}
        assert {hit.id for hit in result.hits} <= owned  # only the user's own rows


# ---------------------------------------------------------------------------
# knowledge, orders
# ---------------------------------------------------------------------------


@HOSTILE
@given(query=hostile, limit=st.one_of(hostile, st.just(3)), category=st.one_of(st.none(), hostile))
def test_knowledge(user, query, limit, category):
    _count("knowledge")
    _, _, scope = user
    _typed_or_ok(search_knowledge, scope, query, limit=limit, category=category)
    _typed_or_ok(knowledge.search, scope, query, limit=limit, category=category)
    _typed_or_ok(knowledge.list_documents, scope, category=category, limit=limit)


@HOSTILE
@given(order_id=hostile)
def test_order_lookup(user, order_id):
    _count("orders.lookup")
    _typed_or_ok(orders.lookup, user[2], order_id)


# ---------------------------------------------------------------------------
# profiles
# ---------------------------------------------------------------------------


@HOSTILE
@given(
    field=st.one_of(hostile, st.sampled_from(profiles.ALLOWED_FIELDS)),
    value=st.one_of(hostile, st.dictionaries(any_text, json_like, max_size=5)),
)
def test_update_profile(user, field, value):
    _count("update_profile")
    _, verified, scope = user
    result, error = _unchanged_if_refused(verified.user_id, profiles.update_profile, scope, field, value)
    if error is None:
        json.dumps(result.preferences, allow_nan=False)  # what is stored is strict JSON
        assert len(json.dumps(result.preferences).encode()) <= config.get_settings().max_preferences_bytes + 64
        with db.admin_connection() as conn:
            conn.execute("update public.profiles set preferences = '{}' where id = %s", (verified.user_id,))


def test_preload_stays_within_its_limits(user):
    _count("preload")
    _, _, scope = user
    loaded = profiles.preload(scope)
    budget = config.get_settings().preload_token_budget * 4
    assert sum(len(m.memory_type) + len(m.content) for m in loaded.memories) <= budget
    assert len(loaded.memories) <= config.get_settings().preload_max_memories


# ---------------------------------------------------------------------------
# sessions
# ---------------------------------------------------------------------------


@HOSTILE
@given(
    session_id=st.one_of(hostile, st.just("sess-ok")),
    report=st.one_of(hostile, st.dictionaries(any_text, json_like)),
    room_name=st.one_of(st.none(), hostile),
    started=st.one_of(st.none(), hostile, st.datetimes(timezones=st.just(UTC))),
)
def test_save_and_read_reports(user, session_id, report, room_name, started):
    _count("sessions")
    _, verified, scope = user
    service = Scope.service(verified.user_id)
    if session_id == "sess-ok":
        session_id = f"sess-{uuid.uuid4().hex}"
    result, error = _unchanged_if_refused(
        verified.user_id, sessions.save_report, service, session_id, report, room_name=room_name, started_at=started
    )
    if error is None:
        stored = sessions.get_session(scope, result.session_id).report
        json.dumps(stored, allow_nan=False)  # NaN became null, nothing was lost to a refusal
    _typed_or_ok(sessions.get_session, scope, session_id)
    _typed_or_ok(sessions.list_sessions, scope, limit=report if not isinstance(report, dict) else 5)


# ---------------------------------------------------------------------------
# identity and LiveKit tokens
# ---------------------------------------------------------------------------


@HOSTILE
@given(token=hostile, email=hostile, password=hostile)
def test_identity(user, token, email, password):
    _count("identity")
    _typed_or_ok(identity.verify, token)
    _typed_or_ok(identity.refresh, token)
    _typed_or_ok(identity.sign_in_with_password, email, password, client=str(uuid.uuid4()))
    session, verified, _ = user
    before = _snapshot(verified.user_id)
    result, error = _typed_or_ok(identity.upgrade_to_email, session, email, password)
    assert error is not None or result is None or result.user_id == verified.user_id
    if error is not None:
        assert _snapshot(verified.user_id) == before


@pytest.fixture
def livekit_env(monkeypatch):
    for name, value in (
        ("LIVEKIT_URL", "wss://example.livekit.cloud"),
        ("LIVEKIT_API_KEY", "key"),
        ("LIVEKIT_API_SECRET", "s" * 40),
    ):
        monkeypatch.setenv(name, value)
    config.reload_settings()
    yield
    monkeypatch.undo()
    config.reload_settings()


@HOSTILE
@given(room=st.one_of(st.none(), hostile, st.just("room-1\n")), ttl=st.one_of(hostile, st.just(timedelta(hours=1))))
def test_livekit_tokens(user, livekit_env, room, ttl):
    _count("livekit_tokens")
    minted, error = _typed_or_ok(livekit_tokens.mint_user_token, user[1], room_name=room, ttl=ttl)
    if error is None:
        assert minted.room_name == (room or minted.room_name) and "\n" not in minted.room_name


# ---------------------------------------------------------------------------
# the eval CLI
# ---------------------------------------------------------------------------


def _line(value) -> str:
    """The value as a JSONL line when JSON can hold it, else as raw text (itself bad input)."""
    try:
        return json.dumps(value, ensure_ascii=True)
    except RecursionError:
        return '{"id": ' + "[" * 5000 + "]" * 5000 + "}"
    except (ValueError, TypeError):
        try:
            return ascii(value)
        except (RecursionError, ValueError):
            return "<unprintable>"


@HOSTILE
@given(
    field=st.sampled_from(["id", "user", "memory_type", "content", "query", "relevant", "whole_line"]),
    value=st.one_of(hostile, st.sampled_from(["[" * 5000, '{"id": 1e999999}', "\x00", '"\\ud800"'])),
)
def test_eval_cli(database_uri, tmp_path_factory, field, value):
    _count("eval_cli")
    workdir = tmp_path_factory.mktemp("eval")
    memory = {"id": "m1", "user": "u1", "memory_type": "drink", "content": "oat milk flat white"}
    query = {"id": "q1", "user": "u1", "query": "what do I drink?"}
    qrels = {"id": "q1", "relevant": ["m1"]}
    lines = {"memories": json.dumps(memory), "queries": json.dumps(query), "qrels": json.dumps(qrels)}
    if field == "whole_line":
        lines["memories"] = value if isinstance(value, str) else _line(value)
    elif field in memory:
        target = "queries" if field == "id" and isinstance(value, int) else "memories"
        lines[target] = _line({**(memory if target == "memories" else query), field: value})
    elif field == "query":
        lines["queries"] = _line({**query, "query": value})
    else:
        lines["qrels"] = _line({**qrels, "relevant": value})
    paths = {}
    for name, text in lines.items():
        paths[name] = Path(workdir / f"{name}.jsonl")
        paths[name].write_text(text + "\n", encoding="utf-8", errors="surrogatepass")
    out = io.StringIO()
    code = eval_retrieval.main(
        [
            "--memories",
            str(paths["memories"]),
            "--queries",
            str(paths["queries"]),
            "--qrels",
            str(paths["qrels"]),
            "--database-url",
            database_uri,
        ],
        stdout=out,
    )
    OUTCOMES["calls"] += 1
    OUTCOMES["results" if code == 0 else "typed errors"] += code in (0, 2)
    assert code in (0, 2), code  # done, or bad input said in one sentence (1 would be the database or model)
    if code == 0:
        assert json.loads(out.getvalue().splitlines()[0])["id"] == "q1"
