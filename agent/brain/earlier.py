"""What the offline brain says about earlier conversations: a past turn quoted with the day it was said,
and the last conversation summed up in the user's own words."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

from agent.brain.asked import about_what_was_asked
from agent.brain.patterns import is_question
from core.date_window import mentioned_in
from core.retrieval import is_relevant

# a greeting or a thank-you says nothing worth quoting back
SMALLTALK_LINE = re.compile(
    r"^(?:hi|hello|hey|thanks|thank you|ok|okay|bye|good (?:morning|evening|night))\b[^.?!]{0,20}[.!?]*$", re.I
)
# this brain's own replies that say it has or kept nothing: no answer to quote back (the last is its refusal of a
# secret, replies.SECRET_REPLY: the message it refused is stored withheld, and this reply was found in its place)
NOTHING_FOUND_PHRASES = (
    "I don't remember",
    "I couldn't find anything",
    "found nothing",
    "I'd rather not keep passwords",
)


# how many of the user's lines "what did we talk about last time?" quotes
LAST_CONVERSATION_QUOTED = 3
# the lead of a past turn that is near the question in meaning but shares none of its words
CLOSEST_LEAD = "The closest I found in our earlier conversations: "


def _once(lines: list[str]) -> list[str]:
    """Each line once, where it was first said (case and spacing aside): a call's question said three times
    was quoted three times."""
    first: dict[str, str] = {}
    for line in lines:
        first.setdefault(" ".join(line.split()).casefold(), line)
    return list(first.values())


def _quoted_from(data: dict[str, Any]) -> tuple[str, int, bool] | None:
    """The user's own lines of a recall_last_conversation output, greetings and thanks left out, and their
    questions too when they also told something ("you told me: “what is my favorite color?”"), quoted; how
    many more were said; whether the lines are questions only. None when it found no conversation."""
    said = [str(t.get("content") or "") for t in data.get("turns") or [] if t.get("speaker") == "user"]
    if not data.get("found") or not said:
        return None
    substantial = _once([line for line in said if len(line.split()) >= 3 and not SMALLTALK_LINE.match(line)] or said)
    told = [line for line in substantial if not is_question(line)]
    quoted = "; ".join(f"“{quote(line, 160)}”" for line in (told or substantial)[:LAST_CONVERSATION_QUOTED])
    return quoted, len(told or substantial) - LAST_CONVERSATION_QUOTED + (data.get("more_turns") or 0) // 2, not told


def _more(count: int) -> str:
    return f", and {count} more thing{'s' if count != 1 else ''}" if count > 0 else ""


def last_conversation(data: dict[str, Any]) -> str:
    """The user's own lines of the last conversation, greetings and thanks left out."""
    found = _quoted_from(data)
    if found is None:
        # not "our first conversation": the user may have remembered details (the demo user's are seeded, the
        # greeting says "Welcome back") or have deleted their earlier sessions
        return "I have no earlier conversation with you on record, so there's nothing to look back on yet."
    quoted, more, asked_only = found
    tail = f"{_more(more)} (the Sessions page has it all)" if more > 0 else ""
    return f"Last time, {on_day(data.get('date'))}, you {'asked' if asked_only else 'told'} me: {quoted}{tail}."


def today_so_far(said: list[str], held: dict[str, Any], today: dt.date) -> str:
    """'What did we talk about today?': the other conversations of today (`held` is recall_conversations'
    output for today), then this one; this one alone when there were none."""
    quoted = _quoted_per_conversation(held) if str(held.get("dates")) == today.isoformat() else []
    now = this_conversation(said)
    if not quoted:
        return now
    if now.startswith("We've only just started"):
        now = "Nothing new in this conversation yet."
    count = len(quoted) + int(held.get("more_conversations") or 0)
    where = "another conversation" if count == 1 else f"{count} other conversations"
    lines = ", then ".join(q for _, q, _ in quoted)
    return f"Earlier today, in {where}, you told me: {lines}{_more(sum(m for *_, m in quoted))}. {now}"


def held_conversations(data: dict[str, Any]) -> str:
    """recall_conversations: what the user told the agent on the days asked for, in their words, conversation
    by conversation; that they did not talk then, when they did not."""
    first, _, last = str(data.get("dates") or "").partition(" to ")
    when = f"between {on_day(first)[3:]} and {on_day(last)[3:]}" if last else on_day(first)
    quoted = _quoted_per_conversation(data)
    if not quoted:
        return f"We didn't talk {when}."
    lead = when[0].upper() + when[1:]
    count = len(quoted) + int(data.get("more_conversations") or 0)
    if count == 1:
        return f"{lead}, you told me: {quoted[0][1]}{_more(quoted[0][2])}."
    said = []
    for conversation, lines, more in quoted:
        at = f"at {conversation.get('started')}"
        at = f"On {on_day(conversation.get('date'))[3:]} {at}" if last else at[0].upper() + at[1:]
        said.append(f"{at}{' you told me' if not said else ''}: {lines}{_more(more)}")
    shown = f" (the latest {len(quoted)} here; the Sessions page has them all)" if count > len(quoted) else ""
    times = "twice" if count == 2 else f"{count} times"
    return f"{lead}, we talked {times}{shown}. {'. '.join(said)}."


def _quoted_per_conversation(data: dict[str, Any]) -> list[tuple[dict[str, Any], str, int]]:
    """recall_conversations' conversations with the user's lines quoted, and how many more they said."""
    out = []
    for conversation in data.get("conversations") or []:
        found = _quoted_from({"found": True} | conversation) if isinstance(conversation, dict) else None
        if found:
            out.append((conversation, *found[:2]))
    return out


def this_conversation(said: list[str]) -> str:
    """What the user told the agent so far in this conversation (before the question): their statements, in
    their words; greetings, thanks and questions left out."""
    substantial = _once(
        [line for line in said if len(line.split()) >= 3 and not SMALLTALK_LINE.match(line) and not is_question(line)]
    )
    if not substantial:
        return "We've only just started: you haven't told me anything in this conversation yet."
    quoted = "; ".join(f"“{quote(line, 160)}”" for line in substantial[:LAST_CONVERSATION_QUOTED])
    more = len(substantial) - LAST_CONVERSATION_QUOTED
    return f"So far in this conversation you told me: {quoted}{_more(more)}."


def on_day(date: Any) -> str:
    """'on Sunday, November 29' for an ISO date ('in an earlier conversation' without one)."""
    try:
        day = dt.date.fromisoformat(str(date))
    except ValueError:
        return "in an earlier conversation"
    return f"on {day:%A}, {day:%B} {day.day}"


def said_on(hit: dict[str, Any]) -> str:
    who = "you said" if hit.get("speaker") == "user" else "I said"
    when = on_day(hit.get("date"))
    return f"{when[0].upper() + when[1:]} {who}: “{quote(str(hit.get('content') or ''))}”"


def quote(text: str, limit: int = 240) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def relevant(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        hit
        for hit in data.get("hits", [])
        if is_relevant(hit.get("text_rank"), hit.get("vector_distance"), hit.get("rrf_score"))
    ]


def answers(data: dict[str, Any], user_text: str = "") -> list[dict[str, Any]]:
    """The relevant past turns that can answer: a question asked before ("What is my name?") matches the
    same question best and answers nothing, and neither does this brain's own "I don't remember …" or its
    refusal to keep a secret; nor a
    turn about someone or something else than the question's (`user_text`): "what is my dog's name?" is not
    answered by "You told me your name is Ada", which shares "name" (asked.about_what_was_asked)."""

    def answers(hit: dict[str, Any]) -> bool:
        said = str(hit.get("content") or "").strip()
        if said.endswith("?") or (user_text and not about_what_was_asked(user_text, "", said)):
            return False
        return hit.get("speaker") == "user" or not any(phrase in said for phrase in NOTHING_FOUND_PHRASES)

    return [hit for hit in relevant(data) if answers(hit)]


def conversations_found(data: dict[str, Any], *, after_memories: bool = False, user_text: str = "") -> str:
    hits = answers(data, user_text)
    if not hits:
        return "I couldn't find anything about that in our earlier conversations."
    # what the user said answers "that thing I mentioned" better than the agent's reply to it
    top = next((hit for hit in hits[:3] if hit.get("speaker") == "user"), hits[0])
    found = f"{said_on(top)} (RRF score {top['rrf_score']:.4f})."
    if top.get("text_rank") is None:
        # near in meaning only, no word of the question in it: "the trail I mentioned" finds "We hiked the Cedar
        # Creek Loop", but "my car?" finds "a blue bike" as near. Say it is the closest, not that it is the answer.
        lead = "I don't have that saved as a memory. " if after_memories else ""
        return lead + CLOSEST_LEAD + found
    lead = (
        "I don't have that saved as a memory, but I found it in our earlier conversations. " if after_memories else ""
    )
    return lead + found


def search_dates(sentence: str, today: dt.date | None) -> dict[str, str]:
    """from_date and to_date for the days the user named ("last week"), as a model would fill them in."""
    window = mentioned_in(sentence, today) if today else None
    return {"from_date": window.first.isoformat(), "to_date": window.last.isoformat()} if window else {}


def held_on(when: str, today: dt.date | None) -> dict[str, str] | None:
    """recall_conversations' dates when `when` is nothing but a time placed relative to `today` ("yesterday",
    "on Monday", "last week"); None otherwise."""
    window = mentioned_in(when, today) if today else None
    if window is None or " ".join(when.lower().split()) not in (window.said_as, f"on {window.said_as}"):
        return None
    last = {"to_date": window.last.isoformat()} if window.last != window.first else {}
    return {"from_date": window.first.isoformat()} | last


def _data(output: str) -> dict[str, Any]:
    try:
        data = json.loads(output)
    except (TypeError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def windowed_search_answered_nothing(results: list[tuple[str, dict[str, Any], str, bool]]):
    """This turn's search of earlier conversations kept to the days the user named, when nothing it found
    answers; None when it answered, or when it ran without dates."""
    for result in results:
        name, args, output, is_error = result
        if name == "search_past_conversations" and not is_error and ("from_date" in args or "to_date" in args):
            return None if answers(_data(output)) else result
    return None


def dates_searched(result: tuple[str, dict[str, Any], str, bool]) -> str:
    return str(_data(result[2]).get("searched_dates") or "those days")
