"""What the app's server does when it starts, before any visitor: the lifespan of the ``st.App``
in ``streamlit_app.py`` (Streamlit's public ASGI entry point, run by ``streamlit run`` and ``make run``).

Streamlit runs the lifespan on the process's main thread, inside the server's event loop, before the
server accepts a connection. There it registers the livekit plugins (livekit registers plugins only
on the main thread; see agent/plugins.py) and starts the warm-up (agent/warmup.py), which loads the
database, the embedding model, the agent and the voice models in the background, so the first
visitor's first reply does not wait for them. It also starts the maintenance job's schedule
(core.maintenance, every MAINTENANCE_INTERVAL_HOURS). When the server stops, it saves the open
conversations' reports and lets go of the embedded database.

``GET /api/warmup`` says how far the warm-up is (JSON: done, seconds, and each part's state), for a
readiness probe and for the benchmark of the first visit.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from agent import plugins, shutdown_runtime, warmup
from core import db, maintenance, memory_changes
from core.config import check_settings
from core.errors import PlaygroundError

log = logging.getLogger("memory_playground.ui.server")


# Imported here, on the main thread before any other thread runs: narwhals' modules import each other in a
# cycle, and two threads importing it at once (a page importing altair, the warm-up thread's model loading
# importing scikit-learn) made Python raise _DeadlockError in one of them (seen in a CI run).
IMPORTED_AT_START = ("narwhals.stable.v1", "narwhals.stable.v2")


def exit_on_bad_settings() -> None:
    """A setting that does not parse stops the server with one line naming it, as `make run` does,
    before Streamlit starts (and before pydantic's traceback could reach the terminal)."""
    try:
        check_settings()
    except PlaygroundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


@asynccontextmanager
async def lifespan(app: Any) -> AsyncIterator[None]:
    plugins.register()
    for module in IMPORTED_AT_START:
        importlib.import_module(module)
    warmup.start()
    log.info("warming up in the background: %s", ", ".join(part.label for part in warmup.current().status()))
    # the maintenance job (idle anonymous users, heavy users' vector indexes) again every MAINTENANCE_INTERVAL_HOURS
    schedule = maintenance.start_schedule()
    yield
    await asyncio.to_thread(_stop, schedule)


def _stop(schedule: maintenance.Schedule | None = None) -> None:
    """What the process does at exit, done here: uvicorn ends the process with the signal it caught
    (SIGTERM, Ctrl+C) right after this shutdown, and atexit handlers never run then."""
    if schedule is not None:
        schedule.stop()  # a run in progress finishes before the database goes
    shutdown_runtime()  # every open conversation is closed and its report saved
    # before the database goes: its listener warned, at every stop, that the server closed its connection
    memory_changes.stop_following()
    db.stop_embedded()  # the embedded database stops when no other process uses it


async def warmup_status(request: Request) -> JSONResponse:
    warming = warmup.current()
    if warming is None:
        return JSONResponse({"done": False, "seconds": None, "parts": []})
    finished = warming.finished_at
    return JSONResponse(
        {
            "done": warming.done,
            "seconds": None if finished is None else round(finished - warming.started_at, 2),
            "parts": [
                {"name": p.name, "label": p.label, "state": p.state, "seconds": p.seconds, "error": p.error}
                for p in warming.status()
            ],
        }
    )


routes = [Route("/api/warmup", warmup_status)]
