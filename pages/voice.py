"""Voice: talk to the agent in the browser. streamlit-webrtc carries the
microphone to the app and the agent's voice back (SENDRECV, audio only); the
call itself is an agent.VoiceCall: the local offline pipeline by default,
the LiveKit bridge when LiveKit is configured. Beside the live transcript:
the agent's state, the microphone level, which pipeline is active, and the
same per-turn retrieval panel as the chat. Typing during a call goes into the
same session. The identity is the app's verified visitor, nothing else."""

from __future__ import annotations

import threading

import av
import numpy as np
import streamlit as st

from agent import (
    SESSION_DELETED,
    WEBRTC_FRAME_SAMPLES,
    WEBRTC_SAMPLE_RATE,
    VoiceCall,
    end_call,
    get_call,
    open_call,
    per_turn_latency,
    prewarm_voice,
)
from core.config import Settings, get_settings
from ui import auth, chat_state, components, resend
from ui.errors import reported, show_error
from ui.format import clip, literal, session_ref
from ui.fragments import timed_fragment
from ui.session_end import after_session_lines, show_after_session
from ui.shell import run_page, stayed_on_page
from ui.sidebar import model_rows
from ui.style import page_header
from ui.turn_panel import render_turn_details
from ui.voice import (
    MICROPHONE_HELP,
    MICROPHONE_MESSAGES,
    WEBRTC_FRAME_FIXES,
    ice_servers,
    keep_call_across_reruns,
    latest_answered_turn,
    level_fraction,
    live_transcript,
    microphone_blocked_reason,
    where_a_call_goes,
)
from ui.voice_latency import show_latency_table

# (session_id, saved or SESSION_DELETED, _NEVER_JOINED, _NOTHING_SAID; pipeline; ui.session_end lines)
_ENDED = "u_voice_ended"
_NEVER_JOINED = "never_joined"  # a LiveKit call whose room could not be joined: no worker, no report
_NOTHING_SAID = "nothing_said"  # the call ended before the visitor said anything: not kept, no report
_CALL_KEY = "u_voice_call_key"
_LAST_CALL = "u_voice_last_call"  # the call this browser session started, until its end is shown
_OUTBOX = "u_voice_outbox"  # typed during the call and not yet handed to it (see _typed)
_INPUT = "u_voice_text"
_RECEIVED = "u_voice_received"  # every message typed in this browser session, as received (ui/resend.py)
_ARRIVALS = "u_voice_arrivals"  # when each of them arrived, and whether the page had sent it again
_WEBRTC = "u_voice_webrtc"  # streamlit-webrtc keeps its context (the call's connection) under this key
# The cookie writer (extra-streamlit-components) hides every element container whose
# iframe has height 0, and a component's iframe starts at 0 until it reports its size:
# keep the WebRTC widget's container shown so it can.
STATE_BADGES = {
    "initializing": ("Starting", "gray", ":material/hourglass_top:"),
    "idle": ("Idle", "gray", ":material/pause_circle:"),
    "listening": ("Listening", "blue", ":material/hearing:"),
    "thinking": ("Thinking", "orange", ":material/psychology:"),
    "speaking": ("Speaking", "green", ":material/record_voice_over:"),
}


def _call_key(visitor) -> str:
    # one call per browser session and verified user; the key never comes from the browser
    return f"{chat_state.browser_session_id()}:{visitor.user_id}"


def _mic_callback(key: str):
    def on_mic_frame(frame: av.AudioFrame) -> None:  # aiortc's thread
        call = get_call(key)
        if call is not None:
            call.push_av_frame(frame)

    return on_mic_frame


def _speaker_callback(key: str):
    def next_speaker_frame(pts, time_base) -> av.AudioFrame:  # aiortc's thread, every 20 ms
        call = get_call(key)
        samples = (
            call.read_samples(WEBRTC_FRAME_SAMPLES) if call is not None else np.zeros(WEBRTC_FRAME_SAMPLES, np.int16)
        )
        frame = av.AudioFrame.from_ndarray(samples.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = WEBRTC_SAMPLE_RATE
        return frame

    return next_speaker_frame


def _ended_by_browser(key: str):
    def on_ended() -> None:  # the browser pressed Stop, closed the tab or lost the connection
        end_call(key)

    return on_ended


def _still_waiting() -> list[str]:
    """Messages typed during the call and not yet handed to it."""
    return list(st.session_state.get(_OUTBOX) or [])


def _typed() -> None:
    """Keep a message typed during the call until the call has taken it. Streamlit runs this callback at the
    start of the next run, before the script, so a run cut short (a rerun, the call still connecting)
    cannot drop it."""
    text = resend.take(
        st.session_state.get(_INPUT),
        st.session_state.setdefault(_RECEIVED, []),
        st.session_state.setdefault(_ARRIVALS, []),
        still_waiting=_still_waiting(),
    )
    if text and text.strip():
        st.session_state.setdefault(_OUTBOX, []).append(text)


def _hand_over(call: VoiceCall) -> None:
    """Give the call the messages typed so far, once it is connected (the agent answers them in order)."""
    outbox = st.session_state.get(_OUTBOX)
    if not outbox or call.ready is None or not call.ready.done() or call.ready.exception() is not None:
        return
    while outbox:
        call.submit_text(outbox.pop(0))  # no Streamlit call in between: a rerun cannot cut the two apart


@st.cache_resource(show_spinner=False)
def _prewarm_once():
    """Load Silero, Whisper and Piper in the background the first time anyone opens this page,
    so pressing Start does not wait for them."""
    thread = threading.Thread(target=prewarm_voice, name="voice-prewarm", daemon=True)
    thread.start()
    return thread


def _pipeline_text(settings: Settings) -> str:
    if settings.livekit_configured:
        return (
            f":material/podcasts: **LiveKit** · this page joins a room at `{settings.livekit_url}` as you; "
            f"the `{settings.agent_name}` worker answers"
        )
    labels = {row["role"]: row["label"] for row in model_rows()}
    return (
        ":material/computer: **Local pipeline** (runs in this app) · Silero VAD → "
        f"{labels.get('STT', 'Whisper tiny.en')} → {labels.get('LLM', 'the agent')} → "
        f"{labels.get('TTS', 'Piper')}"
    )


def _state_badge(state: str) -> None:
    label, color, icon = STATE_BADGES.get(state, (state.title(), "gray", ":material/help:"))
    st.badge(label, icon=icon, color=color)


def _connecting(call: VoiceCall, lines: list[dict]) -> bool:
    """Whether to say the agent is still connecting: not while its words (the greeting's) are in `lines`.
    `ready` resolves only once the greeting has been spoken, and the state leaves initializing only as its
    first audio plays: with two calls at once "Connecting" stood for 10 s under the greeting."""
    if call.error or (call.ready and call.ready.done()) or call.agent_state != "initializing":
        return False
    return not any(line["role"] == "assistant" for line in lines)


@timed_fragment(run_every=0.5)
def _live_status(key: str, who: str) -> None:
    call = get_call(key)
    if call is None:
        last = st.session_state.get(_LAST_CALL)
        if last is not None and last.ended_because == SESSION_DELETED:
            st.rerun()  # the whole page: it says why, and the call goes on in a new session
        elif last is not None and last.error:
            # a call that failed is no longer live, so nothing below would show why (a LiveKit room that
            # could not be joined left the page with End call and nothing else)
            st.error(last.error, icon=":material/error:")
            st.caption("Press **End call**, then **Start call** to try again.")
        return
    _hand_over(call)
    _deleted_notice(call)
    session = f"call `{session_ref(call.session_id)}` · " if call.session_id else ""
    # the WebRTC connection lives in this page: another page or a reload ends the call, so say it before
    st.caption(f"{session}{call.pipeline} pipeline · you are `{who}` · another page or a reload ends the call")
    state_col, mic_col, out_col = st.columns([1, 2, 2], vertical_alignment="center")
    with state_col:
        _state_badge(call.agent_state)
    with mic_col:
        level = call.mic_level_dbfs
        st.progress(level_fraction(level), text=f":material/mic: Microphone {level:.0f} dBFS")
    with out_col:
        out_level = call.speaker_level_dbfs
        st.progress(level_fraction(out_level), text=f":material/volume_up: Agent {out_level:.0f} dBFS")
    st.caption(
        # seconds, as the audio out: "1976 frames" meant nothing to a visitor (a fresh-clone walkthrough)
        f"Audio in: {call.mic_seconds_received:.1f} s from your microphone · audio out: "
        f"{call.agent_audio_seconds_sent:.1f} s of agent speech sent"
    )
    if call.error:
        st.error(call.error, icon=":material/error:")


def _deleted_notice(call: VoiceCall) -> None:
    """The call goes on in a new session because the last one was deleted: say so until the visitor's first
    turn in it (as the Chat page does), then drop the notice."""
    ended = st.session_state.get(_ENDED)
    if not (ended and ended[1] == SESSION_DELETED):
        return
    if latest_answered_turn(call.events_since(0)[0]) is None:
        _ended_notice()
    else:
        st.session_state.pop(_ENDED, None)


# twice a second: an interim transcript of the user's words lives about a second before the next replaces it
@timed_fragment(run_every=0.5)
def _live_transcript(key: str) -> None:
    call = get_call(key)
    if call is None:
        return
    events, cursor = call.events_since(0)
    lines = live_transcript(events)
    typed = call.waiting_messages(cursor) + list(st.session_state.get(_OUTBOX) or [])
    with st.container(height=420, border=True, autoscroll=True):
        # drawn with the transcript from the same events, so it cannot stand beside the greeting (from the
        # status fragment it stood under the greeting's words for over 1.5 s on a busy machine)
        if _connecting(call, lines):
            st.caption(":material/hourglass_top: Connecting the agent (the first call loads the speech models)…")
        elif not lines and not typed:
            st.caption(
                "Say something — for example “My favorite color is teal”, then “What is my favorite "
                "color?”. Speaking while the agent talks interrupts it."
            )
        for line in lines:
            if line["role"] == "error":
                st.error(line["text"], icon=":material/error:")
                continue
            with st.chat_message(line["role"]):
                st.markdown(line["text"] if line["final"] else f"*{line['text']} …*")
        for text in typed:  # typed, not answered yet: shown from the moment it was sent
            with st.chat_message("user"):
                st.markdown(literal(text))


@timed_fragment(run_every=2.0)
def _live_turns(key: str) -> None:
    call = get_call(key)
    if call is None:
        return
    events, _ = call.events_since(0)
    turn = latest_answered_turn(events)
    st.markdown("#### :material/insights: What the agent did", anchors=False)
    if turn is None:
        st.caption(
            "Per turn: the tool calls, the memories and knowledge retrieved (vector rank, text rank, each "
            "branch's RRF contribution, fused score) and the timings, including end of speech → first "
            "audio."
        )
        return
    st.caption(f"Turn {turn.number}: “{literal(clip(turn.user_text or '', 90))}” · {turn.summary}")
    render_turn_details(turn, key=f"u_voice_turn{turn.number}")


@timed_fragment(run_every=2.0)
def _live_latency(key: str) -> None:
    """Refreshed like the turn beside it: drawn once with the page, it said "Appears after the first spoken
    turn." two answered turns later (found in a fresh-clone walkthrough)."""
    call = get_call(key)
    rows = per_turn_latency(call.events_since(0)[0]) if call is not None else []
    if rows:
        with st.container(key="u_voice_call_latency"):
            show_latency_table(rows, key="u_voice_call_latency_table")
    else:
        st.caption("Appears after the first spoken turn.")


def _ended_notice() -> None:
    ended = st.session_state.get(_ENDED)
    if not ended:
        return
    session_id, saved, pipeline, after = ended
    if saved == SESSION_DELETED:
        st.info(
            f"Call `{session_ref(session_id)}` ended: its session was deleted (Delete this session or Delete "
            "everything), and nothing of it is kept. A call going on below is a new session.",
            icon=":material/delete:",
        )
    elif saved == _NEVER_JOINED:
        st.warning(
            "The call ended without joining the LiveKit room, so no agent answered and there is no report. "
            "Check the message the call showed, then press Start call to try again.",
            icon=":material/call_end:",
        )
    elif saved == _NOTHING_SAID:  # no report and no turns: there is nothing to open on the Sessions page
        st.info(
            f"Call `{session_ref(session_id)}` ended before you said anything, so nothing of it is kept: a call "
            "shows on the Sessions page once you have said (or typed) something in it.",
            icon=":material/call_end:",
        )
    elif pipeline == "livekit":
        st.info(
            "You left the LiveKit room. The agent worker saves the session report when the room closes.",
            icon=":material/call_end:",
        )
        st.page_link("pages/sessions.py", label="Sessions", icon=":material/history:")
    elif saved:
        st.success(
            f"Call `{session_ref(session_id)}` ended; its report (transcript, tool calls, per-turn "
            "latencies) was saved.",
            icon=":material/task_alt:",
        )
        st.page_link("pages/sessions.py", label="Open it on the Sessions page", icon=":material/history:")
    else:
        st.warning(
            "The call ended, but its report could not be saved yet; it is kept on disk and saved "
            "automatically when the database is reachable.",
            icon=":material/save:",
        )
    show_after_session(after)  # what the extraction remembered once it ended (empty: nothing)


def _webrtc(key: str, ice: list[dict]):
    """The browser side of the call: the microphone goes to the call's input, its output to the speaker."""
    webrtc = components.webrtc()
    mic_sink = webrtc.create_audio_sink_track(
        callback=_mic_callback(key), key="u_voice_mic", on_ended=_ended_by_browser(key)
    )
    speaker = webrtc.create_audio_source_track(
        callback=_speaker_callback(key), key="u_voice_speaker", sample_rate=WEBRTC_SAMPLE_RATE
    )
    st.html(WEBRTC_FRAME_FIXES, unsafe_allow_javascript=True)
    keep_call_across_reruns(st.session_state.get(_WEBRTC), stayed_on_page=stayed_on_page())
    return webrtc.webrtc_streamer(
        key=_WEBRTC,
        mode=webrtc.WebRtcMode.SENDRECV,
        rtc_configuration={"iceServers": ice},
        media_stream_constraints={
            "audio": {"echoCancellation": True, "noiseSuppression": True, "autoGainControl": True},
            "video": False,
        },
        source_audio_track=speaker,
        sink_audio_track=mic_sink,
        audio_html_attrs={"autoPlay": True, "controls": False},
        translations={"start": "Start call", "stop": "End call", **MICROPHONE_MESSAGES},
    )


def _follow_browser(playing: bool, key: str, visitor) -> VoiceCall | None:
    """Start the call when the browser starts streaming, end it (saving its report) when it stops."""
    call = get_call(key)
    if playing and call is None:
        st.session_state.pop(_ENDED, None)
        last = st.session_state.get(_LAST_CALL)
        if last is not None and last.ended_because == SESSION_DELETED:  # deleted on a Sessions page meanwhile
            st.session_state[_ENDED] = (last.session_id, SESSION_DELETED, last.pipeline, [])
        with reported():
            call = open_call(key, visitor.verified)
            st.session_state[_LAST_CALL] = call
    elif not playing and st.session_state.get(_LAST_CALL) is not None:
        # Stop pressed, the connection dropped or the visitor left the page mid-call. The call is let go
        # only once its end is noted: the first run back on the page is often cut short by a rerun while it
        # waits for the report, and the next run ends it again (stop() is idempotent) and says so.
        _end(key, st.session_state[_LAST_CALL])
        st.session_state.pop(_LAST_CALL, None)
        call = None
    return call


def _end(key: str, last: VoiceCall) -> None:
    if last.pipeline == "livekit" and last.error:  # nothing to save: the room was never joined
        if end_call(key) is None:
            last.stop()
        st.session_state[_ENDED] = (last.session_id, _NEVER_JOINED, last.pipeline, [])
        return
    if last.ended_because == SESSION_DELETED:  # nothing to save: its session was deleted meanwhile
        if end_call(key) is None:
            last.stop()
        st.session_state[_ENDED] = (last.session_id, SESSION_DELETED, last.pipeline, [])
        return
    with st.spinner("Ending the call and saving its report…"):
        report = None
        try:
            future = end_call(key) or last.stop()
            report = future.result(timeout=chat_state.close_timeout_seconds())
        except Exception as exc:  # shown; a report that failed to save is kept on disk for a retry
            show_error(exc)
        saved = report is not None if last.kept else _NOTHING_SAID
        st.session_state[_ENDED] = (last.session_id, saved, last.pipeline, after_session_lines(report))


def _before_a_call(settings: Settings, playing: bool, ice: list[dict], *, microphone_blocked: bool) -> None:
    _ended_notice()
    if playing:
        return
    st.caption(
        ("" if microphone_blocked else "Press **Start call** and allow the microphone. ")
        + where_a_call_goes(settings, model_rows())
    )
    if not ice:
        st.caption(
            ":material/lan: No STUN/TURN servers are configured, which is right when the browser "
            "and the app share a machine or network; see docs/VOICE.md for remote use."
        )
    with st.expander("The call does not start?", icon=":material/mic_off:"):
        st.markdown(MICROPHONE_HELP)


def _during_a_call(call: VoiceCall, key: str, visitor) -> None:
    _hand_over(call)
    _live_status(key, visitor.short_id)
    left, right = st.columns([1, 1], gap="large")
    with left:
        _live_transcript(key)
        # answered aloud too; shown in the transcript at once
        st.chat_input("Type during the call…", key=_INPUT, max_chars=2000, on_submit=_typed)
        received = st.session_state.get(_RECEIVED, [])
        st.html(resend.script(received, input_key=_INPUT), unsafe_allow_javascript=True)
    with right:
        _live_turns(key)
        with st.expander("Latency of this call so far", icon=":material/timer:"):
            _live_latency(key)


def main() -> None:
    visitor = auth.current_visitor()
    settings = get_settings()
    page_header(
        "Voice",
        "Talk to the agent with your microphone. It hears you, remembers what you tell it and "
        "answers aloud; the panel shows what it retrieved and why.",
        icon=":material/mic:",
    )
    st.caption(_pipeline_text(settings))
    if not settings.livekit_configured:
        _prewarm_once()
    key = _call_key(visitor)
    if st.session_state.get(_CALL_KEY) not in (None, key):  # the identity changed: end the old call
        end_call(st.session_state[_CALL_KEY])
    st.session_state[_CALL_KEY] = key
    blocked = microphone_blocked_reason(st.context.url)
    if blocked:
        st.warning(blocked, icon=":material/mic_off:")
    ice = ice_servers(settings)
    ctx = _webrtc(key, ice)
    call = _follow_browser(ctx.state.playing, key, visitor)
    if call is None:
        _before_a_call(settings, ctx.state.playing, ice, microphone_blocked=blocked is not None)
    else:
        _during_a_call(call, key, visitor)


run_page(main)
