"""The words speech recognition is biased toward: the deployment's product names and order ids,
then one user's remembered values and name (most important last), and never another user's."""

from __future__ import annotations

import gc

from core import memories, memory_changes, profiles, vocabulary


def test_speech_terms_hold_products_order_ids_then_the_users_own_words(new_user):
    user, other = new_user(), new_user()
    memories.remember(user.scope, "home_city", "Albuquerque")
    memories.remember(user.scope, "pet", "a dachshund named Pretzel")
    profiles.update_profile(user.scope, "name", "Siobhan")
    memories.remember(other.scope, "home_city", "Reykjavik")

    terms = vocabulary.speech_terms(user.scope)  # as the user: RLS applies
    assert {"Kestrel Grinder", "Kestrel One Espresso Machine", "1001", "1010"} <= set(terms)  # seeded orders
    assert not {"Kestrel Grinder - Chalk White", "Chalk White"} & set(terms)  # product names, not their colors
    assert terms[-1] == "Siobhan"  # the name is the most important, so last
    assert terms[-3:-1] == ["Albuquerque", "a dachshund named Pretzel"]  # the newest memory nearer the end
    assert "Reykjavik" not in terms
    assert vocabulary.speech_terms(user.service) == terms  # the agent's service scope, by the verified id
    assert vocabulary.user_terms(other.service) == ["Reykjavik"]


class _Recorder:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def memories_changed(self, user_id) -> None:
        self.seen.append(str(user_id))


class _Broken:
    def memories_changed(self, user_id) -> None:
        raise RuntimeError("a listener with a bug")


def test_every_change_to_what_recognition_uses_is_announced_after_it_is_made(new_user):
    """core.memory_changes: a running call re-reads the words whichever code path changed them."""
    user, other = new_user(), new_user()
    recorder, broken = _Recorder(), _Broken()
    memory_changes.subscribe(broken)  # called first or not, it must not stop the change or the others
    memory_changes.subscribe(recorder)
    try:
        stored = memories.remember(user.scope, "pet", "a dachshund named Pretzel").memory
        memories.update_memory(user.scope, stored.id, "a dachshund named Brezel")  # the Memories page's edit
        memories.remember(user.scope, "home_city", "Albuquerque")
        memories.forget(user.scope, "home_city")  # the agent's tool
        memories.delete_memory(user.scope, stored.id)  # the Memories page's delete
        memories.remember(user.scope, "drink", "cortado")
        assert memories.delete_all(user.scope).memories == 1
        profiles.update_profile(user.scope, "name", "Siobhan")
        profiles.update_profile(user.scope, "timezone", "Europe/Lisbon")  # not a word recognition uses
        memories.remember(other.scope, "home_city", "Reykjavik")
        assert recorder.seen == [str(user.user_id)] * 8 + [str(other.user_id)]
        assert memories.list_memories(user.scope) == []  # the broken listener undid nothing
        assert profiles.get_profile(user.scope).name == "Siobhan"

        memory_changes.unsubscribe(recorder)
        memories.remember(user.scope, "drink", "cortado")
        assert len(recorder.seen) == 9
        gone = _Recorder()
        memory_changes.subscribe(gone)
        del gone  # held weakly: an ended call that forgot to unsubscribe is not kept alive
        gc.collect()
        assert all(not isinstance(listener, _Recorder) for listener in memory_changes._listeners)
    finally:
        memory_changes.unsubscribe(recorder)
        memory_changes.unsubscribe(broken)
