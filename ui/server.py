"""What the app's server does when it starts, before any visitor: the lifespan of the ``st.App``
in ``streamlit_app.py`` (Streamlit's public ASGI entry point, run by ``streamlit run`` and ``make run``).

Streamlit runs the lifespan on the process's main thread, inside the server's event loop, before the
server accepts a connection. There it registers the livekit plugins (livekit registers plugins only
on the main thread; see agent/plugins.py) and starts the warm-up (agent/warmup.py), which loads the
database, the embedding model, the agent and the voice models in the background, so the first
visitor's first reply does not wait for them. When the server stops, it saves the open
conversations' reports and lets go of the embedded database.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from agent import plugins, shutdown_runtime, warmup
from core import db

log = logging.getLogger("memory_playground.ui.server")


@asynccontextmanager
async def lifespan(app: Any) -> AsyncIterator[None]:
    plugins.register()
    warmup.start()
    log.info("warming up in the background: %s", ", ".join(part.label for part in warmup.current().status()))
    yield
    await asyncio.to_thread(_stop)


def _stop() -> None:
    """What the process does at exit, done here: uvicorn ends the process with the signal it caught
    (SIGTERM, Ctrl+C) right after this shutdown, and atexit handlers never run then."""
    shutdown_runtime()  # every open conversation is closed and its report saved
    db.stop_embedded()  # the embedded database stops when no other process uses it
