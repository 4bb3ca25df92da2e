"""The Streamlit component libraries (the WebRTC call), imported through this one module.

A component library declares its component when it is imported, and Streamlit's ``declare_component``
finds the library's module with ``inspect.getmodule``, whose caches are not thread-safe: while another
thread fills them (torch and transformers do, as the warm-up loads the models on a cold start), it can
answer None and the import fails with "module is None. This should never happen." (seen on cold first
visits). The import cannot move off the page's thread: a component declared outside a script run is
not registered with the server and its frame stays blank. So a failed import is tried again; by then
the other thread has filled the caches, and the second try finds the module.
"""

from __future__ import annotations

import importlib
import logging
from types import ModuleType

log = logging.getLogger(__name__)

ATTEMPTS = 3
_RACE_MESSAGE = "module is None"  # what component_registry._get_module_name raises when getmodule lost the race


def import_component_library(name: str) -> ModuleType:
    """Import the component library ``name``, trying again when it lost the race described above."""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return importlib.import_module(name)
        except RuntimeError as exc:
            if _RACE_MESSAGE not in str(exc) or attempt == ATTEMPTS:
                raise
            log.warning("importing %s lost a race in inspect.getmodule (%s); trying again", name, exc)
    raise AssertionError("unreachable")  # the loop returns or raises


def webrtc() -> ModuleType:
    """streamlit_webrtc (carries a call's audio between the browser and the app; see pages/voice.py)."""
    return import_component_library("streamlit_webrtc")
