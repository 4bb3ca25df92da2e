"""The days a search of past conversations keeps to: the tool's dates, and the times a user names."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime

import pytest

from core.date_window import DateWindow, mentioned_in
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
    ],
)
def test_the_days_a_sentence_names(sentence, first, last):
    window = mentioned_in(sentence, TODAY)
    assert window is not None
    assert (window.first, window.last) == (first, last)
    assert window.said_as.lower() in sentence.lower()


@pytest.mark.parametrize(
    "sentence",
    ["that trail I mentioned", "what did we talk about before?", "I may 5 times have said it", "on February 30"],
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
