"""`python -m bench.search_relevance`: how well the one relevance rule (core.retrieval.is_relevant: a shared
word, or cosine distance <= RELEVANT_MAX_DISTANCE) tells a search's matches from the rows the vector branch
returns only because they are the nearest there are.

The pages show a hit that fails the rule apart (the Sessions search under "loosely related", the Memories
and Knowledge tables as "nearest only"), and the agent leaves it out of its context. For every labelled
set on its dev split (the slot set, both conversation sets, the knowledge questions) and for several
distance limits this prints:

* **evidence kept**: of the evidence rows the search ranks in its top 8, the share the rule calls a match
  (a labelled answer the pages would put aside is the cost of the rule);
* **off-topic searches with no match**: the same users searched with questions about things none of the
  sets is about; the share of those searches where the rule calls no hit a match.

Runs on throwaway embedded databases; takes about two minutes on 2 cores.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from core import db, embeddings
from core import eval_retrieval as ev
from core.retrieval import RELEVANT_MAX_DISTANCE, RrfParams, match_kind, search_conversations, search_memories

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT / "docs" / "eval"
LIMITS = (0.6, 0.65, 0.7, 0.75, 0.8)  # cosine distance limits compared; the rule uses RELEVANT_MAX_DISTANCE
TOP = 8  # the Sessions search lists 8 hits; the Memories search 10; the agent injects fewer
# Asked of every user: none of the sets has a conversation or a memory about these.
OFF_TOPIC = [
    "pizza dough recipe",
    "how do I renew my passport",
    "quantum entanglement explained",
    "what is the capital of Mongolia",
    "tire pressure for a road bike",
    "how to fix a leaking faucet",
    "Python list comprehension syntax",
    "when is the tax filing deadline",
    "xqzv",
    "best knot for a fishing hook",
    "symptoms of a cracked phone screen",
    "how many moons does Jupiter have",
]


def _share(values: list[bool]) -> float:
    return sum(values) / len(values) if values else float("nan")


def _labelled_set(folder: Path, *, as_turns: bool) -> dict:
    """Load one labelled set (turns or slot memories) into a throwaway database and measure its searches."""
    rows = ev.load_turns(folder / "turns.jsonl") if as_turns else ev.load_memories(folder / "memories.jsonl")
    queries = ev.load_queries(folder / "queries.jsonl", {r.user for r in rows})
    qrels = ev.load_qrels(folder / "qrels.jsonl", queries, rows)
    insert, embed, search_rows = (
        (ev.insert_turns, ev.embed_turns, search_conversations)
        if as_turns
        else (ev.insert_memories, ev.embed_memories, search_memories)
    )
    with ev.throwaway_embedded() as uri:
        users = ev.create_users(uri, sorted({r.user for r in rows}))
        row_ids = insert(uri, rows, embed(rows), users)

        def search(user: str, text: str) -> list[dict]:
            found = search_rows(
                db.Scope.service(users[user]), text, limit=TOP, params=RrfParams.from_settings(), conninfo=uri
            )
            return [{**hit.as_dict(), "eval_id": row_ids.get(hit.id)} for hit in found.hits]

        return _measure(search, queries, qrels, sorted(users))


def _knowledge_set() -> dict:
    from core import knowledge as knowledge_base
    from core.config import SEED_DIR
    from core.seed import read_jsonl

    rows = [json.loads(line) for line in (EVAL / "knowledge_queries.jsonl").read_text().splitlines() if line]
    params = RrfParams.knowledge_from_settings()
    with ev.throwaway_embedded() as uri:
        knowledge_base.ingest(read_jsonl(SEED_DIR / "knowledge.jsonl"), conninfo=uri)

        def search(_user: str, text: str) -> list[dict]:
            vector = db.vector_literal(embeddings.embed_one(text))
            with db.admin_connection(uri) as conn:
                cur = conn.execute(
                    "select * from public.match_knowledge_hybrid(%s::extensions.vector, %s, %s, null, %s, %s, %s)",
                    (vector, text, TOP, params.vector_weight, params.text_weight, params.k),
                )
                names = [c.name for c in cur.description]
                return [{**dict(zip(names, row, strict=True)), "eval_id": None} for row in cur.fetchall()]

        queries = [ev.EvalQuery(id=r["id"], user="kb", query=r["query"]) for r in rows]
        qrels = {r["id"]: r["relevant"] for r in rows}
        return _measure(search, queries, qrels, ["kb"], key="title")


def _is_match(hit: dict, max_distance: float) -> bool:
    distance = hit.get("vector_distance", hit.get("distance"))
    return hit.get("text_rank") is not None or (distance is not None and distance <= max_distance)


def _measure(search, queries, qrels, users: list[str], key: str = "eval_id") -> dict:
    """Per distance limit: the share of evidence hits kept, and of off-topic searches left with no match."""
    evidence, off_topic = [], []
    for query in queries:
        wanted = set(qrels.get(query.id, []))
        evidence += [h for h in search(query.user, query.query) if h.get(key) in wanted]
    for user in users:
        off_topic += [search(user, text) for text in OFF_TOPIC]
    assert all(match_kind(h) != "nearest only" for h in evidence if _is_match(h, RELEVANT_MAX_DISTANCE))
    return {
        "questions": len(queries),
        "evidence_in_top": len(evidence),
        "off_topic_searches": len(off_topic),
        "by_limit": {
            limit: (
                _share([_is_match(h, limit) for h in evidence]),
                _share([not any(_is_match(h, limit) for h in hits) for hits in off_topic]),
            )
            for limit in LIMITS
        },
    }


def main() -> int:
    sets = {
        "slots (docs/eval, all)": lambda: _labelled_set(EVAL, as_turns=False),
        "conversations dev": lambda: _labelled_set(EVAL / "conversations" / "dev", as_turns=True),
        "multisession dev": lambda: _labelled_set(EVAL / "multisession" / "dev", as_turns=True),
        "knowledge (40 questions)": _knowledge_set,
    }
    print(f"The rule: a shared word, or cosine distance <= {RELEVANT_MAX_DISTANCE}; top {TOP} hits per search.\n")
    print("Evidence rows in the top 8 marked a match / off-topic searches with no hit marked a match, by limit:\n")
    print("| set | questions | evidence rows | off-topic searches | " + " | ".join(f"<= {x}" for x in LIMITS) + " |")
    print("| --- | ---: | ---: | ---: | " + " | ".join("---:" for _ in LIMITS) + " |")
    for name, run in sets.items():
        r = run()
        cells = " | ".join(f"{kept:.1%} / {none:.0%}" for kept, none in r["by_limit"].values())
        print(
            f"| {name} | {r['questions']} | {r['evidence_in_top']} | {r['off_topic_searches']} | {cells} |", flush=True
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
