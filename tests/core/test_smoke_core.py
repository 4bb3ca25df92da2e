"""End-to-end smoke over the core services on the real embedded database."""

from core import memories, orders, profiles
from core.errors import NotFound
from core.retrieval import search_memories


def test_remember_search_forget_round_trip(new_user):
    user = new_user()
    memories.remember(user.scope, "Favorite Color", "teal")
    memories.remember(user.scope, "car", "Drives a blue 2019 Subaru Outback")
    result = search_memories(user.scope, "what car do I drive?")
    assert result.hits[0].memory_type == "car"
    assert result.hits[0].vector_rank == 1
    assert result.hits[0].rrf_score > 0
    assert memories.recall(user.scope, "favorite_color").content == "teal"
    memories.forget(user.scope, "favorite color")
    try:
        memories.recall(user.scope, "favorite_color")
    except NotFound:
        pass
    else:
        raise AssertionError("forgotten memory still recalled")


def test_order_lookup_and_profile_preload(new_user):
    user = new_user()
    assert orders.lookup(user.scope, "#1001").order_id == "1001"
    first = profiles.preload(user.scope)
    assert first.returning is False
    profiles.update_profile(user.scope, "name", "Sam")
    again = profiles.preload(user.scope)
    assert again.returning is True and again.profile.name == "Sam"
