"""livekit's session events turned into ours (agent/events.py): transcripts, states, metrics, turn ends, errors."""

from __future__ import annotations

from livekit.agents import AgentSession

from agent import events, llm_failures
from agent.event_bus import EventBus
from agent.prompts import LLM_FAILED_SPOKEN

# message-level metrics (livekit's MetricsReport) -> our metric names, in ms
_USER_METRICS = {"end_of_turn_delay": "eou_delay_ms", "transcription_delay": "transcription_delay_ms"}
_ASSISTANT_METRICS = {"llm_node_ttft": "llm_ttft_ms", "tts_node_ttfb": "tts_ttfb_ms", "e2e_latency": "e2e_ms"}
_SPEECH_MODELS = {"stt_error": "speech-to-text model (STT_MODEL)", "tts_error": "text-to-speech model (TTS_MODEL)"}


def publish_session_events(session: AgentSession, bus: EventBus) -> None:
    """Publish `session`'s events on `bus` from now on."""
    publisher = _Publisher(bus, session)
    session.on("conversation_item_added", publisher.item_added)
    session.on("user_input_transcribed", publisher.user_input_transcribed)
    session.on("agent_state_changed", publisher.agent_state_changed)
    session.on("user_state_changed", publisher.user_state_changed)
    session.on("speech_created", publisher.speech_created)
    # each model's own metrics: the session's "metrics_collected" forwards the same ones but is deprecated
    # (livekit-agents 1.8 logs a warning per subscription, one per conversation)
    for model in (session.stt, session.llm):
        if model is not None and hasattr(model, "on"):
            model.on("metrics_collected", publisher.model_metrics)
    session.on("error", publisher.error)
    session.on("function_tools_executed", publisher.function_tools_executed)


class _Publisher:
    def __init__(self, bus: EventBus, session: AgentSession) -> None:
        self.bus = bus
        self.session = session

    def item_added(self, ev) -> None:
        item = ev.item
        if getattr(item, "type", None) != "message" or item.role not in ("user", "assistant"):
            return
        text = (item.text_content or "").strip()
        if item.role == "user":
            self.bus.begin_user_turn(item.id, text)
            names = _USER_METRICS
        else:
            if text:
                interrupted = bool(getattr(item, "interrupted", False))
                self.bus.emit(events.transcript("assistant", text, final=True, interrupted=interrupted))
            names = _ASSISTANT_METRICS
        metrics = item.metrics or {}
        for key, name in names.items():
            value = metrics.get(key)
            if isinstance(value, int | float):
                self.bus.metric(name, value * 1000)

    def user_input_transcribed(self, ev) -> None:
        # speech-to-text segments; the committed user message arrives as a final transcript
        self.bus.emit(events.transcript("user", ev.transcript, final=False, stt_final=bool(ev.is_final)))

    def agent_state_changed(self, ev) -> None:
        self.bus.emit(events.state("agent", ev.new_state))

    def user_state_changed(self, ev) -> None:
        self.bus.emit(events.state("user", ev.new_state))

    def speech_created(self, ev) -> None:
        if ev.source != "generate_reply":
            return  # fillers and say() do not end a turn
        ev.speech_handle.add_done_callback(lambda _handle: self.bus.finish_turn())

    def model_metrics(self, metrics) -> None:
        kind = getattr(metrics, "type", "")
        if kind == "stt_metrics" and metrics.duration > 0:
            # speech is transcribed before its user message is committed (which starts the turn)
            self.bus.metric_for_next_turn("stt_ms", metrics.duration * 1000)
        elif kind == "llm_metrics":
            self.bus.metric("llm_duration_ms", metrics.duration * 1000)

    def error(self, ev) -> None:
        error = ev.error
        if getattr(error, "recoverable", False):
            return  # a failed attempt that livekit retries (LLM_MAX_RETRIES); only the outcome counts
        cause = getattr(error, "error", error)
        kind = getattr(error, "type", "")
        if kind == "llm_error":
            self.bus.emit(
                events.error(
                    llm_failures.describe(cause), where="llm", kind=llm_failures.kind(cause), recoverable=False
                )
            )
            self._say_the_model_failed()
            return
        what = _SPEECH_MODELS.get(kind, type(ev.source).__name__)
        self.bus.emit(
            events.error(
                f"The {what} failed ({type(cause).__name__}): check its settings and try again.",
                where=kind.removesuffix("_error") or type(ev.source).__name__,
                recoverable=False,
            )
        )

    def _say_the_model_failed(self) -> None:
        """In a voice call, say so aloud: the turn has no answer, and the call went silent. Not added to the
        model's context (it is about the call, not the conversation); its final transcript is ours, so the
        page closes the line the spoken words opened (the turn log leaves it out: NOT_CONVERSATION)."""
        if self.session.output.audio is None:  # a text chat: the page shows the error where the answer would be
            return
        try:
            spoken = self.session.say(LLM_FAILED_SPOKEN, add_to_chat_ctx=False)
        except RuntimeError:  # the session is closing
            return
        spoken.add_done_callback(lambda _handle: self.bus.emit(events.transcript("assistant", LLM_FAILED_SPOKEN)))

    def function_tools_executed(self, ev) -> None:
        # tool calls the model got wrong never reach our tools (livekit answers them with an error)
        for call, output in zip(ev.function_calls, ev.function_call_outputs, strict=False):
            said = (output.output or "") if output is not None and output.is_error else ""
            unknown = said.startswith("Unknown function:")
            if not (unknown or said.startswith("Error parsing arguments for")):
                continue
            self.bus.emit(
                events.tool_call(call.name, {"raw": call.arguments}, output=None, error=said, duration_ms=0.0)
            )
            self.bus.emit(
                events.error(
                    llm_failures.tool_call_problem(call.name, unknown=unknown),
                    where="llm",
                    kind="unknown_tool" if unknown else "tool_arguments",
                    recoverable=True,
                )
            )
