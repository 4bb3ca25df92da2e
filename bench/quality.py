"""Retrieval quality on the conversational sets, through `python -m core.eval_retrieval` itself.

    .venv/bin/python -m bench.quality [--splits dev,test] [--sets conversations,multisession] [--json out.json]

Two runs per split of each set (docs/eval/conversations and docs/eval/multisession):
  * before: the turns loaded as slot memories (memory_type "turn_0001", ...) and searched the way
    every retrieval ran before the conversation tier: public.match_memories_hybrid as the first
    migration defined it (the OR text query ranked by ts_rank_cd; put back in a throwaway database),
    weights 0.7/0.3, k = 60;
  * after: the same turns loaded with --as-turns into the conversation tier and searched with the
    app's current defaults.
Also the slot set (docs/eval/memories.jsonl) with the app's current defaults, which must stay
within 2 points of recall@1 = 0.847 (the default hybrid before this work), and the knowledge
questions (docs/eval/knowledge_queries.jsonl) against the seeded knowledge base: vector only
(public.match_knowledge), text only and hybrid (public.match_knowledge_hybrid).
"""

from __future__ import annotations

import argparse
import atexit
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT / "docs" / "eval"
SETS = ("conversations", "multisession")
SLOT_RECALL_AT_1_BEFORE = 0.847


def as_memories(turns_path: Path, out_path: Path) -> Path:
    """Each turn as a slot memory of its user, in conversation order."""
    counters: dict[str, int] = {}
    with out_path.open("w", encoding="utf-8") as out:
        for line in turns_path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            turn = json.loads(line)
            counters[turn["user"]] = counters.get(turn["user"], 0) + 1
            out.write(
                json.dumps(
                    {
                        "user": turn["user"],
                        "id": turn["id"],
                        "memory_type": f"turn_{counters[turn['user']]:04d}",
                        "content": turn["content"],
                    }
                )
                + "\n"
            )
    return out_path


def run_cli(memories: Path, queries: Path, qrels: Path, *extra: str) -> dict[str, Any]:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "core.eval_retrieval",
            "--memories",
            str(memories),
            "--queries",
            str(queries),
            "--qrels",
            str(qrels),
            "--top-k",
            "10",
            *extra,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"eval_retrieval failed ({result.returncode}): {result.stderr[-2000:]}")
    last = result.stdout.strip().splitlines()[-1]
    return json.loads(last)["summary"]


def knowledge(log=print) -> dict[str, Any]:
    """R@1, R@3 and MRR of the knowledge questions, on a throwaway database seeded with the knowledge base."""
    from core import db, embeddings
    from core import knowledge as knowledge_base
    from core.config import SEED_DIR
    from core.retrieval import RrfParams
    from core.seed import read_jsonl

    rows = [json.loads(line) for line in (EVAL / "knowledge_queries.jsonl").read_text().splitlines() if line]
    params = RrfParams.knowledge_from_settings()
    modes = {"vector": [], "text": [], "hybrid": []}
    workdir = Path(tempfile.mkdtemp(prefix="mp-quality-knowledge-"))
    atexit.register(shutil.rmtree, workdir, ignore_errors=True)  # after pgserver's hook deletes pg/
    uri = db.start_embedded(workdir / "pg", cleanup_mode="delete")
    db.migrate(uri, embedded=True, echo=lambda *_: None)
    knowledge_base.ingest(read_jsonl(SEED_DIR / "knowledge.jsonl"), conninfo=uri)
    with db.admin_connection(uri) as conn:
        for row in rows:
            vector = db.vector_literal(embeddings.embed_one(row["query"]))
            modes["vector"].append(
                [
                    r[0]
                    for r in conn.execute(
                        "select title from public.match_knowledge(%s::extensions.vector, 10)", (vector,)
                    ).fetchall()
                ]
            )
            modes["text"].append(
                [
                    r[0]
                    for r in conn.execute(
                        "select title from public.match_knowledge_hybrid(null, %s, 10, null, 0, 1, %s)",
                        (row["query"], params.k),
                    ).fetchall()
                ]
            )
            modes["hybrid"].append(
                [
                    r[0]
                    for r in conn.execute(
                        "select title from public.match_knowledge_hybrid("
                        "%s::extensions.vector, %s, 10, null, %s, %s, %s)",
                        (vector, row["query"], params.vector_weight, params.text_weight, params.k),
                    ).fetchall()
                ]
            )
    out = {"queries": len(rows), "modes": {}}
    for mode, ranked in modes.items():
        firsts = [
            next((i for i, t in enumerate(titles, 1) if t in row["relevant"]), None)
            for titles, row in zip(ranked, rows, strict=True)
        ]
        out["modes"][mode] = {
            "recall@1": sum(f == 1 for f in firsts) / len(rows),
            "recall@3": sum(bool(f and f <= 3) for f in firsts) / len(rows),
            "mrr": sum(1 / f for f in firsts if f) / len(rows),
        }
    e03 = rows[0]
    out["e03_top"] = {mode: ranked[0][0] for mode, ranked in modes.items()}
    log(f"quality: knowledge {json.dumps(out['modes'])}; '{e03['query']}' -> {out['e03_top']}")
    return out


FIRST_MIGRATION = ROOT / "supabase" / "migrations" / "20261122000000_memory_playground.sql"


def original_memory_search_sql() -> str:
    """match_memories_hybrid as the first migration defined it (ts_rank_cd over an OR of the lexemes)."""
    text = FIRST_MIGRATION.read_text(encoding="utf-8")
    start = text.index("create or replace function public.match_memories_hybrid(")
    end = text.index("$$;", start) + 3
    return text[start:end]


def before_database(log=print) -> str:
    """A throwaway server with every migration, then the original memory search put back."""
    from core import db

    workdir = Path(tempfile.mkdtemp(prefix="mp-quality-before-"))
    atexit.register(shutil.rmtree, workdir, ignore_errors=True)  # after pgserver's hook deletes pg/
    uri = db.start_embedded(workdir / "pg", cleanup_mode="delete")
    db.migrate(uri, embedded=True, echo=lambda *_: None)
    with db.admin_connection(uri) as conn:
        conn.execute(original_memory_search_sql())
    log("quality: 'before' database has the original match_memories_hybrid")
    return uri


def run(splits: list[str], log=print, save: Path | None = None, sets: tuple[str, ...] = SETS) -> dict[str, Any]:
    """Every result is added to `save` (JSON) as soon as it is measured: out["sets"][set][split]."""
    out: dict[str, Any] = {"sets": {}}

    def keep() -> None:
        if save:
            save.write_text(json.dumps(out, indent=2), encoding="utf-8")

    out["knowledge"] = knowledge(log)
    keep()
    before_uri = before_database(log)
    with tempfile.TemporaryDirectory(prefix="mp-quality-") as tmp:
        for set_name, split in [(s, split) for s in sets for split in splits]:
            folder = EVAL / set_name / split
            queries, qrels, turns = folder / "queries.jsonl", folder / "qrels.jsonl", folder / "turns.jsonl"
            log(f"quality: {set_name} {split} before (turns as slot memories, 0.7/0.3, k 60)")
            before = run_cli(
                as_memories(turns, Path(tmp) / f"{set_name}-{split}-memories.jsonl"),
                queries,
                qrels,
                "--weights",
                "0.7,0.3",
                "--rrf-k",
                "60",
                "--database-url",
                before_uri,
            )
            out["sets"].setdefault(set_name, {})[split] = {"before": before}
            keep()
            log(f"quality: {set_name} {split} after (conversation tier, defaults)")
            out["sets"][set_name][split]["after"] = run_cli(turns, queries, qrels, "--as-turns")
            keep()
        log("quality: slot set with the defaults")
        out["slots"] = run_cli(EVAL / "memories.jsonl", EVAL / "queries.jsonl", EVAL / "qrels.jsonl")
        keep()
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", default="dev")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    result = run(
        [s.strip() for s in args.splits.split(",") if s.strip()],
        save=args.json,
        sets=tuple(s.strip() for s in args.sets.split(",") if s.strip()),
    )
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
