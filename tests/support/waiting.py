"""Polling for something another thread or process does (a notification heard, a row written)."""

from __future__ import annotations

import time
from collections.abc import Callable


def until(condition: Callable[[], object], timeout: float = 5.0, every: float = 0.02) -> bool:
    """Whether `condition()` became true within `timeout` seconds (asked once more at the end)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(every)
    return bool(condition())
