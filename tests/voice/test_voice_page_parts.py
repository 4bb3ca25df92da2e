"""The pure parts of a voice call's page: per-turn latency rows (agent/voice/latency.py), and the live
transcript, the ICE server setting and the meter scale (ui/voice.py)."""

from __future__ import annotations

import json

import pytest
import streamlit as st
from streamlit_webrtc import component
from streamlit_webrtc.component import WebRtcStreamerContext, WebRtcStreamerState, _get_or_create_context

from agent.voice.latency import latency_summary, per_turn_latency
from core import config
from core.config import Settings
from ui.voice import (
    ice_servers,
    keep_call_across_reruns,
    latest_answered_turn,
    level_fraction,
    live_transcript,
    microphone_blocked_reason,
)
from ui.voice_latency import latency_table, stages_measured


def metric(name, value, turn, ts):
    return {"type": "metric", "name": name, "value": value, "turn": turn, "ts": ts}


def said(role, text, turn, ts, final=True, **extra):
    return {"type": "transcript", "role": role, "text": text, "final": final, "turn": turn, "ts": ts, **extra}


def test_per_turn_latency_gives_each_turn_its_own_speech_to_text_time():
    events = [
        said("assistant", "Hi!", 0, 1.0),
        metric("stt_ms", 640.0, 0, 10.0),  # finished before turn 1 began, so stamped with turn 0
        said("user", "my favorite color is teal", 1, 10.1),
        metric("eou_delay_ms", 700.0, 1, 10.1),
        metric("recall_ms", 31.0, 1, 10.2),
        metric("llm_ttft_ms", 2.0, 1, 10.3),
        metric("tts_ttfb_ms", 240.0, 1, 10.6),
        metric("e2e_ms", 1100.0, 1, 11),
        metric("e2e_ms", 9999.0, 1, 12),  # a second reply in the same turn does not replace the first
        said("user", "where is order 1001", 2, 20.0),  # typed: no speech-to-text
        metric("llm_ttft_ms", 3.0, 2, 20.1),
    ]
    rows = per_turn_latency(events)
    assert rows == [
        {
            "turn": 1,
            "stt_ms": 640.0,
            "eou_delay_ms": 700.0,
            "recall_ms": 31.0,
            "llm_ttft_ms": 2.0,
            "tts_ttfb_ms": 240.0,
            "e2e_ms": 1100.0,
        },
        {"turn": 2, "llm_ttft_ms": 3.0},
    ]
    summary = latency_summary(rows)
    assert summary["llm_ttft_ms"] == {"count": 2, "p50": 2.5, "max": 3.0}
    assert "stt_ms" in summary and summary["e2e_ms"]["count"] == 1


def test_the_call_latency_table_names_the_stages_in_order_and_keeps_to_ms():
    """The Voice page's table of the call so far had the metrics' own names as headers ("eou_delay_ms") and
    "1.10 s" under "700 ms": it is now the Sessions page's table, stages named in pipeline order, every time
    in ms, "—" where a turn did not measure a stage."""
    rows = [
        {"turn": 1, "e2e_ms": 1100.0, "stt_ms": 640.0, "llm_ttft_ms": 2.0, "eou_delay_ms": 700.0},
        {"turn": 2, "llm_ttft_ms": 3.25},
    ]
    stages = stages_measured(rows)
    assert stages == ["eou_delay_ms", "stt_ms", "llm_ttft_ms", "e2e_ms"]
    table = latency_table(rows, stages).set_index("Turn")
    assert list(table.columns) == [
        "End-of-utterance delay",
        "Speech-to-text",
        "LLM first token",
        "End of speech → first agent audio",
    ]
    assert table.loc[1].tolist() == ["700 ms", "640 ms", "2.0 ms", "1,100 ms"]
    assert table.loc[2].tolist() == ["—", "—", "3.2 ms", "—"]
    assert stages_measured(rows[1:], {"tts_ttfb_ms": {"p50": 240.0}}) == ["llm_ttft_ms", "tts_ttfb_ms"]


def test_live_transcript_replaces_interim_text_with_the_final_line():
    events = [
        said("assistant", "Hi!", 0, 1, final=False),
        said("assistant", "Hi! How can I help?", 0, 1.1, final=False),
        said("assistant", "Hi! How can I help?", 0, 2, final=True),
        said("user", "My favorite color is teal.", 1, 3, final=False),
        {"type": "state", "who": "agent", "state": "thinking", "turn": 1, "ts": 3.1},
        said("user", "My favorite color is teal.", 1, 3.2, final=True),
        said("assistant", "Got it,", 1, 3.5, final=False),
    ]
    lines = live_transcript(events)
    assert [(line["role"], line["text"], line["final"]) for line in lines] == [
        ("assistant", "Hi! How can I help?", True),
        ("user", "My favorite color is teal.", True),
        ("assistant", "Got it,", False),
    ]


def test_live_transcript_in_livekit_mode_follows_room_segments():
    events = [
        said("user", "my favorite", 0, 1, final=False, segment_id="SG_u1", origin="lk.transcription"),
        said("user", "My favorite color is teal.", 1, 2, final=True, origin="worker"),  # the worker's copy
        said("user", "My favorite color is teal.", 0, 2, final=True, segment_id="SG_u1", origin="lk.transcription"),
        said("assistant", "Got it", 1, 3, final=False, segment_id="SG_a1", origin="lk.transcription"),
    ]
    lines = live_transcript(events)
    assert [(line["role"], line["text"], line["final"]) for line in lines] == [
        ("user", "My favorite color is teal.", True),
        ("assistant", "Got it", False),
    ]


def test_ice_servers_come_from_the_setting(monkeypatch, caplog):
    assert ice_servers(Settings(voice_ice_servers=None)) == []
    stun = [{"urls": ["stun:stun.example.org:3478"]}]
    assert ice_servers(Settings(voice_ice_servers=json.dumps(stun))) == stun
    turn = json.dumps({"urls": "turn:turn.example.org", "username": "u", "credential": "p"})
    assert ice_servers(Settings(voice_ice_servers=turn))[0]["username"] == "u"  # one object is a list of one
    assert ice_servers(Settings(voice_ice_servers="[{not json")) == [] and "not valid JSON" in caplog.text
    assert ice_servers(Settings(voice_ice_servers=json.dumps([{"username": "no urls"}, stun[0]]))) == stun
    assert ice_servers(Settings(voice_ice_servers='"stun:nope"')) == []  # not RTCIceServer objects
    monkeypatch.setenv("VOICE_ICE_SERVERS", json.dumps(stun))  # as users set it: env, .env or secrets.toml
    try:
        config.reload_settings()
        assert ice_servers() == stun
    finally:
        monkeypatch.undo()
        config.reload_settings()


@pytest.mark.parametrize("level, expected", [(-90.0, 0.0), (-60.0, 0.0), (-30.0, 0.5), (0.0, 1.0), (3.0, 1.0)])
def test_level_fraction(level, expected):
    assert level_fraction(level) == pytest.approx(expected)


def test_the_panel_keeps_the_answered_turn_while_the_user_starts_the_next_one():
    events = [
        said("assistant", "Hi! How can I help?", 0, 1.0),
        said("user", "My favorite color is teal.", 1, 2.0),
        {"type": "tool_call", "name": "remember_detail", "turn": 1, "ts": 2.1},
        said("assistant", "Got it, I'll remember that.", 1, 2.5),
        # the user speaks again: interim words and the speech-to-text time belong to turn 2 already
        said("user", "What is my", 2, 5.0, final=False),
        metric("stt_ms", 400.0, 2, 5.5),
    ]
    assert latest_answered_turn(events[:1]) is None  # the greeting is not a turn of the panel
    turn = latest_answered_turn(events)
    assert turn.number == 1 and turn.user_text == "My favorite color is teal."
    assert [c["name"] for c in turn.tool_calls] == ["remember_detail"]
    committed = [*events, said("user", "What is my favorite color?", 2, 6.0)]
    assert latest_answered_turn(committed).number == 2


class _Worker:
    """Stands in for streamlit-webrtc's worker (the call's connection): records that it was stopped."""

    backend = "aiortc"
    local_description = None

    def __init__(self):
        self.stopped = False

    def stop(self):
        self.stopped = True


@pytest.fixture
def run_count(monkeypatch):
    """streamlit-webrtc's `_get_or_create_context` as inside a script run whose run count the test sets."""
    count = {"value": 0}
    monkeypatch.setattr(component, "get_this_session_info", lambda: object())
    monkeypatch.setattr(component, "get_script_run_count", lambda _info: count["value"])
    return count


def _live_context(key: str, drawn_at: int):
    """(a context with a live call drawn at run `drawn_at`, its worker); the context holds the worker weakly."""
    worker = _Worker()
    context = WebRtcStreamerContext(worker=worker, state=WebRtcStreamerState(playing=True, signalling=False))
    context._last_rendered_run_count = drawn_at
    st.session_state[key] = context
    return context, worker


@pytest.mark.parametrize("stayed_on_page", [True, False], ids=["stayed-on-the-page", "back-from-another-page"])
def test_a_run_count_that_jumps_ends_the_call_only_when_the_visitor_left_the_page(run_count, stayed_on_page):
    """The race likely behind calls that dropped at their start: the page drew the widget at run 4, the
    next run started before Streamlit counted run 4, and the one after sees 6. streamlit-webrtc takes
    that for a visit to another page and stops the call; the page keeps it when it never left."""
    context, worker = _live_context("k_race", drawn_at=4)
    run_count["value"] = 6
    keep_call_across_reruns(context, stayed_on_page=stayed_on_page)
    assert _get_or_create_context("k_race") is context
    assert worker.stopped is not stayed_on_page
    assert (context._get_worker() is worker) is stayed_on_page
    assert context._last_rendered_run_count == 6  # counted from here on, as streamlit-webrtc does


def test_without_the_guard_streamlit_webrtc_ends_a_call_whose_run_count_jumped(run_count):
    """The pinned streamlit-webrtc still has the check the guard works around (if this fails after an
    upgrade, the guard in ui/voice.py may no longer be needed)."""
    context, worker = _live_context("k_plain", drawn_at=4)
    run_count["value"] = 5  # one run later: drawn in the run before, nothing happens
    _get_or_create_context("k_plain")
    assert not worker.stopped
    run_count["value"] = 7
    _get_or_create_context("k_plain")
    assert worker.stopped and context._get_worker() is None


@pytest.mark.parametrize(
    "url",
    [
        None,
        "http://localhost:8501/voice",
        "http://127.0.0.1:8501/voice",
        "http://127.0.1.1:8501/",
        "http://[::1]:8501/voice",
        "http://demo.localhost:8501/voice",
        "https://playground.example.com/voice",
        "https://192.168.1.20:8443/voice",
    ],
)
def test_the_microphone_is_not_called_blocked_where_browsers_allow_it(url):
    assert microphone_blocked_reason(url) is None


@pytest.mark.parametrize(
    ("url", "host", "local"),
    [
        ("http://192.168.1.20:8501/voice", "192.168.1.20", "http://localhost:8501"),
        ("http://demo.example.com/voice", "demo.example.com", "http://localhost "),
        ("http://LAPTOP.local:8080/", "laptop.local", "http://localhost:8080"),
    ],
)
def test_plain_http_from_another_machine_says_why_the_microphone_is_refused(url, host, local):
    reason = microphone_blocked_reason(url)
    assert reason is not None and f"plain http from {host}," in reason and f"Open {local}" in reason


def test_the_voice_page_says_truly_what_leaves_the_machine_in_a_call(monkeypatch):
    """ "Audio stays on this machine" was said whatever was configured; with a remote LLM what the user says
    leaves, and with an OpenAI key their audio does too."""
    from ui.sidebar import model_rows
    from ui.voice import where_a_call_goes

    def said_with(**env):
        for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "LLM_MODEL", "LIVEKIT_URL", "LIVEKIT_API_KEY"):
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        settings = config.reload_settings()
        return where_a_call_goes(settings, model_rows())

    try:
        assert said_with().startswith("Audio stays on this machine")
        remote_llm = said_with(OPENAI_BASE_URL="http://127.0.0.1:11434/v1", LLM_MODEL="llama3.1")
        assert remote_llm == (
            "Where a call goes: speech recognition runs on this machine; what you say goes to OpenAI-compatible: "
            "llama3.1 at http://127.0.0.1:11434/v1; its voice is made here."
        )
        openai = said_with(OPENAI_API_KEY="sk-test")
        assert openai.startswith("Where a call goes: your audio goes to OpenAI: ") and "stays" not in openai
        assert "its voice is made by OpenAI: " in openai
    finally:
        monkeypatch.undo()
        config.reload_settings()


def test_a_voice_turns_summary_gives_its_end_of_speech_to_first_audio_never_the_wait_for_the_user():
    """ "· 27220 ms" for a turn answered in about 5 s: the summary gave the span from the turn's first event
    to its last, and a voice turn's events go on (states, the next utterance's interim words) while the
    agent waits for the user to speak again."""
    events = [
        said("assistant", "Hi!", 0, 1.0),
        said("user", "My favorite color is green. What is my favorite color?", 1, 10.0),
        metric("eou_delay_ms", 1109.0, 1, 10.0),
        {"type": "tool_call", "name": "recall_detail", "turn": 1, "ts": 10.1},
        metric("llm_ttft_ms", 1.0, 1, 10.2),
        said("assistant", "I don't remember your favorite color yet.", 1, 10.3),
        metric("tts_ttfb_ms", 89.0, 1, 10.3),
        metric("e2e_ms", 1390.0, 1, 10.3),
        metric("e2e_ms", 2800.0, 1, 12.0),  # a second reply of the turn: not the first audio
        {"type": "turn_done", "turn": 1, "ts": 15.0},
        # the agent listens; the user starts the next sentence, its interim words still stamped turn 1
        {"type": "state", "who": "agent", "state": "listening", "turn": 1, "ts": 15.1},
        said("user", "My favorite color is green.", 1, 37.2, final=False),
    ]
    turn = latest_answered_turn(events)
    assert turn.number == 1
    assert turn.summary.endswith(" · end of speech → first audio 1390 ms"), turn.summary
    assert turn.summary.count(" ms") == 1  # and no other figure (the span said 27200 ms)
    # a turn typed during the call (no speech, no turn total): no time rather than a span
    typed = [*events, said("user", "where is order 1001", 2, 40.0), metric("llm_ttft_ms", 3.0, 2, 40.1)]
    typed += [said("assistant", "It shipped.", 2, 41.0), {"type": "turn_done", "turn": 2, "ts": 50.0}]
    assert latest_answered_turn(typed).summary == "no tools, no searches"
