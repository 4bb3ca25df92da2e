"""Fixtures for the tests of core/: running stand-ins for the services core.doctor checks but that cannot
run here (an OpenAI-compatible server, Supabase Auth), not yet pointed at by the settings."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.openai_standin import OpenAIStandIn
from tests.support.supabase_standin import SupabaseAuthStandIn


@pytest.fixture
def openai_standin() -> Iterator[OpenAIStandIn]:
    with OpenAIStandIn() as server:
        yield server


@pytest.fixture
def supabase_standin() -> Iterator[SupabaseAuthStandIn]:
    with SupabaseAuthStandIn() as standin:
        yield standin
