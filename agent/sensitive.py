"""What must not be stored without being asked: secrets, card and id numbers, health details, and
things true only for now. Shared by the offline brain, post-session extraction and the turn log (a message
that may hold a secret is stored without its words, whichever model answers it: `withheld`)."""

from __future__ import annotations

import re
from typing import Any

from agent.prompts import WITHHELD_NOTE

_VOLATILE = re.compile(
    r"\b(today|tonight|tomorrow|yesterday|right now|at the moment|this (?:morning|afternoon|evening|week|weekend|"
    r"month)|currently|for now|later|soon|just now|next (?:week|month)|last (?:night|week))\b|"
    r"\b(?:tired|hungry|bored|sleepy|busy|stressed|sick today|in a hurry)\b",
    re.I,
)
_HEALTH = re.compile(
    r"\b(allerg\w*|diabet\w*|asthma|cancer|depress\w*|anxiety|adhd|autis\w*|hiv|pregnan\w*|medication|medicine|"
    r"prescription|diagnos\w*|disease|disorder|illness|surgery|therapy|therapist|blood (?:pressure|type|sugar)|"
    r"insulin|migraine|epilep\w*|lactose intoleran\w*|celiac|intoleran\w*|health|symptom\w*|doctor|"
    r"mental|chronic|injur\w*|disabilit\w*)\b",
    re.I,
)
_SECRET = re.compile(
    r"\b(password|passcode|passphrase|security code|cvv|cvc|secret|api key|"
    r"social security|ssn|passport number|bank account|routing number|login|credentials?)\b|"
    # a PIN, not a pin: "my PIN", "pin 4417", "the pin is", "card pin"; "the pin on my grinder broke" is kept
    r"\b(?:(?:my|your|card|bank|atm|sim|phone|debit|credit|door|alarm|safe) pins?|pins?(?: code| number|:|=|#)|"
    r"pins? (?:is|was|for)\b|pins? \d)|"
    # a token that opens something, not an arcade's: "access token", "my token is", "token: ..."
    r"\b(?:(?:api|access|auth|bearer|refresh|session|security|github|slack|my|your) tokens?|"
    r"tokens? (?:is|was|for)\b|tokens?[:=])|"
    # a code or a combination that opens a door, a lock or an account, not a zip, area, promo or dress code
    # ("the alarm code at my house is 4417" was kept, and recalled in a later session)
    r"\b(?:(?:alarm|door|gate|garage|keypad|lock|unlock|entry|access|safe|locker|lockbox|key ?box|"
    r"verification|one[- ]time|2fa|otp|backup|recovery) codes?|codes? (?:to|for) (?:the|my|our) (?:\w+ )?"
    r"(?:door|gate|garage|alarm|safe|house|building|lock|locker|phone|account)|"
    r"(?:safe|lock|locker|padlock) combination|combination (?:to|for|of) (?:the|my|our) (?:safe|lock|locker|"
    r"padlock)|combination (?:is|was|:)\s*\d+|security (?:question|answer)s?|(?:recovery|seed) phrase|"
    r"private key)\b",
    re.I,
)
_PIN_ACRONYM = re.compile(r"\bPINS?\b")  # written in capitals, it is the number
# a whole number, not digits inside a longer one: 19 of a 22-digit parcel tracking number passed the Luhn check
_CARD_DIGITS = re.compile(r"(?<![\d-])\d(?:[ -]?\d){11,18}(?![\d]|[ -]\d)")
_SSN = re.compile(r"\b\d{3}-\d{2}-\d{4}\b")
_SENSITIVE_SLOTS = re.compile(r"(allerg|health|medic|diagnos|password|pin|card|ssn|passport|bank|account_number)")


def _luhn_ok(digits: str) -> bool:
    total, parity = 0, len(digits) % 2
    for index, char in enumerate(digits):
        value = int(char)
        if index % 2 == parity:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def secret_reason(text: str) -> str | None:
    """Why `text` holds a secret that is never stored (even when asked), or None."""
    if _SECRET.search(text) or _PIN_ACRONYM.search(text):
        return "secret (password, PIN, account or id number)"
    for match in _CARD_DIGITS.finditer(text):
        digits = re.sub(r"\D", "", match.group())
        if 13 <= len(digits) <= 19 and _luhn_ok(digits):
            return "payment card number"
    if _SSN.search(text):
        return "government id number"
    return None


def withheld(text: str) -> bool:
    """Whether a turn is stored without its words (core.conversations.WITHHELD_TEXT) and left out of the
    session report: it may hold a secret (`secret_reason`), which the agent never keeps. Decided on the words
    alone, as the turn is stored when it is said, before any reply: the same for text and voice, and for the
    offline brain (whose refusal, "I'd rather not keep passwords ...", is this check on the fact it parsed)
    and a real model alike. A question about a secret ("what is my PIN?") is withheld too: words alone do
    not tell it from one that holds it ("is my PIN 4417?")."""
    return secret_reason(text) is not None


def withhold_answered_secrets(items: list[Any], before_id: str) -> int:
    """The model's context, in place, as a new user message (`before_id`) starts its turn: each earlier user
    message `withheld` holds back, and what the agent said and did in answer to it (its messages, tool calls
    and results, up to the next user message), become prompts.WITHHELD_NOTE; returns how many items changed.
    The model needed the message for its answer; after that, every request of the conversation sent it
    again, to a model the agent had just told "I'd rather not keep passwords"."""
    changed, answering = 0, False
    for item in items:
        if item.type == "message" and item.role == "user":
            if item.id == before_id:
                break
            text = item.text_content or ""
            answering = text == WITHHELD_NOTE or withheld(text)
            if answering and text != WITHHELD_NOTE:
                item.content, changed = [WITHHELD_NOTE], changed + 1
        elif not answering:
            continue
        elif item.type == "message" and item.role == "assistant" and (item.text_content or "") != WITHHELD_NOTE:
            item.content, changed = [WITHHELD_NOTE], changed + 1
        elif item.type == "function_call" and item.arguments not in ("", "{}"):
            item.arguments, changed = "{}", changed + 1
        elif item.type == "function_call_output" and item.output != WITHHELD_NOTE:
            item.output, changed = WITHHELD_NOTE, changed + 1
    return changed


def rejection_reason(memory_type: str, content: str, *, evidence: str = "") -> str | None:
    """Why a proposed fact must not be stored automatically, or None if it may be."""
    text = f"{memory_type.replace('_', ' ')} {content} {evidence}"
    secret = secret_reason(text)
    if secret:
        return secret
    if _HEALTH.search(text) or _SENSITIVE_SLOTS.search(memory_type):
        return "health detail"
    if _VOLATILE.search(f"{content} {evidence}"):
        return "volatile (true only for now)"
    return None
