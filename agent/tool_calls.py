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
