"""The days a search of past conversations keeps to: the tool's dates, and the times a user names."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from core.date_window import DateWindow, day_of, mentioned_in, today_in, user_zone, zone_name
from core.errors import InvalidInput

TODAY = date(2026, 12, 2)  # a Wednesday


@pytest.mark.parametrize(
    ("sentence", "first", "last"),
    [
        ("what did I tell you yesterday about the dentist?", date(2026, 12, 1), date(2026, 12, 1)),
        ("the day before yesterday", date(2026, 11, 30), date(2026, 11, 30)),
        ("the trail I mentioned last week", date(2026, 11, 23), date(2026, 11, 29)),
        ("that restaurant from last weekend", date(2026, 11, 28), date(2026, 11, 29)),
        ("something I said earlier this week", date(2026, 11, 30), date(2026, 12, 2)),
        ("the book I told you about last month", date(2026, 11, 1), date(2026, 11, 30)),
        ("what I said back in March", date(2026, 3, 1), date(2026, 3, 31)),
        ("in December", date(2026, 12, 1), date(2026, 12, 2)),  # this month, up to today
        ("the gift I mentioned in dec 2025", date(2025, 12, 1), date(2025, 12, 31)),
        ("on November 20th", date(2026, 11, 20), date(2026, 11, 20)),
        ("on Dec 25", date(2025, 12, 25), date(2025, 12, 25)),  # not yet this year: last year's
        ("what I said 3 days ago", date(2026, 11, 28), date(2026, 11, 30)),
        ("a week ago", date(2026, 11, 22), date(2026, 11, 28)),
        ("a couple of weeks ago", date(2026, 11, 12), date(2026, 11, 24)),
        ("What did I say THIS MORNING?", TODAY, TODAY),
        ("what did we talk about on Monday?", date(2026, 11, 30), date(2026, 11, 30)),
        ("the gift I mentioned last Tuesday", date(2026, 12, 1), date(2026, 12, 1)),
        ("what did I say on Wednesday?", date(2026, 11, 25), date(2026, 11, 25)),  # today is one: last week's
        ("this past Sunday", date(2026, 11, 29), date(2026, 11, 29)),
    ],
)
def test_the_days_a_sentence_names(sentence, first, last):
    window = mentioned_in(sentence, TODAY)
    assert window is not None
    assert (window.first, window.last) == (first, last)
    assert window.said_as.lower() in sentence.lower()


@pytest.mark.parametrize(
    "sentence",
    [
        "that trail I mentioned",
        "what did we talk about before?",
        "I may 5 times have said it",
        "on February 30",
        "what was in my Sunday roast?",
    ],
)
def test_a_sentence_without_a_time_it_can_place_names_no_days(sentence):
    assert mentioned_in(sentence, TODAY) is None


def test_a_window_is_whole_utc_days_with_the_last_one_included():
    window = mentioned_in("last week", TODAY)
    assert window.bounds() == (datetime(2026, 11, 23, tzinfo=UTC), datetime(2026, 11, 30, tzinfo=UTC))
    assert window.describe() == "2026-11-23 to 2026-11-29"


@pytest.mark.parametrize(
    ("from_date", "to_date", "bounds", "described"),
    [
        ("2026-11-23", "2026-11-29", (datetime(2026, 11, 23, tzinfo=UTC), datetime(2026, 11, 30, tzinfo=UTC)),
         "2026-11-23 to 2026-11-29"),
        ("2026-11-30", "2026-11-30", (datetime(2026, 11, 30, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC)),
         "2026-11-30"),
        ("2026-11-23", None, (datetime(2026, 11, 23, tzinfo=UTC), None), "from 2026-11-23"),
        ("", "2026-11-29", (None, datetime(2026, 11, 30, tzinfo=UTC)), "up to 2026-11-29"),
        (None, "9999-12-31", (None, None), "up to 9999-12-31"),
    ],
)  # fmt: skip
def test_the_tools_dates(from_date, to_date, bounds, described):
    window = DateWindow.from_dates(from_date, to_date)
    assert window.bounds() == bounds
    assert window.describe() == described


@pytest.mark.parametrize("blank", [None, "", "  "])
def test_no_dates_is_no_window(blank):
    assert DateWindow.from_dates(blank, None) is None


@pytest.mark.parametrize(
    ("from_date", "to_date", "message"),
    [
        ("last week", None, "from_date must be a date like 2026-11-30 (YYYY-MM-DD), not 'last week'"),
        ("2026-02-30", None, "from_date must be a date like"),
        (None, "30/11/2026", "to_date must be a date like"),
        (None, 20261130, "to_date must be a date like"),
        ("2026-11-30T10:00:00", None, "from_date must be a date like"),
        ("2026-11-29", "2026-11-23", "from_date (2026-11-29) is after to_date (2026-11-23)"),
        ("x" * 500, None, "not 'xxxxxxxx"),
    ],
)
def test_a_models_bad_dates_are_refused_in_a_sentence_it_can_act_on(from_date, to_date, message):
    with pytest.raises(InvalidInput, match=re.escape(message)) as refused:
        DateWindow.from_dates(from_date, to_date)
    assert len(str(refused.value)) < 120


def test_a_date_pickers_range():
    assert DateWindow.of_days(()) is None
    assert DateWindow.of_days((date(2026, 11, 29), date(2026, 11, 23))).describe() == "2026-11-23 to 2026-11-29"
    assert DateWindow.of_days([date(2026, 11, 23)]).bounds() == (
        datetime(2026, 11, 23, tzinfo=UTC),
        datetime(2026, 11, 24, tzinfo=UTC),
    )


# ---------------------------------------------------------------- the user's calendar

KIRITIMATI = ZoneInfo("Pacific/Kiritimati")  # UTC+14: its day starts ten hours before UTC's
SANTIAGO = ZoneInfo("America/Santiago")


@pytest.mark.parametrize(
    ("profile_zone", "expected"),
    [
        (None, "UTC"),
        ("", "UTC"),
        ("Pacific/Kiritimati", "Pacific/Kiritimati"),
        ("Mars/Olympus_Mons", "UTC"),  # an older row, or another machine's zone database: not a crash
        ("Europe", "UTC"),  # a directory of the zone database, not a zone
    ],
)
def test_a_users_calendar_is_their_profiles_time_zone_or_utc(profile_zone, expected):
    assert zone_name(user_zone(profile_zone)) == expected


def test_today_and_the_day_of_a_moment_are_the_users():
    moment = datetime(2026, 12, 2, 11, 30, tzinfo=UTC)  # 01:30 on December 3 in Kiritimati
    assert today_in(KIRITIMATI, moment) == date(2026, 12, 3)
    assert today_in(UTC, moment) == date(2026, 12, 2)
    assert day_of(datetime(2026, 12, 2, 9, 59, tzinfo=UTC), KIRITIMATI) == date(2026, 12, 2)
    assert day_of(datetime(2026, 12, 2, 10, 0, tzinfo=UTC), KIRITIMATI) == date(2026, 12, 3)


def test_a_window_in_a_time_zone_is_that_zones_whole_days():
    window = DateWindow.from_dates("2026-12-01", "2026-12-01", KIRITIMATI)
    since, before = window.bounds()
    # December 1 in Kiritimati is 10:00 UTC on November 30 to 10:00 UTC on December 1
    assert since == datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    assert before == datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
    assert window.describe() == "2026-12-01"
    days = DateWindow.of_days([date(2026, 12, 1)], KIRITIMATI).bounds()
    assert days == (since, before)


def test_a_day_whose_midnight_the_clocks_skip_starts_when_they_resume():
    """Santiago's clocks went from 23:59:59 on September 7, 2024 to 01:00 on the 8th: the 8th begins at 04:00
    UTC, the 7th ends a second before it, and no moment is in two days or in none."""
    since, before = DateWindow(date(2024, 9, 8), date(2024, 9, 8), said_as="", zone=SANTIAGO).bounds()
    assert since == datetime(2024, 9, 8, 4, 0, tzinfo=UTC)
    assert day_of(since, SANTIAGO) == date(2024, 9, 8)
    assert day_of(since - timedelta(seconds=1), SANTIAGO) == date(2024, 9, 7)
    assert before - since == timedelta(hours=23)
    assert day_of(before - timedelta(seconds=1), SANTIAGO) == date(2024, 9, 8)


def test_the_days_a_sentence_names_are_of_the_users_calendar():
    window = mentioned_in("what did I say yesterday?", date(2026, 12, 3), KIRITIMATI)
    assert (window.first, window.last, window.zone) == (date(2026, 12, 2), date(2026, 12, 2), KIRITIMATI)
    assert window.bounds()[0] == datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
