"""Every text a model reads, and the sentences that tell people how to get a real model.

The real agent, the offline brain (which reads the same context markers back)
and the extraction step all take their words from here, so a change of wording
cannot leave one of them behind.
"""

from __future__ import annotations

import re
from datetime import date

INSTRUCTIONS = """\
You are the Memory Playground agent for Kestrel Coffee Co.: a friendly voice and text assistant that \
remembers the people it talks to.

- Answer in one to three short sentences, plain text with no markdown: replies may be spoken aloud.
- When the user tells you a lasting fact about themselves (a preference, where they live, an allergy, a \
name), save it with remember_detail under a short snake_case slot such as favorite_color, home_city or \
allergies. One fact per slot; saving a slot again replaces it.
- To answer a question about the user, use recall_detail for a known slot, otherwise search_memories; use \
list_user_memories when they ask what you know about them. Never invent facts about the user.
- Use forget_detail when they ask you to forget something, and update_profile for their name ("call me \
Sam"), email, preferred_language, timezone or preferences.
- When the user refers to something said in an earlier conversation ("that trail I mentioned last week"), \
use search_past_conversations; its hits carry the date each thing was said. When they say when ("last \
week", "in March", "yesterday"), also pass from_date and to_date (YYYY-MM-DD, in the time zone that \
today's date in the context names), and if nothing from those days answers, search again without them. \
When they ask what you talked about last time, use recall_last_conversation and sum it up in a sentence or \
two. When they ask what you talked about on a day or in a span ("today", "yesterday", "on Monday", "last \
week"), use recall_conversations with those days; for today, add what was said in this conversation.
- Use lookup_order for order status and search_knowledge for questions about Kestrel Coffee products, \
shipping, returns, warranty and subscriptions; answer only from what the tools return.
- Search hits say how they match: "words", "meaning" or both; a "nearest only" hit shares no word with \
the search and is not close in meaning, so treat it as not found.
- The tools already act for the signed-in user: never ask for a user id.
- Do not save passwords, card numbers or health details unless the user explicitly asks you to.
"""

# The preload (profile and every remembered fact) starts with this line; the offline brain finds it by it.
PRELOAD_HEADER = "What you already know about this user (loaded before the conversation):"
# The per-turn recall block starts with this line.
RECALL_HEADER = "Possibly relevant memories for the user's next message"
RECALL_LEAD = f"{RECALL_HEADER} (hybrid search, best first; use them only if they help):"
# Past turns follow the remembered facts in the same block, under this line.
PAST_TURNS_LEAD = "From earlier conversations (date, who said it: what was said):"

FILLER_TEXT = "One moment, let me look that up."
# Said aloud in a voice call when the model fails (the page shows which setting to check): a call would
# otherwise go silent, and the person at the microphone has no page in front of them to read
LLM_FAILED_SPOKEN = "Sorry, my language model failed, so I have no answer for you. The page says what went wrong."
# What the agent says that is about the call, not the conversation: never stored as a turn
NOT_CONVERSATION = frozenset({FILLER_TEXT, LLM_FAILED_SPOKEN})
# What the model reads in place of a message or tool result that mentioned a memory the user deleted
# during the conversation (agent/forgetting.py)
FORGOTTEN_NOTE = "(Deleted: this mentioned a memory the user deleted.)"
# ...and in place of an earlier message that may have held a secret, and of the agent's answer to it
# (agent/sensitive.py `withhold_answered_secrets`)
WITHHELD_NOTE = "(Not kept: this message may have held a password or another secret.)"
CONTEXT_NOTES = frozenset({FORGOTTEN_NOTE, WITHHELD_NOTE})  # not words the user said

EXTRACTION_PROMPT = """\
From the user's messages below, list at most 5 lasting facts about the user worth remembering in future \
conversations. Skip anything temporary, and never include health details, card numbers, passwords or other \
secrets. Answer with JSON only: [{"memory_type": "snake_case_slot", "content": "...", "confidence": 0.0-1.0, \
"evidence": "the user's words"}]. Answer [] if there is nothing.

User messages:
"""

HOW_TO_USE_A_REAL_MODEL = (
    "To use a real model, set OPENAI_API_KEY (and OPENAI_BASE_URL plus LLM_MODEL for Ollama, vLLM or "
    "LM Studio), or set LIVEKIT_URL, LIVEKIT_API_KEY and LIVEKIT_API_SECRET to use LiveKit Inference "
    "(LLM_MODEL picks the model), then restart."
)
OFFLINE_BRAIN_HELP = "The offline demo brain is a rule-based stand-in, not a language model. " + HOW_TO_USE_A_REAL_MODEL


# The preload ends with today's date in the user's time zone (UTC when their profile has none), so that a
# model can turn "last week" into dates for a search, and every date it reads is of that calendar.
TODAY_LEAD = "Today's date"


def today_line(today: date, zone_name: str) -> str:
    return f"{TODAY_LEAD} ({zone_name}): {today.isoformat()}, a {today:%A}."


def preload_message(profile_and_memories: str, today: date, zone_name: str = "UTC") -> str:
    return f"{PRELOAD_HEADER}\n{profile_and_memories}\n\n{today_line(today, zone_name)}"


_TODAY_STATED = re.compile(re.escape(TODAY_LEAD) + r" \([^)]{1,64}\): (\d{4}-\d{2}-\d{2})")


def stated_today(context_text: str) -> date | None:
    """Today's date as a context states it (the preload's last line); None when it does not."""
    match = _TODAY_STATED.search(context_text)
    try:
        return date.fromisoformat(match.group(1)) if match else None
    except ValueError:
        return None


def greeting_instruction(name: str | None) -> str:
    who = f"by name ({name})" if name else "warmly (you don't know their name yet)"
    return f"Greet the user {who} in one short sentence and offer to help."


def extraction_request(user_turns: list[str]) -> str:
    return EXTRACTION_PROMPT + "\n".join(f"- {turn}" for turn in user_turns)
