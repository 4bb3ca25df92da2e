"""Timed fragments (``st.fragment(run_every=…)``), each drawn inside a container of the page run's own.

Why (Streamlit 1.67; found in the websocket traffic of Voice pages that crashed): when a fragment's timed
rerun starts just after a page run, the app session drops that fragment's output of the page run if it has
not been sent to the browser yet (``AppSession._clear_queue(fragment_ids_this_run)``, meant for the
fragment's own older output). The browser then sees the page run end without the fragment, removes its old
output, and every element after it moves up one place: the fragment's next output replaces whatever moved
into its place (the call's text box vanished) or aims at a place that no longer exists ("Cannot set a node at
a delta path": the whole app unmounts and a call ends). A container of the page run's own is never dropped
that way, so a dropped output only empties that container until the fragment's rerun fills it again.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import streamlit as st


def timed_fragment(run_every: float | None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``st.fragment(run_every=run_every)``, called inside a container of its own."""

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        fragment = st.fragment(run_every=run_every)(function)

        @functools.wraps(function)
        def in_its_own_container(*args: Any, **kwargs: Any) -> Any:
            with st.container():
                return fragment(*args, **kwargs)

        return in_its_own_container

    return decorate
