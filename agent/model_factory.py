"""Which LLM, STT, TTS and VAD the agent uses, chosen once from settings.

=============================  =================================  ==========================================
settings                       LLM                                STT / TTS
=============================  =================================  ==========================================
LIVEKIT_URL + _API_KEY +       LiveKit Inference (``LLM_MODEL``,   LiveKit Inference (``STT_MODEL``,
_API_SECRET                    default openai/gpt-4.1-mini)        ``TTS_MODEL``)
OPENAI_API_KEY and/or          OpenAI-compatible endpoint          OpenAI STT/TTS when the key is for OpenAI
OPENAI_BASE_URL                (Ollama, vLLM, LM Studio, OpenAI)   itself (no base URL); else offline
nothing                        the offline demo brain              offline: faster-whisper tiny.en, Piper
=============================  =================================  ==========================================

VAD is always Silero (local). LiveKit Inference only works with LiveKit Cloud
credentials; a self-hosted ``livekit-server --dev`` has no inference gateway:
there set ``LLM_MODEL=offline`` (or OPENAI_*) and ``STT_MODEL=local``,
``TTS_MODEL=local`` to keep every model on this machine.

The offline STT/TTS adapters are agent/voice/local_stt.py and local_tts.py.
livekit plugins (openai, silero) are never imported here: they are registered
at process start (agent/plugins.py) and taken from there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx2
from livekit.agents import APIConnectOptions, inference
from livekit.agents.voice.agent_session import SessionConnectOptions

from agent.brain.llm import OfflineBrain
from agent.plugins import plugin
from agent.prompts import OFFLINE_BRAIN_HELP
from agent.voice.local_stt import LocalWhisperSTT
from agent.voice.local_tts import LocalPiperTTS
from core import ctranslate2_cpu

# The backend choice is made in core.config, because core.doctor needs it too.
from core.config import (
    DEFAULT_INFERENCE_LLM,
    DEFAULT_INFERENCE_STT,
    DEFAULT_INFERENCE_TTS,
    DEFAULT_OPENAI_LLM,
    DEFAULT_OPENAI_STT,
    DEFAULT_OPENAI_TTS,
    Backend,
    Settings,
    get_settings,
    llm_backend,
    shown_url,
    speech_backend,
)

OFFLINE_BRAIN_LABEL = "Offline demo brain (rule-based)"
OFFLINE_STT_LABEL = "faster-whisper tiny.en (local, {compute_type})"
OFFLINE_TTS_LABEL = "Piper joe-us voice (local)"
VAD_LABEL = "Silero VAD (local)"


@dataclass(frozen=True)
class ModelDescription:
    llm: str
    stt: str
    tts: str
    vad: str
    llm_backend: Backend
    speech_backend: Backend

    @property
    def offline_brain(self) -> bool:
        return self.llm_backend == "offline"

    @property
    def help(self) -> str | None:
        return OFFLINE_BRAIN_HELP if self.offline_brain else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "llm": self.llm,
            "stt": self.stt,
            "tts": self.tts,
            "vad": self.vad,
            "llm_backend": self.llm_backend,
            "speech_backend": self.speech_backend,
            "offline_brain": self.offline_brain,
            "help": self.help,
        }


def describe_models(settings: Settings | None = None) -> ModelDescription:
    """Human-readable labels for the sidebar and reports; builds nothing."""
    settings = settings or get_settings()
    backend = llm_backend(settings)
    speech, tts_speech = speech_backend(settings, "stt"), speech_backend(settings, "tts")
    if backend == "livekit":
        llm_label = f"LiveKit Inference: {settings.llm_model or DEFAULT_INFERENCE_LLM}"
    elif backend == "openai":
        where = shown_url(settings.openai_base_url) if settings.openai_base_url else "api.openai.com"
        llm_label = f"OpenAI-compatible: {settings.llm_model or DEFAULT_OPENAI_LLM} at {where}"
    else:
        llm_label = OFFLINE_BRAIN_LABEL
    whisper_weights = ctranslate2_cpu.whisper_compute_type(settings.stt_compute_type)
    stt_label = {
        "livekit": f"LiveKit Inference: {settings.stt_model or DEFAULT_INFERENCE_STT}",
        "openai": f"OpenAI: {settings.stt_model or DEFAULT_OPENAI_STT}",
        "offline": OFFLINE_STT_LABEL.format(compute_type=whisper_weights),
    }[speech]
    tts_label = {
        "livekit": f"LiveKit Inference: {settings.tts_model or DEFAULT_INFERENCE_TTS}",
        "openai": f"OpenAI: {settings.tts_model or DEFAULT_OPENAI_TTS}",
        "offline": OFFLINE_TTS_LABEL,
    }[tts_speech]
    return ModelDescription(
        llm=llm_label, stt=stt_label, tts=tts_label, vad=VAD_LABEL, llm_backend=backend, speech_backend=speech
    )


def is_openai_endpoint(settings: Settings | None = None) -> bool:
    """True when the OpenAI-compatible LLM is OpenAI's own API (no base URL, or api.openai.com)."""
    settings = settings or get_settings()
    if not settings.openai_base_url:
        return True
    return (urlsplit(settings.openai_base_url).hostname or "").lower() == "api.openai.com"


def llm_location(settings: Settings | None = None) -> str:
    """Where the LLM is, as people configure it: the base URL, api.openai.com, or LiveKit Inference."""
    settings = settings or get_settings()
    backend = llm_backend(settings)
    if backend == "livekit":
        return "LiveKit Inference"
    if backend == "openai":
        return shown_url(settings.openai_base_url or "https://api.openai.com/v1")
    return "the offline demo brain"


def llm_connect_options(settings: Settings | None = None) -> APIConnectOptions:
    """Timeout and retries of every LLM request (LLM_TIMEOUT_SECONDS, LLM_MAX_RETRIES)."""
    settings = settings or get_settings()
    return APIConnectOptions(
        max_retry=settings.llm_max_retries, retry_interval=1.0, timeout=settings.llm_timeout_seconds
    )


def session_connect_options(settings: Settings | None = None) -> SessionConnectOptions:
    """AgentSession connect options: our LLM timeout and retries, and a session that never closes
    itself over model errors (livekit's default closes it after 3 in a row; here each failed turn
    is reported and the person can try again or end the session)."""
    return SessionConnectOptions(llm_conn_options=llm_connect_options(settings), max_unrecoverable_errors=1_000_000)


def llm_wait_seconds(settings: Settings | None = None, *, calls: int = 2) -> float:
    """How long a caller should wait for a turn of `calls` model calls before giving up on it."""
    settings = settings or get_settings()
    per_call = settings.llm_timeout_seconds * (settings.llm_max_retries + 1) + settings.llm_max_retries
    return max(120.0, calls * per_call + 30.0)


def build_llm(settings: Settings | None = None):
    settings = settings or get_settings()
    backend = llm_backend(settings)
    if backend == "livekit":
        return inference.LLM(
            model=settings.llm_model or DEFAULT_INFERENCE_LLM,
            api_key=settings.livekit_api_key,
            api_secret=settings.livekit_api_secret,
        )
    if backend == "openai":
        openai = plugin("openai")
        kwargs: dict[str, Any] = {"model": settings.llm_model or DEFAULT_OPENAI_LLM}
        if settings.openai_base_url:
            kwargs["base_url"] = settings.openai_base_url
        # local servers (Ollama, LM Studio) ignore the key but the client insists on one
        kwargs["api_key"] = settings.openai_api_key or "not-needed"
        # the client's own timeout (model listing); each completion uses llm_connect_options()
        kwargs["timeout"] = httpx2.Timeout(settings.llm_timeout_seconds)
        # strict tool schemas are OpenAI's feature; other servers reject or misread the field
        return openai.LLM(**kwargs, _strict_tool_schema=is_openai_endpoint(settings))
    return OfflineBrain()


def build_stt(settings: Settings | None = None, *, vad=None):
    """The configured STT. The local one streams (speculative and interim decodes) when given `vad`."""
    settings = settings or get_settings()
    backend = speech_backend(settings, "stt")
    if backend == "livekit":
        return inference.STT(
            model=settings.stt_model or DEFAULT_INFERENCE_STT,
            api_key=settings.livekit_api_key,
            api_secret=settings.livekit_api_secret,
        )
    if backend == "openai":
        return plugin("openai").STT(model=settings.stt_model or DEFAULT_OPENAI_STT, api_key=settings.openai_api_key)
    return LocalWhisperSTT(vad=vad, beam_size=settings.stt_beam_size, redecode_below=settings.stt_redecode_below)


def build_tts(settings: Settings | None = None):
    settings = settings or get_settings()
    backend = speech_backend(settings, "tts")
    if backend == "livekit":
        return inference.TTS(
            model=settings.tts_model or DEFAULT_INFERENCE_TTS,
            api_key=settings.livekit_api_key,
            api_secret=settings.livekit_api_secret,
        )
    if backend == "openai":
        return plugin("openai").TTS(model=settings.tts_model or DEFAULT_OPENAI_TTS, api_key=settings.openai_api_key)
    return LocalPiperTTS()


def build_vad():
    return plugin("silero").VAD.load()
