"""agent.turn_log.report_without_withheld: what a session's report keeps of a secret and of the agent's answer
to it (the stored turns are checked end to end in tests/agent/test_llm_cli.py and test_conversation_memory.py)."""

from __future__ import annotations

import json

from agent import events
from agent.turn_log import WITHHELD_WORDS, report_without_withheld
from core.conversations import WITHHELD_TEXT


def _said(turn: int, role: str, text: str, *, final: bool = True) -> dict:
    return events.stamped(events.transcript(role, text, final=final), ts=1.0, session_id="s", turn=turn, seq=turn)


def test_the_answer_to_a_secret_is_left_out_word_for_word_and_nothing_else_that_shares_its_words():
    said = [
        _said(1, "user", "my wifi password is tulip-88"),
        _said(1, "assistant", "OK."),  # a model's answer to it: it may say the secret back in words of its own
        _said(2, "user", "I live in Denver."),
        _said(2, "assistant", "OK, I'll remember that you live in Denver."),
    ]
    report = {"transcript": [{"role": e["role"], "text": e["text"]} for e in said], "note": "OK."}
    kept = report_without_withheld(report, said)
    assert [line["text"] for line in kept["transcript"]] == [
        WITHHELD_TEXT,
        WITHHELD_TEXT,
        "I live in Denver.",
        "OK, I'll remember that you live in Denver.",  # shares the answer's word: kept
    ]
    assert kept["note"] == WITHHELD_TEXT  # the same words, anywhere in the report


def test_without_a_secret_the_report_is_as_it_was():
    said = [_said(1, "user", "I live in Denver."), _said(1, "assistant", "OK.")]
    report = {"transcript": [{"role": e["role"], "text": e["text"]} for e in said]}
    assert report_without_withheld(report, said) == report


def test_what_the_model_searched_and_called_with_in_a_withheld_turn_is_left_out_and_its_errors_are_kept():
    """The model's own words from the user's (a query, a tool call's arguments and the output that says them
    back) are left out in the turn of a withheld message, or wherever they hold a secret themselves; nothing
    else is checked: an error sentence about an API key is the report's, not the user's."""
    said = [
        _said(1, "user", "Is my PIN 4417?"),
        _said(1, "assistant", "I don't keep PINs."),
        _said(2, "user", "where do I live?"),
        _said(2, "assistant", "In Denver."),
    ]
    error = "The language model refused the API key (401): check OPENAI_API_KEY."

    def event(turn: int, fields: dict) -> dict:
        return events.stamped(fields, ts=1.0, session_id="s", turn=turn, seq=turn)

    searched = event(
        1,
        events.tool_call(
            "search_past_conversations", {"query": "4417"}, output='{"query": "4417"}', error=None, duration_ms=1
        ),
    )
    asked_again = event(
        2, events.tool_call("search_memories", {"query": "my pin number"}, output="[]", error=None, duration_ms=1)
    )
    missed = event(  # a recall that failed in the withheld turn: its error names the slot the model asked for
        1,
        events.tool_call(
            "recall_detail",
            {"memory_type": "pin"},
            output=None,
            error="Nothing is remembered under 'pin'.",
            duration_ms=1,
        ),
    )
    kept = event(
        2,
        events.tool_call(
            "search_memories", {"query": "home city"}, output='{"query": "home city"}', error=None, duration_ms=1
        ),
    )
    playground = {
        "tool_calls": [searched, asked_again, kept, missed],
        "retrievals": [
            event(
                1,
                events.retrieval(
                    source="conversations", trigger="tool", query="4417", mode="hybrid", params=None, latency_ms=1
                ),
            ),
            event(
                2,
                events.retrieval(
                    source="memories", trigger="tool", query="home city", mode="hybrid", params=None, latency_ms=1
                ),
            ),
        ],
        "errors": [event(2, events.error(error, where="llm"))],
    }
    history = {
        "items": [
            {"type": "message", "role": "user", "content": ["Is my PIN 4417?"]},
            {"type": "function_call", "call_id": "a", "name": "search_memories", "arguments": '{"query": "4417"}'},
            {"type": "function_call_output", "call_id": "a", "output": '{"query": "4417", "hits": []}'},
            {"type": "message", "role": "user", "content": ["where do I live?"]},
            {"type": "function_call", "call_id": "b", "name": "search_memories", "arguments": '{"query": "home city"}'},
            {"type": "function_call_output", "call_id": "b", "output": '{"query": "home city", "hits": []}'},
        ]
    }
    livekit_events = [
        {
            "type": "tool_execution_updated",
            "update": {"type": "tool_call_ended", "call_id": "a", "message": '{"query": "4417"}', "status": "done"},
        },
        {
            "type": "tool_execution_updated",
            "update": {
                "type": "tool_call_ended",
                "call_id": "b",
                "message": '{"query": "home city"}',
                "status": "done",
            },
        },
    ]
    report = report_without_withheld(
        {"chat_history": history, "events": livekit_events, "playground": playground}, said
    )
    assert "4417" not in json.dumps(report)
    section = report["playground"]
    assert [list(call["arguments"].values()) for call in section["tool_calls"]] == [
        [WITHHELD_WORDS],
        [WITHHELD_WORDS],
        ["home city"],
        [WITHHELD_WORDS],
    ]
    assert [(call["output"], call["error"]) for call in section["tool_calls"]] == [
        (WITHHELD_WORDS, None),
        (WITHHELD_WORDS, None),
        ('{"query": "home city"}', None),
        (None, WITHHELD_WORDS),  # "Nothing is remembered under 'pin'." said what was asked for
    ]
    assert [r["query"] for r in section["retrievals"]] == [WITHHELD_WORDS, "home city"]
    assert section["errors"][0]["message"] == error
    items = report["chat_history"]["items"]
    assert [json.loads(items[i]["arguments"]) for i in (1, 4)] == [{"query": WITHHELD_WORDS}, {"query": "home city"}]
    assert [items[i]["output"] for i in (2, 5)] == [WITHHELD_WORDS, '{"query": "home city", "hits": []}']
    assert [e["update"]["message"] for e in report["events"]] == [WITHHELD_WORDS, '{"query": "home city"}']
