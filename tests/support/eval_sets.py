"""Turns of the conversational dev set (docs/eval/conversations/dev), for tests that need a user with a long,
varied history: enough turns that a statistic over them means something, written like real conversations."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

DEV_TURNS = Path(__file__).resolve().parents[2] / "docs" / "eval" / "conversations" / "dev" / "turns.jsonl"


@cache
def _dev_turns() -> tuple[dict, ...]:
    lines = DEV_TURNS.read_text(encoding="utf-8").splitlines()
    return tuple(json.loads(line) for line in lines if line.strip())


def first_sessions(user: str, sessions: int) -> list[dict]:
    """The turns of `user`'s first `sessions` sessions, in order: {"session", "turn", "speaker", "content",
    "date"} as the set has them (c01's first four: 136 turns)."""
    names = {f"{user}-s{i:02d}" for i in range(1, sessions + 1)}
    return [dict(t) for t in _dev_turns() if t["user"] == user and t["session"] in names]
