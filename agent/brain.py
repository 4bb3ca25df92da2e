"""The offline demo brain: a deterministic, rule-based stand-in for an LLM.

No instruction-tuned model ships with this project, so by default the agent
talks through this brain. It implements livekit's ``llm.LLM`` and goes through
the normal function-calling path: for a user message it recognises the intent
and answers with a tool call chunk; once the tool output is in the chat
context it writes its reply from that output. It never invents facts: what it
says about the user comes from the tools.

Asked what it is, it says so and explains how to configure a real model
(``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` / ``LLM_MODEL``, or LiveKit credentials).

``classify(text)`` is public: the labelled set in
``tests/data/brain_utterances.jsonl`` measures its intent accuracy, and
``agent.extraction`` reuses the fact parser (``parse_fact``).
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from livekit.agents import llm
from livekit.agents.llm import ChatChunk, ChoiceDelta, FunctionToolCall
from livekit.agents.types import DEFAULT_API_CONNECT_OPTIONS, NOT_GIVEN, APIConnectOptions, NotGivenOr

from agent.chat_format import instruction_of, user_words

PRELOAD_HEADER = "What you already know about this user (loaded before the conversation):"
RECALL_HEADER = "Possibly relevant memories for the user's next message"

INTENTS = ("remember", "recall", "forget", "list_memories", "search_memories", "update_profile",
           "lookup_order", "knowledge", "smalltalk", "identity")

CONFIGURE_HINT = (
    "To use a real model, set OPENAI_API_KEY (and OPENAI_BASE_URL plus LLM_MODEL for Ollama, vLLM or "
    "LM Studio), or set LIVEKIT_URL, LIVEKIT_API_KEY and LIVEKIT_API_SECRET to use LiveKit Inference "
    "(LLM_MODEL picks the model), then restart."
)
IDENTITY_REPLY = (
    "I'm the offline demo brain: a small rule-based program standing in for a language model, so this "
    "playground works with no accounts and no network. I still call the real tools (memories, profile, "
    "orders, the Kestrel Coffee knowledge base) and answer from what they return, but I only understand "
    "simple phrasings. " + CONFIGURE_HINT
)

# --- slots --------------------------------------------------------------------

# Phrases people use for a fact -> the slot it is stored under. Shared by the
# remember, recall and forget paths and by post-session extraction, so "where I
# live", "my address" and "I live in Denver" all meet in `home_city`.
SLOT_SYNONYMS: dict[str, str] = {
    "where i live": "home_city", "where i'm living": "home_city", "where i am living": "home_city",
    "home": "home_city", "home city": "home_city", "city": "home_city", "address": "home_city",
    "home address": "home_city", "hometown": "home_city", "location": "home_city", "where i'm based": "home_city",
    "where i am": "home_city",
    "where i work": "employer", "work": "employer", "workplace": "employer", "employer": "employer",
    "company": "employer", "job": "job", "occupation": "job", "profession": "job", "what i do": "job",
    "what i do for work": "job", "what i do for a living": "job",
    "car": "car", "vehicle": "car", "what i drive": "car", "what car i drive": "car", "ride": "car",
    "allergy": "allergies", "allergies": "allergies", "what i'm allergic to": "allergies",
    "what i am allergic to": "allergies", "that i'm allergic": "allergies",
    "name": "name", "my name": "name", "who i am": "name",
    "favorite colour": "favorite_color", "colour": "favorite_color", "color": "favorite_color",
    "drink": "favorite_drink", "usual drink": "favorite_drink", "coffee order": "favorite_drink",
    "usual order": "favorite_drink", "usual": "favorite_drink", "usual coffee": "favorite_drink",
    "coffee": "favorite_drink", "favorite coffee": "favorite_drink",
    "birthday": "birthday", "birth date": "birthday", "date of birth": "birthday",
    "pet": "pet", "pets": "pet",
    "diet": "diet", "dietary": "diet",
    "machine": "machine_owned", "espresso machine": "machine_owned", "coffee machine": "machine_owned",
}

_STOPWORDS = {
    "a", "an", "the", "my", "me", "i", "is", "are", "was", "to", "of", "and", "or", "in", "on", "at", "for",
    "that", "this", "it", "be", "do", "you", "your", "what", "please", "about", "with", "from", "by", "just",
    "really", "so", "very", "too", "also", "now", "again", "still", "am", "i'm", "im", "we", "our", "us",
}

_LANGUAGES = ("english", "spanish", "french", "german", "italian", "portuguese", "japanese", "chinese",
              "mandarin", "korean", "dutch", "hindi", "arabic", "swedish", "polish", "russian", "turkish")
_TIMEZONE_NAMES = {
    "pacific": "America/Los_Angeles", "mountain": "America/Denver", "central": "America/Chicago",
    "eastern": "America/New_York", "utc": "UTC", "gmt": "Europe/London", "london": "Europe/London",
    "paris": "Europe/Paris", "berlin": "Europe/Berlin", "tokyo": "Asia/Tokyo", "sydney": "Australia/Sydney",
}


def _clean(text: str) -> str:
    text = (text or "").replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    text = re.sub(r"\bfavourite\b", "favorite", text, flags=re.IGNORECASE)
    text = re.sub(r"\bcolour\b", "color", text, flags=re.IGNORECASE)
    # speech-to-text writes "my favorite color's teal", and Whisper tiny often "my favorite colors teal"
    text = re.sub(r"\b(my (?:favorite|usual) [a-z]+?)(?:'s|s) (?!(?:are|were|is|was|include|and)\b)(?=[a-z0-9])",
                  r"\1 is ", text, flags=re.IGNORECASE)
    return re.sub(r"\s+", " ", text).strip()


def _strip_end(text: str) -> str:
    text = re.sub(r"\s*(,?\s*(please|thanks|thank you|ok|okay))+[.!?]*$", "", text.strip(), flags=re.IGNORECASE)
    return text.strip().strip(" .!?;:,\"'")


def slot_for(phrase: str) -> str:
    """'my favorite color' -> 'favorite_color'; 'where I live' -> 'home_city'."""
    phrase = _clean(phrase).lower().strip(" ?.!'\"")
    phrase = re.sub(r"^(that|what|the|about)\s+", "", phrase)
    phrase = re.sub(r"^(my|your)\s+", "", phrase)
    phrase = re.sub(r"'s\b", "", phrase)
    phrase = re.sub(r"\s+(is|are|was|were)$", "", phrase).strip()
    if phrase in SLOT_SYNONYMS:
        return SLOT_SYNONYMS[phrase]
    words = [w for w in re.findall(r"[a-z0-9]+", phrase) if w not in _STOPWORDS]
    if not words:
        return "note"
    joined = " ".join(words)
    if joined in SLOT_SYNONYMS:
        return SLOT_SYNONYMS[joined]
    return "_".join(words[:4])


def slot_words(slot: str) -> str:
    return slot.replace("_", " ")


def describe_fact(slot: str, content: str) -> str:
    """A fact as a clause about the user: 'you live in Denver', 'your favorite color is teal'."""
    content = content.strip().rstrip(".")
    templates = {
        "home_city": "you live in {c}", "employer": "you work at {c}", "job": "you work as {c}",
        "car": "you drive {c}", "allergies": "you're allergic to {c}", "name": "your name is {c}",
        "pet": "you have {c}", "diet": "your diet is {c}", "hometown": "you're from {c}",
    }
    if slot in templates:
        return templates[slot].format(c=content)
    if slot.startswith("likes_"):
        return f"you like {content}"
    return f"your {slot_words(slot)} is {content}"


# --- facts in statements ---------------------------------------------------------

@dataclass(frozen=True)
class Fact:
    memory_type: str
    content: str
    confidence: float  # how sure the parser is that this is a durable fact about the user


_DECLARATIVES: list[tuple[re.Pattern, Any, float]] = [
    (re.compile(r"^my name is (?P<c>.+)$", re.I), "name", 0.95),
    (re.compile(r"^my (?P<s>[\w' -]+?) (?:is|are|was) (?P<c>.+)$", re.I), None, 0.85),
    (re.compile(r"^i (?:live|reside|stay) in (?P<c>.+)$", re.I), "home_city", 0.9),
    (re.compile(r"^i(?:'m| am) (?:based|located) in (?P<c>.+)$", re.I), "home_city", 0.85),
    (re.compile(r"^i(?:'m| am) (?:originally )?from (?P<c>.+)$", re.I), "hometown", 0.8),
    (re.compile(r"^i work (?:at|for) (?P<c>.+)$", re.I), "employer", 0.85),
    (re.compile(r"^i work as (?:an? )?(?P<c>.+)$", re.I), "job", 0.85),
    (re.compile(r"^i(?:'m| am) (?:an? )?(?P<c>(?:\w+ )?(?:engineer|developer|teacher|nurse|doctor|designer|barista|"
                r"student|manager|lawyer|chef|baker|writer|artist|accountant|scientist|firefighter|veterinarian|"
                r"pilot|farmer|programmer))$", re.I), "job", 0.8),
    (re.compile(r"^i(?:'m| am) (?:severely |very |mildly )?allergic to (?P<c>.+)$", re.I), "allergies", 0.9),
    (re.compile(r"^i have an? (?P<c>.*allergy.*)$", re.I), "allergies", 0.85),
    (re.compile(r"^i drive (?:an? )?(?P<c>.+)$", re.I), "car", 0.85),
    (re.compile(r"^i (?:own|have) (?P<c>(?:an?|two|three|four|\d+) (?:\w+ )?(?:dogs?|cats?|pets?|rabbits?|"
                r"parrots?|hamsters?|fish|horses?)\b.*)$", re.I), "pet", 0.85),
    (re.compile(r"^i(?:'m| am) (?P<c>vegetarian|vegan|pescatarian|gluten[- ]free|keto|kosher|halal)$", re.I), "diet", 0.85),
    (re.compile(r"^i (?:was )?born (?:on|in) (?P<c>.+)$", re.I), "birthday", 0.8),
    (re.compile(r"^i(?:'m| am) (?P<c>\d{1,3}) years? old$", re.I), "age", 0.8),
    (re.compile(r"^i speak (?P<c>.+)$", re.I), "languages_spoken", 0.8),
    (re.compile(r"^i (?:(?:usually|always|normally) (?:drink|order|get|have)|drink) (?:an? )?(?P<c>.+?)(?: every (?:day|morning))?$", re.I),
     "favorite_drink", 0.7),
    (re.compile(r"^i (?:really )?(?:love|like|enjoy|adore) (?P<c>.+)$", re.I), "likes", 0.75),
    (re.compile(r"^i prefer (?P<c>.+)$", re.I), "preference", 0.75),
    # inverted: "Teal is my favorite color", "Denver is where I live". Only slot-like subjects, and never a
    # pronoun as the content, so "this is my first time" or "that is my question" stay out.
    (re.compile(r"^(?:an? )?(?P<c>(?!(?:it|this|that|these|those|there|here|what|which|who|he|she|they|we|you|i|my|mine)\b)"
                r"[\w'&.,-]+(?: [\w'&.,-]+){0,5}) (?:is|are) (?P<s>my (?:favorite|usual|preferred)(?: [\w' -]+?)?|"
                r"my (?:home|home city|hometown|city|employer|workplace|job|occupation|profession|car|birthday|"
                r"allergy|allergies|diet|pet)|where i (?:live|work|(?:'m|am) based))$", re.I), None, 0.8),
]


_STATEMENT_SPLIT = re.compile(r"(?<=[.!?;])\s+|,?\s+(?:and|but|also|plus)\s+(?=(?:i|i'm|my|i've)\b)", re.I)


def split_statements(text: str) -> list[str]:
    """'I live in Boulder and I work at Globex.' -> ['I live in Boulder', 'I work at Globex.']"""
    return [part.strip() for part in _STATEMENT_SPLIT.split(text) if part and part.strip()]


def parse_facts(text: str) -> list[Fact]:
    """Every fact in a message, one per slot (the last mention of a slot wins)."""
    found: dict[str, Fact] = {}
    for part in split_statements(text):
        fact = parse_fact(part)
        if fact is not None:
            found.pop(fact.memory_type, None)
            found[fact.memory_type] = fact
    return list(found.values())


def parse_fact(statement: str) -> Fact | None:
    """A durable-looking fact in one statement, or None. 'I live in Denver' -> home_city: Denver."""
    text = _strip_end(_clean(statement))
    text = re.sub(r"^(?:also|and|oh|so|well|by the way|btw|fyi|actually|just so you know)[, ]+", "", text, flags=re.I)
    if not text or text.endswith("?"):
        return None
    for pattern, slot, confidence in _DECLARATIVES:
        match = pattern.match(text)
        if not match:
            continue
        content = _strip_end(match.group("c"))
        if not content or len(content) > 300:
            return None
        if slot is None:
            subject = match.group("s")
            if re.fullmatch(r"(?:latest |last |recent |new )?(?:order|package|parcel|shipment|delivery)s?", subject, re.I) \
                    or re.search(r"\d", subject):
                return None  # "my order is late" is a support question, not a fact about the user
            slot = slot_for(subject)
        elif slot == "likes":
            words = [w for w in re.findall(r"[a-z0-9]+", content.lower()) if w not in _STOPWORDS]
            slot = "likes_" + "_".join(words[:2]) if words else "likes"
        return Fact(memory_type=slot, content=content, confidence=confidence)
    return None


# --- intents ----------------------------------------------------------------------

@dataclass
class Intent:
    name: str
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    reply: str | None = None  # for intents answered without a tool
    slot: str | None = None


_QUESTION_START = re.compile(
    r"^(what|what's|whats|where|where's|when|when's|who|who's|whom|which|why|how|how's|is|are|am|do|does|did|"
    r"can|could|would|will|should|shall|may|have|has|tell me|remind me|any|anything)\b", re.I)
_IDENTITY = [
    re.compile(r"\b(what|who) (are|r) (you|u)\b", re.I),
    re.compile(r"\bare (you|u) (an? |the )?(real |actual )?(ai|bot|robot|human|person|llm|language model|chatgpt|"
               r"gpt|machine|program|rule[- ]based|offline)\b", re.I),
    re.compile(r"\b(which|what) (llm|model|language model|ai model|brain|ai)\b.*\b(are you|is this|do you|running|use)\b", re.I),
    re.compile(r"\b(which|what) (llm|language model|ai model|brain)\b", re.I),
    re.compile(r"\b(configure|set up|setup|switch to|plug in|connect|hook up)\b.*\b(llm|model|openai|ollama|gpt|brain)\b", re.I),
    re.compile(r"\b(real|actual|proper|better|smarter) (llm|model|language model|ai)\b", re.I),
    re.compile(r"\b(offline|demo) brain\b", re.I),
    re.compile(r"\bhow do you work\b|\bwhat can you do\b|\bare you smart\b|\bintroduce yourself\b", re.I),
]
_ORDER_NUMBER = re.compile(r"(?:\border\b|#)\s*(?:number|no\.?|num|id)?\s*[:#]?\s*(?P<id>[A-Za-z]*\d[\w-]*)", re.I)
_ORDERISH = re.compile(r"\b(order|package|parcel|shipment|delivery|shipped|ship|arrive|arrived|track|tracking|"
                       r"status|deliver|delivered)\b", re.I)
_ORDERISH_BARE = re.compile(r"\b(order|package|parcel|shipment|shipped|arrive|arrived|track|tracking|status|"
                            r"delivered)\b", re.I)
_BARE_NUMBER = re.compile(r"(?<![\w$.])#?(?P<id>\d{3,8})(?![\w.%])")
_FORGET = re.compile(r"^(?:(?:hey|ok|okay|please|and|also|now)[, ]+)*(?:can you |could you |would you |i want you to |"
                     r"i'd like you to )?(?:please )?(?:forget|delete|erase|remove|wipe|clear|unlearn|"
                     r"stop remembering|don't remember|do not remember|no longer remember)\b(?P<rest>.*)$", re.I)
_LIST = [
    re.compile(r"\bwhat (?:do|did|else do) you (?:know|remember|have) (?:about|on) me\b", re.I),
    re.compile(r"\bwhat (?:have|did) you (?:remembered|saved|stored|learned|learnt|noted|memorized|kept)\b", re.I),
    re.compile(r"\b(?:list|show|read|give|tell)(?: me)?(?: all)?(?: of)? (?:my|your) (?:memories|memory|notes|facts)\b", re.I),
    re.compile(r"\b(?:list|show|tell me|give me|read me)\b.*\b(?:everything|all|what) you (?:know|remember|have)\b", re.I),
    re.compile(r"\beverything you (?:know|remember) about me\b", re.I),
    re.compile(r"\bwhat(?:'s| is) in (?:my|your) memor(?:y|ies)\b", re.I),
    re.compile(r"\bwhat do you know\??$", re.I),
    re.compile(r"^(?:my )?memories\??$", re.I),
]
_SEARCH = [
    re.compile(r"\bsearch (?:my |your )?memor(?:y|ies) (?:for|about) (?P<q>.+)$", re.I),
    re.compile(r"\b(?:look up|find|search for) (?P<q>.+?) in (?:my |your )?memor(?:y|ies)\b", re.I),
    re.compile(r"\bwhat (?:do|did) you (?:know|remember) about (?!me\b)(?P<q>.+)$", re.I),
    re.compile(r"\bdo you (?:know|remember) anything about (?!me\b)(?P<q>.+)$", re.I),
    re.compile(r"\bwhat (?:did|have) i (?:tell|told|say|said) (?:you )?about (?P<q>.+)$", re.I),
    re.compile(r"\banything (?:in (?:my|your) memor(?:y|ies) )?about (?P<q>.+?) (?:in (?:my|your) memor(?:y|ies)|saved|remembered)\b", re.I),
]
_NAME = [
    re.compile(r"^(?:(?:hi|hello|hey)[,! ]+)?(?:please |you can |just |from now on,? )?call me (?P<v>[\w'. -]+)$", re.I),
    re.compile(r"^(?:(?:hi|hello|hey)[,! ]+)?(?:my name is|my name's|i go by|i'm called|i am called|the name's) "
               r"(?P<v>[\w'. -]+)$", re.I),
]
_IM_NAME = re.compile(r"^(?i:(?:(?:hi|hello|hey)[,! ]+)?(?:i'm|i am) )(?P<v>[A-Z][a-z]+)$")
_EMAIL = re.compile(r"\b(?:my )?(?:e-?mail|email address) (?:is|=|:)?\s*(?P<v>[^\s@]+@[^\s@]+\.[A-Za-z]{2,})", re.I)
_TIMEZONE = [
    re.compile(r"\b(?:my )?time ?zone (?:is|=|:)\s*(?P<v>[A-Za-z_]+(?:/[A-Za-z_+-]+)*)", re.I),
    re.compile(r"\bi(?:'m| am) (?:in|on) (?:the )?(?P<v>[A-Za-z_]+(?:/[A-Za-z_+-]+)*) (?:time ?zone|time)\b", re.I),
    re.compile(r"\bset my time ?zone to (?P<v>[A-Za-z_]+(?:/[A-Za-z_+-]+)*)", re.I),
]
_LANGUAGE = [
    re.compile(r"\bmy (?:preferred )?language is (?P<v>\w+)", re.I),
    re.compile(r"\b(?:please )?(?:speak|talk to me|talk|reply|answer|respond|write)(?: to me)?(?: in)? (?P<v>\w+)", re.I),
    re.compile(r"\bi(?:'d)? prefer (?:to speak |speaking )?(?P<v>\w+)(?: as my language)?$", re.I),
    re.compile(r"\bset my (?:preferred )?language to (?P<v>\w+)", re.I),
]
_UNITS = re.compile(r"\b(?:i prefer|use|please use|set my units to) (?P<v>metric|imperial)(?: units)?\b", re.I)
_REMEMBER = re.compile(r"^(?:(?:hey|ok|okay|and|also|oh)[, ]+)*(?:please |can you |could you |would you )?"
                       r"(?:remember|note|keep in mind|don't forget|do not forget|make a note|memorize|save|store)"
                       r"(?: (?:that|this|this fact))?[,:]?\s+(?P<rest>.+)$", re.I)
_RECALL = [
    (re.compile(r"\bdo you (?:still )?(?:remember|know|recall) (?P<q>(?:what|where|when|who|which|how|if|whether|my)\b.*)$", re.I), None),
    (re.compile(r"\b(?:can|could) you (?:remind me|tell me|recall|remember)(?: of| about)? (?P<q>(?:what|where|when|who|which|my)\b.*)$", re.I), None),
    (re.compile(r"\bremind me (?:of |what |about )?(?P<q>(?:what |where |when |who )?.*\bmy\b.*)$", re.I), None),
    (re.compile(r"\bwhere do i (?:live|stay|reside)\b|\bwhere(?:'s| is) (?:my )?home\b|\bwhat city do i live in\b", re.I), "home_city"),
    (re.compile(r"\bwhere do i work\b|\bwho do i work for\b|\bwhat company do i work (?:at|for)\b", re.I), "employer"),
    (re.compile(r"\bwhat do i do(?: for (?:work|a living))?\??$|\bwhat(?:'s| is) my job\b", re.I), "job"),
    (re.compile(r"\bwhat (?:car|vehicle) do i (?:drive|have|own)\b|\bwhat do i drive\b", re.I), "car"),
    (re.compile(r"\bwhat am i allergic to\b|\bam i allergic to anything\b|\bwhat (?:are )?my allergies\b|"
                r"\bdo i have (?:any )?allergies\b", re.I), "allergies"),
    (re.compile(r"\bwho am i\b|\bwhat(?:'s| is) my name\b|\bdo you know my name\b|\bwhat do you call me\b", re.I), "name"),
    (re.compile(r"\bwhat do i (?:usually |normally |always )?(?:drink|order)\b", re.I), "favorite_drink"),
    (re.compile(r"\b(?:what|which|who|when|where)(?:'s|s| is| was| are| were)? (?:my|me) (?P<s>[\w' -]+?)(?: again)?\??$", re.I), "?"),
    (re.compile(r"\b(?:tell me|remind me) (?:what )?my (?P<s>[\w' -]+?)(?: is| was)?(?: again)?\??$", re.I), "?"),
    (re.compile(r"^my (?P<s>[\w' -]+?)\?$", re.I), "?"),
]
_PROCEDURAL = re.compile(r"^(?:how (?:do|can|should|would) i|can i|could i|should i|do i need|will i|may i|"
                         r"am i able|is it possible|what happens if i|what if i|what should i|how long|how much|"
                         r"how many|how often|why does|why is|why do)\b", re.I)
_SMALLTALK = [
    re.compile(r"^(?:hi|hello|hey|yo|hiya|howdy|greetings|good (?:morning|afternoon|evening|day))\b[\w ,!.]*$", re.I),
    re.compile(r"\b(?:thanks|thank you|thx|ty|cheers|much appreciated)\b", re.I),
    re.compile(r"^(?:bye|goodbye|good night|see you|see ya|later|talk (?:to you )?later|ttyl)\b", re.I),
    re.compile(r"^(?:ok|okay|cool|great|nice|awesome|sure|got it|alright|all right|yes|no|yep|nope|yeah|fine|perfect|"
               r"wow|lol|haha|hmm|i see|makes sense|sounds good|good|interesting)[.!? ]*$", re.I),
    re.compile(r"\bhow are (?:you|u)\b|\bhow(?:'s| is) it going\b|\bhow(?:'re| are) you doing\b|\bwhat's up\b|\bsup\b", re.I),
    re.compile(r"\bnice to (?:meet|see) you\b|\byou(?:'re| are) (?:great|awesome|helpful|funny|the best)\b", re.I),
]


def _question(text: str) -> bool:
    return text.endswith("?") or bool(_QUESTION_START.match(text))


def _first(patterns, text):
    for pattern in patterns:
        match = pattern.search(text)
        if match:
            return match
    return None


def _order_id(text: str) -> str | None:
    match = _ORDER_NUMBER.search(text)
    if match and re.search(r"\d", match.group("id")):
        return match.group("id").strip("-")
    if _ORDERISH_BARE.search(text):
        bare = _BARE_NUMBER.search(text)
        if bare:
            return bare.group("id")
    return None


def _forget_target(rest: str) -> str | None:
    """The slot named after 'forget'; None for 'everything'."""
    rest = _strip_end(rest)
    rest = re.sub(r"^(?:about|that|what you know about|what you remember about|the fact that|everything about)\s+", "",
                  rest, flags=re.I).strip()
    if re.fullmatch(r"(?:it|that|this)?\s*", rest, re.I):
        return ""
    if re.fullmatch(r"(?:everything|all|all of it|all my (?:memories|data|info|information)|it all|me|"
                    r"everything (?:about me|you know|you remember)|all (?:about me|you know))", rest, re.I):
        return None
    fact = parse_fact(rest)
    if fact:
        return fact.memory_type
    return slot_for(rest)


def classify(text: str) -> Intent:
    """Map one user utterance to an intent and the tool calls that serve it."""
    raw = _clean(text)
    if not raw:
        return Intent("smalltalk", reply="I didn't catch that. Could you say it again?")
    body = raw.rstrip(".! ")
    lower = body.lower()

    if _first(_IDENTITY, body):
        return Intent("identity", reply=IDENTITY_REPLY)

    order_id = _order_id(body)
    if order_id and not _FORGET.match(body):
        return Intent("lookup_order", calls=[("lookup_order", {"order_id": order_id})])

    forget = _FORGET.match(body)
    if forget:
        slot = _forget_target(forget.group("rest"))
        if slot is None:
            return Intent("forget", reply="I can only forget one thing at a time. Tell me which one, like "
                                            "'forget my favorite color', or delete everything on the Memories page.")
        if slot == "":
            return Intent("forget", reply="Which detail should I forget? For example: 'forget my favorite color'.")
        return Intent("forget", calls=[("forget_detail", {"memory_type": slot})], slot=slot)

    if _first(_LIST, body):
        return Intent("list_memories", calls=[("list_user_memories", {})])

    search = _first(_SEARCH, body)
    if search:
        query = _strip_end(search.group("q")) or body
        if re.search(r"\bknow about\b", search.group(0), re.I) and not re.search(r"\b(?:my|me|mine|i)\b", query, re.I):
            return Intent("knowledge", calls=[("search_knowledge", {"query": body})])
        return Intent("search_memories", calls=[("search_memories", {"query": query})])

    name = _first(_NAME, body) or _IM_NAME.match(body)
    if name:
        value = _strip_end(re.split(r"\b(?:and|but|because|so)\b|[,;]", name.group("v"))[0])
        if value:
            value = " ".join(part[:1].upper() + part[1:] for part in value.split())
            return Intent("update_profile", calls=[("update_profile", {"field": "name", "value": value}),
                                                   ("remember_detail", {"memory_type": "name", "content": value})])
    email = _EMAIL.search(body)
    if email and not _question(body):
        return Intent("update_profile", calls=[("update_profile", {"field": "email", "value": email.group("v")})])
    timezone = _first(_TIMEZONE, body)
    if timezone:
        value = timezone.group("v")
        value = _TIMEZONE_NAMES.get(value.lower(), value)
        return Intent("update_profile", calls=[("update_profile", {"field": "timezone", "value": value})])
    language = _first(_LANGUAGE, body)
    if language and language.group("v").lower() in _LANGUAGES:
        return Intent("update_profile", calls=[("update_profile", {"field": "preferred_language",
                                                                   "value": language.group("v").capitalize()})])
    units = _UNITS.search(body)
    if units:
        return Intent("update_profile", calls=[("update_profile", {"field": "preferences",
                                                                   "value": json.dumps({"units": units.group("v").lower()})})])

    for pattern, slot in _RECALL:
        match = pattern.search(body)
        if not match:
            continue
        if slot is None:  # "do you remember where I live?" -> the slot the inner phrase names
            inner = _strip_end(match.group("q"))
            inner_intent = classify(inner + "?")
            if inner_intent.name == "recall" and inner_intent.calls[0][0] == "recall_detail":
                return inner_intent
            if re.match(r"^(?:(?:what|where|when|who|which) (?:my|i)|my)\b", inner, re.I):
                slot = slot_for(inner)
                return Intent("recall", calls=[("recall_detail", {"memory_type": slot})], slot=slot)
            return Intent("recall", calls=[("search_memories", {"query": inner or body})])
        if slot == "?":
            subject = match.group("s")
            if _ORDERISH.search(subject):
                return Intent("lookup_order", reply="Sure, which order number? They look like 1001.")
            slot = slot_for(subject)
        return Intent("recall", calls=[("recall_detail", {"memory_type": slot})], slot=slot)

    remember = _REMEMBER.match(body)
    if remember and (not body.endswith("?") or re.match(r"^(?:please )?(?:can|could|would|will) you ", body, re.I)):
        rest = _strip_end(remember.group("rest"))
        facts = parse_facts(rest)
        if not facts:
            words = [w for w in re.findall(r"[a-z0-9]+", rest.lower()) if w not in _STOPWORDS]
            facts = [Fact("note_" + "_".join(words[:3]) if words else "note", rest, 0.5)]
        if len(facts) == 1 and facts[0].memory_type == "name":
            value = facts[0].content
            return Intent("update_profile", calls=[("update_profile", {"field": "name", "value": value}),
                                                   ("remember_detail", {"memory_type": "name", "content": value})])
        return _remember_intent(facts)

    if not _question(body):
        facts = parse_facts(body)
        if facts:
            return _remember_intent(facts)

    if re.search(r"\b(?:where(?:'s| is)|status of|track|check on|what happened to|has) my (?:order|package|parcel|"
                 r"shipment|delivery)\b", lower) or re.fullmatch(r"(?:where(?:'s| is) )?my (?:order|package)\??", lower):
        return Intent("lookup_order", reply="Sure, which order number? They look like 1001.")

    if _first(_SMALLTALK, body) and len(body.split()) <= 8:
        return Intent("smalltalk", reply=_smalltalk_reply(lower))

    personal = re.search(r"\b(?:my|me|mine)\b|\b(?:do|did|am|have|was|were) i\b|"
                         r"\bi (?:told|said|like|love|own|have|live|work|drive|prefer|usually|always)\b", lower)
    if _question(raw) and not _PROCEDURAL.match(body) and personal \
            and not re.search(r"\b(?:your|you|kestrel|shipping|warranty|return|refund|club|subscription)\b", lower):
        return Intent("recall", calls=[("search_memories", {"query": body})])

    if _question(raw) or len(body.split()) >= 3:
        return Intent("knowledge", calls=[("search_knowledge", {"query": body})])

    return Intent("smalltalk", reply=_smalltalk_reply(lower))


SECRET_REPLY = ("I'd rather not keep passwords, PINs, card or ID numbers, so I haven't saved that. "
                "Tell me something else about you, like your favorite coffee.")


def _remember_intent(facts: list[Fact]) -> Intent:
    from agent.sensitive import secret_reason

    if any(secret_reason(f"{f.memory_type.replace('_', ' ')} {f.content}") for f in facts):
        return Intent("remember", reply=SECRET_REPLY)
    calls = [("remember_detail", {"memory_type": f.memory_type, "content": f.content}) for f in facts[:5]]
    return Intent("remember", calls=calls, slot=facts[0].memory_type)


def _smalltalk_reply(lower: str) -> str:
    if re.search(r"\b(thanks|thank you|thx|cheers|appreciated)\b", lower):
        return "You're welcome! Anything else I can help with?"
    if re.match(r"^(bye|goodbye|good night|see you|see ya|later|talk|ttyl)", lower):
        return "Goodbye! I'll remember what you told me for next time."
    if re.search(r"\bhow are (you|u)\b|how's it going|how are you doing|what's up", lower):
        return "I'm doing well, thanks for asking! What can I do for you?"
    if re.match(r"^(hi|hello|hey|yo|hiya|howdy|greetings|good (morning|afternoon|evening|day))", lower):
        return ("Hello! Tell me something to remember, ask what I know about you, check an order like 1001, "
                "or ask about Kestrel Coffee.")
    return ("Okay. You can tell me something to remember, ask what I know about you, look up an order, "
            "or ask a question about Kestrel Coffee.")


# --- replies from tool output ------------------------------------------------------

def _load(output: str) -> Any:
    try:
        return json.loads(output)
    except (TypeError, ValueError):
        return output


def _sentence(text: str) -> str:
    text = text.strip()
    return text[:1].upper() + text[1:] if text else text


_ABBREVIATION = re.compile(r"\b(Co|Inc|Ltd|No|St|Mr|Mrs|Ms|Dr|vs|etc|e\.g|i\.e|P\.O|U\.S)\.", re.I)


def _stems(text: str) -> set[str]:
    # crude stemming is enough to match "Canada" with "Canadian", "ship" with "shipping"
    return {w[:4] for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOPWORDS and len(w) > 2}


def _best_sentences(query: str, content: str, limit: int = 2) -> str:
    protected = _ABBREVIATION.sub(lambda m: m.group(0).replace(".", "\x00"), content.strip())
    sentences = [s.replace("\x00", ".") for s in re.split(r"(?<=[.!?])\s+", protected) if s]
    terms = _stems(query)
    scored = [(len(terms & _stems(sentence)), -index, index) for index, sentence in enumerate(sentences)]
    best = sorted(scored, reverse=True)[:limit]
    chosen = sorted(index for score, _, index in best if score > 0) or [0]
    return " ".join(sentences[index] for index in chosen)


def _hit_is_relevant(hit: dict[str, Any]) -> bool:
    distance = hit.get("vector_distance")
    return hit.get("text_rank") is not None or (distance is not None and distance <= 0.65)


def compose_reply(user_text: str, results: list[tuple[str, dict[str, Any], str, bool]]) -> str:
    """Write the answer from this turn's tool results: (name, arguments, output, is_error)."""
    parts: list[str] = []
    names = [name for name, *_ in results]
    saved = [_load(output) for name, args, output, is_error in results
             if name == "remember_detail" and not is_error and "update_profile" not in names]
    if len(saved) > 1 and all(isinstance(d, dict) for d in saved):
        facts = [describe_fact(d.get("memory_type", ""), d.get("content", "")) for d in saved]
        parts.append("Got it, I'll remember that " + ", that ".join(facts[:-1]) + f" and that {facts[-1]}.")
        results = [r for r in results if not (r[0] == "remember_detail" and not r[3])]
    for name, args, output, is_error in results:
        data = _load(output)
        if name == "remember_detail" and "update_profile" in names and args.get("memory_type") == "name":
            continue  # the profile reply already says it
        if is_error:
            parts.append(_error_reply(name, args, str(output)))
            continue
        parts.append(_success_reply(name, args, data, user_text, results))
    text = " ".join(part for part in parts if part)
    return text or "Done."


def _error_reply(name: str, args: dict[str, Any], message: str) -> str:
    slot = args.get("memory_type", "")
    if name == "forget_detail":
        return f"I didn't have anything saved as your {slot_words(slot)}, so there was nothing to forget."
    if name == "recall_detail":
        return f"I don't remember your {slot_words(slot)} yet. Tell me and I'll remember it."
    if name == "lookup_order":
        return f"Sorry, {message[:1].lower() + message[1:]} Order numbers look like 1001; could you check it?"
    if name == "update_profile":
        return f"I couldn't update your profile: {message}"
    if name == "remember_detail":
        return f"I couldn't save that: {message}"
    return f"Sorry, that didn't work: {message}"


def _success_reply(name: str, args: dict[str, Any], data: Any, user_text: str, results) -> str:
    if not isinstance(data, dict):
        return str(data)
    if name == "remember_detail":
        fact = describe_fact(data.get("memory_type", ""), data.get("content", ""))
        if data.get("created", True) or not data.get("previous_content"):
            return f"Got it, I'll remember that {fact}."
        if data.get("previous_content") == data.get("content"):
            return f"I already had that: {fact}."
        return f"Updated: I'll remember that {fact} (before, I had {data['previous_content']})."
    if name == "recall_detail":
        return _sentence(describe_fact(data.get("memory_type", ""), data.get("content", ""))) + "."
    if name == "forget_detail":
        return f"Done, I've forgotten your {slot_words(data.get('memory_type', ''))}."
    if name == "list_user_memories":
        memories = data.get("memories") or []
        if not memories:
            return "I don't have anything remembered about you yet. Tell me something like 'my favorite color is teal'."
        facts = "; ".join(describe_fact(m["memory_type"], m["content"]) for m in memories[:12])
        more = f" (and {len(memories) - 12} more on the Memories page)" if len(memories) > 12 else ""
        return f"Here's what I remember about you: {facts}{more}."
    if name == "search_memories":
        hits = [hit for hit in data.get("hits", []) if _hit_is_relevant(hit)]
        recall_failed = any(n == "recall_detail" and err for n, _, _, err in results)
        if not hits:
            if recall_failed:
                return "I searched your memories too and found nothing close."
            return "I couldn't find anything about that in what you've told me."
        top = hits[0]
        lead = "But the closest thing I remember is that" if recall_failed else "From your memories:"
        reply = f"{lead} {describe_fact(top['memory_type'], top['content'])} (RRF score {top['rrf_score']:.4f})."
        if len(hits) > 1:
            reply += f" Also, {describe_fact(hits[1]['memory_type'], hits[1]['content'])}."
        return reply
    if name == "update_profile":
        field_name, value = data.get("field"), data.get("value")
        if field_name == "name":
            return f"Nice to meet you, {value}! I'll call you {value} from now on."
        if field_name == "email":
            return f"Thanks, I've saved {value} as your email address."
        if field_name == "timezone":
            return f"Got it, your time zone is {value}."
        if field_name == "preferred_language":
            return (f"Noted: your preferred language is {value}. The offline demo brain only speaks English, "
                    "but a real model will use it.")
        return f"Updated your {slot_words(str(field_name))}."
    if name == "lookup_order":
        return data.get("summary") or "I found the order."
    if name == "search_knowledge":
        hits = data.get("hits") or []
        if not hits or hits[0].get("similarity", 0) < 0.25:
            return "I couldn't find anything about that in the Kestrel Coffee knowledge base."
        top = hits[0]
        return f"From the Kestrel Coffee knowledge base ({top['title']}): {_best_sentences(user_text, top['content'])}"
    return "Done."


def follow_up(user_text: str, results: list[tuple[str, dict[str, Any], str, bool]]) -> list[tuple[str, dict]]:
    """A second tool step when the first one came back empty: recall -> hybrid search."""
    names = {name for name, *_ in results}
    for name, _args, _output, is_error in results:
        if name == "recall_detail" and is_error and "search_memories" not in names:
            return [("search_memories", {"query": _strip_end(_clean(user_text)) or user_text})]
    return []


# --- greeting ----------------------------------------------------------------------

def greeting_from_context(chat_ctx: llm.ChatContext) -> str:
    name, facts = None, 0
    for item in chat_ctx.items:
        if item.type == "message" and item.role == "system":
            text = item.text_content or ""
            if PRELOAD_HEADER in text:  # its own message, or merged after the instructions
                text = text.split(PRELOAD_HEADER, 1)[1].split("<recall>", 1)[0]
                match = re.search(r"^The user's name is (.+?)\.$", text, re.M)
                name = match.group(1) if match else None
                facts = len(re.findall(r"^- ", text, re.M))
    if name:
        remembered = f" I remember {facts} thing{'s' if facts != 1 else ''} about you." if facts else ""
        return (f"Welcome back, {name}!{remembered} Ask me about your orders or Kestrel Coffee, "
                "or tell me something new to remember.")
    return ("Hi! I'm the Memory Playground agent, running on the offline demo brain. Tell me something about "
            "yourself and I'll remember it, or ask about an order like 1001 or about Kestrel Coffee.")


# --- the LLM -------------------------------------------------------------------------

def _text_of(item) -> str:
    return (item.text_content or "").strip()


class OfflineBrain(llm.LLM):
    """Deterministic rule-based LLM. See the module docstring."""

    def __init__(self) -> None:
        super().__init__()
        self.last_chat_ctx: llm.ChatContext | None = None  # what the model was last given (tests inspect it)

    @property
    def model(self) -> str:
        return "offline-demo-brain"

    @property
    def provider(self) -> str:
        return "memory-playground"

    def chat(
        self,
        *,
        chat_ctx: llm.ChatContext,
        tools: list[llm.Tool] | None = None,
        conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS,
        parallel_tool_calls: NotGivenOr[bool] = NOT_GIVEN,
        tool_choice: NotGivenOr[llm.ToolChoice] = NOT_GIVEN,
        extra_kwargs: NotGivenOr[dict[str, Any]] = NOT_GIVEN,
    ) -> BrainStream:
        self.last_chat_ctx = chat_ctx.copy()
        return BrainStream(self, chat_ctx=chat_ctx, tools=tools or [], conn_options=conn_options,
                           tool_choice=tool_choice)


class BrainStream(llm.LLMStream):
    def __init__(self, brain: OfflineBrain, *, chat_ctx, tools, conn_options, tool_choice) -> None:
        super().__init__(brain, chat_ctx=chat_ctx, tools=tools, conn_options=conn_options)
        self._tool_choice = tool_choice
        self._request_id = f"brain-{uuid.uuid4().hex[:12]}"

    def _available_tools(self) -> set[str]:
        if self._tool_choice == "none":
            return set()
        return {tool.id for tool in self._tools}

    async def _run(self) -> None:
        plan_calls, text = self.plan()
        if plan_calls:
            calls = [FunctionToolCall(name=name, arguments=json.dumps(args), call_id=f"call_{uuid.uuid4().hex[:10]}")
                     for name, args in plan_calls]
            self._event_ch.send_nowait(ChatChunk(id=self._request_id,
                                                 delta=ChoiceDelta(role="assistant", tool_calls=calls)))
            return
        # sentence by sentence, so a TTS can start on the first one
        for index, sentence in enumerate(re.split(r"(?<=[.!?])\s+", text or "")):
            if sentence:
                self._event_ch.send_nowait(ChatChunk(
                    id=self._request_id, delta=ChoiceDelta(role="assistant", content=(" " if index else "") + sentence)))

    def plan(self) -> tuple[list[tuple[str, dict]], str | None]:
        """(tool calls, None) or ([], reply text) for the current chat context."""
        items = self._chat_ctx.items
        last_user = max((i for i, item in enumerate(items) if item.type == "message" and item.role == "user"),
                        default=None)
        if last_user is None:
            return [], greeting_from_context(self._chat_ctx)
        user_text = user_words(_text_of(items[last_user]))
        after = items[last_user + 1:]
        outputs = {item.call_id: item for item in after if item.type == "function_call_output"}
        results = []
        for item in after:
            if item.type == "function_call" and item.call_id in outputs:
                out = outputs[item.call_id]
                args = _load(item.arguments)
                results.append((item.name, args if isinstance(args, dict) else {}, out.output, out.is_error))
        available = self._available_tools()
        if results:
            more = [(name, args) for name, args in follow_up(user_text, results) if name in available]
            if more:
                return more, None
            return [], compose_reply(user_text, results)
        if after and after[-1].type == "message" and after[-1].role == "system":
            # generate_reply(instructions=...) after a user turn, e.g. a greeting on a handoff
            if "greet" in _text_of(after[-1]).lower():
                return [], greeting_from_context(self._chat_ctx)
        instruction = instruction_of(user_text)
        if instruction is not None:  # a per-call instruction sent as a user turn (agent/chat_format.py)
            if "greet" in instruction.lower():
                return [], greeting_from_context(self._chat_ctx)
            return [], "Okay."
        intent = classify(user_text)
        if intent.calls:
            calls = [(name, args) for name, args in intent.calls if name in available]
            if calls:
                return calls, None
            return [], "I can't use my tools for that right now."
        return [], intent.reply
