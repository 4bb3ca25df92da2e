"""agent.turn_log.report_without_withheld: what a session's report keeps of a secret and of the agent's answer
to it (the stored turns are checked end to end in tests/agent/test_llm_cli.py and test_conversation_memory.py)."""

from __future__ import annotations

from agent import events
from agent.turn_log import report_without_withheld
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
