"""What the user wants, from one utterance: an intent and the tool calls that serve it.

`classify(text, today)` is public: the labelled set in tests/data/brain_utterances.jsonl measures its intent
accuracy. The rules are tried in a fixed order (the first that applies wins), one function each below.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from agent.brain import patterns as p
from agent.brain.earlier import held_on, search_dates
from agent.brain.facts import (
    NOTE_PREFIX,
    Fact,
    forget_target,
    parse_facts,
    search_query,
    slot_for,
)
from agent.brain.names import a_name, called, called_and_full_name, name_only, without_called
from agent.brain.replies import (
    ASK_ORDER_NUMBER,
    ASK_WHAT_TO_REMEMBER,
    IDENTITY_REPLY,
    SECRET_REPLY,
    UNFINISHED_REPLY,
    smalltalk_reply,
)
from agent.brain.text import clean, content_words, last_words, strip_end
from agent.sensitive import secret_reason

INTENTS = ("remember", "recall", "forget", "list_memories", "search_memories", "past_conversations",
           "update_profile", "lookup_order", "knowledge", "smalltalk", "identity")  # fmt: skip
ToolCall = tuple[str, dict[str, Any]]


@dataclass
class Intent:
    name: str
    calls: list[ToolCall] = field(default_factory=list)
    reply: str | None = None  # for intents answered without a tool
    slot: str | None = None


@dataclass(frozen=True)
class _Utterance:
    raw: str  # cleaned, punctuation kept
    body: str  # without the final full stop or exclamation mark
    lower: str
    today: date | None = None  # what "last week" is relative to; None: dates are not searched by


def classify(text: str, today: date | None = None) -> Intent:
    """Map one user utterance to an intent and the tool calls that serve it. With `today`, a search of earlier
    conversations keeps to the days the utterance names ("last week")."""
    said = _utterance(text, today)
    if not said.raw:
        return Intent("smalltalk", reply="I didn't catch that. Could you say it again?")
    for rule in _RULES:
        intent = rule(said)
        if intent is not None:
            return intent
    return Intent("smalltalk", reply=smalltalk_reply(said.lower))


def _utterance(text: str, today: date | None = None) -> _Utterance:
    raw = clean(text)
    body = raw.rstrip(".! ")
    return _Utterance(raw=raw, body=body, lower=body.lower(), today=today)


# --- the rules, in the order they are tried -------------------------------------------------------


def _identity(said: _Utterance) -> Intent | None:
    return Intent("identity", reply=IDENTITY_REPLY) if _first(p.IDENTITY, said.body) else None


def _order_with_number(said: _Utterance) -> Intent | None:
    order_id = p.order_id_in(said.body)
    if order_id and not p.FORGET.match(said.body):
        return Intent("lookup_order", calls=[("lookup_order", {"order_id": order_id})])
    return None


def _forget(said: _Utterance) -> Intent | None:
    forget = p.FORGET.match(said.body)
    if not forget:
        return None
    slot = forget_target(forget.group("rest"))
    if slot is None:
        return Intent(
            "forget",
            reply="I can only forget one thing at a time. Tell me which one, like "
            "'forget my favorite color', or delete everything on the Memories page.",
        )
    if slot == "":
        return Intent("forget", reply="Which detail should I forget? For example: 'forget my favorite color'.")
    return Intent("forget", calls=[("forget_detail", {"memory_type": slot})], slot=slot)


def _list(said: _Utterance) -> Intent | None:
    calls = [("list_user_memories", {})]
    return Intent("list_memories", calls=calls) if _first(p.LIST, said.body) else None


def _this_conversation(said: _Utterance) -> Intent | None:
    """'what did we talk about so far?': answered from this conversation's own turns (agent/brain/llm.py)."""
    return Intent("this_conversation") if p.THIS_CONVERSATION.match(said.raw) else None


def _conversations_on(said: _Utterance) -> Intent | None:
    """'what did we talk about yesterday / on Monday / last week?': the conversations held on those days;
    '... today?' is today's and this one."""
    match = p.CONVERSATIONS_ON.match(said.raw)
    dates = held_on(match.group("when"), said.today) if match else None
    if dates is None:
        return None  # "what did we talk about the trail?" names no day
    return Intent("today" if dates == {"from_date": str(said.today)} else "past_conversations",
                  calls=[("recall_conversations", dates)])  # fmt: skip


def _last_conversation(said: _Utterance) -> Intent | None:
    calls = [("recall_last_conversation", {})]
    return Intent("past_conversations", calls=calls) if p.LAST_CONVERSATION.match(said.raw) else None


def _past_conversation(said: _Utterance) -> Intent | None:
    """'what was that trail I mentioned last week?': search what was said in earlier conversations."""
    match = _first(p.PAST_CONVERSATION, said.body)
    if not match:
        return None
    query = strip_end(match.groupdict().get("q") or "") or said.body
    dates = search_dates(said.raw, said.today)  # "last week": the days a model would search
    return Intent("past_conversations", calls=[("search_past_conversations", {"query": query} | dates)])


def _search(said: _Utterance) -> Intent | None:
    search = _first(p.SEARCH, said.body)
    if not search:
        return None
    query = strip_end(search.group("q")) or said.body
    asks_about_the_world = re.search(r"\bknow about\b", search.group(0), re.I) and not re.search(
        r"\b(?:my|me|mine|i)\b", query, re.I
    )
    if asks_about_the_world:
        return Intent("knowledge", calls=[("search_knowledge", {"query": said.body})])
    if re.search(r"\bmy\b", query, re.I):  # "about my family": with the slots that topic is kept under
        query = search_query(query)
    return Intent("search_memories", calls=[("search_memories", {"query": query})])


def _profile(said: _Utterance) -> Intent | None:
    """A change to the profile: name, email, time zone, language or units."""
    body = said.body
    name = _first(p.NAME, body) or p.IM_NAME.match(body)
    if name and a_name(value := name_only(name.group("v"))):  # not "call me back"
        return _name_intent(value, body)
    email = p.EMAIL.search(body)
    if email and not p.is_question(body):
        return _profile_intent("email", email.group("v"))
    timezone = _first(p.TIMEZONE, body)
    if timezone:
        value = timezone.group("v")
        return _profile_intent("timezone", p.TIMEZONE_NAMES.get(value.lower(), value))
    language = _first(p.LANGUAGE, body)
    if language and language.group("v").lower() in p.LANGUAGES:
        return _profile_intent("preferred_language", language.group("v").capitalize())
    units = p.UNITS.search(body)
    if units:
        return _profile_intent("preferences", json.dumps({"units": units.group("v").lower()}))
    return None


def _recall(said: _Utterance) -> Intent | None:
    for pattern, slot in p.RECALL:
        match = pattern.search(said.body)
        if not match:
            continue
        if slot is None:  # "do you remember where I live?" -> the slot the inner phrase names
            return _recall_inner(strip_end(match.group("q")), said.body)
        if slot == "?":
            subject = match.group("s")
            # an order's status, but for a kept one ("what's my usual order?": the coffee the user orders)
            if p.ORDERISH.search(subject) and slot_for(subject) != "favorite_drink":
                return Intent("lookup_order", reply=ASK_ORDER_NUMBER)
            slot = slot_for(subject)
        return _recall_slot(slot)
    return None


def _remember_asked(said: _Utterance) -> Intent | None:
    """'remember that ...', 'can you note ...'."""
    body = said.body
    if p.REMEMBER_NOTHING.match(strip_end(body)):
        return Intent("remember", reply=ASK_WHAT_TO_REMEMBER)
    remember = p.REMEMBER.match(body)
    if not remember or (body.endswith("?") and not re.match(r"^(?:please )?(?:can|could|would|will) you ", body, re.I)):
        return None
    rest = strip_end(remember.group("rest"))
    facts = parse_facts(rest) or [note_fact(rest)]
    if len(facts) == 1 and facts[0].memory_type == "name":
        return _name_intent(facts[0].content, rest)
    return _remember(facts)


def reports_a_problem(text: str) -> bool:
    """Whether `text` reports or asks about a problem with the shop's products (`_support`)."""
    return _support(_utterance(text)) is not None


def _support(said: _Utterance) -> Intent | None:
    """A problem with the shop's products, reported or asked about: 'my machine shows E03', 'my grinder is
    making a weird noise, what should I do?'. The knowledge base answers it; it is not a fact about the user."""
    lower = said.lower
    error_code = re.search(r"\b(?:error|shows?|says|showing|flashing|displays?|got)\b.*\be\d{2}\b", lower)  # E03
    product = re.search(r"\b" + p.PRODUCT + r"\b", lower)
    if error_code or (product and p.ASKS_FOR_HELP.search(lower)):
        return Intent("knowledge", calls=[("search_knowledge", {"query": said.body})])
    return None


def _statement(said: _Utterance) -> Intent | None:
    """A plain statement of a fact: 'I live in Denver'; one about oneself that fits no slot is kept as a note."""
    if p.is_question(said.body):
        return None
    unfinished = _UNFINISHED.search(strip_end(said.body))
    if unfinished and re.match(r"^(?:i|i'm|i've|my)\b", said.body, re.I):
        # a spoken sentence cut at a pause ("my favorite drink is…"): storing it kept "is" as the value
        return Intent("remember", reply=UNFINISHED_REPLY.format(said=last_words(strip_end(said.body))))
    facts = parse_facts(said.body)
    name = next((f.content for f in facts if f.memory_type == "name"), None) or called(said.body, capitalised_only=True)
    if name:  # "By the way, my name is Ada", "I'm a nurse, call me Jo": the profile's name too
        return _name_intent(name, said.body)
    if facts:
        return _remember(facts)
    statement = _about_me(said.body)
    return _remember([note_fact(statement)]) if statement else None


# a statement that ends on one of these words stopped before its point
_UNFINISHED = re.compile(
    r"\b(?:is|are|was|were|am|i'm|my|the|a|an|to|of|in|at|on|for|with|and|or|but|from|called|named|um|uh|er)$",
    re.I,
)


def _about_me(body: str) -> str | None:
    """`body` without its lead-in when it is a statement about the user worth keeping ('I play the guitar')."""
    text = re.sub(
        r"^(?:(?:also|and|oh|so|well|by the way|btw|fyi|actually|just so you know|no wait|no|wait|sorry)[,:!]? +)+",
        "",
        strip_end(body),
        flags=re.I,
    )
    if len(text.split()) < 2 or not re.match(r"^(?:i|i'm|i've|my|we|we're|we've)\b", text, re.I):
        return None
    if p.NOT_ABOUT_ME.search(text) or p.order_id_in(text):
        return None
    return text


def note_fact(statement: str) -> Fact:
    """A free-form note: the user's own words, under a slot named by its first content words."""
    words = [
        w for w in content_words(statement) if w not in ("have", "has", "got", "ve", "m", "re", "ll", "d", "s", "t")
    ]
    return Fact(NOTE_PREFIX + "_".join(words[:3]) if words else "note", statement, 0.5)


def _order_without_number(said: _Utterance) -> Intent | None:
    lower = said.lower
    asks = re.search(
        r"\b(?:where(?:'s| is)|status of|track|check on|what happened to|has) my (?:order|package|parcel|"
        r"shipment|delivery)\b",
        lower,
    ) or re.fullmatch(r"(?:where(?:'s| is) )?my (?:order|package)\??", lower)
    return Intent("lookup_order", reply=ASK_ORDER_NUMBER) if asks else None


def _smalltalk(said: _Utterance) -> Intent | None:
    if _first(p.SMALLTALK, said.body) and len(said.body.split()) <= 8:
        return Intent("smalltalk", reply=smalltalk_reply(said.lower))
    return None


def _personal_question(said: _Utterance) -> Intent | None:
    """A question about the user that names no known slot: search their memories."""
    lower = said.lower
    personal = re.search(
        r"\b(?:my|me|mine)\b|\b(?:do|did|am|have|was|were) i\b|"
        r"\bi (?!(?:need|want|can|could|should|would|will|order|ordered|buy|bought|pay|paid)\b)[a-z']+\b",
        lower,
    )
    counts_mine = re.match(r"^how (?:many|much|often|long)\b.*\b(?:do|did|have|am) i\b", lower)
    # "what was that ramen restaurant called?": "that" points back to something said (went to the shop's articles)
    personal = personal or re.match(r"^(?:\w+,? )?what (?:was|were) (?:that|those)\b", lower)
    about_the_shop = re.search(
        r"\b(?:your|kestrel|shipping|ship|warranty|return|refund|club|subscription|delivery|order \d|"
        r"you (?:sell|have|offer|ship|stock|recommend))\b",
        lower,
    )
    tell_me_about = re.match(r"^(?:tell me|talk to me) about my\b", lower)
    procedural = p.PROCEDURAL.match(said.body) and not counts_mine
    if (p.is_question(said.raw) or tell_me_about) and not procedural and personal and not about_the_shop:
        return Intent("recall", calls=[("search_memories", {"query": search_query(said.body)})])
    return None


def _knowledge(said: _Utterance) -> Intent | None:
    if p.is_question(said.raw) or len(said.body.split()) >= 3:
        return Intent("knowledge", calls=[("search_knowledge", {"query": said.body})])
    return None


_RULES = (_identity, _order_with_number, _forget, _list, _conversations_on, _this_conversation, _last_conversation,
          _past_conversation, _search, _profile, _recall, _remember_asked, _support, _statement,
          _order_without_number, _smalltalk, _personal_question, _knowledge)  # fmt: skip


# --- helpers ---------------------------------------------------------------------------------------


def _first(pattern_list: list[re.Pattern], text: str) -> re.Match | None:
    for pattern in pattern_list:
        match = pattern.search(text)
        if match:
            return match
    return None


def _recall_inner(inner: str, body: str) -> Intent:
    """'do you remember <inner>?': the slot `inner` names, else a search with it."""
    inner_intent = classify(inner + "?")
    if inner_intent.name == "recall" and inner_intent.calls[0][0] == "recall_detail":
        return inner_intent
    if re.match(r"^(?:(?:what|where|when|who|which) (?:my|i)|my)\b", inner, re.I):
        return _recall_slot(slot_for(inner))
    return Intent("recall", calls=[("search_memories", {"query": inner or body})])


def _recall_slot(slot: str) -> Intent:
    return Intent("recall", calls=[("recall_detail", {"memory_type": slot})], slot=slot)


def _profile_intent(field_name: str, value: str) -> Intent:
    """The profile field, and a memory of the same name: "what's my email?" recalls memories, not the profile
    (it said "I don't remember your email yet" right after saving it)."""
    return Intent(
        "update_profile",
        calls=[
            ("update_profile", {"field": field_name, "value": value}),
            ("remember_detail", {"memory_type": field_name, "content": value}),
        ],
    )


def _name_intent(name: str, body: str = "") -> Intent:
    """The name goes to the profile and is remembered as a fact too; any other fact of the same message
    ("my name is Ada and I live in Denver") is remembered with it, a secret never. Of two names, the one the user
    asks to be called is the name ("my name is Joanna but call me Jo": Jo), the other the `full_name`."""
    facts = parse_facts(without_called(body))  # "I'm a nurse, call me Jo": the job too
    name, full_name = called_and_full_name(name, body, [fact.content for fact in facts if fact.memory_type == "name"])
    others = [Fact("full_name", full_name, 0.9)] if full_name else []
    others += [
        fact
        for fact in facts
        if fact.memory_type not in (("name", "full_name") if full_name else ("name",))
        and not secret_reason(f"{fact.memory_type.replace('_', ' ')} {fact.content}")
    ]
    return Intent(
        "update_profile",
        calls=[
            ("update_profile", {"field": "name", "value": name}),
            ("remember_detail", {"memory_type": "name", "content": name}),
            *(("remember_detail", {"memory_type": f.memory_type, "content": f.content}) for f in others[:4]),
        ],
    )


def remember_note(statement: str) -> Intent:
    """Keep a statement no rule understood in the user's own words (a note)."""
    return _remember([note_fact(strip_end(clean(statement)))])


def _remember(facts: list[Fact]) -> Intent:
    if any(secret_reason(f"{fact.memory_type.replace('_', ' ')} {fact.content}") for fact in facts):
        return Intent("remember", reply=SECRET_REPLY)
    calls = [("remember_detail", {"memory_type": f.memory_type, "content": f.content}) for f in facts[:5]]
    return Intent("remember", calls=calls, slot=facts[0].memory_type)
