"""What the Voice page shows of a call, in plain Python (no Streamlit): the live transcript, meter
levels, the WebRTC ICE servers from the settings, and whether the browser will give the page a microphone."""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import urlsplit

from agent import Event, events
from core.config import Settings, get_settings
from ui.turns import Turn, group_turns

log = logging.getLogger("memory_playground.ui.voice")


def ice_servers(settings: Settings | None = None) -> list[dict[str, Any]]:
    """STUN/TURN servers for the browser <-> app WebRTC connection, from VOICE_ICE_SERVERS.

    Empty by default: browser and app on one machine (or LAN) connect directly.
    For remote use set it to a JSON list of RTCIceServer objects, e.g.
    `[{"urls": ["stun:stun.l.google.com:19302"]},
      {"urls": ["turn:turn.example.com:3478"], "username": "u", "credential": "p"}]`.
    A value that is not valid JSON, or entries without "urls", are logged and left out.
    """
    raw = (settings or get_settings()).voice_ice_servers
    if not raw or not raw.strip():
        return []
    try:
        servers = json.loads(raw)
    except json.JSONDecodeError as exc:
        log.warning("VOICE_ICE_SERVERS is not valid JSON (%s); using no ICE servers", exc.msg)
        return []
    if isinstance(servers, dict):
        servers = [servers]
    if not isinstance(servers, list):
        log.warning("VOICE_ICE_SERVERS is not a list of RTCIceServer objects; using no ICE servers")
        return []
    valid = [s for s in servers if isinstance(s, dict) and s.get("urls")]
    if len(valid) != len(servers):
        log.warning("VOICE_ICE_SERVERS: ignoring entries without 'urls'")
    return valid


# Hosts a browser treats as a secure context over plain http (the W3C "potentially trustworthy" origins).
_LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1"}

# What the WebRTC component says in its device form when the browser refuses it the microphone
# (its start button shows the browser's own error name; MICROPHONE_HELP explains those).
MICROPHONE_MESSAGES = {
    "media_api_not_available": "This browser gives no page a microphone over plain http from another "
    "machine: open the app on https, or at http://localhost on the machine that runs it.",
    "device_ask_permission": "Allow the microphone when the browser asks.",
    "device_access_denied": "The microphone is blocked for this site: allow it in the address bar "
    "(the icon left of the address) and press Start call again.",
    "device_not_available": "No microphone was found: connect one and press Start call again.",
}
_NO_MIC_NEEDED = "The Chat page works without a microphone: it is the same agent, by text."
# What the browser's refusals at Start call mean, as (headline, what to do): the WebRTC component shows an
# error as "name: message", and the browser's own ("NotAllowedError: Permission denied") told a visitor
# neither what happened nor what to do. WEBRTC_FRAME_FIXES rethrows these under the app's words.
MICROPHONE_ERRORS = {
    "NotAllowedError": (
        "Your browser blocked the microphone",
        "allow it for this site from the icon left of the address (site settings, Microphone: Allow), then "
        f"press Start call again. {_NO_MIC_NEEDED}",
    ),
    "NotFoundError": (
        "No microphone found",
        "the browser sees no microphone on this device. Connect one (or pick another with Select device) "
        f"and press Start call again. {_NO_MIC_NEEDED}",
    ),
    "NotReadableError": (
        "The microphone could not be opened",
        "another program or tab is probably using it, or the system does not let the browser use it. Close "
        f"that program (or check the system's privacy settings) and press Start call again. {_NO_MIC_NEEDED}",
    ),
}
MICROPHONE_HELP = (
    "\n".join(f"- **{headline}** ({name}): {todo}" for name, (headline, todo) in MICROPHONE_ERRORS.items())
    + "\n- **navigator.mediaDevices is undefined**: the page is served over plain http from another machine; "
    "browsers give a microphone only on https or on localhost."
)


def microphone_blocked_reason(page_url: str | None) -> str | None:
    """Why a browser will refuse this page the microphone whatever the visitor allows, or None.

    Browsers expose getUserMedia only in a secure context: https, or http on a loopback host. The app
    opened over http by a LAN address (a demo on a phone) is neither, and the WebRTC component then only
    says "navigator.mediaDevices is undefined"."""
    if not page_url:
        return None
    parts = urlsplit(page_url)
    host = (parts.hostname or "").lower()
    if parts.scheme != "http" or host in _LOOPBACK_HOSTS or host.endswith(".localhost") or host.startswith("127."):
        return None
    port = f":{parts.port}" if parts.port else ""
    return (
        f"Your browser will not give this page a microphone: it is served over plain http from {host}, "
        "and browsers allow the microphone only on https or on localhost. Open "
        f"http://localhost{port} on the machine that runs the app, or serve the app over https "
        '(docs/VOICE.md, "Using it"). The Chat page works without a microphone.'
    )


def live_transcript(call_events: list[Event]) -> list[dict[str, Any]]:
    """Transcript lines for the page, interim text included, and errors (role "error") where they happened.

    Local calls: a non-final transcript opens (or updates) the role's open line and
    the final one replaces it. LiveKit calls: lines are the `lk.transcription`
    segments (the worker's own transcript events would repeat them).
    """
    from_room = any(e.get("origin") == events.ORIGIN_TRANSCRIPTION for e in call_events)
    lines: list[dict[str, Any]] = []
    open_line: dict[str, dict[str, Any]] = {}  # role -> its interim line
    by_segment: dict[str, dict[str, Any]] = {}
    for event in call_events:
        if event["type"] == "error":
            # a failed model call (or a tool call the model got wrong): shown in the conversation
            lines.append({"role": "error", "turn": event["turn"], "text": event["message"], "final": True})
            continue
        if event["type"] != "transcript" or not event["text"].strip():
            continue
        if from_room:
            if event.get("origin") != events.ORIGIN_TRANSCRIPTION:
                continue
            line = by_segment.get(event.get("segment_id"))
            if line is None:
                line = by_segment[event.get("segment_id")] = {"role": event["role"], "turn": event["turn"]}
                lines.append(line)
            line.update(text=event["text"], final=event["final"])
            continue
        role = event["role"]
        line = open_line.get(role)
        if line is None:
            line = {"role": role, "turn": event["turn"]}
            lines.append(line)
        line.update(text=event["text"], final=event["final"], turn=event["turn"])
        if event["final"]:
            open_line.pop(role, None)
        else:
            open_line[role] = line
    return lines


def latest_answered_turn(call_events: list[Event]) -> Turn | None:
    """The turn the retrieval panel shows: the latest one whose user words are committed. The next turn's
    first events (interim transcripts, its speech-to-text time) arrive while the user is still speaking,
    and showing that empty turn would blank the panel mid-sentence."""
    turns = [t for t in group_turns(call_events) if t.number > 0 and t.user_text]
    return turns[-1] if turns else None


def level_fraction(level_dbfs: float, floor: float = -60.0) -> float:
    """dBFS -> 0..1 for a meter (the floor and below show as empty)."""
    if level_dbfs <= floor:
        return 0.0
    return min(1.0, (level_dbfs - floor) / -floor)


def keep_call_across_reruns(webrtc_context: Any, *, stayed_on_page: bool) -> None:
    """Stop streamlit-webrtc from ending a live call between two runs of this page.

    streamlit-webrtc (0.79) resets its context, stopping the call, when Streamlit's run count has
    moved more than one past the run that last drew the widget: its sign that the visitor went to
    another page and came back, with a fresh widget in the browser. Streamlit counts a run when the
    message that it finished is sent, on the server's event loop, after the run; under load, or with
    two runs overlapping (a rerun asked for while a run ends), the next run can start before the
    count moves, and the run after it sees a jump of two although this page drew the widget every
    time: the likely cause of calls that, in full test runs under load, never came up or ended the
    moment a message was typed. When the run before this one ran this page, there was no other page:
    skip the check (the widget's stop branch still ends the call when the browser stops it). Coming
    back from another page, the check stays."""
    if stayed_on_page and webrtc_context is not None and hasattr(webrtc_context, "_last_rendered_run_count"):
        webrtc_context._last_rendered_run_count = None


# Three fixes inside streamlit-webrtc's iframe (same origin), applied by a sweep over its frames (the Voice
# page puts the script in the page):
# - The browser's refusal of the microphone at Start call (NotAllowedError, NotFoundError, NotReadableError)
#   is rethrown in the app's words (MICROPHONE_ERRORS), which the component shows under Start call.
# - It draws a video placeholder (a grey box with a screen icon) above its buttons until the call's output
#   stream arrives, even with video off: a style rule hides it and the iframe is fitted to what is left.
# - It ends the call the moment the connection reports "disconnected", a state ICE leaves by itself once
#   packets flow again: a few seconds without packets (Wi-Fi, a busy machine) ended the call, and with it
#   a message typed during it. The page's listener hears "disconnected" only if the connection is still
#   disconnected DISCONNECT_GRACE_MS later; "failed" and "closed" still end the call at once. Every state
#   change is noted in the frame's `__mpConnectionStates` (a failing test prints it).
DISCONNECT_GRACE_MS = 15_000
WEBRTC_FRAME_FIXES = """<script>
(() => {
  const rule = '.MuiPaper-root:has([data-testid="VideoLabelIcon"]) { display: none !important; }';
  const audioOnly = (frame, doc) => {
    if (!doc.getElementById('mp-audio-only')) {
      const style = doc.createElement('style');
      style.id = 'mp-audio-only';
      style.textContent = rule;
      doc.head.appendChild(style);
    }
    const height = Math.ceil(doc.body.scrollHeight);
    if (height > 0 && Math.abs(frame.getBoundingClientRect().height - height) > 1) frame.height = String(height);
  };
  const rideOutDisconnects = (win) => {
    const proto = win.RTCPeerConnection && win.RTCPeerConnection.prototype;
    if (!proto || proto.mpPatient) return;
    proto.mpPatient = true;
    const states = win.__mpConnectionStates = [];
    const add = proto.addEventListener;
    proto.addEventListener = function (type, listener, options) {
      if (type !== 'connectionstatechange' || typeof listener !== 'function') {
        return add.call(this, type, listener, options);
      }
      const pc = this;
      const patient = function (event) {
        states.push({state: pc.connectionState, at: Date.now()});
        if (pc.connectionState !== 'disconnected') return listener.call(pc, event);
        win.setTimeout(() => { if (pc.connectionState === 'disconnected') listener.call(pc, event); }, GRACE_MS);
      };
      return add.call(this, type, patient, options);
    };
  };
  const explainMicrophoneErrors = (win) => {
    const devices = win.navigator.mediaDevices;
    if (!devices || !devices.getUserMedia || devices.mpExplained) return;
    devices.mpExplained = true;
    const getUserMedia = devices.getUserMedia.bind(devices);
    devices.getUserMedia = (constraints) => getUserMedia(constraints).catch((error) => {
      const words = MIC_ERRORS[error && error.name];
      if (!words) throw error;  // OverconstrainedError and others: the component handles or shows them
      const explained = new win.Error(words[1]);
      explained.name = words[0];
      explained.cause = error;
      throw explained;
    });
  };
  const fix = (frame) => {
    const doc = frame.contentDocument;
    if (!doc || !doc.body) return;
    rideOutDisconnects(frame.contentWindow);
    explainMicrophoneErrors(frame.contentWindow);
    audioOnly(frame, doc);
  };
  const sweep = () => parent.document
    .querySelectorAll('iframe[title="streamlit_webrtc.component.webrtc_streamer"]')
    .forEach(fix);
  const host = parent.window;
  if (!host.mpWebrtcFixes) host.mpWebrtcFixes = host.setInterval(sweep, 200);
  sweep();
})();
</script>""".replace("GRACE_MS", str(DISCONNECT_GRACE_MS)).replace("MIC_ERRORS", json.dumps(MICROPHONE_ERRORS))


def where_a_call_goes(settings, models: list[dict[str, Any]]) -> str:
    """What leaves this machine in a call, from the models configured (`ui.sidebar.model_rows`): the Voice page's
    privacy statement must be true whatever is configured."""
    if settings.livekit_configured:
        return "Your audio goes to the LiveKit room; the agent worker joins it."
    rows = {row["role"]: row for row in models}
    stt, llm, tts = rows["STT"], rows["LLM"], rows["TTS"]
    if stt["offline"] and llm["offline"] and tts["offline"]:
        return "Audio stays on this machine: speech recognition, the agent and the voice all run locally."
    return (
        "Where a call goes: "
        + ("speech recognition runs on this machine" if stt["offline"] else f"your audio goes to {stt['label']}")
        + ("; the agent runs here" if llm["offline"] else f"; what you say goes to {llm['label']}")
        + ("; its voice is made here." if tts["offline"] else f"; its voice is made by {tts['label']}.")
    )
