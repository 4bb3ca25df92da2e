"""Every livekit plugin this project may use, registered once per process on its main thread.

livekit-agents registers a plugin when its package is first imported, and
refuses to do that off the main thread (the worker lists the registered
plugins to preload them into its job processes). Our models are built on the
agent runtime's loop thread, and Streamlit runs page scripts on script
threads, so a plugin can never be imported where a model is built. Instead
every process that may build a model calls :func:`register` at start:

=====================================  ===========================================================
process                                where
=====================================  ===========================================================
``python -m agent chat|dev|start|…``   ``agent/__main__.py``, before anything else
worker job processes                   livekit's forkserver preloads the registered plugins;
                                       ``agent.worker.prewarm`` registers again (a no-op then)
``python -m bench``                    ``bench/__main__.py``
the Streamlit app                      the lifespan of the ``st.App`` in ``streamlit_app.py``
                                       (``ui/server.py``), which Streamlit runs on the main thread
                                       before its server accepts a visitor
pytest                                 ``tests/conftest.py`` (subprocess tests prove the others)
=====================================  ===========================================================

The model builders (``agent.model_factory``) then take the plugin from :func:`plugin`,
which never imports: a process that skipped registration gets a clear
``ConfigurationError`` instead of livekit's RuntimeError on a worker thread.
"""

from __future__ import annotations

import importlib
import sys
import threading
from types import ModuleType

from core.errors import ConfigurationError

PLUGIN_MODULES = {"openai": "livekit.plugins.openai", "silero": "livekit.plugins.silero"}


def registered() -> bool:
    return all(module in sys.modules for module in PLUGIN_MODULES.values())


def register() -> None:
    """Import (and so register) every plugin. Idempotent; must run on the main thread the first time."""
    if registered():
        return
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError(
            "agent.plugins.register() must run on the main thread at process start "
            "(livekit registers plugins only there)"
        )
    for module in PLUGIN_MODULES.values():
        importlib.import_module(module)


def plugin(name: str) -> ModuleType:
    """The registered plugin package `name` ("openai", "silero"); never imports it."""
    module = sys.modules.get(PLUGIN_MODULES[name])
    if module is None:
        raise ConfigurationError(
            f"The livekit {name} plugin was not loaded when this process started "
            "(agent.plugins.register() runs at the start of the app, the CLI, the worker "
            "and the benchmark); start it through one of those (the app: `make run`, or "
            "`streamlit run streamlit_app.py`)."
        )
    return module
