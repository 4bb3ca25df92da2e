"""Days a search of past conversations keeps to: from the tool's dates, or from what the user said.

"What did I tell you last week about the trail?" names when something was said. A `DateWindow` is a span
of whole days of one calendar, both ends included: the user's time zone when their profile has one
(`user_zone`), UTC otherwise; `bounds()` gives the half-open [since, before) the SQL function takes.
`DateWindow.from_dates` reads the search tool's `from_date` and `to_date` (a model's arguments: anything
may arrive), `mentioned_in` finds the span a sentence names ("yesterday", "last week", "back in March",
"3 days ago", "on November 20", "on Monday"), relative to today.
"""

from __future__ import annotations

import re
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from core.errors import InvalidInput

MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "a couple of": 2,
    "a few": 3,
}
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_COUNT = r"(?P<count>\d{1,3}|a couple of|a few|an?|one|two|three|four|five|six|seven|eight|nine|ten)"


def user_zone(name: str | None) -> tzinfo:
    """The calendar a user's days are in: their profile's time zone, UTC when it has none (or names a zone
    this machine does not know: the profile check refuses those, but an older row or another machine's
    zone database may hold one)."""
    if not name:
        return UTC
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return UTC


def zone_name(zone: tzinfo) -> str:
    """'Europe/Paris', or 'UTC'."""
    return getattr(zone, "key", None) or str(zone)


def today_in(zone: tzinfo, now: datetime | None = None) -> date:
    """The date it is in `zone` (at `now`, default the present)."""
    return (now or datetime.now(UTC)).astimezone(zone).date()


def day_of(moment: datetime, zone: tzinfo) -> date:
    """The day of `zone`'s calendar a moment falls on: a turn said at 23:30 in Los Angeles is that day's,
    not the next UTC day's."""
    return moment.astimezone(zone).date()


@dataclass(frozen=True)
class DateWindow:
    first: date
    last: date
    said_as: str  # the words that named these days ("last week"; the tool's two dates)
    zone: tzinfo = UTC  # whose calendar the days are

    def bounds(self) -> tuple[datetime | None, datetime | None]:
        """[since, before) in UTC (midnight in the window's zone); None for a side left open."""
        since = None if self.first == date.min else _midnight(self.first, self.zone)
        before = None if self.last == date.max else _midnight(self.last + timedelta(days=1), self.zone)
        return since, before

    def describe(self) -> str:
        """'2026-11-23 to 2026-11-29', '2026-11-30', 'from 2026-11-23', 'up to 2026-11-29'."""
        if self.first == date.min:
            return f"up to {self.last.isoformat()}"
        if self.last == date.max:
            return f"from {self.first.isoformat()}"
        if self.first == self.last:
            return self.first.isoformat()
        return f"{self.first.isoformat()} to {self.last.isoformat()}"

    @classmethod
    def of_days(cls, days: tuple[date, ...] | list[date], zone: tzinfo = UTC) -> DateWindow | None:
        """A date picker's range: none picked is no window, one (a range half picked) is that day."""
        if not days:
            return None
        first, last = min(days), max(days)
        return cls(first, last, said_as=f"{first} to {last}", zone=zone)

    @classmethod
    def from_dates(cls, from_date: object, to_date: object, zone: tzinfo = UTC) -> DateWindow | None:
        """The tool's dates (YYYY-MM-DD, both included, days of `zone`); None when neither is given."""
        first, last = _tool_date(from_date, "from_date"), _tool_date(to_date, "to_date")
        if first is None and last is None:
            return None
        first, last = first or date.min, last or date.max
        if first > last:
            raise InvalidInput(f"from_date ({first}) is after to_date ({last}): give the earlier date first.")
        return cls(first, last, said_as=f"{from_date or '…'} to {to_date or '…'}", zone=zone)


def _midnight(day: date, zone: tzinfo) -> datetime:
    """When `day` begins in `zone`, in UTC. Where clocks skip midnight (a daylight-saving start at 00:00),
    fold 0 reads the skipped 00:00 with the offset before the jump: exactly the instant the day begins
    (01:00 on the new clock). In UTC, because a wall time in a gap compares unequal to every other zone's."""
    return datetime.combine(day, time(), zone).astimezone(UTC)


def _tool_date(value: object, name: str) -> date | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    text = str(value).strip()
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        try:
            return date.fromisoformat(text)
        except ValueError:
            pass
    shown = text if len(text) <= 40 else text[:39] + "…"
    raise InvalidInput(f"{name} must be a date like 2026-11-30 (YYYY-MM-DD), not {shown!r}.")


def _week_start(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _month_span(year: int, month: int) -> tuple[date, date]:
    first = date(year, month, 1)
    following = date(year + month // 12, month % 12 + 1, 1)
    return first, following - timedelta(days=1)


def _count(text: str) -> int:
    return int(text) if text.isdigit() else _NUMBERS[text]


def mentioned_in(sentence: str, today: date, zone: tzinfo = UTC) -> DateWindow | None:
    """The days `sentence` says something was said on, or None when it names no time it can place. `today`
    is the date in `zone`, the calendar of the days found.

    Relative spans are generous where people are loose: "a week ago" is 4 to 10 days ago, "3 days ago" the
    day before to the day after; "last week" and "last month" are the previous calendar week (Monday to
    Sunday) and month; a month without a year is the latest one that has begun; "on Monday" is the latest
    Monday before today (a bare weekday is no date: "my Sunday roast")."""
    text = " ".join(sentence.lower().replace("\u2019", "'").split())

    def found(first: date, last: date, said_as: str) -> DateWindow:
        return DateWindow(max(first, date.min), min(last, today), said_as=said_as, zone=zone)

    if match := re.search(r"\b(?:today|this morning|this afternoon|earlier today)\b", text):
        return found(today, today, match.group(0))
    if match := re.search(r"\bday before yesterday\b", text):  # before "yesterday", which it holds
        return found(today - timedelta(days=2), today - timedelta(days=2), match.group(0))
    if match := re.search(r"\b(?:yesterday|last night)\b", text):
        return found(today - timedelta(days=1), today - timedelta(days=1), match.group(0))
    if match := re.search(r"\b(?:earlier |)this week\b", text):
        return found(_week_start(today), today, match.group(0))
    if match := re.search(r"\blast week(?:end)?\b", text):
        start = _week_start(today) - timedelta(days=7)
        if match.group(0).endswith("end"):
            return found(start + timedelta(days=5), start + timedelta(days=6), match.group(0))
        return found(start, start + timedelta(days=6), match.group(0))
    if match := re.search(r"\bthis month\b", text):
        return found(today.replace(day=1), today, match.group(0))
    if match := re.search(r"\blast month\b", text):
        previous = today.replace(day=1) - timedelta(days=1)
        return found(*_month_span(previous.year, previous.month), match.group(0))
    if match := re.search(rf"\b{_COUNT} (?P<unit>day|week|month)s? ago\b", text):
        count, unit = _count(match.group("count")), match.group("unit")
        days = {"day": 1, "week": 7, "month": 30}[unit] * count
        slack = {"day": 1, "week": 3 * min(count, 2), "month": 10 * min(count, 2)}[unit]
        return found(today - timedelta(days=days + slack), today - timedelta(days=max(days - slack, 0)), match.group(0))
    if match := re.search(rf"\bon {_MONTH} (?P<day>\d{{1,2}})(?:st|nd|rd|th)?(?:,? (?P<year>\d{{4}}))?\b", text):
        month, day = MONTHS[match.group("month")], int(match.group("day"))
        year = int(match.group("year") or today.year)
        try:
            said = date(year, month, day)
        except ValueError:
            return None
        if not match.group("year") and said > today:
            said = said.replace(year=year - 1)
        return found(said, said, match.group(0).removeprefix("on "))  # "on": "I may 5 times" is no date
    if match := re.search(rf"\b(?:on|last|this past) (?P<weekday>{'|'.join(WEEKDAYS)})\b", text):
        # the latest one before today: on a Wednesday, "on Monday" is two days ago and "on Wednesday" a week ago
        back = (today.weekday() - WEEKDAYS.index(match.group("weekday")) - 1) % 7 + 1
        return found(today - timedelta(days=back), today - timedelta(days=back), match.group(0))
    if match := re.search(rf"\b(?:in|back in|during|early in|late in) {_MONTH}(?: (?P<year>\d{{4}}))?\b", text):
        month = MONTHS[match.group("month")]
        year = int(match.group("year") or today.year)
        if not match.group("year") and date(year, month, 1) > today:
            year -= 1
        return found(*_month_span(year, month), match.group(0))
    return None
