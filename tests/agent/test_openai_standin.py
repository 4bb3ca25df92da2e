"""The OpenAI-compatible stand-in speaks the protocol the way the real servers do.

Checked with the official `openai` client (what the livekit plugin uses), so
the end-to-end tests that rely on the stand-in rest on a faithful edge."""

from __future__ import annotations

import json

import openai
import pytest

from agent.prompts import EXTRACTION_PROMPT
from tests.support.openai_standin import DEFAULT_MODEL, OpenAIStandIn, TemplateError, check_messages

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "remember_detail",
            "description": "Remember a fact.",
            "parameters": {
                "type": "object",
                "properties": {"memory_type": {"type": "string"}, "content": {"type": "string"}},
                "required": ["memory_type", "content"],
            },
        },
    }
]
SYSTEM = {"role": "system", "content": "You are a test."}


@pytest.fixture
def server():
    with OpenAIStandIn() as running:
        yield running


def client(server, **kwargs) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=server.base_url, api_key=kwargs.pop("api_key", server.api_key), max_retries=0, **kwargs
    )


def test_models_and_auth(server):
    assert [m.id for m in client(server).models.list()] == [DEFAULT_MODEL]
    with pytest.raises(openai.AuthenticationError) as caught:
        client(server, api_key="sk-wrong").models.list()
    assert caught.value.status_code == 401 and caught.value.code == "invalid_api_key"
    assert server.requests[-1].headers["authorization"] == "Bearer sk-wrong"


def test_streamed_tool_call_arrives_in_pieces_with_finish_reason_usage_and_done(server):
    stream = client(server).chat.completions.create(
        model=DEFAULT_MODEL,
        stream=True,
        stream_options={"include_usage": True},
        tools=TOOLS,
        messages=[SYSTEM, {"role": "user", "content": "my favorite color is teal"}],
    )
    chunks = list(stream)
    pieces = [c.choices[0].delta.tool_calls[0] for c in chunks if c.choices and c.choices[0].delta.tool_calls]
    assert pieces[0].id.startswith("call_") and pieces[0].function.name == "remember_detail"
    assert len(pieces) > 3 and all(p.id is None for p in pieces[1:])  # arguments split across chunks
    arguments = json.loads("".join(p.function.arguments or "" for p in pieces))
    assert arguments == {"memory_type": "favorite_color", "content": "teal"}
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens > 0
    assert server.chat_requests()[-1].answer_tool_calls[0]["id"] == pieces[0].id
    # the raw body ends the way OpenAI's does
    import urllib.request

    request = urllib.request.Request(
        f"{server.base_url}/chat/completions",
        method="POST",
        data=json.dumps(
            {"model": DEFAULT_MODEL, "stream": True, "messages": [{"role": "user", "content": "hello"}]}
        ).encode(),
        headers={"Authorization": f"Bearer {server.api_key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as response:
        assert response.headers["Transfer-Encoding"] == "chunked"
        body = response.read().decode()
    assert body.rstrip().endswith("data: [DONE]")


def test_answers_from_tool_results_and_without_streaming(server):
    messages = [
        SYSTEM,
        {"role": "user", "content": "what is my favorite color?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "recall_detail", "arguments": '{"memory_type": "favorite_color"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"memory_type": "favorite_color", "content": "teal"}'},
    ]
    reply = client(server).chat.completions.create(model=DEFAULT_MODEL, messages=messages, tools=TOOLS)
    assert reply.choices[0].finish_reason == "stop"
    assert reply.choices[0].message.content == "You told me your favorite color is teal."


def test_a_recall_block_is_read_past_and_extraction_gets_json(server):
    said = "<recall>\n- favorite_color: teal\n</recall>\n\nI live in Denver"
    reply = client(server).chat.completions.create(
        model=DEFAULT_MODEL, tools=TOOLS, messages=[SYSTEM, {"role": "user", "content": said}]
    )
    assert json.loads(reply.choices[0].message.tool_calls[0].function.arguments)["memory_type"] == "home_city"
    reply = client(server).chat.completions.create(
        model=DEFAULT_MODEL,
        messages=[{"role": "user", "content": EXTRACTION_PROMPT + "- I live in Denver. Where is order 1002?"}],
    )
    facts = json.loads(reply.choices[0].message.content)
    assert [(f["memory_type"], f["content"]) for f in facts] == [("home_city", "Denver")]


@pytest.mark.parametrize(
    "messages, complaint",
    [
        ([SYSTEM, SYSTEM, {"role": "user", "content": "hi"}], "System message must be at the beginning"),
        ([SYSTEM], "No user query found"),
        ([SYSTEM, {"role": "user", "content": "a"}, {"role": "user", "content": "b"}], "must alternate"),
        ([SYSTEM, {"role": "assistant", "content": "hi"}, {"role": "user", "content": "b"}], "must alternate"),
        (
            [SYSTEM, {"role": "user", "content": "a"}, {"role": "tool", "tool_call_id": "x", "content": "{}"}],
            "must be a response to a preceding message with 'tool_calls'",
        ),
    ],
)
def test_strict_chat_template_rules_are_enforced(server, messages, complaint):
    with pytest.raises(TemplateError, match=complaint):
        check_messages(messages)
    with pytest.raises(openai.BadRequestError, match=complaint):
        client(server).chat.completions.create(model=DEFAULT_MODEL, messages=messages)


def test_faults_on_demand(server):
    api = client(server, timeout=1.0)
    messages = [SYSTEM, {"role": "user", "content": "hello there, how are you today?"}]
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        api.chat.completions.create(model="no-such-model", messages=messages)
    server.fail("rate_limited", times=1)
    with pytest.raises(openai.RateLimitError):
        api.chat.completions.create(model=DEFAULT_MODEL, messages=messages)
    server.fail("server_error", times=1, when="how are you")
    with pytest.raises(openai.InternalServerError):
        api.chat.completions.create(model=DEFAULT_MODEL, messages=messages)
    server.fail("slow", times=1)
    with pytest.raises(openai.APITimeoutError):
        api.chat.completions.create(model=DEFAULT_MODEL, messages=messages)
    server.fail("cut", times=1)
    words = []
    with pytest.raises(openai.APIConnectionError):
        for chunk in api.chat.completions.create(model=DEFAULT_MODEL, messages=messages, stream=True):
            words.append(chunk.choices[0].delta.content or "")
    assert "".join(words).strip() and "".join(words) != server.chat_requests()[-1].answer_text
    server.fail("malformed_arguments", times=1)
    call = (
        api.chat.completions.create(
            model=DEFAULT_MODEL,
            tools=TOOLS,
            messages=[SYSTEM, {"role": "user", "content": "my favorite color is teal"}],
        )
        .choices[0]
        .message.tool_calls[0]
    )
    with pytest.raises(ValueError):
        json.loads(call.function.arguments)
    server.fail("unknown_tool", times=1)
    call = api.chat.completions.create(model=DEFAULT_MODEL, tools=TOOLS, messages=messages).choices[0].message
    assert call.tool_calls[0].function.name not in {t["function"]["name"] for t in TOOLS}
    # all used up: a normal answer again
    assert api.chat.completions.create(model=DEFAULT_MODEL, messages=messages).choices[0].message.content
    server.stop()
    with pytest.raises(openai.APIConnectionError):
        api.models.list()
