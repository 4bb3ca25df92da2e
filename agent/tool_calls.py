"""Running one tool's work in core: off the event loop, published on the bus, core's errors as the model
should read them (agent/playground_agent.py's tools all go through `call_core`)."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from livekit.agents import ToolError

from agent import events
from agent.event_bus import EventBus
from core.errors import DatabaseUnavailable, EmbeddingUnavailable, InvalidInput, NotFound

log = logging.getLogger(__name__)


class _ToolErrorsAreAnswers(logging.Filter):
    """livekit logs a bare "ToolError while executing tool" warning for every ToolError, and ours are answers
    the model is meant to read ("Nothing is remembered under 'dog_name'"; an outage is logged by `call_core`
    itself): a visitor's wrong guesses filled the server log with warnings naming nothing. Kept at DEBUG,
    with the tool's name."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != "ToolError while executing tool":
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        record.msg, record.args = (
            "tool %s answered with a ToolError (the model reads why)",
            (getattr(record, "function", "?"),),
        )
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


logging.getLogger("livekit.agents").addFilter(_ToolErrorsAreAnswers())


async def call_core(
    bus: EventBus,
    name: str,
    arguments: dict[str, Any],
    work: Callable[[], Any],
    render: Callable[[Any], dict[str, Any]],
) -> tuple[Any, str]:
    """Run blocking core work in a thread; publish the call; map core errors to ToolError."""
    started = time.perf_counter()
    error: str | None = "cancelled"  # replaced below unless the call is cancelled mid-way
    output: str | None = None
    try:
        result = await asyncio.to_thread(work)
        output = json.dumps(render(result), ensure_ascii=False, default=str)
        error = None
        return result, output
    except (NotFound, InvalidInput) as exc:
        error = str(exc)
        raise ToolError(error) from None
    except (DatabaseUnavailable, EmbeddingUnavailable) as exc:
        log.warning("tool %s failed: %s", name, exc)
        error = "The memory service is unavailable right now; please try again in a moment."
        raise ToolError(error) from None
    except Exception:
        error = "An internal error occurred."
        log.exception("tool %s failed", name)
        raise
    finally:
        bus.emit(
            events.tool_call(
                name, arguments, output=output, error=error, duration_ms=(time.perf_counter() - started) * 1000
            )
        )
