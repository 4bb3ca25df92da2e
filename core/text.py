"""Input cleaning shared by the data services: every user-supplied string goes
through here before it reaches SQL, so bad input fails early with a clear
message and never half-writes a row."""

from __future__ import annotations

import re
import unicodedata

from core.errors import InvalidInput

SLOT_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,63}$")  # same check as memories.memory_type in SQL
MAX_SLOT_LENGTH = 64


def clean_text(value, *, what: str, max_length: int, allow_empty: bool = False) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise InvalidInput(f"The {what} must be text.")
    if "\x00" in value:
        raise InvalidInput(f"The {what} contains a NUL character, which cannot be stored.")
    value = unicodedata.normalize("NFC", value).strip()
    if not value and not allow_empty:
        raise InvalidInput(f"The {what} is empty.")
    if len(value) > max_length:
        raise InvalidInput(f"The {what} is too long ({len(value)} characters; the limit is {max_length}).")
    return value


def normalize_slot(memory_type) -> str:
    """'Favorite Color' / 'favorite-color' / ' FAVORITE_COLOR ' -> 'favorite_color'."""
    raw = clean_text(memory_type, what="memory slot name", max_length=200)
    ascii_only = unicodedata.normalize("NFKD", raw).encode("ascii", "ignore").decode()
    slot = re.sub(r"[^a-z0-9]+", "_", ascii_only.lower()).strip("_")
    slot = re.sub(r"^[0-9_]+", "", slot)  # a slot starts with a letter
    if not slot:
        raise InvalidInput(f"{memory_type!r} is not a usable memory slot name; use words like 'favorite_color'.")
    if len(slot) > MAX_SLOT_LENGTH:
        raise InvalidInput(f"The memory slot name is too long (limit {MAX_SLOT_LENGTH} characters).")
    assert SLOT_PATTERN.match(slot)
    return slot
