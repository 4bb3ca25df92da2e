"""Small, pure formatting helpers shared by the pages (no Streamlit imports)."""

from __future__ import annotations

import json
import math
import re
import uuid
from datetime import UTC, datetime, tzinfo
from typing import Any


def short_id(value: uuid.UUID | str | None, length: int = 8) -> str:
    """The start of a user id (a UUID's hex digits). Not for session ids: see session_ref."""
    if value is None:
        return "—"
    text = value.hex if isinstance(value, uuid.UUID) else str(value).replace("-", "")
    return text[:length]


def session_ref(session_id: str | None) -> str:
    """A session id as every page shows it: whole, as on the Sessions page (`text-a50283de052c4b03`), so it
    can be found there; short_id made it `texta50283de052c`."""
    return "—" if not session_id else str(session_id)


def parse_time(value: Any) -> datetime | None:
    """datetime, ISO string or epoch seconds -> aware datetime (None if unparseable)."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, (int, float)):
        try:
            return datetime.fromtimestamp(float(value), tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def ago(value: Any, *, now: datetime | None = None) -> str:
    moment = parse_time(value)
    if moment is None:
        return "—"
    seconds = ((now or datetime.now(UTC)) - moment).total_seconds()
    if seconds < 0:
        return "just now"
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count != 1 else ''} ago"
    return "just now"


def when(value: Any, zone: tzinfo = UTC) -> str:
    """A compact absolute time for tables, in `zone`: 2026-11-22 14:03 UTC, 2026-11-22 15:03 CET."""
    moment = parse_time(value)
    return moment.astimezone(zone).strftime("%Y-%m-%d %H:%M %Z") if moment else "—"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    seconds = max(0.0, float(seconds))
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def ms(value: Any) -> str:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return "—"
    if number >= 1000:
        return f"{number / 1000:.2f} s"
    return f"{number:.0f} ms" if number >= 10 else f"{number:.1f} ms"


def in_ms(value: Any) -> str:
    """A time in ms however long ("1,187 ms"), for a table column that should read down in one unit."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return "—"
    if not math.isfinite(number):
        return "—"
    return f"{number:,.0f} ms" if number >= 10 else f"{number:.1f} ms"


def arguments_text(arguments: Any) -> str:
    """A tool call's arguments as the model wrote them, short: `query="hiking trail", limit=5` (JSON values)."""
    if isinstance(arguments, str):
        return arguments
    try:
        return ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in (arguments or {}).items())
    except (TypeError, AttributeError):
        return str(arguments)


def clip(text: Any, length: int = 160) -> str:
    """`text` on one line (each run of spaces and line breaks one space: a turn picker's "line one⏎line two"
    showed as "line oneline two"), cut to `length` characters with an ellipsis."""
    text = " ".join(("" if text is None else str(text)).split())
    return text if len(text) <= length else text[: length - 1].rstrip() + "…"


# What Streamlit's Markdown would read as formatting in a typed text: these characters anywhere (":" starts
# an emoji or icon code, ":rocket:"), "--" (it becomes a dash) and a list or quote marker at a line's start.
_MARKDOWN_SPECIAL = re.compile(r"[\\`*_\[\]<>#:|~$]|-(?=-)|(?<=-)-")
_LINE_MARKER = re.compile(r"^(\s*)([-+>])|^(\s*\d+)([.)])(?=\s)", re.M)


# Streamlit's Markdown then turns these, standing alone between spaces, into symbols ("--" into "—", "->" into
# "→", "<=" into "≤"), in the text itself after the escapes are read, so no escape keeps them. An invisible
# word joiner after the first character does: the rendered text no longer holds the sequence.
_TYPOGRAPHIC = re.compile(r"(?<!\S)(<->|->|<-|--|>=|<=|~=)(?!\S)")
WORD_JOINER = "\u2060"
_ICON = re.compile(r"\\:material/", re.I)


def literal(text: Any) -> str:
    """`text` escaped for st.markdown and friends, so that what a user typed shows exactly as typed."""
    text = "" if text is None else str(text)
    text = _TYPOGRAPHIC.sub(lambda m: m[1][0] + WORD_JOINER + m[1][1:], text)
    text = _MARKDOWN_SPECIAL.sub(lambda m: "\\" + m.group(0), text)
    # Streamlit draws ":material/home:" as an icon after the escapes are read: a word joiner breaks the name
    text = _ICON.sub(lambda m: m[0][: -len("material/")] + WORD_JOINER + "material/", text)
    text = _LINE_MARKER.sub(lambda m: f"{m[1]}\\{m[2]}" if m[2] is not None else f"{m[3]}\\{m[4]}", text)
    # a line break as typed: Markdown joins lines into one unless a line ends in two spaces
    return re.sub(r"\r?\n", "  \n", text)


def code_span(text: Any) -> str:
    """`text` as Markdown inline code that holds any backticks it has: fenced by one more backtick than its
    longest run ("`a`b`" in one tick ended the span at its first backtick and drew the rest as Markdown)."""
    text = " ".join(("" if text is None else str(text)).split())
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    padded = f" {text} " if text.startswith("`") or text.endswith("`") else text
    return f"{fence}{padded}{fence}"


def nothing_to_search(query: str) -> str | None:
    """Why a page's search box holds nothing to search for, None when it does: only spaces, or no letter or
    digit at all ("%", "?!"). The embedding of "%" is near any short question, so the Sessions search listed
    turns as close in meaning to it (found in a fresh-clone walkthrough)."""
    if not query:
        return "the box is empty"
    if not query.strip():
        return "the box holds only spaces"
    if not any(character.isalnum() for character in query):
        return f"“{literal(clip(query.strip(), 40))}” has no letter or digit in it"
    return None
