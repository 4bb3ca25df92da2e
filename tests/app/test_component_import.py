"""ui/components.py: a component library whose import lost inspect.getmodule's race is imported again.

The race itself (another thread filling inspect's caches) cannot be forced; what it does to the import
can: ``inspect.getmodule`` answers None for the declaring module, and Streamlit's ``declare_component``
raises "module is None". The library here is a real one, written to a temporary folder: its import calls
the real ``declare_component``.
"""

from __future__ import annotations

import inspect
import logging
import sys
import textwrap

import pytest

from ui import components

LIBRARY = "mp_race_component"


@pytest.fixture
def component_library(tmp_path, monkeypatch):
    """A one-component library on sys.path, not yet imported; forgotten again afterwards."""
    package = tmp_path / LIBRARY
    (package / "frontend").mkdir(parents=True)
    (package / "frontend" / "index.html").write_text("<html></html>")
    (package / "__init__.py").write_text(
        textwrap.dedent(
            """
            import os
            import streamlit.components.v1 as components

            _component_func = components.declare_component(
                "thing", path=os.path.join(os.path.dirname(__file__), "frontend")
            )
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield LIBRARY
    sys.modules.pop(LIBRARY, None)


def _getmodule_losing(times: int, monkeypatch) -> list[str]:
    """Make inspect.getmodule answer None for the library's own frames the first ``times`` times
    (what losing the race looks like); returns one entry per lookup of the library's module."""
    real = inspect.getmodule
    lookups: list[str] = []

    def getmodule(obj, _filename=None):
        if inspect.isframe(obj) and obj.f_globals.get("__name__") == LIBRARY:
            lookups.append(LIBRARY)
            if len(lookups) <= times:
                return None
        return real(obj, _filename)

    monkeypatch.setattr(inspect, "getmodule", getmodule)
    return lookups


def test_an_import_that_lost_the_race_is_tried_again_and_declares_its_component(component_library, monkeypatch, caplog):
    lookups = _getmodule_losing(1, monkeypatch)
    with caplog.at_level(logging.WARNING, logger="ui.components"):
        module = components.import_component_library(component_library)
    assert lookups == [LIBRARY, LIBRARY]  # lost once, found on the second import
    assert module._component_func.name == f"{LIBRARY}.thing"
    assert sys.modules[LIBRARY] is module
    assert "lost a race" in caplog.text


def test_without_the_retry_the_import_fails_the_way_a_cold_first_visit_did(component_library, monkeypatch):
    _getmodule_losing(1, monkeypatch)
    with pytest.raises(RuntimeError, match="module is None"):
        __import__(component_library)
    assert LIBRARY not in sys.modules  # a failed import leaves nothing half-made behind: trying again is safe


def test_a_race_lost_every_time_is_reported_after_the_last_attempt(component_library, monkeypatch):
    lookups = _getmodule_losing(components.ATTEMPTS, monkeypatch)
    with pytest.raises(RuntimeError, match="module is None"):
        components.import_component_library(component_library)
    assert len(lookups) == components.ATTEMPTS


def test_another_error_of_the_library_is_not_retried(tmp_path, monkeypatch):
    (tmp_path / "mp_broken_component.py").write_text("raise RuntimeError('no frontend build')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(RuntimeError, match="no frontend build"):
        components.import_component_library("mp_broken_component")


def test_the_apps_component_libraries_import_through_it():
    assert callable(components.webrtc().webrtc_streamer)
