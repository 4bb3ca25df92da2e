"""A search of past turns folds the turns that say the same words (core.retrieval.fold_repeats_of), against
the real embedded Postgres and the real embedding model: the agent's stock greeting, said word for word in
every session, takes one place of a recall instead of most of them; the place goes to the best-ranked copy
and says how many there are; the search ranks as deep as before; and the Sessions page's transcript search
(fold_repeats=False) still lists every copy."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agent import tool_outputs
from core import conversations
from core.conversations import TurnInput
from core.db import Scope
from core.retrieval import said_alike, search_conversations
from ui.retrieval import compact_memory_table, conversation_table

T0 = datetime(2024, 2, 1, 9, 0, tzinfo=UTC)
GREETING = "Hey! How has your day been so far?"
SESSIONS = [
    ["hey", "Work was fine, just tired."],
    ["hey", "The neighbours are drilling again."],
    ["hey", "Okay, quick update. Sold the old car, now driving a Chevy Bolt."],
    ["hey", "Thinking about what to cook tonight."],
    ["HEY ", "Rainy again, stayed in."],
    ["hey", "I finished the book about the lighthouse keeper."],
]
ASKED = "hey, what am I driving these days?"


@pytest.fixture(scope="module")
def user(database_uri):
    from tests.support.users import sign_in

    signed_in = sign_in()
    service = Scope.service(signed_in.user_id)
    for number, said in enumerate(SESSIONS):
        start = T0 + timedelta(days=7 * number)
        rows = [("assistant", GREETING), *[("user", text) for text in said]]
        conversations.store_turns(
            service,
            [
                TurnInput(f"rep-{signed_in.user_id}-{number}", i, speaker, text, start + timedelta(minutes=i))
                for i, (speaker, text) in enumerate(rows)
            ],
        )
    return signed_in


def test_copies_of_one_thing_said_take_one_place_with_their_count(user):
    every = search_conversations(user.scope, ASKED, limit=5, fold_repeats=False)
    said = [said_alike(hit) for hit in every.hits]
    # unfolded, the greeting and "hey" fill the top five: the question starts with "hey" too
    assert len(set(said)) < len(said), [hit.content for hit in every.hits]
    assert all(hit.repeats == 1 for hit in every.hits)

    found = search_conversations(user.scope, ASKED, limit=5)
    assert len(found.hits) == 5
    kept = [said_alike(hit) for hit in found.hits]
    assert len(set(kept)) == 5  # five different things said
    assert any("Chevy Bolt" in hit.content for hit in found.hits)
    greeting = next(hit for hit in found.hits if hit.content == GREETING)
    assert greeting.repeats == len(SESSIONS)
    hey = next(hit for hit in found.hits if said_alike(hit) == ("user", "hey"))
    assert hey.repeats == len(SESSIONS)  # "HEY " says the same: case and spacing aside
    assert all(hit.repeats == 1 for hit in found.hits if hit not in (greeting, hey))


def test_folding_keeps_the_best_ranked_copy_and_ranks_as_deep_as_before(user):
    found = search_conversations(user.scope, ASKED, limit=5)
    # the same search unfolded, as deep (4 x 5 candidates per branch), with every fused row it has
    deeper = search_conversations(user.scope, ASKED, limit=20, candidates=20, fold_repeats=False)
    first_of_each = {}
    for hit in deeper.hits:
        first_of_each.setdefault(said_alike(hit), hit)
    assert [hit.id for hit in found.hits] == [hit.id for hit in list(first_of_each.values())[:5]]
    for hit in found.hits:  # the kept copy's own ranks and scores, unchanged
        same = next(other for other in deeper.hits if other.id == hit.id)
        assert (hit.vector_rank, hit.text_rank, hit.context_rank) == (
            same.vector_rank,
            same.text_rank,
            same.context_rank,
        )
        assert hit.rrf_score == pytest.approx(same.rrf_score)
        assert hit.repeats == sum(said_alike(other) == said_alike(hit) for other in deeper.hits)


def test_each_branch_alone_folds_too(user):
    for mode in ("vector", "text"):
        found = search_conversations(user.scope, ASKED, limit=4, mode=mode)
        kept = [said_alike(hit) for hit in found.hits]
        assert len(set(kept)) == len(kept) > 0, mode


def test_the_panel_and_the_tool_say_how_many_times_it_was_said(user):
    found = search_conversations(user.scope, ASKED, limit=5)
    hits = [hit.as_dict() for hit in found.hits]
    greeting_row = next(i for i, hit in enumerate(hits) if hit["content"] == GREETING)
    assert hits[greeting_row]["repeats"] == len(SESSIONS)
    full = conversation_table(hits)
    assert full["Said"][greeting_row].endswith(f"(said {len(SESSIONS)}×)")
    compact = compact_memory_table(hits, turns=True)
    assert compact["Said"][greeting_row].endswith(f"(said {len(SESSIONS)}×)")
    bolt_row = next(i for i, hit in enumerate(hits) if "Chevy Bolt" in hit["content"])
    assert "said" not in full["Said"][bolt_row].split("Bolt.")[-1]
    output = tool_outputs.conversations_found(found)
    by_content = {hit["content"]: hit for hit in output["hits"]}
    assert by_content[GREETING]["times_said"] == len(SESSIONS)
    assert "times_said" not in next(hit for content, hit in by_content.items() if "Chevy Bolt" in content)
