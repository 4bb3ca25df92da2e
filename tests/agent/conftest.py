"""Fixtures for the agent's tests: the in-process runtime and the OpenAI-compatible stand-in the
real-LLM paths run against (tests/support/openai_standin.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agent.runtime import AgentRuntime
from tests.support.openai_standin import OpenAIStandIn


@pytest.fixture
def llm_server() -> Iterator[OpenAIStandIn]:
    """A running stand-in on a free port (stopped afterwards)."""
    with OpenAIStandIn(slow_seconds=20) as server:
        yield server


@pytest.fixture
def runtime(database_uri) -> Iterator[AgentRuntime]:
    """A runtime of its own (not the process's), shut down afterwards."""
    rt = AgentRuntime(idle_timeout=3600)
    yield rt
    rt.shutdown(timeout=30)
