"""What the offline brain says: answers written from this turn's tool results, the greeting and canned replies.

It never invents facts: what it says about the user comes from the tools.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

from livekit.agents import llm

from agent.brain.asked import about_what_was_asked, answers_the_question, shares_words
from agent.brain.earlier import (
    answers,
    conversations_found,
    dates_searched,
    held_conversations,
    last_conversation,
    quote,
    relevant,
    search_dates,
    windowed_search_answered_nothing,
)
from agent.brain.facts import NOTE_PREFIX, describe_fact, search_query, slot_phrase, slot_words
from agent.brain.knowledge import SECRET_NOT_SAVED, knowledge_found
from agent.brain.patterns import CANT_DO, HOW_ARE_YOU
from agent.brain.text import clean, strip_end
from agent.prompts import HOW_TO_USE_A_REAL_MODEL, PRELOAD_HEADER
from agent.sensitive import secret_reason

# (tool name, arguments, output, is_error) for each tool call answered this turn
ToolResult = tuple[str, dict[str, Any], str, bool]

IDENTITY_REPLY = (
    "I'm the offline demo brain: a small rule-based program standing in for a language model, so this "
    "playground works with no accounts and no network. I still call the real tools (memories, profile, "
    "orders, the Kestrel Coffee knowledge base) and answer from what they return, but I only understand "
    "simple phrasings. " + HOW_TO_USE_A_REAL_MODEL
)
# a statement cut off before its point (a pause in speech ends the turn): asked for, not stored
UNFINISHED_REPLY = (
    "It sounds like you stopped mid-sentence: \u201c{said} \u2026\u201d. Tell me the rest and I'll remember it."
)
SECRET_REPLY = SECRET_NOT_SAVED + " Tell me something else about you, like your favorite coffee."
# asked for a secret no memory holds: the agent never keeps one, nor the message that told it (agent/turn_log.py)
SECRET_NOT_KEPT_REPLY = (
    "I don't have your {what}: I don't keep passwords, PINs, card or ID numbers, neither as memories nor in "
    "our conversations."
)
ASK_ORDER_NUMBER = "Sure, which order number? They look like 1001."
# "Remember that" said alone: nothing to keep yet (it kept the memory `note`: "that")
ASK_WHAT_TO_REMEMBER = "Sure, what should I remember? For example: 'my favorite color is teal'."
# How the replies heard most begin, cut where a voice call's Piper cuts them (agent/voice/local_tts.py
# `split_first_clause`): the voice warm-up says them once, so a process's first call need not wait for Piper.
SPOKEN_OPENERS = (
    "Got it,",
    "You told me,",
    "Here's what I remember about you:",
    "From the Kestrel Coffee knowledge base,",
    "Done, I've forgotten,",
)
MAX_LISTED = 12
# what the brain says when memory had nothing; never said while the per-turn recall put a memory into context
NOTHING_FOUND_REPLY = "I don't remember you telling me that. Tell me and I'll remember it."


def smalltalk_reply(lower: str) -> str:
    if CANT_DO.search(lower):
        return "I can't do that: I keep what you tell me, look up orders like 1001 and answer Kestrel questions."
    if re.search(r"\b(thanks|thank you|thx|cheers|appreciated)\b", lower):
        return "You're welcome! Anything else I can help with?"
    if re.match(r"^(bye|goodbye|good night|see you|see ya|later|talk|ttyl)", lower):
        return "Goodbye! I'll remember what you told me for next time."
    if HOW_ARE_YOU.search(lower):
        return "I'm doing well, thanks for asking! What can I do for you?"
    if re.match(r"^(hi|hello|hey|yo|hiya|howdy|greetings|good (morning|afternoon|evening|day))", lower):
        return (
            "Hello! Tell me something to remember, ask what I know about you, check an order like 1001, "
            "or ask about Kestrel Coffee."
        )
    return (
        "Okay. You can tell me something to remember, ask what I know about you, look up an order, "
        "or ask a question about Kestrel Coffee."
    )


def load_output(output: str) -> Any:
    """A tool's output as data (the tools answer JSON), or the text itself."""
    try:
        return json.loads(output)
    except (TypeError, ValueError):
        return output


def compose_reply(user_text: str, results: list[ToolResult], recalled: list[tuple[str, str]] | None = None) -> str:
    """Write the answer from this turn's tool results. `recalled`: the (slot, content) pairs the per-turn recall
    put into context (what the retrieval panel stars); a question about the user is answered from them when
    the tools found nothing, so the reply never contradicts the panel."""
    asked = _asked_slot(results)
    recalled = [
        fact
        for fact in recalled or []
        if answers_the_question(user_text, asked, *fact, word_match=shares_words(user_text, *fact))
    ]
    searched_dates = ""
    windowed = windowed_search_answered_nothing(results)
    if windowed and sum(r[0] == "search_past_conversations" for r in results) > 1:
        # the same search without the dates followed (`follow_up`): answer from it, and say so
        searched_dates = f"Nothing from {dates_searched(windowed)} answers that. "
        results = [r for r in results if r is not windowed]
    forgets = [r for r in results if r[0] == "forget_detail"]
    if len(forgets) > 1 and not forgets[-1][3]:  # the slot named was not there; the search found what was meant
        return _forgotten(load_output(forgets[-1][2]), say_what=True)
    if forgets and any(r[0] == "search_memories" for r in results):  # searched, and nothing to forget found
        results = [r for r in results if r[0] != "search_memories"]
    results_before = results
    parts: list[str] = []
    if _asked_memory(results) and not _memory_answer(results, user_text):
        past = _past_conversations(results)
        results = [r for r in results if r[0] not in ("recall_detail", "search_memories", "search_past_conversations")]
        if recalled:
            parts.append(f"You told me {describe_fact(*recalled[0])}.")
        if past and answers(past, user_text):  # not a slot, but said in an earlier conversation
            parts.append(conversations_found(past, after_memories=not recalled, user_text=user_text))
        elif not recalled and not results:
            return _nothing_found(results_before)
    elif found := _memory_answer(results, user_text):
        # the search after a missed slot found it: answer, without first saying it was missing
        results = [r for r in results if r[0] not in ("recall_detail", "search_memories")]
        parts.append(found)
    names = [name for name, *_ in results]

    profile_fields = {args.get("field") for name, args, *_ in results if name == "update_profile"}

    def said_by_the_profile_reply(name: str, args: dict[str, Any]) -> bool:
        return name == "remember_detail" and args.get("memory_type") in profile_fields

    saved = [
        load_output(output)
        for name, args, output, is_error in results
        if name == "remember_detail" and not is_error and not said_by_the_profile_reply(name, args)
    ]
    if len(saved) > 1 and all(isinstance(d, dict) for d in saved):
        facts = [describe_fact(d.get("memory_type", ""), d.get("content", "")) for d in saved]
        results = [
            r for r in results if not (r[0] == "remember_detail" and not r[3] and not said_by_the_profile_reply(*r[:2]))
        ]
        said_together = "Got it, I'll remember that " + ", that ".join(facts[:-1]) + f" and that {facts[-1]}."
    else:
        said_together = ""
    for name, args, output, is_error in results:
        if said_by_the_profile_reply(name, args):
            continue  # "Nice to meet you, Ada!" already says it
        if name == "update_profile" and args.get("field") == "name" and not is_error:
            parts.append(_name_reply(str(args.get("value", "")), _name_before(results)))
            continue
        if is_error:
            parts.append(_error_reply(name, args, str(output)))
        else:
            parts.append(_success_reply(name, load_output(output), user_text, recalled))
    parts.append(said_together)
    if "update_profile" in names and secret_reason(user_text):
        # "my name is Ada and my PIN is 1234": the name was saved, the secret left out (agent/brain/intents.py)
        parts.append(SECRET_NOT_SAVED)
    text = " ".join(part for part in parts if part)
    return searched_dates + text if text else "Done."


def _nothing_found(results: list[ToolResult]) -> str:
    slot = _asked_slot(results)
    if slot and secret_reason(f"my {slot_phrase(slot)}"):  # "Tell me and I'll remember it" would not be true
        return SECRET_NOT_KEPT_REPLY.format(what=slot_phrase(slot))
    if slot and slot_words(slot) not in ("note",):
        reply = f"I don't remember your {slot_phrase(slot)} yet. Tell me and I'll remember it."
    else:
        reply = NOTHING_FOUND_REPLY
    if _past_conversations(results) is not None:
        reply += " I searched your memories and our earlier conversations too and found nothing close."
    return reply


def _past_conversations(results: list[ToolResult]) -> dict[str, Any] | None:
    """This turn's search of earlier conversations (a follow-up of a memory search that found nothing), or None."""
    for name, _args, output, is_error in results:
        data = load_output(output)
        if name == "search_past_conversations" and not is_error and isinstance(data, dict):
            return data
    return None


def _asked_memory(results: list[ToolResult]) -> bool:
    return any(name in ("recall_detail", "search_memories") for name, *_ in results)


def _asked_slot(results: list[ToolResult]) -> str | None:
    """The slot this turn's question named (its recall_detail), if any."""
    return next((args.get("memory_type") for name, args, *_ in results if name == "recall_detail"), None)


def _hit_answers(user_text: str, results: list[ToolResult], hit: dict[str, Any]) -> bool:
    slot, content = hit.get("memory_type", ""), hit.get("content", "")
    word_match = hit.get("text_rank") is not None
    return answers_the_question(user_text, _asked_slot(results), slot, content, word_match=word_match)


def _memory_answer(results: list[ToolResult], user_text: str = "") -> str | None:
    """The answer to a question about the user from this turn's recall_detail / search_memories, or None."""
    for name, _args, output, is_error in results:
        data = load_output(output)
        if is_error or not isinstance(data, dict):
            continue
        if name == "recall_detail":
            return f"You told me {describe_fact(data.get('memory_type', ''), data.get('content', ''))}."
        if name == "search_memories":
            hits = [h for h in relevant(data) if _hit_answers(user_text, results, h)]
            if hits:
                top = hits[0]
                reply = f"You told me {describe_fact(top['memory_type'], top['content'])}."
                also = [h for h in hits[1:2] if h.get("text_rank") is not None]
                if also:
                    reply += f" Also, {describe_fact(also[0]['memory_type'], also[0]['content'])}."
                return reply
    return None


def follow_up(user_text: str, results: list[ToolResult], today: dt.date | None = None) -> list[tuple[str, dict]]:
    """A next tool step when the last one came back empty: recall -> hybrid search of the slots -> a search of
    earlier conversations (what was said may never have become a slot), of the days named when `today` places
    them ("my flight number last week"), then of every day if those answer nothing."""
    names = {name for name, *_ in results}
    query = strip_end(clean(user_text)) or user_text
    if any(name == "forget_detail" and is_error for name, _, _, is_error in results):
        return _forget_found(user_text, results)
    searches = [args for name, args, _, is_error in results if name == "search_past_conversations"]
    if len(searches) == 1 and windowed_search_answered_nothing(results):
        # the user may misplace when they said it ("last week" for ten days ago): look at every day
        return [("search_past_conversations", {"query": searches[0].get("query") or query})]
    for name, _args, output, is_error in results:
        if name == "recall_conversations" and len(results) == 1 and not is_error and not load_output(output)["found"]:
            return [("recall_last_conversation", {})]  # "we didn't talk yesterday", and when we last did
        if name == "recall_detail" and is_error and "search_memories" not in names:
            return [("search_memories", {"query": search_query(query)})]
        if name == "search_memories" and not is_error and "search_past_conversations" not in names:
            data = load_output(output)
            if not any(_hit_answers(user_text, results, h) for h in relevant(data if isinstance(data, dict) else {})):
                return [("search_past_conversations", {"query": query} | search_dates(user_text, today))]
    return []


def _forget_found(user_text: str, results: list[ToolResult]) -> list[tuple[str, dict]]:
    """ "Forget my dog" named no slot of its own: search for it, then forget the one memory that holds one of
    its words (its slot's or the topic's: `pet` for a dog) and is about the user, not someone else; never a
    memory that is merely the nearest."""
    names = [name for name, *_ in results]
    if "search_memories" not in names:
        return [("search_memories", {"query": search_query(strip_end(clean(user_text)))})]
    if names.count("forget_detail") > 1:
        return []
    data = next(load_output(output) for name, _, output, is_error in results if name == "search_memories")
    for hit in data.get("hits", []) if isinstance(data, dict) else []:
        if hit.get("text_rank") is not None and about_what_was_asked(
            user_text, hit.get("memory_type", ""), hit.get("content", "")
        ):
            return [("forget_detail", {"memory_type": hit["memory_type"]})]
    return []


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
        return (
            f"Welcome back, {name}!{remembered} Ask me about your orders or Kestrel Coffee, "
            "or tell me something new to remember."
        )
    return (
        "Hi! I'm the Memory Playground agent, running on the offline demo brain. Tell me something about "
        "yourself and I'll remember it, or ask about an order like 1001 or about Kestrel Coffee."
    )


# --- one reply per tool ------------------------------------------------------------------------------


def _error_reply(name: str, args: dict[str, Any], message: str) -> str:
    slot = args.get("memory_type", "")
    if name == "forget_detail":
        return f"I didn't have anything saved as your {slot_words(slot)}, so there was nothing to forget."
    if name == "lookup_order":
        return f"Sorry, {message[:1].lower() + message[1:]} Order numbers look like 1001; could you check it?"
    if name == "update_profile":
        return f"I couldn't update your profile: {message}"
    if name == "remember_detail":
        return f"I couldn't save that: {message}"
    return f"Sorry, that didn't work: {message}"


def _success_reply(name: str, data: Any, user_text: str, recalled: list[tuple[str, str]]) -> str:
    if not isinstance(data, dict):
        return str(data)
    if name == "search_knowledge":
        return knowledge_found(data, user_text, recalled)
    if name == "search_past_conversations":
        return conversations_found(data, user_text=user_text)
    reply = _REPLIES.get(name)
    return reply(data) if reply else "Done."


def _remembered(data: dict[str, Any]) -> str:
    fact = describe_fact(data.get("memory_type", ""), data.get("content", ""))
    if data.get("created", True) or not data.get("previous_content"):
        return f"Got it, I'll remember that {fact}."
    if data.get("previous_content") == data.get("content"):
        return f"I already had that: {fact}."
    return f"Updated: I'll remember that {fact} (before, I had {data['previous_content']})."


# slots named for what they hold ("I don't like olives" is `dislikes_olives`): said as the fact, not the slot
_ONE_ITEM_SLOTS = ("likes_", "dislikes_", NOTE_PREFIX)


def _forgotten(data: dict[str, Any], *, say_what: bool = False) -> str:
    slot = str(data.get("memory_type") or "")
    if slot.startswith(_ONE_ITEM_SLOTS):  # the slot holds one thing: "dislikes_olives" is "you don't like olives"
        done = f"Done, I've forgotten that {describe_fact(slot, str(data.get('forgotten') or ''))}"
    else:
        done = f"Done, I've forgotten your {slot_phrase(slot)}"
    if say_what and not slot.startswith(_ONE_ITEM_SLOTS):  # found by a search: say which memory it was
        done += f" (“{quote(str(data.get('forgotten') or ''), 120)}”)"
    mentions = data.get("past_mentions_removed") or 0
    if mentions:
        said = "message" if mentions == 1 else "messages"
        return f"{done}, and removed {mentions} past {said} that mentioned it."
    return done + "."


def _listed(data: dict[str, Any]) -> str:
    memories = data.get("memories") or []
    if not memories:
        return "I don't have anything remembered about you yet. Tell me something like 'my favorite color is teal'."
    facts = "; ".join(describe_fact(m["memory_type"], m["content"]) for m in memories[:MAX_LISTED])
    more = f" (and {len(memories) - MAX_LISTED} more on the Memories page)" if len(memories) > MAX_LISTED else ""
    return f"Here's what I remember about you: {facts}{more}."


def _name_before(results: list[ToolResult]) -> str | None:
    """The name the user had before this turn, from the `name` memory saved with the profile's name."""
    for name, args, output, is_error in results:
        if name == "remember_detail" and args.get("memory_type") == "name" and not is_error:
            data = load_output(output)
            if isinstance(data, dict) and not data.get("created", True):
                return data.get("previous_content")
    return None


def _name_reply(name: str, before: str | None) -> str:
    if before and before.casefold() == name.casefold():
        return f"I know, {name}: I already call you that."
    if before:
        return f"Okay, I'll call you {name} from now on (before, I had {before})."
    return _profile_updated({"field": "name", "value": name})


def _profile_updated(data: dict[str, Any]) -> str:
    field_name, value = data.get("field"), data.get("value")
    if field_name == "name":
        return f"Nice to meet you, {value}! I'll call you {value} from now on."
    if field_name == "email":
        return f"Thanks, I've saved {value} as your email address."
    if field_name == "timezone":
        return f"Got it, your time zone is {value}."
    if field_name == "preferred_language":
        return (
            f"Noted: your preferred language is {value}. The offline demo brain only speaks English, "
            "but a real model will use it."
        )
    return f"Updated your {slot_words(str(field_name))}."


_REPLIES = {
    "remember_detail": _remembered,
    "forget_detail": _forgotten,
    "list_user_memories": _listed,
    "update_profile": _profile_updated,
    "lookup_order": lambda data: data.get("summary") or "I found the order.",
    "recall_last_conversation": last_conversation,
    "recall_conversations": held_conversations,
}
