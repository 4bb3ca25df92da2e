"""The Memory Playground agent (livekit-agents): what ui/, pages/ and bench/ may use.

Everything in ``__all__`` is importable as ``from agent import name``; the rest
of the package is internal. Names load on first use, so ``import agent`` (or
``from agent import plugins``, which every process calls first, on its main
thread) stays cheap. Layout:

    prompts.py            every text the model reads
    events.py             the event contract (one TypedDict and one builder per kind); timings.py: a turn's
                          repeated timings kept one way
    event_bus.py          stamping events, and the sinks that carry them (in-process queue, LiveKit room)
    playground_agent.py   the livekit Agent and its tools; recall.py: the per-turn recall
    chat_format.py        the shape of every model request; llm_failures.py: one sentence per LLM failure
    model_factory.py      LLM / STT / TTS / VAD chosen from settings; plugins.py: livekit plugins at start
    session.py            one conversation: AgentSession + agent + events + report (session_events.py,
                          reports.py, extraction.py, sensitive.py)
    conversation.py       a conversation on the in-process runtime (runtime.py: its loop thread)
    brain/                the offline demo brain: facts, intents, replies (asked: is a memory the answer), llm.LLM
    voice/                audio I/O, local STT and TTS, the local call, the LiveKit bridge, the call registry
    worker.py, chat_cli.py, __main__.py   `python -m agent dev|start|console|chat`
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> the module that defines it (a module's own name: the module itself)
_EXPORTS = {
    # the in-process runtime and one conversation on it
    "get_runtime": "agent.runtime",
    "shutdown_runtime": "agent.runtime",
    "AgentRuntime": "agent.runtime",
    "Conversation": "agent.conversation",
    "TurnResult": "agent.conversation",
    "MAX_MESSAGE_LENGTH": "agent.conversation",
    "SESSION_DELETED": "agent.conversation",
    "APP_STOPPED": "agent.conversation",
    "STOPPED_MESSAGE": "agent.session",
    # the agent itself, for benchmarks that drive it directly
    "PlaygroundAgent": "agent.playground_agent",
    "PlaygroundSession": "agent.session",
    "EventBus": "agent.event_bus",
    "QueueSink": "agent.event_bus",
    "recall_block": "agent.chat_format",
    # the event contract
    "events": "agent.events",
    "Event": "agent.events",
    "TranscriptEvent": "agent.events",
    "ToolCallEvent": "agent.events",
    "RetrievalEvent": "agent.events",
    "StateEvent": "agent.events",
    "MetricEvent": "agent.events",
    "ErrorEvent": "agent.events",
    "keep_metric": "agent.timings",
    # models and plugins
    "plugins": "agent.plugins",
    "describe_models": "agent.model_factory",
    "ModelDescription": "agent.model_factory",
    "llm_wait_seconds": "agent.model_factory",
    # voice calls
    "VoiceCall": "agent.voice.calls",
    "open_call": "agent.voice.calls",
    "get_call": "agent.voice.calls",
    "end_call": "agent.voice.calls",
    "end_calls_of": "agent.voice.calls",
    "prewarm_voice": "agent.voice.local_call",
    # loading what the first visitor needs when the app's server starts
    "warmup": "agent.warmup",
    "per_turn_latency": "agent.voice.latency",
    "LocalWhisperSTT": "agent.voice.local_stt",
    "WHISPER_SAMPLE_RATE": "agent.voice.local_stt",
    "SPECULATE_AFTER_SECONDS": "agent.voice.local_stt",
    "REDECODE_BEAM_SIZE": "agent.voice.local_stt",
    "WEIGH_BELOW": "agent.voice.local_stt",
    "WhisperTranscript": "agent.voice.local_stt",
    "VAD_MIN_SILENCE": "agent.voice.local_call",
    "voice_thread_budget": "agent.voice.threads",
    "spoken_pieces_reused": "agent.voice.local_tts",
    "WEBRTC_SAMPLE_RATE": "agent.voice.audio",
    "WEBRTC_FRAME_SAMPLES": "agent.voice.audio",
    # session reports and the worker's check of a job's user (bench/security.py probes them)
    "save_report": "agent.reports",
    "flush_pending_reports": "agent.reports",
    "resolve_user_id": "agent.worker",
    "JobRefused": "agent.worker",
}
# names exported under another name than the one their module uses
_RENAMED = {
    "prewarm_voice": "prewarm",
    "save_report": "save",
    "flush_pending_reports": "flush_pending",
    "WhisperTranscript": "Transcript",
    "voice_thread_budget": "thread_budget",
}

__all__ = [
    "APP_STOPPED",
    "MAX_MESSAGE_LENGTH",
    "REDECODE_BEAM_SIZE",
    "SESSION_DELETED",
    "SPECULATE_AFTER_SECONDS",
    "STOPPED_MESSAGE",
    "VAD_MIN_SILENCE",
    "WEBRTC_FRAME_SAMPLES",
    "WEBRTC_SAMPLE_RATE",
    "WEIGH_BELOW",
    "WHISPER_SAMPLE_RATE",
    "AgentRuntime",
    "Conversation",
    "ErrorEvent",
    "Event",
    "EventBus",
    "JobRefused",
    "LocalWhisperSTT",
    "MetricEvent",
    "ModelDescription",
    "PlaygroundAgent",
    "PlaygroundSession",
    "QueueSink",
    "RetrievalEvent",
    "StateEvent",
    "ToolCallEvent",
    "TranscriptEvent",
    "TurnResult",
    "VoiceCall",
    "WhisperTranscript",
    "describe_models",
    "end_call",
    "end_calls_of",
    "events",
    "flush_pending_reports",
    "get_call",
    "get_runtime",
    "keep_metric",
    "llm_wait_seconds",
    "open_call",
    "per_turn_latency",
    "plugins",
    "prewarm_voice",
    "recall_block",
    "resolve_user_id",
    "save_report",
    "shutdown_runtime",
    "spoken_pieces_reused",
    "voice_thread_budget",
    "warmup",
]  # the keys of _EXPORTS (tests/agent/test_layout.py checks)


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'agent' has no attribute {name!r}")
    module = importlib.import_module(module_name)
    value = module if module_name.rsplit(".", 1)[1] == name else getattr(module, _RENAMED.get(name, name))
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:
    from agent import events, plugins, warmup
    from agent.chat_format import recall_block
    from agent.conversation import APP_STOPPED, MAX_MESSAGE_LENGTH, SESSION_DELETED, Conversation, TurnResult
    from agent.event_bus import EventBus, QueueSink
    from agent.events import (
        ErrorEvent,
        Event,
        MetricEvent,
        RetrievalEvent,
        StateEvent,
        ToolCallEvent,
        TranscriptEvent,
    )
    from agent.model_factory import ModelDescription, describe_models, llm_wait_seconds
    from agent.playground_agent import PlaygroundAgent
    from agent.reports import flush_pending as flush_pending_reports
    from agent.reports import save as save_report
    from agent.runtime import AgentRuntime, get_runtime, shutdown_runtime
    from agent.session import STOPPED_MESSAGE, PlaygroundSession
    from agent.timings import keep_metric
    from agent.voice.audio import WEBRTC_FRAME_SAMPLES, WEBRTC_SAMPLE_RATE
    from agent.voice.calls import VoiceCall, end_call, end_calls_of, get_call, open_call
    from agent.voice.latency import per_turn_latency
    from agent.voice.local_call import VAD_MIN_SILENCE
    from agent.voice.local_call import prewarm as prewarm_voice
    from agent.voice.local_stt import SPECULATE_AFTER_SECONDS, WEIGH_BELOW, WHISPER_SAMPLE_RATE, LocalWhisperSTT
    from agent.voice.local_stt import Transcript as WhisperTranscript
    from agent.voice.local_tts import spoken_pieces_reused
    from agent.worker import JobRefused, resolve_user_id
