"""`python -m agent chat` against a real OpenAI-compatible endpoint, as a user runs it.

The endpoint is the stand-in (tests/support/openai_standin.py): real HTTP, streamed
answers, and the rules strict chat templates enforce. Everything on our side
is real: the CLI subprocess, the openai plugin registered at start, the agent,
its tools, the database, extraction and the saved report.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest

from agent.brain.earlier import CLOSEST_LEAD
from agent.model_factory import build_llm
from agent.prompts import EXTRACTION_PROMPT, FORGOTTEN_NOTE, PRELOAD_HEADER, WITHHELD_NOTE, today_line
from agent.session import PlaygroundSession, TurnFailed
from agent.turn_log import WITHHELD_WORDS
from core import conversations, db, memories, sessions
from core.config import Settings
from core.conversations import WITHHELD_TEXT, TurnInput
from core.db import Scope
from core.errors import NotFound
from core.retrieval import MAX_QUERY_LENGTH
from tests.support.app import PROJECT_ROOT
from tests.support.llm_requests import (
    assert_agent_requests,
    assert_recall_carries,
    first_request_for,
    last_user_text,
    run_chat_cli,
    saved_session_id,
    system_message,
)
from tests.support.long_messages import LONG_MESSAGES, remember_what_they_ask_about
from tests.support.openai_standin import OpenAIStandIn

pytestmark = pytest.mark.slow


def _report(user, stdout: str) -> dict:
    return sessions.get_session(user.scope, saved_session_id(stdout)).report


def _no_traceback(result) -> None:
    assert "Traceback" not in result.stdout + result.stderr, result.stdout + result.stderr


def test_chat_with_an_llm_teaches_recalls_forgets_looks_up_and_extracts(new_user, llm_server):
    user = new_user()
    lines = [
        "my favorite color is teal",
        "what is my favorite color?",
        "I live in Denver. Where is order 1002?",
        "forget my favorite color",
        "what was my favorite color again?",
    ]
    result = run_chat_cli(llm_server.env(), lines, user_id=user.user_id)
    out = result.stdout
    _no_traceback(result)
    assert result.returncode == 0, result.stderr + out
    assert f"LLM OpenAI-compatible: gpt-4o-mini at {llm_server.base_url}" in out
    assert "agent> Got it, I'll remember that your favorite color is teal." in out
    assert "agent> You told me your favorite color is teal." in out
    assert "agent> Order 1002 is shipped" in out
    assert "agent> Done, I've forgotten your favorite color, and removed 3 past messages that mentioned it." in out
    assert "error:" not in out

    report = _report(user, out)
    section = report["playground"]
    assert section["models"]["llm_backend"] == "openai" and section["errors"] == []
    assert section["extraction"]["method"] == "llm"  # the model answered the extraction prompt
    # the model's own metrics events reach the report through a real OpenAI-compatible LLM too
    assert section["metrics_summary"]["llm_duration_ms"]["count"] >= len(lines)
    extracted = [w for w in section["memories_written"] if w["source"] == "extraction"]
    assert [(w["memory_type"], w["content"]) for w in extracted] == [("home_city", "Denver")]
    assert memories.recall(user.scope, "home_city").content == "Denver"
    with pytest.raises(NotFound):
        memories.recall(user.scope, "favorite_color")  # forgotten by the tool

    requests = llm_server.chat_requests()
    assert_agent_requests(requests)  # one leading system message with the preload; tool_call_ids; no `strict`
    greeting = requests[0]
    assert [m["role"] for m in greeting.messages] == ["system", "user"]  # a user turn for strict templates
    assert last_user_text(greeting).startswith("<instructions>\nGreet the user")
    assert PRELOAD_HEADER in system_message(greeting)
    # the recall for turn 2 carries the memory written in turn 1
    assert_recall_carries(first_request_for(requests, "what is my favorite color?"), "- favorite_color: teal")
    # each request starts with the previous one (a server's prompt cache stays valid), until something is
    # forgotten: what said it is blanked in the context from then on (agent/forgetting.py)
    forgetting = requests.index(first_request_for(requests, "forget my favorite color"))
    agent_calls = [r.messages for r in requests[: forgetting + 1] if r.body.get("tools")]
    for before, after in itertools.pairwise(agent_calls):
        assert after[: len(before)] == before
    # the turn after it, the model reads nothing that says it: not the earlier messages, not the tool's result
    asked_again = json.dumps(first_request_for(requests, "what was my favorite color again?").messages)
    assert "teal" not in asked_again.lower() and FORGOTTEN_NOTE in asked_again
    extraction = requests[-1]
    assert "tools" not in extraction.body
    assert [m["role"] for m in extraction.messages] == ["user"]
    assert extraction.messages[0]["content"].startswith(EXTRACTION_PROMPT)


def _an_earlier_chat(user, said: str, at: datetime) -> None:
    """A session of the user's before this one: the agent's greeting, then what the user said."""
    earlier = f"earlier-{user.user_id}"  # session ids are unique across users
    conversations.store_turns(
        Scope.service(user.user_id),
        [
            TurnInput(earlier, 0, "assistant", "Hi! What can I do for you today?", at),
            TurnInput(earlier, 1, "user", said, at + timedelta(seconds=20)),
        ],
    )


def test_past_conversations_through_an_llm(new_user, llm_server):
    """The model is offered search_past_conversations, calls it for "that trail I mentioned last week" with last
    week's dates (today's date is in the system prompt) and answers with what was said and when; the CLI stores
    its own session's turns as it goes."""
    user = new_user()
    # noon seven days ago: in last week's Monday to Sunday
    last_week = (datetime.now(UTC) - timedelta(days=7)).replace(hour=12, minute=0, second=0, microsecond=0)
    trail = "We hiked the Cedar Creek Loop on Saturday with Nora, nine miles and my legs are dead."
    _an_earlier_chat(user, trail, last_week)
    question = "what was the name of that trail I mentioned last week?"
    result = run_chat_cli(llm_server.env(), [question], user_id=user.user_id)
    _no_traceback(result)
    assert result.returncode == 0, result.stderr + result.stdout
    day = last_week.date()
    assert f"agent> {CLOSEST_LEAD}On {day:%A}, {day:%B} {day.day} you said: “{trail}”" in result.stdout

    requests = llm_server.chat_requests()
    assert_agent_requests(requests)
    offered = {tool["function"]["name"] for tool in requests[0].body["tools"]}
    assert {"search_past_conversations", "search_memories", "remember_detail"} <= offered
    asked = first_request_for(requests, question)
    assert [call["function"]["name"] for call in asked.answer_tool_calls] == ["search_past_conversations"]
    today = datetime.now(UTC).date()
    assert today_line(today, "UTC") in system_message(asked)
    monday = today - timedelta(days=today.weekday() + 7)
    assert json.loads(asked.answer_tool_calls[0]["function"]["arguments"]) == {
        "query": question,
        "from_date": monday.isoformat(),
        "to_date": (monday + timedelta(days=6)).isoformat(),
    }
    # the recall in front of the question already carried the turn, with its date
    assert_recall_carries(asked, f"- {day.isoformat()}, user: {trail}")
    answered = next(r for r in requests if r.messages and r.messages[-1]["role"] == "tool")
    assert "Cedar Creek Loop" in answered.messages[-1]["content"]
    assert f'"searched_dates": "{monday.isoformat()} to ' in answered.messages[-1]["content"]
    # the CLI's own session: every turn stored (greeting, question, answer), read back as the user
    stored = conversations.list_turns(user.scope, saved_session_id(result.stdout))
    assert [t.speaker for t in stored] == ["assistant", "user", "assistant"]
    assert stored[1].content == question and "Cedar Creek Loop" in stored[2].content


def test_a_secret_told_to_an_llm_is_kept_neither_in_the_conversations_nor_the_report(new_user, llm_server):
    """With a real model the same rule holds (agent/sensitive.py `withheld`, applied where every turn is stored,
    whatever answered): the message is stored withheld, the report and the fact extraction leave it out, and a
    later session's model is given nothing of it to read back. So is the model's answer to it, which may say
    the secret back in words no check knows (it was stored as said until 2026-12-07)."""
    user = new_user()
    secret = "my password hint is star and under"
    llm_server.say("Noted: star and under. I won't forget it.", when="password hint")
    told = run_chat_cli(llm_server.env(), [secret, "I live in Denver."], user_id=user.user_id)
    _no_traceback(told)
    assert told.returncode == 0, told.stderr + told.stdout
    assert "agent> Noted: star and under." in told.stdout  # what the model said back, shown in the chat
    session_id = saved_session_id(told.stdout)
    stored = conversations.list_turns(user.scope, session_id)
    assert [(t.speaker, t.content == conversations.WITHHELD_TEXT, t.withheld) for t in stored] == [
        ("assistant", False, False),  # the greeting
        ("user", True, True),
        ("assistant", True, True),  # the answer to it
        ("user", False, False),
        ("assistant", False, False),  # the answer to "I live in Denver.": kept
    ]
    assert stored[3].content == "I live in Denver." and not any(t.embedded for t in stored[:3])
    # once answered, the secret and the answer that said it back are not sent again (until 2026-12-07 every
    # later request of the conversation held both)
    later = first_request_for(llm_server.chat_requests(), "I live in Denver.")
    assert "star and under" not in json.dumps(later.messages) and "password hint" not in json.dumps(later.messages)
    assert [m["content"] for m in later.messages if m["content"] == WITHHELD_NOTE] == [WITHHELD_NOTE] * 2
    assert "star and under" not in json.dumps(_report(user, told.stdout))
    extraction = llm_server.chat_requests()[-1]  # the model extracts facts from what was kept only
    assert extraction.messages[0]["content"].startswith(EXTRACTION_PROMPT)
    assert extraction.messages[0]["content"].endswith("User messages:\n- I live in Denver.")
    assert memories.recall(user.scope, "home_city").content == "Denver"

    asked = run_chat_cli(llm_server.env(), ["what is my password hint?"], user_id=user.user_id)
    _no_traceback(asked)
    assert "star and under" not in asked.stdout
    request = first_request_for(llm_server.chat_requests(), "what is my password hint?")
    assert "star and under" not in json.dumps(request.messages)  # neither its recall nor its preload


def test_a_model_searching_with_the_users_secret_leaves_it_in_no_report(new_user, llm_server):
    """A model searches with its own words from the user's: "Is my PIN 4417?" was searched for as "Is my PIN
    4417" (no "?"), which the word-for-word rule kept as the query, the call's arguments and its output, in
    both the playground section and livekit's chat history, and the Sessions page showed it."""
    user = new_user()
    # the secret last: earlier ones leave the model's context at the next message (withhold_answered_secrets)
    told = run_chat_cli(llm_server.env(), ["I live in Denver.", "Is my PIN 4417?"], user_id=user.user_id)
    _no_traceback(told)
    assert told.returncode == 0, told.stderr + told.stdout
    searched = [
        json.loads(call["function"]["arguments"])
        for request in llm_server.chat_requests()
        for message in request.messages
        for call in message.get("tool_calls") or []
    ]
    assert any("4417" in json.dumps(arguments) for arguments in searched), searched  # the model did search with it
    report = _report(user, told.stdout)
    assert "4417" not in json.dumps(report), json.dumps(report)[:3000]
    section = report["playground"]
    asked = [call for call in section["tool_calls"] if call["turn"] == 2]
    assert asked and all(set(call["arguments"].values()) == {WITHHELD_WORDS} for call in asked), asked
    assert {r["query"] for r in section["retrievals"] if r["turn"] == 2} == {WITHHELD_WORDS}
    history = report["chat_history"]["items"]
    secret_at = next(i for i, item in enumerate(history) if item.get("content") == [WITHHELD_TEXT])
    calls = [item["arguments"] for item in history[secret_at:] if item["type"] == "function_call"]
    assert calls and all(WITHHELD_WORDS in json.loads(arguments).values() for arguments in calls), calls
    # what the turn before searched for and did is kept as it was
    before = [r["query"] for r in section["retrievals"] if r["turn"] == 1]
    assert before and any("Denver" in query for query in before), before
    assert any(call["arguments"] and WITHHELD_WORDS not in call["arguments"].values() for call in section["tool_calls"])


def test_the_last_conversation_through_an_llm(new_user, llm_server):
    """The model is offered recall_last_conversation (no arguments), calls it for "what did we talk about last
    time?" and gets the last conversation's turns with its date."""
    question = "what did we talk about last time?"
    stdout, requests, offered, day = _asked_after_a_chat_yesterday(new_user(), llm_server, question)
    assert f"agent> Last time, on {day:%A}, {day:%B} {day.day}, you told me: “{SAID_YESTERDAY}”" in stdout
    assert offered["recall_last_conversation"]["parameters"].get("properties", {}) == {}
    asked = first_request_for(requests, question)
    assert [call["function"]["name"] for call in asked.answer_tool_calls] == ["recall_last_conversation"]
    answered = next(r for r in requests if r.messages and r.messages[-1]["role"] == "tool")
    assert SAID_YESTERDAY in answered.messages[-1]["content"] and day.isoformat() in answered.messages[-1]["content"]


def test_the_conversations_of_a_day_through_an_llm(new_user, llm_server):
    """The model is offered recall_conversations (from_date required, to_date optional), calls it with
    yesterday's date for "what did we talk about yesterday?" and gets that day's conversations."""
    question = "what did we talk about yesterday?"
    stdout, requests, offered, day = _asked_after_a_chat_yesterday(new_user(), llm_server, question)
    assert f"agent> On {day:%A}, {day:%B} {day.day}, you told me: “{SAID_YESTERDAY}”." in stdout
    parameters = offered["recall_conversations"]["parameters"]
    assert set(parameters["properties"]) == {"from_date", "to_date"} and parameters["required"] == ["from_date"]
    asked = first_request_for(requests, question)
    [call] = asked.answer_tool_calls
    assert call["function"]["name"] == "recall_conversations"
    assert json.loads(call["function"]["arguments"]) == {"from_date": day.isoformat()}
    answered = next(r for r in requests if r.messages and r.messages[-1]["role"] == "tool")
    assert (
        SAID_YESTERDAY in answered.messages[-1]["content"] and '"started": "12:00"' in answered.messages[-1]["content"]
    )


SAID_YESTERDAY = "We hiked the Cedar Creek Loop on Saturday with Nora."


def _asked_after_a_chat_yesterday(user, llm_server, question: str):
    """A chat yesterday at noon (UTC) in which the user said SAID_YESTERDAY, then `question` through `python
    -m agent chat`: its output, the model's requests, the tools it was offered (by name) and yesterday's date."""
    noon = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0) - timedelta(days=1)
    _an_earlier_chat(user, SAID_YESTERDAY, noon)
    result = run_chat_cli(llm_server.env(), [question], user_id=user.user_id)
    _no_traceback(result)
    assert result.returncode == 0, result.stderr + result.stdout
    requests = llm_server.chat_requests()
    offered = {tool["function"]["name"]: tool["function"] for tool in requests[0].body["tools"]}
    return result.stdout, requests, offered, noon.date()


def test_messages_as_long_as_the_chat_allows_through_an_llm(new_user, llm_server):
    """The model passes a whole 2,000-character message to a search tool as its query (a query may be 1,000
    characters): each tool searches with part of it and the model gets hits, not an error, to answer from."""
    user = new_user()
    remember_what_they_ask_about(user)
    lines = [message for message, _tool, _answer in LONG_MESSAGES.values()]
    result = run_chat_cli(llm_server.env(), lines, user_id=user.user_id)
    _no_traceback(result)
    assert result.returncode == 0, result.stderr + result.stdout
    assert "too long" not in result.stdout and "error:" not in result.stdout
    replies = [line for line in result.stdout.splitlines() if line.startswith("agent> ")]
    requests = llm_server.chat_requests()
    for message, tool, answer in LONG_MESSAGES.values():
        (call,) = first_request_for(requests, message[-40:]).answer_tool_calls
        assert call["function"]["name"] == tool
        assert len(json.loads(call["function"]["arguments"])["query"]) > MAX_QUERY_LENGTH
        assert any(answer in reply for reply in replies), (answer, replies)
    last = [r for r in requests if r.body.get("tools")][-1]  # the whole conversation, tool results included
    results = [m["content"] for m in last.messages if m["role"] == "tool"]
    assert len(results) == len(lines) and not any("too long" in content for content in results)


def test_every_failure_of_one_turn_is_one_sentence_and_the_session_goes_on(new_user, llm_server):
    """Transient failures, one per turn; the next turn answers; the report keeps every error."""
    user = new_user()
    base = llm_server.base_url
    llm_server.fail("rate_limited", times=2, when="order 1001")  # 2: the first try and LLM_MAX_RETRIES=1
    llm_server.fail("slow", times=2, when="order 1003")
    llm_server.fail("cut", times=1, when="favorite color is teal")  # the answer after the tool call
    llm_server.fail("malformed_arguments", times=1, when="what is my favorite color")
    llm_server.fail("unknown_tool", times=1, when="order 1004")
    lines = [
        "where is order 1001?",
        "where is order 1003?",
        "my favorite color is teal",
        "what is my favorite color?",
        "where is order 1004?",
        "where is order 1002?",
    ]
    result = run_chat_cli(
        {**llm_server.env(), "LLM_TIMEOUT_SECONDS": "2", "LLM_MAX_RETRIES": "1"}, lines, user_id=user.user_id
    )
    out = result.stdout
    _no_traceback(result)
    assert result.returncode == 0, result.stderr + out
    expected = {
        1: f"The LLM at {base} is rate-limiting requests (429): wait a moment and try again, or check the limits "
        "of the account behind OPENAI_API_KEY.",
        2: f"The LLM at {base} did not answer within 2 s: check that the server is running and the model is "
        "loaded, or raise LLM_TIMEOUT_SECONDS.",
        3: f"The LLM at {base} stopped in the middle of its answer: try again, and check the server's log if it "
        "keeps happening.",
        4: "The LLM called recall_detail with arguments that are not valid JSON, so that call was skipped: try "
        "again, or use a model that supports tool calling (LLM_MODEL).",
        5: "The LLM asked for a tool that does not exist (transfer_to_billing), so that call was skipped: try "
        "again, or use a model that supports tool calling (LLM_MODEL).",
    }
    for sentence in expected.values():
        assert f"  error: {sentence}" in out
    assert "agent> Order 1002 is shipped" in out  # the session went on
    assert memories.recall(user.scope, "favorite_color").content == "teal"  # the tool ran before the cut

    errors = _report(user, out)["playground"]["errors"]
    assert {e["turn"]: e["message"] for e in errors} == expected
    assert {e["turn"]: e["kind"] for e in errors} == {
        1: "rate_limit",
        2: "timeout",
        3: "cut",
        4: "tool_arguments",
        5: "unknown_tool",
    }
    requests = llm_server.chat_requests()
    assert_agent_requests(requests)
    assert sum(r.status == 429 for r in requests) == 2  # retried once, as LLM_MAX_RETRIES says


@pytest.mark.parametrize("case", ["unreachable", "bad key", "unknown model"])
def test_a_broken_llm_setting_is_one_sentence_per_turn_and_the_report_is_saved(new_user, case):
    user = new_user()
    with OpenAIStandIn() as server:
        env = server.env()
        if case == "bad key":
            env["OPENAI_API_KEY"] = "sk-not-the-right-key"
        elif case == "unknown model":
            env["LLM_MODEL"] = "llama-3-does-not-exist"
        if case == "unreachable":
            server.stop()
        result = run_chat_cli(env, ["my favorite color is teal", "where is order 1002?"], user_id=user.user_id)
    out = result.stdout
    _no_traceback(result)
    assert result.returncode == 0, result.stderr + out  # a running session is never a startup failure
    sentence = {
        "unreachable": f"The LLM at {server.base_url} could not be reached: check OPENAI_BASE_URL and that the "
        "server is running.",
        "bad key": f"The LLM at {server.base_url} refused the API key (401): check OPENAI_API_KEY.",
        "unknown model": f"The LLM at {server.base_url} has no model named 'llama-3-does-not-exist' (404): "
        "check LLM_MODEL.",
    }[case]
    assert out.count(f"  error: {sentence}") == 3, out  # the greeting and both turns
    section = _report(user, out)["playground"]
    assert [(e["turn"], e["message"]) for e in section["errors"]] == [(0, sentence), (1, sentence), (2, sentence)]
    assert [t["text"] for t in section["transcript"] if t["role"] == "user"] == [
        "my favorite color is teal",
        "where is order 1002?",
    ]
    # the model could not extract facts either: the rules did, and said so
    assert section["extraction"]["method"] == "llm+rules"


async def test_a_failed_model_call_is_logged_in_lines_not_tracebacks(new_user, caplog):
    """In the app's and the worker's log (the CLI silences livekit), livekit logged each failed model call with
    its whole exception chain, about 120 lines a turn, beside the session's own one-line sentence."""
    user = new_user()
    with OpenAIStandIn() as server:  # stopped on leaving: unreachable
        settings = Settings(openai_base_url=server.base_url, openai_api_key=server.api_key, llm_model="gpt-4o-mini")
    session = PlaygroundSession(user.user_id, llm=build_llm(settings), greet=False)
    with caplog.at_level(logging.WARNING):
        await session.start()
        with pytest.raises(TurnFailed, match="could not be reached"):
            await session.run_text("where is order 1002?")
        await session.finish()
    from_livekit = [r for r in caplog.records if r.name.startswith("livekit.agents")]
    failed = [r for r in from_livekit if r.getMessage().startswith("Error in _llm_inference_task")]
    assert failed and "APIConnectionError" in failed[0].getMessage(), [r.getMessage() for r in from_livekit]
    assert not [r for r in from_livekit if r.exc_info], "a livekit record still carries a traceback"
    assert "Traceback" not in caplog.text and len(caplog.text.splitlines()) < 30, caplog.text


def test_a_broken_setting_at_startup_exits_with_a_message(new_user):
    user = new_user()
    result = run_chat_cli(
        {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "LLM_TIMEOUT_SECONDS": "soon"},
        ["hello"],
        user_id=user.user_id,
        timeout=120,
    )
    _no_traceback(result)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("error: LLM_TIMEOUT_SECONDS: ")


def test_a_database_without_the_schema_exits_with_a_message(tmp_path):
    """A fresh DATA_DIR (the embedded server starts, no migrations applied) said "relation auth.users does
    not exist" with a traceback."""
    result = run_chat_cli({"DATA_DIR": str(tmp_path)}, ["hello"], user_id="00000000-0000-0000-0000-000000000001")
    _no_traceback(result)
    assert result.returncode == 2
    said = result.stderr.strip().splitlines()[-1]
    total = len(db.migration_files())
    assert said.startswith(f"error: The database is missing {total} of this version's {total} migrations (")
    assert said.endswith("run `make db` (it applies them), then start again.")


def test_the_benchmark_runs_its_voice_turns_through_an_llm_endpoint(database_uri, llm_server, tmp_path):
    """`python -m bench` registers the plugins at start too: one voice turn through the openai plugin."""
    output = tmp_path / "BENCHMARKS.md"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "--rounds",
            "1",
            "--utterances",
            "1",
            "--paused",
            "0",
            "--barge-ins",
            "0",
            "--skip",
            "recall,wer,capacity,scale,quality,conversation-scale,first_visit",
            "--output",
            str(output),
        ],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1", **llm_server.env()},
    )
    _no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"LLM time to first token (OpenAI-compatible: gpt-4o-mini at {llm_server.base_url})" in output.read_text()
    # the voice turn reached the model: what Whisper heard is a user turn of its requests
    said = [m["content"] for r in llm_server.chat_requests() for m in r.messages if m["role"] == "user"]
    assert any(re.search(r"favou?rite colou?r.{0,4}teal", text, re.I) for text in said), result.stdout
