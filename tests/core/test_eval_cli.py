"""The retrieval evaluation CLI (`python -m core.eval_retrieval`), run as users run it: a subprocess
on a small labelled set (tests/data/eval_small: 12 memories of 2 users who share topics, 9 queries)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from core import eval_retrieval
from tests.support.app import PROJECT_ROOT, TEST_DATA

DATA = TEST_DATA / "eval_small"
MEMORIES, QUERIES, QRELS = DATA / "memories.jsonl", DATA / "queries.jsonl", DATA / "qrels.jsonl"
TOP_K = 5
WEIGHTS, RRF_K = (0.5, 0.5), 2  # the app's defaults, which the CLI uses


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


MEMORY_USER = {m["id"]: m["user"] for m in _jsonl(MEMORIES)}
QUERY_ROWS = _jsonl(QUERIES)
QUERY_USER = {q["id"]: q["user"] for q in QUERY_ROWS}
RELEVANT = {r["id"]: set(r["relevant"]) for r in _jsonl(QRELS)}


def run_cli(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "core.eval_retrieval", *args],
        cwd=PROJECT_ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def split_output(stdout: str) -> tuple[list[dict], dict | None]:
    lines = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    summary = lines[-1]["summary"] if lines and "summary" in lines[-1] else None
    return (lines[:-1] if summary is not None else lines), summary


def metrics_from_ranks(ranks_of_relevant: dict[str, list[int | None]], top_k: int) -> dict[str, float]:
    """recall@k, hit@k and MRR from the rank each relevant memory got (None: not ranked)."""
    cutoffs = sorted({c for c in (1, 3, 5, 10) if c <= top_k} | {top_k})
    per_query = list(ranks_of_relevant.values())
    found = {}
    for k in cutoffs:
        found[f"recall@{k}"] = sum(sum(1 for r in ranks if r and r <= k) / len(ranks) for ranks in per_query)
        found[f"hit@{k}"] = sum(any(r and r <= k for r in ranks) for ranks in per_query)
    found["mrr"] = sum(1 / min((r for r in ranks if r and r <= top_k), default=float("inf")) for ranks in per_query)
    return {name: round(total / len(per_query), 4) for name, total in found.items()}


@pytest.fixture(scope="module")
def hybrid_run(tmp_path_factory):
    """One CLI process for the main assertions: hybrid lines plus the three-mode summary."""
    tmp = tmp_path_factory.mktemp("eval-tmp")
    result = run_cli(
        "--memories",
        str(MEMORIES),
        "--queries",
        str(QUERIES),
        "--qrels",
        str(QRELS),
        "--top-k",
        str(TOP_K),
        "--mode",
        "hybrid",
        env={"TMPDIR": str(tmp)},
    )
    assert result.returncode == 0, result.stderr
    lines, summary = split_output(result.stdout)
    return lines, summary, result.stderr, tmp


@pytest.mark.slow  # runs the CLI: model load, database
def test_one_line_per_query_with_the_required_keys(hybrid_run):
    lines, _, stderr, _ = hybrid_run
    assert [line["id"] for line in lines] == [q["id"] for q in QUERY_ROWS]
    for line in lines:
        assert set(line) == {"id", "hits", "latency_ms"}
        assert line["latency_ms"] > 0
        # each user has 6 memories and the vector branch ranks all of them: the list is full
        assert len(line["hits"]) == TOP_K
        for hit in line["hits"]:
            assert set(hit) == {"id", "rrf_score", "vector_rank", "text_rank"}
        scores = [hit["rrf_score"] for hit in line["hits"]]
        assert scores == sorted(scores, reverse=True)
    assert "embedded 12/12 memories" in stderr  # progress goes to stderr, never into the JSON lines


@pytest.mark.slow  # runs the CLI: model load, database
def test_fused_scores_follow_the_rrf_formula(hybrid_run):
    lines, *_ = hybrid_run
    for line in lines:
        for hit in line["hits"]:
            expected = sum(
                w / (RRF_K + r) for w, r in zip(WEIGHTS, (hit["vector_rank"], hit["text_rank"]), strict=True) if r
            )
            assert hit["rrf_score"] == pytest.approx(expected, rel=1e-9)


@pytest.mark.slow  # runs the CLI: model load, database
def test_hits_never_come_from_another_user(hybrid_run):
    lines, *_ = hybrid_run
    for line in lines:
        owners = {MEMORY_USER[hit["id"]] for hit in line["hits"]}
        assert owners == {QUERY_USER[line["id"]]}, line
    # The same question from both users finds each one's own car.
    by_id = {line["id"]: line for line in lines}
    assert by_id["a1"]["hits"][0]["id"] == "ana-car"
    assert by_id["b1"]["hits"][0]["id"] == "ben-car"


@pytest.mark.slow  # runs the CLI: model load, database
def test_literal_value_query_finds_its_memory_first(hybrid_run):
    lines, *_ = hybrid_run
    by_id = {line["id"]: line for line in lines}
    for query_id, memory_id in (("a2", "ana-plate"), ("b2", "ben-plate")):
        top = by_id[query_id]["hits"][0]
        assert top["id"] == memory_id
        assert top["text_rank"] == 1  # the plate number itself matched in the full-text branch


@pytest.mark.slow  # runs the CLI: model load, database
def test_summary_covers_all_modes_and_agrees_with_the_printed_hits(hybrid_run):
    lines, summary, _, _ = hybrid_run
    assert summary is not None
    assert summary["judged"] == len(RELEVANT) == len(lines)
    assert set(summary["modes"]) == {"vector", "text", "hybrid"}
    for metrics in summary["modes"].values():
        assert set(metrics) == {"recall@1", "recall@3", "recall@5", "hit@1", "hit@3", "hit@5", "mrr"}
        assert all(0 <= value <= 1 for value in metrics.values())

    by_id = {line["id"]: line for line in lines}
    position = {qid: {hit["id"]: n for n, hit in enumerate(by_id[qid]["hits"], start=1)} for qid in RELEVANT}
    # Hybrid: straight from the printed order.
    hybrid_ranks = {qid: [position[qid].get(m) for m in rel] for qid, rel in RELEVANT.items()}
    assert summary["modes"]["hybrid"] == metrics_from_ranks(hybrid_ranks, TOP_K)
    # Every relevant memory is printed here, with its rank in each branch, so the single-branch
    # runs of the summary must agree with those printed branch ranks.
    assert all(r is not None for ranks in hybrid_ranks.values() for r in ranks)
    hits = {qid: {hit["id"]: hit for hit in by_id[qid]["hits"]} for qid in RELEVANT}
    for mode, key in (("vector", "vector_rank"), ("text", "text_rank")):
        ranks = {qid: [hits[qid][m][key] for m in rel] for qid, rel in RELEVANT.items()}
        assert summary["modes"][mode] == metrics_from_ranks(ranks, TOP_K), mode
    # The text branch misses paraphrases ("what's my kitty called"), the vector branch does not.
    assert summary["modes"]["text"]["hit@5"] < summary["modes"]["vector"]["hit@5"] == 1.0

    latency = summary["latency_ms"]
    assert latency["mode"] == "hybrid" and 0 < latency["p50"] <= latency["p95"]


@pytest.mark.slow  # runs the CLI: model load, database
def test_throwaway_database_is_deleted_at_exit(hybrid_run):
    *_, tmp = hybrid_run
    # (torch and platformdirs leave their own caches in TMPDIR; only the database's directory matters)
    assert "starting a throwaway embedded database in " + str(tmp) in hybrid_run[2]
    assert list(tmp.glob("mp-eval-*")) == []


@pytest.mark.slow  # runs the CLI: model load, database
def test_database_url_gets_temporary_users_that_are_removed(database_uri):
    def counts():
        with psycopg.connect(database_uri, autocommit=True) as conn:
            return conn.execute(
                "select (select count(*) from auth.users), (select count(*) from public.memories), "
                "(select count(*) from public.profiles)"
            ).fetchone()

    before = counts()
    result = run_cli(
        "--memories",
        str(MEMORIES),
        "--queries",
        str(QUERIES),
        "--mode",
        "text",
        "--text-match",
        "all",
        "--database-url",
        database_uri,
    )
    assert result.returncode == 0, result.stderr
    lines, summary = split_output(result.stdout)
    assert summary is None and len(lines) == len(QUERY_ROWS)
    by_id = {line["id"]: line for line in lines}
    assert [hit["id"] for hit in by_id["b2"]["hits"]] == ["ben-plate"]  # AND of one literal token
    assert by_id["a3"]["hits"] == []  # "kitty called": not every term is in any memory
    assert all(hit["vector_rank"] is None for line in lines for hit in line["hits"])
    assert "removed the 2 evaluation user(s)" in result.stderr
    assert counts() == before


def _write(path: Path, rows: list) -> Path:
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows))
    return path


@pytest.mark.parametrize(
    "case, expected",
    [
        ("missing_file", "does not exist"),
        ("malformed_json", "queries.jsonl:2: not valid JSON"),
        ("missing_field", "memories.jsonl:1: missing the 'content' field"),
        ("unknown_user", "is for user 'zed', who has no memories"),
        ("unknown_query_in_qrels", "refer to query 'nope'"),
        ("unknown_memory_in_qrels", "refer to memory 'ghost'"),
        ("other_users_memory_in_qrels", "belongs to user 'ben'"),
        ("bad_weights", "--weights must be two numbers"),
        ("zero_weights", "At least one RRF weight must be above 0"),
        ("duplicate_slot", "already has a memory in slot 'license_plate'"),
        ("database_url_not_a_url", "--database-url is not a connection string"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(tmp_path, capsys, case, expected):
    """In-process (input is checked before anything starts); the subprocess test below covers the exit status."""
    memories, queries, qrels = MEMORIES, QUERIES, QRELS
    extra: list[str] = []
    if case == "missing_file":
        memories = tmp_path / "absent.jsonl"
    elif case == "malformed_json":
        queries = _write(tmp_path / "queries.jsonl", [QUERY_ROWS[0], '{"user": "ana", "id": "x", "query": '])
    elif case == "missing_field":
        memories = _write(tmp_path / "memories.jsonl", [{"user": "ana", "id": "m", "memory_type": "car"}])
    elif case == "unknown_user":
        queries = _write(tmp_path / "queries.jsonl", [{"user": "zed", "id": "z1", "query": "what car"}])
    elif case == "unknown_query_in_qrels":
        qrels = _write(tmp_path / "qrels.jsonl", [{"id": "nope", "relevant": ["ana-car"]}])
    elif case == "unknown_memory_in_qrels":
        qrels = _write(tmp_path / "qrels.jsonl", [{"id": "a1", "relevant": ["ghost"]}])
    elif case == "other_users_memory_in_qrels":
        qrels = _write(tmp_path / "qrels.jsonl", [{"id": "a1", "relevant": ["ben-car"]}])
    elif case == "bad_weights":
        extra = ["--weights", "0.7;0.3"]
    elif case == "zero_weights":
        extra = ["--weights", "0,0"]
    elif case == "database_url_not_a_url":
        extra = ["--database-url", "notaurl"]
    elif case == "duplicate_slot":
        memories = _write(
            tmp_path / "memories.jsonl",
            [
                {"user": "ana", "id": "p1", "memory_type": "license_plate", "content": "5QZT903"},
                {"user": "ana", "id": "p2", "memory_type": "License Plate", "content": "7ABC123"},
            ],
        )
    status = eval_retrieval.main(
        ["--memories", str(memories), "--queries", str(queries), "--qrels", str(qrels), *extra]
    )
    out, err = capsys.readouterr()
    assert status == 2
    assert out == ""
    assert err.startswith("error: ") and expected in err, err


def test_a_file_saved_with_a_utf8_byte_order_mark_is_read(tmp_path):
    # Windows editors save UTF-8 with a BOM: the first line failed as "not valid JSON (Unexpected UTF-8 BOM …)"
    path = tmp_path / "memories.jsonl"
    rows = [{"user": "ana", "id": "m1", "memory_type": "car", "content": "a red Volvo"}]
    path.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps(row) + "\r\n" for row in rows).encode())
    loaded = eval_retrieval.load_memories(path)
    assert [(m.id, m.user, m.memory_type, m.content) for m in loaded] == [("m1", "ana", "car", "a red Volvo")]


def test_bad_input_process_exit_status(tmp_path):
    queries = _write(tmp_path / "queries.jsonl", [QUERY_ROWS[0], "not json"])
    result = run_cli("--memories", str(MEMORIES), "--queries", str(queries), timeout=60)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == f"error: {queries}:2: not valid JSON (Expecting value at column 1).\n"


# ---------------------------------------------------------------------------
# --as-turns: the memories file holds conversation turns, searched through the conversation tier
# ---------------------------------------------------------------------------

TURNS_DATA = TEST_DATA / "eval_turns_small"
TURNS, TURN_QUERIES, TURN_QRELS = (TURNS_DATA / "turns.jsonl", TURNS_DATA / "queries.jsonl", TURNS_DATA / "qrels.jsonl")
TURN_ROWS = _jsonl(TURNS)
TURN_USER = {t["id"]: t["user"] for t in TURN_ROWS}
TURN_QUERY_ROWS = _jsonl(TURN_QUERIES)


@pytest.fixture(scope="module")
def turns_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("eval-turns-tmp")
    result = run_cli(
        "--as-turns",
        "--memories",
        str(TURNS),
        "--queries",
        str(TURN_QUERIES),
        "--qrels",
        str(TURN_QRELS),
        "--top-k",
        "4",
        env={"TMPDIR": str(tmp)},
    )
    assert result.returncode == 0, result.stderr
    lines, summary = split_output(result.stdout)
    return lines, summary, result.stderr


@pytest.mark.slow  # runs the CLI: model load, database
def test_turns_one_line_per_query_with_the_contract_keys(turns_run):
    lines, summary, stderr = turns_run
    assert [line["id"] for line in lines] == [q["id"] for q in TURN_QUERY_ROWS]
    for line in lines:
        assert set(line) == {"id", "hits", "latency_ms"} and len(line["hits"]) == 4
        for hit in line["hits"]:
            assert set(hit) == {"id", "rrf_score", "vector_rank", "text_rank", "context_rank", "repeats"}
            assert hit["id"] in TURN_USER  # eval turn ids, not database ids
            assert hit["repeats"] >= 1  # the turns saying the same words folded into it, itself included
            assert hit["context_rank"]  # hybrid: every embedded candidate is also ranked with its reply
        scores = [hit["rrf_score"] for hit in line["hits"]]
        assert scores == sorted(scores, reverse=True)
        # the app's defaults (what --weights / --rrf-k default to): half the vector weight on the turn, half
        # on the turn with its reply; the text weight is the default scaled by how much of the question the
        # best text hit holds, one value per query
        vector_parts = [
            WEIGHTS[0] / 2 / (RRF_K + h["context_rank"])
            + (WEIGHTS[0] / 2 / (RRF_K + h["vector_rank"]) if h["vector_rank"] else 0)
            for h in line["hits"]
        ]
        text_weights = {
            round((h["rrf_score"] - v) * (RRF_K + h["text_rank"]), 9)
            for h, v in zip(line["hits"], vector_parts, strict=True)
            if h["text_rank"]
        }
        assert len(text_weights) <= 1 and all(0 <= w <= WEIGHTS[1] for w in text_weights)
        for hit, vector_part in zip(line["hits"], vector_parts, strict=True):
            if not hit["text_rank"]:
                assert hit["rrf_score"] == pytest.approx(vector_part, rel=1e-9)
    assert "embedded 16/16 turns" in stderr
    assert summary["tier"] == "conversation turns" and summary["candidates"] == 16
    assert set(summary["modes"]) == {"vector", "text", "hybrid"}


@pytest.mark.slow  # runs the CLI: model load, database
def test_turns_are_searched_per_user_and_literal_values_come_first(turns_run):
    lines, summary, _ = turns_run
    by_id = {line["id"]: line for line in lines}
    for line in lines:
        asker = next(q["user"] for q in TURN_QUERY_ROWS if q["id"] == line["id"])
        assert {TURN_USER[hit["id"]] for hit in line["hits"]} == {asker}
    # The same question from both users finds each one's own hike.
    assert by_id["a1"]["hits"][0]["id"] == "ana-s1-2"
    assert by_id["b1"]["hits"][0]["id"] == "ben-s1-2"
    for query_id, turn_id in (("a2", "ana-s2-0"), ("b2", "ben-s1-4")):
        top = by_id[query_id]["hits"][0]
        assert top["id"] == turn_id and top["text_rank"] == 1  # the flight number matched as text
    assert summary["modes"]["hybrid"]["recall@1"] >= 0.8


@pytest.mark.slow  # runs the CLI: model load, database
def test_turns_with_database_url_are_removed_with_their_users(database_uri):
    def counts():
        with psycopg.connect(database_uri, autocommit=True) as conn:
            return conn.execute(
                "select (select count(*) from auth.users), (select count(*) from public.sessions), "
                "(select count(*) from public.conversation_turns), "
                "(select count(*) from public.conversation_lexemes)"
            ).fetchone()

    before = counts()
    result = run_cli(
        "--as-turns",
        "--memories",
        str(TURNS),
        "--queries",
        str(TURN_QUERIES),
        "--mode",
        "text",
        "--database-url",
        database_uri,
    )
    assert result.returncode == 0, result.stderr
    lines, summary = split_output(result.stdout)
    assert summary is None and len(lines) == len(TURN_QUERY_ROWS)
    assert all(hit["vector_rank"] is None for line in lines for hit in line["hits"])
    assert "removed the 2 evaluation user(s)" in result.stderr
    assert counts() == before


def test_turn_dates_are_parsed_as_given():
    turns = eval_retrieval.load_turns(TURNS)
    dated = {t.id: t.date for t in turns if t.date is not None}
    assert dated["ana-s1-0"].isoformat() == "2024-03-02T10:00:00+00:00"
    assert dated["ana-s2-0"].isoformat() == "2024-03-20T18:30:00+00:00"
    assert dated["ben-s1-0"].isoformat() == "2023-05-08T13:56:00+00:00"  # "1:56 pm on 8 May, 2023"
    assert sum(t.date is None for t in turns) == len(turns) - 3


@pytest.mark.parametrize(
    "rows, extra, expected",
    [
        (
            [{"user": "ana", "id": "x", "session": "s", "speaker": "user", "content": "hi"}],
            [],
            "'turn' must be the turn's position",
        ),
        (
            [{"user": "ana", "id": "x", "session": "s", "turn": -1, "speaker": "user", "content": "hi"}],
            [],
            "'turn' must be the turn's position",
        ),
        (
            [
                {
                    "user": "ana",
                    "id": "x",
                    "session": "s",
                    "turn": 0,
                    "speaker": "user",
                    "content": "hi",
                    "date": "next tuesday-ish",
                }
            ],
            [],
            "'date' 'next tuesday-ish' is not a date",
        ),
        ([{"user": "ana", "id": "x", "session": "s", "turn": 0, "content": "hi"}], [], "missing the 'speaker' field"),
        (
            [
                {"user": "ana", "id": "x", "session": "s", "turn": 0, "speaker": "user", "content": "hi"},
                {"user": "ana", "id": "y", "session": "s", "turn": 0, "speaker": "assistant", "content": "hello"},
            ],
            [],
            "already has turn 0 in session 's'",
        ),
        (None, ["--candidates", "0"], "--candidates must be between 1 and 1000"),
    ],
)
def test_bad_turn_input_exits_2_with_a_clear_message(tmp_path, capsys, rows, extra, expected):
    turns = _write(tmp_path / "turns.jsonl", rows) if rows else TURNS
    queries = _write(tmp_path / "queries.jsonl", [{"user": "ana", "id": "q", "query": "hi"}])
    status = eval_retrieval.main(["--as-turns", "--memories", str(turns), "--queries", str(queries), *extra])
    out, err = capsys.readouterr()
    assert status == 2 and out == ""
    assert err.startswith("error: ") and expected in err, err


def test_candidates_need_as_turns(capsys):
    status = eval_retrieval.main(["--memories", str(MEMORIES), "--queries", str(QUERIES), "--candidates", "50"])
    assert status == 2 and "--candidates applies to conversation turns; add --as-turns." in capsys.readouterr().err
