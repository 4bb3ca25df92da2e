"""Per-user limits, truthful concurrent upserts, reports that cannot block each other,
and the small sharp edges: scopes that must be chosen, room names, the eval CLI's
answers to broken files."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import uuid
from datetime import timedelta
from pathlib import Path

import pytest

from core import config, db, embeddings, identity, livekit_tokens, memories, profiles, sessions
from core.db import Scope
from core.errors import InvalidInput, NotFound

PROJECT_ROOT = Path(__file__).resolve().parents[2]
UNIT = db.vector_literal([1.0] + [0.0] * (embeddings.DIMENSIONS - 1))


def _user():
    session = identity.sign_in_anonymously()
    verified = identity.verify(session.access_token)
    return verified, Scope.for_user(verified)


def _fake_embed(_text):
    return [1.0] + [0.0] * (embeddings.DIMENSIONS - 1)


def _bulk_memories(user_id, count: int, content_size: int = 60) -> None:
    with db.admin_connection() as conn, conn.cursor() as cur:
        cur.executemany(
            "insert into public.memories (user_id, memory_type, content, embedding, updated_at) "
            "values (%s, %s, %s, %s::extensions.vector, now() - make_interval(secs => %s))",
            [(user_id, f"fact_{i:05d}", f"fact number {i} " + "x" * content_size, UNIT, i) for i in range(count)],
        )


def test_50_concurrent_upserts_of_one_slot_make_one_row_and_one_created(database_uri):
    verified, scope = _user()
    barrier = threading.Barrier(50)
    results, errors = [], []

    def upsert(i):
        barrier.wait()
        try:
            results.append(memories.remember(scope, "favorite_color", f"colour {i}", embed=_fake_embed))
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=upsert, args=(i,)) for i in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    created = [r for r in results if r.created]
    print(f"50 concurrent upserts: {len(created)} reported created")
    assert len(created) == 1 and created[0].previous_content is None
    with db.admin_connection() as conn:
        rows = conn.execute(
            "select content from public.memories where user_id = %s and memory_type = 'favorite_color'",
            (verified.user_id,),
        ).fetchall()
    assert len(rows) == 1
    # every overwrite names the content it replaced: together they form one chain of 50 writes
    previous = sorted(r.previous_content for r in results if not r.created)
    written = sorted(r.memory.content for r in results)
    assert set(previous) < set(written) and rows[0][0] in written and rows[0][0] not in previous


def test_memories_per_user_are_capped(database_uri, monkeypatch):
    monkeypatch.setenv("MAX_MEMORIES_PER_USER", "25")
    config.reload_settings()
    try:
        verified, scope = _user()
        _bulk_memories(verified.user_id, 25)
        with pytest.raises(InvalidInput, match="limit of 25 remembered facts"):
            memories.remember(scope, "one_more", "over the limit", embed=_fake_embed)
        updated = memories.remember(scope, "fact_00003", "an existing slot can still change", embed=_fake_embed)
        assert updated.created is False
        memories.forget(scope, "fact_00004")
        assert memories.remember(scope, "one_more", "fits again", embed=_fake_embed).created is True
        with db.admin_connection() as conn:
            assert (
                conn.execute("select count(*) from public.memories where user_id = %s", (verified.user_id,)).fetchone()[
                    0
                ]
                == 25
            )
    finally:
        monkeypatch.undo()
        config.reload_settings()


def test_preferences_stay_under_their_cap_after_many_merges(database_uri):
    _, scope = _user()
    refused = 0
    for i in range(100):
        try:
            profiles.update_profile(scope, "preferences", {f"key_{i}": "v" * 7000})
        except InvalidInput as exc:
            assert "too large" in str(exc)
            refused += 1
    size = len(json.dumps(profiles.get_profile(scope).preferences).encode())
    print(f"preferences after 100 merges of 7 kB: {size:,} bytes ({refused} merges refused)")
    assert size <= config.get_settings().max_preferences_bytes
    assert refused >= 97


def test_preload_of_20000_memories_stays_within_its_budget(database_uri):
    verified, _ = _user()
    _bulk_memories(verified.user_id, 20_000)
    loaded = profiles.preload(Scope.service(verified.user_id))
    context = loaded.as_context()
    print(
        f"preload of 20,000 memories: {len(loaded.memories)} listed, {loaded.omitted:,} left to search, "
        f"{len(context):,} characters"
    )
    settings = config.get_settings()
    assert len(loaded.memories) <= settings.preload_max_memories
    assert len(context) <= settings.preload_token_budget * 4 + 1000
    assert loaded.omitted == 20_000 - len(loaded.memories)
    assert loaded.memories[0].memory_type == "fact_00000"  # the most recently updated first
    assert "search the memories" in context


def test_remember_for_a_user_that_does_not_exist_is_not_found(database_uri):
    with pytest.raises(NotFound, match="no such user"):
        memories.remember(Scope.service(uuid.uuid4()), "note", "nobody is there", embed=_fake_embed)
    with pytest.raises(NotFound, match="no such user"):
        sessions.save_report(Scope.service(uuid.uuid4()), f"s-{uuid.uuid4().hex}", {"x": 1})


def test_a_report_holding_nan_is_stored_with_null(database_uri):
    verified, _ = _user()
    record = sessions.save_report(
        Scope.service(verified.user_id),
        f"nan-{uuid.uuid4().hex}",
        {"score": float("nan"), "inf": float("inf"), "text": "a\x00b\ud800c", "ok": 1},
    )
    assert record.report == {"score": None, "inf": None, "text": "ab\ufffdc", "ok": 1}


def test_one_refused_report_never_blocks_the_ones_after_it(database_uri, caplog):
    from agent import reports

    verified, _ = _user()
    spool = reports._spool_dir()
    for path in spool.glob("*.json") if spool.exists() else []:
        path.unlink()
    # a report the database will refuse (too large even without its raw events) and a good one behind it
    huge = reports._spool(
        verified.user_id, f"huge-{uuid.uuid4().hex}", {"playground": {"blob": "x" * 6_000_000}}, None, None, None
    )
    bad_user = reports._spool(uuid.uuid4(), f"orphan-{uuid.uuid4().hex}", {"x": 1}, None, None, None)
    good_id = f"good-{uuid.uuid4().hex}"
    reports._spool(verified.user_id, good_id, {"score": float("nan"), "turns": 2}, None, None, None)
    assert stat.S_IMODE(spool.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in spool.glob("*.json"))

    assert reports.flush_pending() == 1
    assert sessions.get_session(Scope.service(verified.user_id), good_id).report == {"score": None, "turns": 2}
    rejected = spool / "rejected"
    assert stat.S_IMODE(rejected.stat().st_mode) == 0o700
    for moved in (huge, bad_user):
        assert (rejected / moved.name).exists() and not moved.exists()
        reason = (rejected / moved.name).with_suffix(".reason.txt").read_text()
        assert reason.strip()
    assert "too large" in (rejected / huge.name).with_suffix(".reason.txt").read_text()
    assert list(spool.glob("*.json")) == []
    assert reports.flush_pending() == 0  # nothing left to block anything


def test_a_scope_must_say_whom_it_runs_as(database_uri):
    with pytest.raises(TypeError):
        Scope(uuid.uuid4())  # the old default: a service scope, which bypasses RLS
    with pytest.raises(InvalidInput):
        Scope(uuid.uuid4(), "service", {"sub": "x"})
    with pytest.raises(InvalidInput):
        Scope(uuid.uuid4(), "user")
    with pytest.raises(InvalidInput):
        Scope(uuid.uuid4(), "admin")


@pytest.mark.parametrize("room", ["room-1\n", "room\n", "\nroom", "room 1", "room/1", "r" * 129, ""])
def test_room_names_must_match_entirely(database_uri, monkeypatch, room):
    for name, value in (
        ("LIVEKIT_URL", "wss://example.livekit.cloud"),
        ("LIVEKIT_API_KEY", "key"),
        ("LIVEKIT_API_SECRET", "s" * 40),
    ):
        monkeypatch.setenv(name, value)
    config.reload_settings()
    try:
        verified, _ = _user()
        if room == "":
            assert livekit_tokens.mint_user_token(verified, room_name=room).room_name  # empty: a fresh name
            return
        with pytest.raises(InvalidInput, match="room name"):
            livekit_tokens.mint_user_token(verified, room_name=room, ttl=timedelta(hours=1))
    finally:
        monkeypatch.undo()
        config.reload_settings()


@pytest.mark.parametrize("case", ["deep", "surrogate_query", "surrogate_content", "nul_user", "huge_int"])
def test_eval_cli_answers_broken_files_with_exit_2_and_one_line(tmp_path, case):
    memory = {"id": "m1", "user": "u1", "memory_type": "drink", "content": "oat milk flat white"}
    query = {"id": "q1", "user": "u1", "query": "what do I drink?"}
    memories_line, queries_line = json.dumps(memory), json.dumps(query)
    if case == "deep":
        queries_line = "[" * 100_000 + "]" * 100_000
    elif case == "surrogate_query":
        queries_line = json.dumps({**query, "query": "caf\ud800"})
    elif case == "surrogate_content":
        memories_line = json.dumps({**memory, "content": "\udfff milk"})
    elif case == "nul_user":
        memories_line = json.dumps({**memory, "user": "u\x001"})
    else:
        memories_line = '{"id": ' + "9" * 5000 + ', "user": "u1", "memory_type": "drink", "content": "x"}'
    (tmp_path / "m.jsonl").write_text(memories_line + "\n")
    (tmp_path / "q.jsonl").write_text(queries_line + "\n")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "core.eval_retrieval",
            "--memories",
            str(tmp_path / "m.jsonl"),
            "--queries",
            str(tmp_path / "q.jsonl"),
        ],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: ") and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr
