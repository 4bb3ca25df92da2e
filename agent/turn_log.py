"""Every user and agent turn of a session, handed to the conversation tier as it happens.

:class:`TurnLogSink` is an event sink (agent/event_bus.py): it watches a
session's final transcripts and queues each one on the process's
:class:`core.turn_indexer.TurnIndexer`, which stores and embeds it on its own
thread. Queuing is all that happens on the agent's loop, so a reply never
waits for an embedding or an insert.

A session is stored from the user's first message on: what the agent says before
it (the greeting) is held back until then, and a session in which the user never
says (or types) anything stores nothing, so it is never listed on the Sessions
page (agent.session.PlaygroundSession.kept: nor is its report saved).

A turn that may hold a secret (agent.sensitive.withheld: a password, PIN, card
or id number, which the agent never keeps) is queued withheld: stored as
core.conversations.WITHHELD_TEXT, never embedded nor searchable, so it cannot
be recalled later; :func:`report_without_withheld` leaves its words out of the
session report too. So is the agent's answer to it: a model may say the secret
back in words no check knows ("Noted: tulip-88."). Every session goes through
here (text chat, local voice, the LiveKit worker), whichever model answers.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from agent.events import Event, of_type
from agent.prompts import NOT_CONVERSATION, WITHHELD_NOTE
from agent.sensitive import withheld
from core.conversations import WITHHELD_TEXT, Mentions
from core.sessions import DELETED_TEXT, blanked
from core.turn_indexer import TurnIndexer, get_indexer

# what a search or tool call of the model's said, where it may have held a secret (report_without_withheld)
WITHHELD_WORDS = "[not kept: may have held a password or another secret]"


def user_said(event: Mapping[str, Any]) -> bool:
    """Whether the event is words of the user's (a final user transcript that says something): a session
    is kept from the first one on."""
    return (
        event.get("type") == "transcript"
        and event.get("role") == "user"
        and bool(event.get("final"))
        and bool((event.get("text") or "").strip())
    )


class TurnLogSink:
    """Queues the final user and assistant transcripts of one session, numbered 0, 1, 2, ... in order.

    Fillers ("One moment, let me look that up.") and the spoken word of a failed model call are left out
    (prompts.NOT_CONVERSATION): they say nothing worth finding later.
    Events forwarded from elsewhere (``origin``) are left out too: the process that made them stores them.
    What the agent says before the user's first message (the greeting) is an *opening*: kept in the
    transcript, never searched (core.conversations.TurnInput), since it holds nothing the user said. It is
    queued with the user's first message, so a session the user never speaks in stores no turn at all.
    """

    def __init__(self, user_id: uuid.UUID, session_id: str, *, indexer: TurnIndexer | None = None) -> None:
        self.user_id = user_id
        self.session_id = session_id
        self._indexer = indexer
        self._next_index = 0
        self.user_spoke = False  # the user said (or typed) something in this session
        self._answering_withheld = False  # the user's latest message was withheld: the agent's answer is too
        self._held: list[tuple[int, Event, str, datetime]] = []  # the openings, until the user speaks
        self._lock = threading.Lock()

    @property
    def indexer(self) -> TurnIndexer:
        return self._indexer or get_indexer()

    def publish(self, event: Event) -> None:
        if event["type"] != "transcript" or not event.get("final") or event.get("origin"):
            return
        text = (event.get("text") or "").strip()
        if not text or (event["role"] == "assistant" and text in NOT_CONVERSATION):
            return
        said_at = datetime.fromtimestamp(event["ts"], UTC)
        with self._lock:
            if not self.user_spoke and event["role"] != "user":
                self._held.append((self._next_index, event, text, said_at))
                self._next_index += 1
                return
            if not self.user_spoke:
                self.user_spoke = True
                for index, held, said, held_at in self._held:
                    # blanked meanwhile (agent/forgetting.py): it said a memory the user deleted, and a stored
                    # turn saying it would have been deleted with it
                    if held.get("text") == DELETED_TEXT and said != DELETED_TEXT:
                        continue
                    self.indexer.submit(
                        self.user_id,
                        self.session_id,
                        index,
                        held["role"],
                        said,
                        created_at=held_at,
                        opening=True,
                        withheld=withheld(said),
                    )
                self._held.clear()
            held_back = withheld(text) or (event["role"] != "user" and self._answering_withheld)
            if event["role"] == "user":
                self._answering_withheld = held_back
            queued = self.indexer.submit(
                self.user_id,
                self.session_id,
                self._next_index,
                event["role"],
                text,
                created_at=said_at,
                withheld=held_back,
            )
            if queued:
                self._next_index += 1


def _withheld_speech(events: list[Event]) -> tuple[list[str], set[str]]:
    """What the session's withheld turns said (its final transcripts that `withheld` holds back), and what is
    blanked only where it is said word for word: the agent's answers to a withheld message of the user's (as
    TurnLogSink stores them), and every piece of a withheld turn heard on the way (a voice call's
    speech-to-text interims of the user's message, the agent's reply as spoken so far: the ones since the
    speaker's previous final transcript; one that holds a secret itself too). Whisper's interims are not
    always words of the final one ("My password can't to start.")."""
    said: list[str] = []
    pieces: set[str] = set()
    heard: dict[str, list[str]] = {}
    answering_withheld = False
    for event in of_type(events, "transcript"):
        text, role = event.get("text") or "", event.get("role") or ""
        if not event.get("final"):
            heard.setdefault(role, []).append(" ".join(text.split()))
            if withheld(text):
                pieces.add(" ".join(text.split()))
            continue
        if withheld(text):
            said.append(text.strip())
            pieces.update(piece for piece in heard.get(role, []) if piece)
        elif role != "user" and answering_withheld and text.strip() not in NOT_CONVERSATION:
            # the answer itself, word for word: a short one ("OK.") by the mention rule would take every
            # line that says "OK" with it
            pieces.update(piece for piece in [*heard.get(role, []), " ".join(text.split())] if piece)
        if role == "user":
            answering_withheld = withheld(text)
        heard[role] = []
    return said, pieces


def report_without_withheld(report: dict[str, Any], events: list[Event]) -> dict[str, Any]:
    """The report with what the withheld turns said replaced by WITHHELD_TEXT wherever it is: their transcript
    lines, livekit's events and chat history, the retrieval's query, a reply saying it back ("your PIN is ...",
    by core.conversations.Mentions), the agent's answers to them and a voice call's pieces of them (each
    string equal to one); and what the model wrote from the user's words (`_without_withheld_tool_words`)."""
    report = _without_withheld_tool_words(report, events)
    said, pieces = _withheld_speech(events)
    if not said and not pieces:
        return report
    says = Mentions(said)
    return blanked(
        report,
        lambda string: string != WITHHELD_TEXT and (" ".join(string.split()) in pieces or says(string)),
        WITHHELD_TEXT,
    )


def _without_withheld_tool_words(report: dict[str, Any], events: list[Event]) -> dict[str, Any]:
    """The report with WITHHELD_WORDS for the words a model wrote from the user's: a search's query and a tool
    call's arguments and output or error (which say them back), in the turn of a withheld message or wherever
    they may hold a secret themselves. A model searches its own rewording ("Is my PIN 4417", no "?"), which
    the word-for-word rule above misses. Only these: the check on every string took the model's error
    sentences too ("refused the API key (401)")."""
    turns = {e["turn"] for e in of_type(events, "transcript") if e["role"] == "user" and withheld(e.get("text") or "")}
    calls = _withheld_call_ids(report)

    def without(doc: Any) -> Any:
        if isinstance(doc, list):
            return [without(value) for value in doc]
        if not isinstance(doc, dict):
            return doc
        doc = {key: without(value) for key, value in doc.items()}
        kind, in_withheld_turn = doc.get("type"), doc.get("turn") in turns
        if kind == "retrieval" and isinstance(doc.get("query"), str):
            if in_withheld_turn or withheld(doc["query"]):
                doc["query"] = WITHHELD_WORDS
        elif kind == "tool_call" and (in_withheld_turn or withheld(json.dumps(doc.get("arguments")))):
            doc["arguments"] = blanked(doc.get("arguments"), lambda _: True, WITHHELD_WORDS)
            for key in ("output", "error"):  # each says the call back: "Nothing is remembered under 'wifi_password'."
                if doc.get(key) is not None:
                    doc[key] = WITHHELD_WORDS
        elif kind == "function_call" and doc.get("call_id") in calls:
            doc["arguments"] = _blanked_arguments(doc.get("arguments"))
        elif kind == "function_call_output" and doc.get("call_id") in calls:
            doc["output"] = WITHHELD_WORDS
        elif kind in ("tool_call_updated", "tool_call_ended") and doc.get("call_id") in calls and doc.get("message"):
            doc["message"] = WITHHELD_WORDS  # livekit's events: the call's output as the model was sent it
        return doc

    return without(report)


def _withheld_call_ids(report: dict[str, Any]) -> set[str]:
    """The livekit tool calls (chat history items, and the same calls in its events) made in answer to a
    withheld user message, or whose arguments may hold a secret."""
    calls: set[str] = set()
    answering = False
    for item in (report.get("chat_history") or {}).get("items") or []:
        if item.get("type") == "message" and item.get("role") == "user":
            text = "\n".join(part for part in item.get("content") or [] if isinstance(part, str))
            answering = text in (WITHHELD_TEXT, WITHHELD_NOTE) or withheld(text)
        elif item.get("type") == "function_call" and answering:
            calls.add(item.get("call_id"))

    def find(doc: Any) -> None:
        if isinstance(doc, list):
            for value in doc:
                find(value)
        elif isinstance(doc, dict):
            if doc.get("type") == "function_call" and withheld(str(doc.get("arguments") or "")):
                calls.add(doc.get("call_id"))
            for value in doc.values():
                find(value)

    find(report)
    calls.discard(None)
    return calls


def _blanked_arguments(arguments: Any) -> str:
    """A livekit call's arguments (a JSON string) with each value WITHHELD_WORDS: the names stay readable."""
    try:
        decoded = json.loads(arguments)
    except (TypeError, ValueError):
        return WITHHELD_WORDS
    return json.dumps(blanked(decoded, lambda _: True, WITHHELD_WORDS), ensure_ascii=False)
