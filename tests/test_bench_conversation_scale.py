"""`make bench`'s conversation scale run, end to end at a tiny size: its own embedded server (with
passwords, like every embedded server), real embeddings for a sample, the hybrid SQL per user, the
agent's write path and every vector index choice. It broke twice without a test: once when the
embedded server began to require passwords, once when the write path began to name its login."""

from __future__ import annotations

import pytest

from bench import context_cost, conversation_scale

TINY = conversation_scale.Size(turns=3_000, users=12, heavy_users=1, heavy_turns=1_000, real_sample=300, label="tiny")


@pytest.mark.slow
def test_the_scale_run_loads_times_and_checks_recall_on_its_own_server():
    result = conversation_scale.run(TINY, n_queries=6, repeats=1)

    assert result["ingest"]["copy_turns_per_s"] > 0
    assert result["store_turn"]["n"] > 0 and result["store_turn"]["p50"] > 0  # the service's write path
    heavy, typical = result["hybrid"]["heavy"], result["hybrid"]["typical"]
    assert heavy["turns"] == TINY.heavy_turns and typical["turns"] < heavy["turns"]
    assert all(entry["n"] == 6 and entry["p50"] > 0 for entry in result["hybrid"].values())
    exact = [c for c in result["index_choices"] if c["choice"].startswith("exact")]
    assert exact and all(c["recall@10"] == pytest.approx(1.0) for c in exact)  # exact scans are the truth
    assert {c["choice"] for c in result["index_choices"]} > {c["choice"] for c in exact}  # the approximate ones ran


@pytest.mark.slow
def test_the_context_cost_run_times_the_search_with_and_without_the_turn_in_context():
    result = context_cost.run(heavy=400, others=12, rounds=1, questions=4)

    assert set(result["users"]) == {"heavy", "typical"} and result["users"]["heavy"]["turns"] == 400
    for user in result["users"].values():
        for label in context_cost.FUNCTIONS:
            assert 0 < user[label]["p50"] <= user[label]["p95"] <= user[label]["p99"]
    # the "before" function is the search as it was: no turn in context; today's ranks every hit in context
    before, today = (result["first_hit"][label] for label in context_cost.FUNCTIONS)
    assert before["context_rank"] is None and today["context_rank"] is not None
    assert "with the turn in context (today)" in context_cost.report(result)
