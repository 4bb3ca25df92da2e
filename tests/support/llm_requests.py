"""For the tests that run the agent against a real LLM endpoint (the OpenAI-compatible stand-in,
tests/support/openai_standin.py): `python -m agent chat` as a subprocess, and what every request the
agent sends must look like."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from agent.prompts import PRELOAD_HEADER, RECALL_HEADER
from tests.support.app import PROJECT_ROOT
from tests.support.openai_standin import RecordedRequest

# These tests assert what the recall put in the request, not how fast it was: on a loaded machine the
# 250 ms budget could skip a recall, so they give it room (speed is measured by `make bench`).
NO_RECALL_SKIPS = {"RECALL_BUDGET_MS": "15000"}


def run_chat_cli(
    env: dict[str, str], lines: list[str], *, user_id, timeout: float = 300
) -> subprocess.CompletedProcess:
    """`python -m agent chat --user-id ...` with `lines` piped in, as a user runs it."""
    full_env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "HF_HUB_OFFLINE": "1", **NO_RECALL_SKIPS, **env}
    return subprocess.run(
        [sys.executable, "-m", "agent", "chat", "--user-id", str(user_id)],
        cwd=PROJECT_ROOT,
        env=full_env,
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def saved_session_id(stdout: str) -> str:
    match = re.search(r"^session (\S+) saved$", stdout, re.M)
    assert match, f"no saved session in:\n{stdout}"
    return match.group(1)


# --- what a request must look like --------------------------------------------------------


def system_message(request: RecordedRequest) -> str:
    """The request's one leading system message (asserts there is exactly one, and first)."""
    roles = [m["role"] for m in request.messages]
    assert roles[0] == "system" and roles.count("system") == 1, roles
    return request.messages[0]["content"]


def last_user_text(request: RecordedRequest) -> str:
    return [m for m in request.messages if m["role"] == "user"][-1]["content"]


def recall_block_of(text: str) -> str | None:
    match = re.match(r"^<recall>\n(?P<block>.*?)\n</recall>\n\n", text, re.S)
    return match.group("block") if match else None


def first_request_for(requests: list[RecordedRequest], words: str) -> RecordedRequest:
    """The first chat request whose latest user message ends with `words` (the turn's first model call)."""
    for request in requests:
        if request.messages and request.messages[-1]["role"] == "user" and last_user_text(request).endswith(words):
            return request
    raise AssertionError(f"no request for {words!r}")


def assert_agent_requests(requests: list[RecordedRequest], *, strict_tools: bool = False) -> None:
    """What every request of the agent must look like at any OpenAI-compatible server."""
    assert requests, "the agent sent no chat request"
    answered_ids: set[str] = set()
    for request in requests:
        body = request.body
        tools = body.get("tools") or []
        if tools:  # the agent's calls (the extraction request has no tools and no system message)
            system = system_message(request)
            assert system.startswith("You are the Memory Playground agent")
            assert PRELOAD_HEADER in system  # the preload block, inside the one system message
            assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
            assert all(("strict" in t["function"]) == strict_tools for t in tools), tools[0]
        for message in request.messages:
            if message["role"] == "tool":
                # every tool result answers a call the server made, by that call's id
                assert message["tool_call_id"] in answered_ids, message
        answered_ids |= {call["id"] for call in request.answer_tool_calls}


def assert_recall_carries(request: RecordedRequest, line: str) -> None:
    block = recall_block_of(last_user_text(request))
    assert block is not None and block.startswith(RECALL_HEADER), last_user_text(request)
    assert line in block.splitlines(), block
