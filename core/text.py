"""Input cleaning shared by the data services: every value a caller supplies goes
through here before it reaches SQL, so bad input fails early with a clear
message (InvalidInput) and never half-writes a row."""

from __future__ import annotations

import json
import math
import re
import unicodedata
from numbers import Real
from typing import Any

from core.errors import InvalidInput

SLOT_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,63}$")  # same check as memories.memory_type in SQL
MAX_SLOT_LENGTH = 64
MAX_JSON_DEPTH = 20
_SURROGATE = re.compile("[\ud800-\udfff]")


def describe(value, limit: int = 60) -> str:
    """A short, escaped form of any value for a message or a log line (never raises)."""
    try:
        text = ascii(value)
    except (RecursionError, ValueError):  # too deeply nested, or an int too long to print
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def clean_text(value, *, what: str, max_length: int, allow_empty: bool = False) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise InvalidInput(f"The {what} must be text.")
    if len(value) > max_length * 4 + 1000:  # before normalizing: NFC can only shrink so much
        raise InvalidInput(f"The {what} is too long ({len(value)} characters; the limit is {max_length}).")
    if "\x00" in value:
        raise InvalidInput(f"The {what} contains a NUL character, which cannot be stored.")
    if _SURROGATE.search(value):
        raise InvalidInput(f"The {what} contains an unpaired surrogate (broken Unicode), which cannot be stored.")
    value = unicodedata.normalize("NFC", value).strip()
    if not value and not allow_empty:
        raise InvalidInput(f"The {what} is empty.")
    if len(value) > max_length:
        raise InvalidInput(f"The {what} is too long ({len(value)} characters; the limit is {max_length}).")
    return value


def clean_int(value, *, what: str, minimum: int, maximum: int) -> int:
    """A whole number in [minimum, maximum]; numeric strings and whole floats are accepted."""
    if isinstance(value, bool):
        raise InvalidInput(f"The {what} must be a whole number.")
    if isinstance(value, str):
        value = value.strip()
        if not re.fullmatch(r"[+-]?\d{1,12}", value):
            raise InvalidInput(f"The {what} must be a whole number.")
        value = int(value)
    elif isinstance(value, Real):
        if not math.isfinite(value) or value != int(value):
            raise InvalidInput(f"The {what} must be a whole number.")
        value = int(value)
    else:
        raise InvalidInput(f"The {what} must be a whole number.")
    if not minimum <= value <= maximum:
        raise InvalidInput(f"The {what} must be between {minimum} and {maximum}.")
    return value


def clean_float(value, *, what: str, minimum: float, maximum: float) -> float:
    """A finite number in [minimum, maximum]."""
    if isinstance(value, bool):
        raise InvalidInput(f"The {what} must be a number.")
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise InvalidInput(f"The {what} must be a number.") from None
    if not isinstance(value, Real):
        raise InvalidInput(f"The {what} must be a number.")
    value = float(value)
    if not math.isfinite(value):
        raise InvalidInput(f"The {what} must be a finite number.")
    if not minimum <= value <= maximum:
        raise InvalidInput(f"The {what} must be between {minimum:g} and {maximum:g}.")
    return value


def clean_choice(value, *, what: str, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise InvalidInput(f"Unknown {what} {describe(value, 40)}; use one of: {', '.join(choices)}.")
    return value


def clean_json(value: Any, *, what: str, max_bytes: int, max_depth: int = MAX_JSON_DEPTH) -> str:
    """Strict JSON for storage: objects with text keys, lists, text, finite numbers, true/false/null;
    no NUL, no unpaired surrogates, at most `max_depth` levels and `max_bytes` once encoded."""
    _check_json(value, what=what, depth=0, max_depth=max_depth)
    encoded = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    if len(encoded.encode("utf-8")) > max_bytes:
        raise InvalidInput(f"The {what} are too large (more than {max_bytes:,} bytes).")
    return encoded


def _check_json(value: Any, *, what: str, depth: int, max_depth: int) -> None:
    if depth > max_depth:
        raise InvalidInput(f"The {what} are nested too deeply (more than {max_depth} levels).")
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, str):
        if "\x00" in value or _SURROGATE.search(value):
            raise InvalidInput(f"The {what} contain a NUL character or broken Unicode, which cannot be stored.")
        return
    if isinstance(value, int):
        if abs(value) > 2**63:
            raise InvalidInput(f"The {what} contain a number too large to store.")
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(f"The {what} contain NaN or Infinity, which JSON cannot hold.")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidInput(f"The {what} may only have text keys.")
            _check_json(key, what=what, depth=depth + 1, max_depth=max_depth)
            _check_json(item, what=what, depth=depth + 1, max_depth=max_depth)
        return
    if isinstance(value, list | tuple):
        for item in value:
            _check_json(item, what=what, depth=depth + 1, max_depth=max_depth)
        return
    raise InvalidInput(f"The {what} may only hold text, numbers, true/false, null, lists and objects.")


def parse_json_text(text: str, *, what: str) -> Any:
    """json.loads that refuses NaN/Infinity and turns every parse failure into InvalidInput."""

    def no_constants(name: str):
        raise InvalidInput(f"The {what} contain {name}, which JSON cannot hold.")

    try:
        return json.loads(text, parse_constant=no_constants)
    except (json.JSONDecodeError, RecursionError):
        raise InvalidInput(f"The {what} are not valid JSON (or are nested too deeply).") from None


def sanitize_json(value: Any, *, depth: int = 0, max_depth: int = 64) -> Any:
    """What Postgres' jsonb can hold, keeping everything else: NaN/Infinity become null, NUL
    characters go, broken Unicode becomes U+FFFD, other keys become text, anything else its
    text form; below `max_depth` a subtree is replaced by a marker. For data we must not
    lose (session reports), where clean_json would refuse."""
    if depth > max_depth:
        return "[nested too deeply]"
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value.replace("\x00", ""))
    if isinstance(value, dict):
        return {sanitize_json(str(k)): sanitize_json(v, depth=depth + 1, max_depth=max_depth) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [sanitize_json(v, depth=depth + 1, max_depth=max_depth) for v in value]
    return sanitize_json(str(value))


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
