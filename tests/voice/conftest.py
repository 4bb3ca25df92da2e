"""Fixtures for the voice tests: local voice calls for new users, always ended (report saved)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest

from agent.voice.calls import end_call, open_call
from agent.voice.local_call import LocalVoiceCall
from tests.support.users import SignedInUser


@pytest.fixture
def local_call(new_user) -> Iterator[Callable[[], tuple[str, LocalVoiceCall, SignedInUser]]]:
    """Factory: (key, call, user) for a new user's local voice call; calls still open are ended afterwards."""
    keys: list[str] = []

    def make() -> tuple[str, LocalVoiceCall, SignedInUser]:
        user = new_user()
        key = f"test-{uuid.uuid4().hex}"
        keys.append(key)
        call = open_call(key, user.verified)
        assert isinstance(call, LocalVoiceCall)
        return key, call, user

    yield make
    for key in keys:
        ended = end_call(key)
        if ended is not None:
            ended.result(timeout=60)
