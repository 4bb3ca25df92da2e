"""The offline tuning script folds repeated turns exactly as the app's search does (the numbers it prints for
"Repeats folded" are the ones docs/RETRIEVAL.md compares with the CLI's)."""

from __future__ import annotations

from datetime import UTC, datetime

from bench.conversation_tuning import Split, fold_repeats
from core.retrieval import ConversationHit, fold_repeats_of

SAID = [
    ("assistant", "Hey! How has your day been so far?"),
    ("user", "hey"),
    ("assistant", "hey! how has your  day been so far?"),  # the same words: case and spacing aside
    ("user", "Hey! How has your day been so far?"),  # the same words, another speaker: not a copy
    ("user", "We hiked the Cedar Creek Loop."),
    ("user", "HEY"),
    ("assistant", "Thanks for telling me, I'll remember that."),
    ("user", "We hiked the Cedar Creek Loop!"),  # other words (punctuation counts)
]


def _hit(number: int, speaker: str, content: str) -> ConversationHit:
    return ConversationHit(
        id=number,
        session_id=f"s{number}",
        turn_index=0,
        speaker=speaker,
        content=content,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        vector_rank=number + 1,
        vector_distance=0.1 * number,
        text_rank=None,
        text_score=None,
        vector_rrf=0.0,
        text_rrf=0.0,
        rrf_score=1.0 / (number + 1),
    )


def test_the_tuning_script_and_the_app_keep_the_same_turns():
    hits = [_hit(i, speaker, content) for i, (speaker, content) in enumerate(SAID)]
    for top in (3, 5, 10):
        app = fold_repeats_of(hits, top)
        split = Split(
            turns=[{"id": str(i), "speaker": s, "content": c} for i, (s, c) in enumerate(SAID)], queries=[], qrels={}
        )
        offline = fold_repeats(split, {"q": [str(i) for i in range(len(SAID))]}, top)["q"]
        assert [str(hit.id) for hit in app] == offline
    folded = fold_repeats_of(hits, 10)
    assert [hit.id for hit in folded] == [0, 1, 3, 4, 6, 7]
    assert [hit.repeats for hit in folded] == [2, 2, 1, 1, 1, 1]
    assert folded[0].rrf_score == 1.0  # the best-ranked copy, as it was
