"""The outage panel says its headline once, then core's reason (it said "The database is not reachable right
now." twice in a row)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from core.errors import DatabaseUnavailable


def _panel(message: str) -> str:
    def script(message: str) -> None:
        from core.errors import DatabaseUnavailable
        from ui.errors import show_error

        show_error(DatabaseUnavailable(message))

    at = AppTest.from_function(script, args=(message,), default_timeout=30).run()
    assert not at.exception
    return at.error[0].value


def test_the_headline_is_said_once_then_the_reason():
    reason = "The database is not reachable right now: the embedded database is being restarted; try again."
    assert str(DatabaseUnavailable(reason)) == reason
    text = _panel(reason)
    assert text.count("not reachable right now") == 1
    assert text.startswith("**The database is not reachable right now.** The embedded database is being restarted")


def test_a_reason_without_the_headline_is_kept_whole():
    text = _panel("connection refused by db.example:5432")
    assert text.startswith("**The database is not reachable right now.** Connection refused by db.example:5432")


def test_the_time_of_the_last_check_is_the_visitors():
    from datetime import UTC, datetime

    from ui.errors import still_unreachable

    checked = datetime(2026, 12, 2, 22, 15, 5, tzinfo=UTC)
    # the browser's zone (the profile's is in the database that is down)
    assert still_unreachable("Asia/Tokyo", checked) == "Still unreachable at 07:15:05."
    assert still_unreachable("America/Los_Angeles", checked) == "Still unreachable at 14:15:05."
    # no zone, or one this machine does not know: UTC, said so
    assert still_unreachable(None, checked) == "Still unreachable at 22:15:05 UTC."
    assert still_unreachable("Mars/Olympus_Mons", checked) == "Still unreachable at 22:15:05 UTC."
    assert still_unreachable("UTC", checked) == "Still unreachable at 22:15:05 UTC."
