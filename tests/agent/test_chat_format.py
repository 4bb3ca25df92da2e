"""The request shape (agent/chat_format.py) and the failure sentences (agent/llm_failures.py), case by case.

End to end, every request the agent sends is checked against the strict
template rules by the stand-in (tests/test_llm_*.py); these cases pin the
corners: a failed turn, a greeting in history, each recall placement."""

from __future__ import annotations

import httpx2
import openai
import pytest
from livekit.agents import APIConnectionError, APIStatusError, APITimeoutError, llm

from agent import llm_failures
from agent.chat_format import PRELOAD_MESSAGE_ID, instruction_of, shape, user_words
from core import config
from tests.support.openai_standin import check_messages


def _ctx(*items) -> llm.ChatContext:
    ctx = llm.ChatContext.empty()
    ctx.add_message(role="system", content="INSTRUCTIONS", id="lk.agent_task.instructions")
    ctx.add_message(role="system", content="PRELOAD", id=PRELOAD_MESSAGE_ID)
    for role, text, *rest in items:
        ctx.add_message(role=role, content=text, id=rest[0] if rest else f"m{len(ctx.items)}")
    return ctx


def _openai_messages(ctx: llm.ChatContext) -> list[dict]:
    messages, _ = ctx.to_provider_format("openai")
    return messages


def test_greeting_request_is_one_system_message_and_a_user_turn():
    ctx = _ctx(("system", "Greet the user warmly."))
    messages = _openai_messages(shape(ctx))
    assert messages == [
        {"role": "system", "content": "INSTRUCTIONS\n\nPRELOAD"},
        {"role": "user", "content": "<instructions>\nGreet the user warmly.\n</instructions>"},
    ]
    check_messages(messages)
    assert instruction_of(messages[1]["content"]) == "Greet the user warmly."


def test_a_preload_given_is_sent_in_place_of_the_stored_one_which_stays():
    """The profile changed (a new time zone) or a day began: the call sends the preload as it is now."""
    ctx = _ctx(("assistant", "Hi there!"), ("user", "hello"))
    messages = _openai_messages(shape(ctx, preload="PRELOAD NOW"))
    assert messages[0] == {"role": "system", "content": "INSTRUCTIONS\n\nPRELOAD NOW"}
    assert [m["content"] for m in messages[1:]] == [
        "<instructions>\nThe conversation starts.\n</instructions>",
        "Hi there!",
        "hello",
    ]
    assert next(item for item in ctx.items if item.id == PRELOAD_MESSAGE_ID).text_content == "PRELOAD"
    assert _openai_messages(shape(ctx))[0]["content"] == "INSTRUCTIONS\n\nPRELOAD"


def test_after_the_greeting_the_same_instruction_turn_opens_the_conversation():
    ctx = _ctx(("assistant", "Hi there!"), ("user", "hello"))
    messages = _openai_messages(shape(ctx, opening_instruction="Greet the user warmly."))
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[1]["content"] == "<instructions>\nGreet the user warmly.\n</instructions>"
    check_messages(messages)


def test_a_failed_turn_leaves_two_user_messages_which_are_merged():
    ctx = _ctx(
        ("assistant", "Hi!"), ("user", "my favorite color is teal", "u1"), ("user", "where is order 1002?", "u2")
    )
    messages = _openai_messages(shape(ctx, recalls={"u2": "- favorite_color: teal"}))
    check_messages(messages)
    last = messages[-1]["content"]
    assert last == ("my favorite color is teal\n\n<recall>\n- favorite_color: teal\n</recall>\n\nwhere is order 1002?")
    assert user_words(last) == "where is order 1002?"


def test_assistant_texts_around_a_tool_call_become_one_turn():
    ctx = _ctx(("user", "how long is shipping?"), ("assistant", "One moment, let me look that up."))
    ctx.items.append(llm.FunctionCall(call_id="c1", name="search_knowledge", arguments='{"query": "shipping"}'))
    ctx.items.append(
        llm.FunctionCallOutput(call_id="c1", name="search_knowledge", output='{"hits": []}', is_error=False)
    )
    ctx.add_message(role="assistant", content="Shipping takes 3 days.")
    messages = _openai_messages(shape(ctx))
    check_messages(messages)
    assert messages[-1] == {
        "role": "assistant",
        "content": "One moment, let me look that up.\n\nShipping takes 3 days.",
    }


@pytest.mark.parametrize(
    "placement, in_system, first_user_has_block",
    [("user_turns", False, True), ("latest_user_turn", False, False), ("system", True, False)],
)
def test_recall_placements(placement, in_system, first_user_has_block):
    ctx = _ctx(("user", "my favorite color is teal", "u1"), ("assistant", "Noted."), ("user", "what is it?", "u2"))
    messages = _openai_messages(
        shape(ctx, recalls={"u1": "- home_city: Denver", "u2": "- favorite_color: teal"}, recall_placement=placement)
    )
    check_messages(messages)
    assert ("<recall>\n- favorite_color: teal\n</recall>" in messages[0]["content"]) is in_system
    assert messages[1]["content"].startswith("<recall>") is first_user_has_block
    assert messages[3]["content"].startswith("<recall>\n- favorite_color: teal") is (not in_system)
    assert "- home_city: Denver" not in messages[0]["content"]


@pytest.fixture
def openai_settings(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")
    monkeypatch.setenv("LLM_MODEL", "qwen3")
    yield config.reload_settings()
    monkeypatch.undo()
    config.reload_settings()


def _status_error(code: int, message: str = "nope") -> APIStatusError:
    return APIStatusError(f"Error code: {code} - {message}", status_code=code, body={"message": message})


def _wrapped(inner: BaseException) -> APIConnectionError:
    """How livekit reports a request that failed after its retries."""
    try:
        try:
            raise inner
        except BaseException as exc:
            raise APIConnectionError("failed to generate LLM completion after 2 attempts") from exc
    except APIConnectionError as outer:
        return outer


def _plugin_error(cause: BaseException) -> APIConnectionError:
    try:
        try:
            raise cause
        except BaseException as exc:
            raise APIConnectionError(retryable=False) from exc
    except APIConnectionError as outer:
        return outer


@pytest.mark.parametrize(
    "error, kind, says",
    [
        (_status_error(401), "auth", "refused the API key (401): check OPENAI_API_KEY."),
        (_wrapped(_status_error(429)), "rate_limit", "is rate-limiting requests (429)"),
        (_status_error(404), "model", "has no model named 'qwen3' (404): check LLM_MODEL."),
        (
            _status_error(400, "tools are not supported"),
            "bad_request",
            "rejected the request (400: tools are not supported)",
        ),
        (_status_error(503), "server_error", "failed with a server error (503)"),
        (_wrapped(APITimeoutError()), "timeout", "did not answer within 60 s"),
        (_plugin_error(httpx2.RemoteProtocolError("incomplete chunked read")), "cut", "stopped in the middle"),
        (
            _wrapped(_plugin_error(httpx2.ConnectError("All connection attempts failed"))),
            "unreachable",
            "could not be reached: check OPENAI_BASE_URL",
        ),
        (
            _wrapped(_plugin_error(openai.APIConnectionError(request=httpx2.Request("POST", "http://x")))),
            "unreachable",
            "could not be reached",
        ),
    ],
)
def test_each_failure_is_one_sentence_naming_the_setting(openai_settings, error, kind, says):
    assert llm_failures.kind(error) == kind
    sentence = llm_failures.describe(error, openai_settings)
    assert sentence.startswith("The LLM at http://127.0.0.1:8080/v1 ") and says in sentence
    assert sentence.count(". ") == 0 and sentence.endswith(".")  # one sentence


def test_livekit_inference_out_of_reach_says_where_it_is_not_to_check_livekit_url(monkeypatch):
    """Found in a fresh-clone walkthrough: with LIVEKIT_URL set to a self-hosted server, every chat reply said
    "check LIVEKIT_URL and that the server is running", while the server was fine: LiveKit Inference is
    LiveKit Cloud's gateway, whatever LIVEKIT_URL says (the sidebar's check said so)."""
    for name, value in {
        "LIVEKIT_URL": "ws://127.0.0.1:7881",
        "LIVEKIT_API_KEY": "devkey",
        "LIVEKIT_API_SECRET": "secret" * 6,
        "LLM_MODEL": "",
        "OPENAI_API_KEY": "",
        "OPENAI_BASE_URL": "",
    }.items():
        monkeypatch.setenv(name, value)
    settings = config.reload_settings()
    try:
        error = _wrapped(_plugin_error(httpx2.ConnectError("[Errno -3] Temporary failure in name resolution")))
        sentence = llm_failures.describe(error, settings)
        assert sentence.startswith("The LLM at LiveKit Inference could not be reached: LiveKit Inference is only on")
        assert "LLM_MODEL=offline" in sentence and "check LIVEKIT_URL" not in sentence
    finally:
        monkeypatch.undo()
        config.reload_settings()


def test_a_base_url_without_http_says_to_add_it(monkeypatch):
    """ "localhost:11434/v1" (as Ollama's docs print it) fails every request as an unsupported protocol: the
    chat's sentence says what to write, as `make doctor` does, instead of "check OPENAI_BASE_URL"."""
    monkeypatch.setenv("OPENAI_BASE_URL", "localhost:11434/v1")
    settings = config.reload_settings()
    try:
        client = openai.OpenAI(base_url=settings.openai_base_url, api_key="x", max_retries=0)
        with pytest.raises(openai.APIConnectionError) as raised:  # the real client's error, not one made up
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        sentence = llm_failures.describe(_wrapped(raised.value), settings)
        assert sentence == (
            "The LLM at the configured URL could not be reached: OPENAI_BASE_URL needs http:// or https:// in "
            "front, e.g. http://localhost:11434/v1."
        )
    finally:
        monkeypatch.undo()
        config.reload_settings()
