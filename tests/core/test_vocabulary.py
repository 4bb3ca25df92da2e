"""The words speech recognition is biased toward: the deployment's product names and order ids,
then one user's remembered values and name (most important last), and never another user's."""

from __future__ import annotations

from core import memories, profiles, vocabulary


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
