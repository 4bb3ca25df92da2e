"""The user's profile (name, email, preferences) and the preload the agent
reads before its first word."""

from __future__ import annotations

import json
import uuid
import zoneinfo
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Any

from core import memories, memory_changes
from core.config import get_settings
from core.date_window import user_zone
from core.db import Scope, transaction
from core.errors import InvalidInput, NotFound
from core.memories import Memory
from core.text import clean_json, clean_text, parse_json_text

# The only fields the agent's update_profile tool (and the pages) may change.
ALLOWED_FIELDS = ("name", "email", "preferred_language", "timezone", "preferences")
_LIMITS = {"name": 200, "email": 320, "preferred_language": 64, "timezone": 64}


@dataclass(frozen=True)
class Profile:
    id: uuid.UUID
    name: str | None
    email: str | None
    preferred_language: str | None
    timezone: str | None
    preferences: dict[str, Any]
    last_seen_at: datetime | None
    created_at: datetime
    updated_at: datetime

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "name": self.name,
            "email": self.email,
            "preferred_language": self.preferred_language,
            "timezone": self.timezone,
            "preferences": self.preferences,
            "last_seen_at": self.last_seen_at.isoformat() if self.last_seen_at else None,
        }


@dataclass(frozen=True)
class Preload:
    """What the agent knows about the user before the conversation starts."""

    profile: Profile
    memories: list[Memory] = field(default_factory=list)
    returning: bool = False  # seen before this session
    omitted: int = 0  # remembered facts left out of the preload (limits); search finds them

    def as_context(self) -> str:
        lines = []
        if self.profile.name:
            lines.append(f"The user's name is {self.profile.name}.")
        for label in ("preferred_language", "timezone", "email"):
            value = getattr(self.profile, label)
            if value:
                lines.append(f"The user's {label.replace('_', ' ')} is {value}.")
        if self.profile.preferences:
            lines.append("User preferences: " + json.dumps(self.profile.preferences, ensure_ascii=False))
        if self.memories:
            lines.append("Remembered facts about the user:")
            lines.extend(f"- {m.memory_type}: {m.content}" for m in self.memories)
            if self.omitted:
                lines.append(
                    f"({self.omitted} older remembered facts are not listed; search the memories to find them.)"
                )
        elif self.omitted:
            lines.append(f"{self.omitted} remembered facts are not listed here; search the memories to find them.")
        else:
            lines.append("Nothing is remembered about this user yet.")
        return "\n".join(lines)


_COLUMNS = "id, name, email, preferred_language, timezone, preferences, last_seen_at, created_at, updated_at"


def get_profile(scope: Scope) -> Profile:
    with transaction(scope) as cur:
        cur.execute(f"select {_COLUMNS} from public.profiles where id = %s", (scope.user_id,))
        row = cur.fetchone()
    if row is None:
        raise NotFound("No profile exists for this user.")
    return Profile(**row)


def time_zone(scope: Scope) -> tzinfo:
    """The calendar the user's dates are shown and searched in: their profile's time zone, UTC without one."""
    with transaction(scope) as cur:
        cur.execute("select timezone from public.profiles where id = %s", (scope.user_id,))
        row = cur.fetchone()
    return user_zone(row["timezone"] if row else None)


def _clean_value(field_name: str, value):
    if field_name == "preferences":
        if isinstance(value, str):
            if len(value) > get_settings().max_preferences_bytes:
                raise InvalidInput(
                    f"Preferences are too large (the limit is {get_settings().max_preferences_bytes:,} bytes)."
                )
            try:
                value = parse_json_text(value, what="preferences")
            except InvalidInput as exc:
                raise InvalidInput(f'Preferences must be a JSON object, e.g. {{"units": "metric"}}; {exc}') from None
        if not isinstance(value, dict):
            raise InvalidInput('Preferences must be a JSON object, e.g. {"units": "metric"}.')
        return clean_json(value, what="preferences", max_bytes=get_settings().max_preferences_bytes)
    text = clean_text(value, what=field_name.replace("_", " "), max_length=_LIMITS[field_name])
    if field_name == "timezone":
        try:
            zoneinfo.ZoneInfo(text)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):  # OSError: "Europe" is a directory
            raise InvalidInput(f"{text!r} is not a time zone; use a name like 'Europe/Paris'.") from None
    if field_name == "email" and ("@" not in text or " " in text):
        raise InvalidInput(f"{text!r} does not look like an email address.")
    return text


def update_profile(scope: Scope, field_name: str, value) -> Profile:
    """Set one allow-listed field. Preferences given as an object are merged in; the merged
    preferences must stay within MAX_PREFERENCES_BYTES."""
    if not isinstance(field_name, str) or len(field_name) > 100:
        raise InvalidInput(f"That profile field cannot be changed; allowed: {', '.join(ALLOWED_FIELDS)}.")
    field_name = field_name.strip().lower().replace(" ", "_")
    if field_name not in ALLOWED_FIELDS:
        raise InvalidInput(f"The profile field {field_name!r} cannot be changed; allowed: {', '.join(ALLOWED_FIELDS)}.")
    cleaned = _clean_value(field_name, value)
    if field_name == "preferences":
        limit = get_settings().max_preferences_bytes
        with transaction(scope) as cur:
            cur.execute(
                f"update public.profiles set preferences = preferences || %s::jsonb "
                f"where id = %s and octet_length((preferences || %s::jsonb)::text) <= %s "
                f"returning {_COLUMNS}",
                (cleaned, scope.user_id, cleaned, limit),
            )
            row = cur.fetchone()
            if row is None:
                cur.execute("select 1 from public.profiles where id = %s", (scope.user_id,))
                if cur.fetchone() is not None:
                    raise InvalidInput(
                        f"Your preferences would be too large with this change (the limit is "
                        f"{limit:,} bytes); remove some first."
                    )
    else:
        with transaction(scope) as cur:  # field_name is from the allow-list above
            cur.execute(
                f"update public.profiles set {field_name} = %s where id = %s returning {_COLUMNS}",
                (cleaned, scope.user_id),
            )
            row = cur.fetchone()
    if row is None:
        raise NotFound("No profile exists for this user.")
    if field_name == "name":  # speech recognition is told the user's name
        memory_changes.notify(scope.user_id)
    return Profile(**row)


def touch_last_seen(scope: Scope) -> datetime | None:
    """Stamp last_seen_at; returns the previous value (None on a first visit)."""
    with transaction(scope) as cur:
        cur.execute(
            "update public.profiles p set last_seen_at = now() from "
            "(select last_seen_at from public.profiles where id = %s for update) prev "
            "where p.id = %s returning prev.last_seen_at",
            (scope.user_id, scope.user_id),
        )
        row = cur.fetchone()
    if row is None:
        raise NotFound("No profile exists for this user.")
    return row["last_seen_at"]


def preload(scope: Scope, *, visit: bool = True) -> Preload:
    """The profile and the most recently updated memories, at most PRELOAD_MAX_MEMORIES and
    within PRELOAD_TOKEN_BUDGET (about 4 characters a token); the rest stays searchable. `visit`: a
    conversation starts (last_seen_at is stamped and `returning` says whether it was set); False reads the
    same again during a conversation (`returning` is then False: the caller keeps the first one's)."""
    settings = get_settings()
    previous_visit = touch_last_seen(scope) if visit else None
    profile = get_profile(scope)
    recent, total = memories.most_recent(scope, settings.preload_max_memories)
    budget = settings.preload_token_budget * 4
    chosen: list[Memory] = []
    for memory in recent:
        cost = len(memory.memory_type) + len(memory.content) + 4
        if cost > budget:
            break
        budget -= cost
        chosen.append(memory)
    return Preload(profile=profile, memories=chosen, returning=previous_visit is not None, omitted=total - len(chosen))
