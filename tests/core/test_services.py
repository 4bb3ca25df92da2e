"""The data services under bad input: each case gives the typed error from
core.errors with a message a person can act on, and writes nothing."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from core import knowledge, memories, orders, profiles, sessions
from core.errors import EmbeddingUnavailable, InvalidInput, NotFound, PlaygroundError
from core.retrieval import MAX_QUERY_LENGTH, query_from_message, search_memories
from tests.support.users import SignedInUser, sign_in, stored_rows

TSQUERY_SYNTAX = [
    "a & | ! ( ' :*",
    '"unbalanced',
    "!!!",
    "foo:*",
    "(coffee | tea) & !milk",
    "'",
    "<->",
    "\\",
    "or",
    "-",
    "teal <2> colour",
    "a:A & b:*B",
]


def _make_user() -> SignedInUser:
    signed_in = sign_in()
    memories.remember(signed_in.scope, "favorite_color", "teal")
    memories.remember(signed_in.scope, "pet", "A tortoise called Dash")
    profiles.update_profile(signed_in.scope, "name", "Robin")
    return signed_in


@pytest.fixture(scope="module")
def user(database_uri):
    """Shared by the refusal cases: each of them proves it changed nothing."""
    return _make_user()


@pytest.fixture
def fresh(database_uri):
    """For the cases that do write."""
    return _make_user()


def refused(error_type, match, call, user, *args, **kwargs):
    """Call, expect `error_type` whose message matches, and check nothing was written."""
    before = stored_rows(user.user_id, table_counts=True)
    with pytest.raises(error_type, match=match) as info:
        call(*args, **kwargs)
    assert isinstance(info.value, PlaygroundError)
    message = str(info.value)
    assert message and "Traceback" not in message and "psycopg" not in message
    assert stored_rows(user.user_id, table_counts=True) == before
    return message


# ---------------------------------------------------------------------------
# remember / recall / forget
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "slot,match",
    [
        ("", "memory slot name is empty"),
        ("   ", "memory slot name is empty"),
        (None, "memory slot name is empty"),
        ("!!!", "not a usable memory slot name"),
        ("123", "not a usable memory slot name"),
        ("\u65e5\u672c", "not a usable memory slot name"),
        ("x" * 65, "slot name is too long"),
        ("x" * 201, "too long"),
        ("favorite\x00color", "NUL character"),
        (42, "must be text"),
    ],
)
def test_remember_rejects_bad_slot_names(user, slot, match):
    refused(InvalidInput, match, memories.remember, user, user.scope, slot, "some content")


@pytest.mark.parametrize(
    "content,match",
    [
        ("", "memory is empty"),
        (" \n\t ", "memory is empty"),
        (None, "memory is empty"),
        ("x" * 2001, r"too long \(2001 characters; the limit is 2000\)"),
        ("teal\x00", "NUL character"),
        (["teal"], "must be text"),
    ],
)
def test_remember_rejects_bad_content(user, content, match):
    refused(InvalidInput, match, memories.remember, user, user.scope, "favorite_color", content)
    assert memories.recall(user.scope, "favorite_color").content == "teal"


def test_remember_rejects_bad_session_ids(user):
    refused(
        InvalidInput,
        "session id is too long",
        memories.remember,
        user,
        user.scope,
        "color",
        "red",
        session_id="s" * 201,
    )
    refused(InvalidInput, "session id is empty", memories.remember, user, user.scope, "color", "red", session_id=" ")


def test_remember_accepts_the_limits_exactly(fresh):
    content = "y" * 2000
    stored = memories.remember(fresh.scope, "a" + "b" * 63, content, session_id="s" * 200).memory
    assert stored.memory_type == "a" + "b" * 63 and stored.content == content and len(stored.session_id) == 200


def test_remembering_the_same_words_again_writes_nothing(fresh):
    """A voice call's report listed "updated · favorite_color · green · before: green" for a fact said again,
    and the memory moved to the later session. The same words leave the row as it was."""
    first = memories.remember(fresh.scope, "bike_color", "green", session_id="first-session")
    again = memories.remember(fresh.scope, "bike_color", "green", session_id="later-session")
    assert first.created and not first.unchanged
    assert again.unchanged and not again.created and again.previous_content == "green"
    stored = memories.recall(fresh.scope, "bike_color")
    assert stored.session_id == "first-session" and stored.updated_at == first.memory.updated_at
    changed = memories.remember(fresh.scope, "bike_color", "Green", session_id="later-session")
    assert not changed.unchanged and changed.previous_content == "green"  # other words (even in case): a write
    assert memories.recall(fresh.scope, "bike_color").session_id == "later-session"


def test_remember_writes_nothing_when_embedding_fails(user):
    def broken(_text):
        raise EmbeddingUnavailable("model missing")

    refused(
        EmbeddingUnavailable,
        "model missing",
        memories.remember,
        user,
        user.scope,
        "favorite_color",
        "red",
        embed=broken,
    )
    refused(EmbeddingUnavailable, "model missing", memories.remember, user, user.scope, "new_slot", "red", embed=broken)


@pytest.mark.parametrize("text", TSQUERY_SYNTAX)
def test_tsquery_syntax_is_stored_and_searched_as_plain_text(fresh, text):
    written = memories.remember(fresh.scope, "odd_note", f"note: {text}").memory
    assert memories.recall(fresh.scope, "odd note").content == f"note: {text}"
    for text_match in ("any", "all"):
        result = search_memories(fresh.scope, text, text_match=text_match)
        assert {h.id for h in result.hits} <= {m.id for m in memories.list_memories(fresh.scope)}
        assert written.id in {h.id for h in result.hits}  # the vector branch still finds it
    text_only = search_memories(fresh.scope, text, mode="text")
    assert text_only.mode == "text"
    assert all(h.text_rank is not None for h in text_only.hits)


def test_slot_names_with_tsquery_syntax_are_normalized(fresh):
    stored = memories.remember(fresh.scope, "a & b | !c:*", "odd slot").memory
    assert stored.memory_type == "a_b_c"
    assert memories.recall(fresh.scope, "A  &  B | !C").content == "odd slot"


@pytest.mark.parametrize("call", [memories.recall, memories.forget])
def test_unknown_slot_is_not_found(user, call):
    message = refused(NotFound, "Nothing is remembered under 'shoe_size'", call, user, user.scope, "Shoe Size")
    assert "shoe_size" in message


@pytest.mark.parametrize("call", [memories.recall, memories.forget])
def test_bad_slot_names_are_refused_for_recall_and_forget(user, call):
    refused(InvalidInput, "empty", call, user, user.scope, "")
    refused(InvalidInput, "NUL", call, user, user.scope, "pet\x00")


# ---------------------------------------------------------------------------
# search
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query,match",
    [
        ("", "search query is empty"),
        ("   ", "search query is empty"),
        (None, "search query is empty"),
        ("q" * 1001, r"search query is too long \(1001 characters; the limit is 1000\)"),
        ("teal\x00", "NUL character"),
        (b"teal", "must be text"),
    ],
)
def test_search_rejects_bad_queries(user, query, match):
    refused(InvalidInput, match, search_memories, user, user.scope, query)
    refused(InvalidInput, match, knowledge.search, user, user.scope, query)


def test_search_accepts_a_query_at_the_limit(user):
    result = search_memories(user.scope, ("teal " * 200)[:1000])
    assert result.hits[0].memory_type == "favorite_color"


def test_the_agent_searches_a_long_message_with_its_beginning_and_its_end(user):
    """A chat message may be 2,000 characters: the agent searches with its start and its end, whole words,
    within the query limit (an explicit search that long is refused, above)."""
    message = "search my memories for teal " + "pasted text " * 160 + "what is my favorite color?"
    query = query_from_message(message)
    assert len(query) <= MAX_QUERY_LENGTH < len(message)
    assert query.startswith("search my memories for teal pasted") and query.endswith(" what is my favorite color?")
    assert " … " in query and all(word in ("…", *message.split()) for word in query.split())
    assert search_memories(user.scope, query).hits[0].memory_type == "favorite_color"
    # a message that fits is searched whole; one normalized (NFC) shorter than it is measured as searched
    assert query_from_message("  what is my favorite color? ") == "what is my favorite color?"
    assert query_from_message("e\u0301" * 900) == "\u00e9" * 900
    assert len(query_from_message("x" * 5000)) <= MAX_QUERY_LENGTH  # no space to cut at: cut mid-word


def test_knowledge_search_rejects_a_blank_category(user):
    refused(InvalidInput, "Choose a category", knowledge.search, user, user.scope, "returns", category="")


# ---------------------------------------------------------------------------
# edit and delete by id
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("memory_id", ["not-a-uuid", "", "1 or 1=1", 12345, None, "0" * 37])
@pytest.mark.parametrize("call", ["update", "delete"])
def test_invalid_memory_ids_are_refused(user, memory_id, call):
    if call == "update":
        refused(InvalidInput, "Not a memory id", memories.update_memory, user, user.scope, memory_id, "new text")
    else:
        refused(InvalidInput, "Not a memory id", memories.delete_memory, user, user.scope, memory_id)


def test_unknown_or_foreign_memory_ids_are_not_found(user, new_user):
    other = new_user()
    foreign = memories.remember(other.scope, "pet", "Other's cat").memory
    before_other = stored_rows(other.user_id, table_counts=True)
    for memory_id in (uuid.uuid4(), str(uuid.uuid4()), foreign.id, str(foreign.id).upper()):
        refused(NotFound, "no longer exists", memories.update_memory, user, user.scope, memory_id, "mine now")
        refused(NotFound, "no longer exists", memories.delete_memory, user, user.scope, memory_id)
    assert stored_rows(other.user_id, table_counts=True) == before_other


@pytest.mark.parametrize("content,match", [("", "empty"), ("z" * 2001, "too long"), ("a\x00b", "NUL")])
def test_update_memory_rejects_bad_content(user, content, match):
    target = memories.recall(user.scope, "pet")
    refused(InvalidInput, match, memories.update_memory, user, user.scope, target.id, content)


def test_update_and_delete_by_id_work_on_own_rows(fresh):
    target = memories.recall(fresh.scope, "pet")
    updated = memories.update_memory(fresh.scope, str(target.id), "A tortoise called Dash, 40 years old")
    assert updated.id == target.id and updated.memory_type == "pet" and updated.updated_at > target.updated_at
    assert search_memories(fresh.scope, "how old is the tortoise").hits[0].id == target.id
    deleted = memories.delete_memory(fresh.scope, target.id)
    assert deleted.memory.content == "A tortoise called Dash, 40 years old" and deleted.mentions_removed == 0
    with pytest.raises(NotFound):
        memories.recall(fresh.scope, "pet")


def test_delete_all_and_export(fresh, new_user):
    other = new_user()
    memories.remember(other.scope, "pet", "Other's cat")
    exported = memories.export(fresh.scope)
    assert exported["user_id"] == str(fresh.user_id) and exported["count"] == 2
    assert {m["memory_type"] for m in exported["memories"]} == {"favorite_color", "pet"}
    assert memories.delete_all(fresh.scope).memories == 2
    assert memories.delete_all(fresh.scope).memories == 0
    assert memories.export(fresh.scope)["memories"] == []
    assert memories.recall(other.scope, "pet").content == "Other's cat"


# ---------------------------------------------------------------------------
# orders
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "order_id,error,match",
    [
        ("", InvalidInput, "order number is empty"),
        (None, InvalidInput, "order number is empty"),
        ("#", InvalidInput, "is not an order number"),
        ("abc def", InvalidInput, "is not an order number"),
        ("1001; drop table orders", InvalidInput, "is not an order number"),
        ("1001' or '1'='1", InvalidInput, "is not an order number"),
        ("1" * 33, InvalidInput, "is not an order number"),
        ("1" * 65, InvalidInput, "order number is too long"),
        ("10\x0001", InvalidInput, "NUL character"),
        ("9999", NotFound, "^Order 9999 not found.$"),
        ("#9999", NotFound, "^Order 9999 not found.$"),
        (12.5, InvalidInput, "must be text"),
    ],
)
def test_bad_order_ids(user, order_id, error, match):
    refused(error, match, orders.lookup, user, user.scope, order_id)


@pytest.mark.parametrize("spelling", ["1001", "#1001", "order 1001", "Order #1001", " 1001 ", "order no. 1001", 1001])
def test_order_id_spellings(user, spelling):
    order = orders.lookup(user.scope, spelling)
    assert order.order_id == "1001"
    assert order.summary().startswith("Order 1001 is ")
    assert order.as_dict()["order_id"] == "1001"


# ---------------------------------------------------------------------------
# profiles
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field_name",
    [
        "id",
        "is_admin",
        "created_at",
        "last_seen_at",
        "updated_at",
        "role",
        "",
        None,
        "name; drop table profiles",
        "preferences = '{}', id",
    ],
)
def test_disallowed_profile_fields(user, field_name):
    message = refused(
        InvalidInput,
        "cannot be changed; allowed: name, email",
        profiles.update_profile,
        user,
        user.scope,
        field_name,
        "x",
    )
    assert "preferences" in message


@pytest.mark.parametrize(
    "tz",
    [
        "Mars/Olympus",
        "Europe",
        "Europe/",
        "../../etc/passwd",
        "/etc/localtime",
        "Europe/../Europe/Paris",
        "zone.tab",
        "UTC+25",
        "Europe/Paris\x00",
        "",
        "t" * 65,
    ],
)
def test_bad_timezones(user, tz):
    refused(InvalidInput, "time zone|NUL|empty|too long", profiles.update_profile, user, user.scope, "timezone", tz)


def test_good_timezone_is_stored(fresh):
    assert profiles.update_profile(fresh.scope, " TimeZone ", "Europe/Paris").timezone == "Europe/Paris"


@pytest.mark.parametrize(
    "field_name,value,match",
    [
        ("name", "", "name is empty"),
        ("name", "n" * 201, "name is too long"),
        ("name", "Ro\x00bin", "NUL"),
        ("email", "not-an-email", "does not look like an email"),
        ("email", "a b@example.com", "does not look like an email"),
        ("preferred_language", "l" * 65, "too long"),
        ("preferences", "not json", "must be a JSON object"),
        ("preferences", "[1, 2]", "must be a JSON object"),
        ("preferences", ["units"], "must be a JSON object"),
        ("preferences", {"note": "a\x00b"}, "NUL"),
        ("preferences", {"blob": "x" * 17_000}, "too large"),  # MAX_PREFERENCES_BYTES, 16 kB by default
    ],
)
def test_bad_profile_values(user, field_name, value, match):
    refused(InvalidInput, match, profiles.update_profile, user, user.scope, field_name, value)


def test_preferences_merge(fresh):
    profiles.update_profile(fresh.scope, "preferences", {"units": "metric"})
    merged = profiles.update_profile(fresh.scope, "preferences", '{"tone": "brief"}')
    assert merged.preferences == {"units": "metric", "tone": "brief"}
    context = profiles.preload(fresh.scope).as_context()
    assert "Robin" in context and '"units": "metric"' in context and "favorite_color: teal" in context


# ---------------------------------------------------------------------------
# sessions
# ---------------------------------------------------------------------------


def test_session_reports_round_trip_and_bad_input(fresh):
    started = datetime.now(UTC) - timedelta(minutes=3)
    session_id = f"room-{uuid.uuid4().hex}"
    saved = sessions.save_report(
        fresh.service,
        session_id,
        {"transcript": ["hi\x00 there"], "n": 1},
        room_name="room",
        started_at=started,
        ended_at=started + timedelta(seconds=90),
    )
    assert saved.report == {"transcript": ["hi there"], "n": 1}  # NUL dropped, the rest kept
    assert saved.duration_seconds == 90
    assert sessions.get_session(fresh.scope, session_id).report == saved.report

    replaced = sessions.save_report(fresh.service, session_id, {"n": 2})
    assert replaced.report == {"n": 2} and len(sessions.list_sessions(fresh.scope)) == 1

    refused(
        InvalidInput,
        "too large",
        sessions.save_report,
        fresh,
        fresh.service,
        f"big-{uuid.uuid4().hex}",
        {"blob": "x" * 5_000_001},
    )
    refused(InvalidInput, "session id is empty", sessions.save_report, fresh, fresh.service, "", {"n": 1})
    refused(InvalidInput, "session id is too long", sessions.save_report, fresh, fresh.service, "s" * 201, {})
    refused(NotFound, "not found", sessions.get_session, fresh, fresh.scope, "no-such-session")
    refused(InvalidInput, "session id is empty", sessions.get_session, fresh, fresh.scope, " ")


def test_an_order_past_its_estimated_delivery_is_said_to_be_late(user):
    """Found in a fresh-clone walkthrough on 2026-12-07: order 1003, processing, said "Estimated delivery
    November 30, 2026" a week after that day (the demo orders' dates are fixed)."""
    order = orders.lookup(user.scope, "1003")
    assert order.status == "processing" and order.estimated_delivery is not None
    due = order.estimated_delivery
    before = order.summary(today=due - timedelta(days=1))
    assert before.endswith(f"Estimated delivery {due:%B %-d, %Y}.")
    assert order.summary(today=due).endswith(f"Estimated delivery {due:%B %-d, %Y}.")  # due today: not late yet
    after = order.summary(today=due + timedelta(days=7))
    assert after.endswith(f"It was expected by {due:%B %-d, %Y}, so it is running late.")
    delivered = orders.lookup(user.scope, "1001")  # delivered: its old estimate is nobody's concern
    assert "late" not in delivered.summary(today=due + timedelta(days=7))
