"""One clear sentence for each way the LLM can fail: what failed, and which setting to check.

The chat page, the voice page, the CLI and the session report all show the
same sentence. :func:`describe` reads the exception chain the openai plugin
and livekit build (livekit's ``APIStatusError`` / ``APITimeoutError`` /
``APIConnectionError``, wrapping openai's and httpx's), so it works whichever
layer raised. Tool-call problems the model causes (arguments that are not
JSON, a tool that does not exist) are described by :func:`tool_call_problem`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from livekit.agents import APIError

from agent.model_factory import llm_location
from core.config import Settings, base_url_fix, get_settings, llm_backend
from core.doctor import LIVEKIT_INFERENCE_REACH_FIX


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def _status(exc: BaseException) -> int | None:
    for item in _chain(exc):
        code = getattr(item, "status_code", None)
        if isinstance(code, int) and code > 0:
            return code
    return None


def _server_message(exc: BaseException) -> str | None:
    for item in _chain(exc):
        body = getattr(item, "body", None)
        if isinstance(body, dict):
            message = body.get("message") or (body.get("error") or {}).get("message")
            if message:
                return str(message).strip().rstrip(".")
    return None


def kind(exc: BaseException) -> str:
    """unreachable | auth | model | rate_limit | timeout | cut | bad_request | server_error | other"""
    status = _status(exc)
    if status in (401, 403):
        return "auth"
    if status == 404:
        return "model"
    if status == 429:
        return "rate_limit"
    if status is not None and 400 <= status < 500:
        return "bad_request"
    if status is not None and status >= 500:
        return "server_error"
    names = set().union(*(_names(item) for item in _chain(exc)))
    if names & {"TimeoutException", "APITimeoutError", "TimeoutError", "ReadTimeout", "ConnectTimeout"}:
        return "timeout"
    if names & {"RemoteProtocolError", "ReadError", "IncompleteRead", "ChunkedEncodingError"}:
        return "cut"
    if names & {"ConnectError", "ConnectionRefusedError", "ConnectionError", "APIConnectionError", "gaierror"}:
        return "unreachable"
    return "other"


def describe(exc: BaseException, settings: Settings | None = None) -> str:
    """The sentence to show for a failed model call."""
    settings = settings or get_settings()
    where = llm_location(settings)
    livekit = llm_backend(settings) == "livekit"
    key = "LIVEKIT_API_KEY and LIVEKIT_API_SECRET" if livekit else "OPENAI_API_KEY"
    url = "LIVEKIT_URL" if livekit else "OPENAI_BASE_URL"
    model = settings.llm_model or "the default model"
    status = _status(exc)
    failure = kind(exc)
    if failure == "auth":
        return f"The LLM at {where} refused the API key ({status}): check {key}."
    if failure == "model":
        return f"The LLM at {where} has no model named '{model}' (404): check LLM_MODEL."
    if failure == "rate_limit":
        return (
            f"The LLM at {where} is rate-limiting requests (429): wait a moment and try again, "
            f"or check the limits of the account behind {key}."
        )
    if failure == "bad_request":
        said = _server_message(exc)
        detail = f"{status}: {said}" if said else str(status)
        return f"The LLM at {where} rejected the request ({detail}): check that LLM_MODEL supports tool calling."
    if failure == "server_error":
        return f"The LLM at {where} failed with a server error ({status}): check the server's log."
    if failure == "timeout":
        return (
            f"The LLM at {where} did not answer within {settings.llm_timeout_seconds:g} s: check that the "
            "server is running and the model is loaded, or raise LLM_TIMEOUT_SECONDS."
        )
    if failure == "cut":
        return (
            f"The LLM at {where} stopped in the middle of its answer: try again, and check the server's "
            "log if it keeps happening."
        )
    if failure in ("unreachable", "other") and not livekit and (fix := base_url_fix(settings.openai_base_url)):
        return f"The LLM at {where} could not be reached: {fix}."
    if failure == "unreachable" and livekit:  # the gateway is LiveKit Cloud's, not the server at LIVEKIT_URL
        return f"The LLM at {where} could not be reached: {LIVEKIT_INFERENCE_REACH_FIX}."
    if failure == "unreachable":
        return f"The LLM at {where} could not be reached: check {url} and that the server is running."
    return f"The LLM at {where} failed ({type(exc).__name__}): check {url}, {key} and LLM_MODEL."


def tool_call_problem(name: str, *, unknown: bool) -> str:
    """The sentence for a tool call the model got wrong (the call is skipped and the model told so)."""
    if unknown:
        what = f"asked for a tool that does not exist ({name})"
    else:
        what = f"called {name} with arguments that are not valid JSON"
    return (
        f"The LLM {what}, so that call was skipped: try again, or use a model that supports tool calling (LLM_MODEL)."
    )


class _ModelFailuresInOneLine(logging.Filter):
    """livekit logs a failed model call with its whole exception chain ("Error in _llm_inference_task": the
    openai client's, httpx's and httpcore's tracebacks, about 120 lines a turn), while the session logs the
    sentence `describe` gives. Kept, as one line: livekit's message and the error's own."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, APIError):
            record.msg, record.args = f"{record.getMessage()}: {type(error).__name__}: {error}", None
            record.exc_info, record.exc_text = None, None
        return True


logging.getLogger("livekit.agents").addFilter(_ModelFailuresInOneLine())
