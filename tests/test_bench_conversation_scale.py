"""`make bench`'s conversation scale run, end to end at a tiny size: its own embedded server (with
passwords, like every embedded server), real embeddings for a sample, the hybrid SQL per user, the
agent's write path and every vector index choice. It broke twice without a test: once when the
embedded server began to require passwords, once when the write path began to name its login."""

from __future__ import annotations

import pytest

from bench import conversation_scale, report, search_cost

TINY = conversation_scale.Size(turns=3_000, users=12, heavy_users=2, heavy_turns=1_000, real_sample=300, label="tiny")


@pytest.mark.slow
def test_the_scale_run_loads_times_and_checks_recall_on_its_own_server(monkeypatch, tmp_path):
    from core.config import get_settings

    # the heavy users of this size (1,000 turns) get their own HNSW indexes, as ones with 10,000 would
    monkeypatch.setattr(get_settings(), "vector_index_min_turns", 800)
    result = conversation_scale.run(TINY, n_queries=6, repeats=1)
    assert result["vector_indexes"]["users"] == 2 and result["sizes"]["heavy users' HNSW indexes"] > 0

    assert result["ingest"]["copy_turns_per_s"] > 0
    assert result["store_turn"]["n"] > 0 and result["store_turn"]["p50"] > 0  # the service's write path
    # the same for the heavy user who was not probed, whose turns also go into their own index
    heavy_store = result["store_turn_heavy"]
    assert heavy_store["own_index"] and heavy_store["turns"] == TINY.heavy_turns and heavy_store["p50"] > 0
    assert "a heavy user's turn (1,000 turns, into their own HNSW index too)" in report.scale_markdown(
        result, image_prefix="tiny", images_dir=tmp_path, relative_to=tmp_path
    )
    heavy, typical = result["hybrid"]["heavy"], result["hybrid"]["typical"]
    assert heavy["turns"] == TINY.heavy_turns and typical["turns"] < heavy["turns"]
    assert all(entry["n"] == 6 and entry["p50"] > 0 for entry in result["hybrid"].values())
    exact = [c for c in result["index_choices"] if c["choice"].startswith("exact")]
    assert exact and all(c["recall@10"] == pytest.approx(1.0) for c in exact)  # exact scans are the truth
    assert {c["choice"] for c in result["index_choices"]} > {c["choice"] for c in exact}  # the approximate ones ran
    own = [c for c in result["index_choices"] if c["choice"].startswith("HNSW of the heavy user alone")]
    assert {c["user"] for c in own} == {"heavy"} and all(c["recall@10"] >= 0.95 for c in own)


@pytest.mark.slow
def test_the_search_cost_run_times_an_earlier_search_beside_todays_and_says_whether_they_agree():
    # today's own migration as the one "before": every answer is the same (a user of 400 turns gets no
    # index of their own)
    today = search_cost.BEFORE.with_name("20261206000000_vector_weight_by_confidence.sql")
    result = search_cost.run(heavy=400, others=12, rounds=1, questions=4, before=today)
    assert set(result["users"]) == {"heavy", "typical"} and result["users"]["heavy"]["turns"] == 400
    assert result["vector_indexes"]["users"] == 0
    for user in result["users"].values():
        assert user["same"] == user["questions"] == 4
        for label in search_cost.FUNCTIONS:
            assert 0 < user[label]["p50"] <= user[label]["p95"] <= user[label]["p99"]
    assert "before (20261206000000_vector_weight_by_confidence.sql)" in search_cost.report(result)
    # before the turn in context the hybrid scores were different ones
    older = search_cost.run(
        heavy=400,
        others=12,
        rounds=1,
        questions=4,
        before=search_cost.BEFORE.with_name("20261127180000_text_weight_by_coverage.sql"),
    )
    assert all(user["same"] == 0 for user in older["users"].values())
