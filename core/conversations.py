"""Conversation memory: every turn of every session, stored as it happens and
searchable later (hybrid vector + full-text search, like memories).

Only the service writes turns (Scope.service, scoped by the verified user id);
users read their own turns through RLS. A turn is written even when its
embedding cannot be computed: it is stored with no embedding, found by the
text branch meanwhile, and embedded later by `embed_pending`.

A turn may be stored withheld (`TurnInput.withheld`: the agent decides, for a
message that may hold a secret it never keeps, agent/turn_log.py): its content
is WITHHELD_TEXT instead of what was said, it is never embedded and has no
words to search, so no search finds it; the transcript keeps its place.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import numpy as np

from core import db, embeddings, session_deletions
from core.date_window import DateWindow
from core.db import Scope, transaction, vector_literal
from core.errors import EmbeddingUnavailable, InvalidInput, NotFound, SessionDeleted
from core.retrieval import ConversationSearch, RrfParams, SearchMode, search_conversations
from core.text import clean_text

log = logging.getLogger(__name__)

MAX_TURN_LENGTH = 8000
MAX_SPEAKER_LENGTH = 64
MAX_SESSION_ID_LENGTH = 200
MAX_BATCH = 5000
_COLUMNS = (
    "id, session_id, turn_index, speaker, content, created_at, embedding is not null as embedded, opening, withheld"
)
# What a withheld turn holds instead of what was said (supabase/migrations/20261207000000_withheld_turns.sql)
WITHHELD_TEXT = "[not kept: this message may have held a password or another secret]"


@dataclass(frozen=True)
class TurnInput:
    """One turn to store: which session, its position in it, who spoke, what was said, when.

    `opening`: the agent said it before the user said anything in the session (the greeting): it is kept in
    the transcript but never embedded nor searched, since it holds nothing the user told the agent
    (supabase/migrations/20261207120000_openings_not_searched.sql)."""

    session_id: str
    turn_index: int
    speaker: str
    content: str
    created_at: datetime | None = None
    opening: bool = False
    withheld: bool = False  # stored as WITHHELD_TEXT, never embedded nor searchable: `content` is not kept


@dataclass(frozen=True)
class ConversationTurn:
    id: int
    session_id: str
    turn_index: int
    speaker: str
    content: str
    created_at: datetime
    embedded: bool
    opening: bool = False  # said by the agent before the user's first message: never searched (TurnInput)
    withheld: bool = False  # its words were not kept: `content` is WITHHELD_TEXT

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "session_id": self.session_id,
            "turn_index": self.turn_index,
            "speaker": self.speaker,
            "content": self.content,
            "created_at": self.created_at.isoformat(),
            "embedded": self.embedded,
            "opening": self.opening,
            "withheld": self.withheld,
        }


def embedding_text(speaker: str, content: str) -> str:
    """What a turn's embedding is computed from: "speaker: content". Adding the turn
    before it (as context) made the vector branch worse on the conversational dev set:
    every reply then looked like the turn it answered (docs/RETRIEVAL.md)."""
    return f"{speaker}: {content}"


def _clean(turn: TurnInput) -> TurnInput:
    session_id = clean_text(turn.session_id, what="session id", max_length=MAX_SESSION_ID_LENGTH)
    if isinstance(turn.turn_index, bool) or not isinstance(turn.turn_index, int) or turn.turn_index < 0:
        raise InvalidInput(f"The turn index must be a whole number of 0 or more (got {turn.turn_index!r}).")
    speaker = clean_text(turn.speaker, what="speaker", max_length=MAX_SPEAKER_LENGTH)
    withheld = turn.withheld is True
    content = WITHHELD_TEXT if withheld else clean_text(turn.content, what="turn text", max_length=MAX_TURN_LENGTH)
    if turn.created_at is not None and (not isinstance(turn.created_at, datetime) or turn.created_at.tzinfo is None):
        raise InvalidInput("A turn's time must be a timezone-aware datetime.")
    if turn.opening and speaker == "user":
        raise InvalidInput("An opening is what the agent says before the user's first message, not the user's.")
    return TurnInput(session_id, turn.turn_index, speaker, content, turn.created_at, bool(turn.opening), withheld)


def _require_service(scope: Scope) -> None:
    if not scope.is_service:
        raise InvalidInput("Conversation turns are written by the service, not as the user.")


def _try_embed(texts: list[str], embed: Callable[[Sequence[str]], np.ndarray]) -> list[str | None]:
    """Embeddings as pgvector literals, or None for all of them if the model failed:
    the turns are stored anyway and embedded later."""
    if not texts:
        return []
    try:
        vectors = embed(texts)
    except EmbeddingUnavailable as exc:
        log.warning("storing %d turn(s) without embeddings for now: %s", len(texts), exc)
        return [None] * len(texts)
    return [vector_literal(v) for v in vectors]


def store_turns(
    scope: Scope, turns: Sequence[TurnInput], *, embed: Callable[[Sequence[str]], np.ndarray] = embeddings.embed
) -> list[ConversationTurn]:
    """Store turns (service scope), creating their sessions if needed; returns them in input order.

    Idempotent per (session, turn index): storing the same turn again returns the
    stored one; different text for a stored turn is refused. A session id that
    belongs to another user is refused and nothing is written. Turns of a session
    its owner deleted (said late, by a call still running it) are not stored and
    not returned: the database skips them.
    """
    _require_service(scope)
    if not turns:
        return []
    if len(turns) > MAX_BATCH:
        raise InvalidInput(f"Store at most {MAX_BATCH} turns at a time (got {len(turns)}).")
    cleaned = [_clean(t) for t in turns]
    keys = [(t.session_id, t.turn_index) for t in cleaned]
    if len(set(keys)) != len(keys):
        raise InvalidInput("The same session and turn index appear twice in one batch.")
    # an opening or a withheld turn is never embedded: the vector branch reads only embedded turns
    searched = [t for t in cleaned if not (t.opening or t.withheld)]
    embedded = iter(_try_embed([embedding_text(t.speaker, t.content) for t in searched], embed))
    vectors = [None if t.opening or t.withheld else next(embedded) for t in cleaned]

    with transaction(scope) as cur:
        session_ids = sorted({t.session_id for t in cleaned})
        cur.executemany(
            "insert into public.sessions (session_id, user_id) values (%s, %s) on conflict (session_id) do nothing",
            [(s, scope.user_id) for s in session_ids],
        )
        cur.execute(
            "select session_id from public.sessions where session_id = any(%s) and user_id <> %s",
            (session_ids, scope.user_id),
        )
        foreign = [row["session_id"] for row in cur.fetchall()]
        if foreign:
            raise InvalidInput(f"Session {foreign[0]} belongs to another user; no turns were stored.")
        cur.executemany(
            "insert into public.conversation_turns "
            "(user_id, session_id, turn_index, speaker, content, created_at, embedding, opening, withheld) "
            "values (%s, %s, %s, %s, %s, coalesce(%s, now()), %s::extensions.halfvec, %s, %s) "
            "on conflict (user_id, session_id, turn_index) do nothing",
            [
                (
                    scope.user_id,
                    t.session_id,
                    t.turn_index,
                    t.speaker,
                    t.content,
                    t.created_at,
                    v,
                    t.opening,
                    t.withheld,
                )
                for t, v in zip(cleaned, vectors, strict=True)
            ],
        )
        cur.execute(
            f"select {_COLUMNS} from public.conversation_turns "
            "where user_id = %s and (session_id, turn_index) in (select * from unnest(%s::text[], %s::int[]))",
            (scope.user_id, [k[0] for k in keys], [k[1] for k in keys]),
        )
        stored = {(row["session_id"], row["turn_index"]): ConversationTurn(**row) for row in cur.fetchall()}
        skipped = sorted({t.session_id for t in cleaned if (t.session_id, t.turn_index) not in stored})
        if skipped:
            log.info("turns of deleted session(s) %s not stored", ", ".join(skipped))
        for t in cleaned:
            turn = stored.get((t.session_id, t.turn_index))
            if turn is None:
                continue
            if (turn.speaker, turn.content, turn.withheld) != (t.speaker, t.content, t.withheld):
                raise InvalidInput(
                    f"Turn {t.turn_index} of session {t.session_id} is already stored with "
                    "different text; turns cannot be changed."
                )
    for session_id in skipped:  # whatever still runs it here ends, also when the database feed missed the deletion
        session_deletions.notify(scope.user_id, session_id)
    return [stored[key] for key in keys if key in stored]


def store_turn(
    scope: Scope,
    session_id: str,
    turn_index: int,
    speaker: str,
    content: str,
    *,
    created_at: datetime | None = None,
    withheld: bool = False,
    embed: Callable[[Sequence[str]], np.ndarray] = embeddings.embed,
) -> ConversationTurn:
    """Store one turn as it happens (service scope). See store_turns; SessionDeleted for a deleted session."""
    turn = TurnInput(session_id, turn_index, speaker, content, created_at, withheld=withheld)
    stored = store_turns(scope, [turn], embed=embed)
    if not stored:
        raise SessionDeleted(f"Session {session_id} was deleted by its owner; its turns are not kept.")
    return stored[0]


def embed_pending(
    scope: Scope,
    *,
    limit: int = 200,
    embed: Callable[[Sequence[str]], np.ndarray] = embeddings.embed,
    conninfo: str | None = None,
) -> int:
    """Embed the scope's turns that were stored without an embedding (but openings, which never are);
    returns how many.

    Raises EmbeddingUnavailable if the model still fails (the turns stay pending)."""
    _require_service(scope)
    with transaction(scope, conninfo=conninfo) as cur:
        cur.execute(
            "select id, speaker, content from public.conversation_turns "
            "where user_id = %s and embedding is null and not opening and not withheld order by id limit %s",
            (scope.user_id, max(1, min(int(limit), MAX_BATCH))),
        )
        rows = cur.fetchall()
    if not rows:
        return 0
    vectors = embed([embedding_text(r["speaker"], r["content"]) for r in rows])
    with transaction(scope, conninfo=conninfo) as cur:
        cur.executemany(
            "update public.conversation_turns set embedding = %s::extensions.halfvec "
            "where id = %s and user_id = %s and embedding is null",
            [(vector_literal(v), r["id"], scope.user_id) for r, v in zip(rows, vectors, strict=True)],
        )
    return len(rows)


def embed_all_pending(
    *, conninfo: str | None = None, embed: Callable[[Sequence[str]], np.ndarray] = embeddings.embed
) -> int:
    """Embed every turn stored without an embedding, user by user (each through that user's service scope);
    returns how many. For turns a process stored while the model failed and could not embed before it
    exited; `python -m core cleanup` (run by `make run` at start) calls it. The model is loaded only when
    there is something to embed. Raises EmbeddingUnavailable if it still fails."""
    with db.admin_connection(conninfo) as conn:
        users = [
            row[0]
            for row in conn.execute(
                "select distinct user_id from public.conversation_turns "
                "where embedding is null and not opening and not withheld limit 10000"
            ).fetchall()
        ]
    done = 0
    for user_id in users:
        scope = Scope.service(user_id)
        while count := embed_pending(scope, embed=embed, conninfo=conninfo):
            done += count
    return done


# Forgetting a memory removes the past turns that mention its text (core.memories). A text that is very
# short ("no", "ok") or only English stop words ("the", "it is") would take unrelated turns with it, and
# says nothing the search could find again, so it removes nothing.
MIN_FORGOTTEN_MENTION_LENGTH = 3

# The agent says back what it was told in the other person: "I paid $5 for coffee" comes back as "Got it, I'll
# remember that you paid $5 for coffee", and "my dog is Rex" as "your dog is Rex". A memory's text is also
# found so repeated: every first-person word of it in the second person, and the other way round ("you" for
# "I", "me", "we" or "us"; "your" for "my" or "our"; "you are" for "I am", "you were" for "I was"), the rest
# word for word as before. Only the whole swap counts, so "you paid $7 for coffee" or "what did I pay for
# coffee?" is no mention of "I paid $5 for coffee".
_OTHER_PERSON: dict[str, tuple[str, ...]] = {
    "i": ("you",),
    "me": ("you",),
    "we": ("you",),
    "us": ("you",),
    "my": ("your",),
    "our": ("your",),
    "mine": ("yours",),
    "ours": ("yours",),
    "myself": ("yourself",),
    "ourselves": ("yourselves",),
    "you": ("I", "me", "we", "us"),
    "your": ("my", "our"),
    "yours": ("mine", "ours"),
    "yourself": ("myself",),
    "yourselves": ("ourselves",),
}
# the verb after a swapped subject: "I am" -> "you are", "you were" -> "I was" (and "we were")
_VERB_AFTER: dict[tuple[str, str], tuple[str, ...]] = {
    ("i", "am"): ("are",),
    ("i", "was"): ("were",),
    ("you", "are"): ("am", "are"),
    ("you", "were"): ("was", "were"),
}
# words a text's repetition need not hold: a string is tried for it only when it holds all the others
_SWAPPED_WORDS = frozenset(_OTHER_PERSON) | {verb for _, verb in _VERB_AFTER}
# "I'm", "you're", "we've": written out before anything is compared, so "I'm vegan" and "you are vegan" match
_CONTRACTION = re.compile(r"\b(i|you|we)['\u2019](m|re|ve|ll|d)\b", re.I)
_WRITTEN_OUT = {"m": "am", "re": "are", "ve": "have", "ll": "will", "d": "would"}
_NOT_KEY_WORDS = _SWAPPED_WORDS | set(_WRITTEN_OUT.values())
_TOKEN = re.compile(r"\s+|[^\W_]+|[\W_]")


def written_out(string: str) -> str:
    """`string` as mentions are compared: curly apostrophes straight, "I'm" as "I am", "you're" as "you are"."""
    string = string.replace("\u2019", "'").replace("\u2018", "'")
    return _CONTRACTION.sub(lambda m: f"{m.group(1)} {_WRITTEN_OUT[m.group(2).lower()]}", string)


def _word_pattern(word: str) -> str:
    return "".join(char if char.isalnum() else "\\" + char for char in word)


def mention_pattern(text: str) -> str:
    """A Postgres regular expression for `text` as whole words, any run of spaces between them."""
    parts = []
    for char in text.strip():
        if char.isspace():
            if parts and parts[-1] != r"\s+":
                parts.append(r"\s+")
        elif char.isalnum():
            parts.append(char)
        else:
            parts.append("\\" + char)  # a backslash before a non-alphanumeric is always literal
    return r"(^|\W)" + "".join(parts) + r"(\W|$)"


def _other_person(text: str) -> list[str | tuple[str, ...]] | None:
    """`text` (written out) as tokens, each first- or second-person word as its other-person words; None when
    it has none."""
    tokens: list[str | tuple[str, ...]] = []
    before, swapped = "", False
    for token in _TOKEN.findall(text.strip()):
        lower = token.lower()
        other = _OTHER_PERSON.get(lower) or _VERB_AFTER.get((before, lower))
        swapped = swapped or other is not None
        tokens.append(other or token)
        if not token.isspace():
            before = lower
    return tokens if swapped else None


def other_person_pattern(text: str) -> str | None:
    """A regular expression for `text` said back in the other person (see _OTHER_PERSON), as whole words and
    any run of spaces between them like mention_pattern; None for a text with no first- or second-person word."""
    tokens = _other_person(text)
    if tokens is None:
        return None
    parts = []
    for token in tokens:
        if isinstance(token, tuple):
            parts.append("(?:" + "|".join(token) + ")")
        elif token.isspace():
            parts.append(r"\s+")
        else:
            parts.append(_word_pattern(token))
    return r"(^|\W)" + "".join(parts) + r"(\W|$)"


def other_person_text(text: str) -> str | None:
    """`text` as the agent would say it back ("I paid $5" -> "you paid $5"), for saying what a deletion takes;
    None for a text with no first- or second-person word."""
    tokens = _other_person(written_out(text))
    if tokens is None:
        return None
    return "".join(token[0] if isinstance(token, tuple) else token for token in tokens)


def forgettable(cur, texts: Sequence[str]) -> list[str]:
    """The texts whose mentions a deletion removes (from turns here, from session reports in core.sessions):
    at least MIN_FORGOTTEN_MENTION_LENGTH characters and a word that is not an English stop word (the
    dictionary of the turns' full-text column). One query on the caller's cursor."""
    if isinstance(texts, str):
        texts = [texts]
    kept = [" ".join((t or "").split()) for t in texts]
    kept = [t for t in dict.fromkeys(kept) if len(t) >= MIN_FORGOTTEN_MENTION_LENGTH]
    if not kept:
        return []
    cur.execute(
        "select x.said from unnest(%s::text[]) with ordinality as x(said, n) "
        "where length(to_tsvector('english', x.said)) > 0 order by x.n",
        (kept,),
    )
    return [row["said"] for row in cur.fetchall()]


_WORD = re.compile(r"\w+")


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


class Mentions:
    """Whether a string says one of `texts` as whole words, any case (mention_pattern's rule), or says it back
    in the other person ("you paid $5 for coffee" for "I paid $5 for coffee": other_person_pattern), for the
    deletion of a memory's mentions from past turns (here), from session reports (core.sessions) and from a
    conversation still open (agent/forgetting.py): one rule, checked by Python's `re` for all of them. Built
    from `forgettable` texts; `other_person=False` leaves out the repetitions (to tell them apart).

    Strings and texts are compared `written_out` ("I'm" as "I am"). A string holding a text as whole words
    holds each of its words (runs of \\w) as whole words, and a repetition each of its words but the swapped
    ones, so a pattern is tried only on strings holding all of those: looked up by the text's longest such word
    for one string (calling it), through a word index for many (`among`: a visitor's turns, their reports'
    strings), so a thousand texts over 20,000 turns stay cheap. (In SQL, `content ~* any(patterns)` recompiled
    every pattern on every row past Postgres's 32 cached regular expressions: 1,500 memory texts never
    finished.)"""

    def __init__(self, texts: Sequence[str], *, other_person: bool = True) -> None:
        self.texts = list(texts)
        # (the words a string must hold, the pattern), and the same keyed by the text's key word
        self._patterns: list[tuple[frozenset[str], re.Pattern]] = []
        self._by_word: dict[str, list[tuple[frozenset[str], re.Pattern]]] = {}
        for text in self.texts:
            said = written_out(text)
            words = _words(said)
            entries = [(words, re.compile(mention_pattern(said), re.I))]
            repeated = other_person_pattern(said) if other_person else None
            if repeated is not None:
                entries.append((words - _SWAPPED_WORDS, re.compile(repeated, re.I)))
            self._patterns += entries
            self._by_word.setdefault(self.key_word(text), []).extend(entries)

    @staticmethod
    def key_word(text: str) -> str:
        """The word a string must hold to say `text`, in either person and as written (core.sessions looks for
        it in the reports' raw text): its longest word that is neither swapped nor written out of a contraction
        ("" for a text of symbols or person words only: every string is tried)."""
        words = [word for word in _WORD.findall(written_out(text).lower()) if word not in _NOT_KEY_WORDS]
        return max(words, key=len) if words else ""

    def __bool__(self) -> bool:
        return bool(self.texts)

    def __call__(self, string: str) -> bool:
        string = written_out(string)
        said = {""} | _words(string)
        # a pattern runs only where the string holds every word it needs
        return any(
            words <= said and pattern.search(string) for key in said for words, pattern in self._by_word.get(key, ())
        )

    def among(self, strings: Sequence[str]) -> list[int]:
        """The positions of the strings that say one of the texts. For many strings (a visitor's turns):
        each pattern is tried only on the strings holding every word it needs, found through a word index
        (the rarest word first), so texts whose longest word is common stay cheap too."""
        strings = [written_out(string) for string in strings]
        holding: dict[str, set[int]] = {}
        for position, string in enumerate(strings):
            for word in _words(string):
                holding.setdefault(word, set()).add(position)
        found: set[int] = set()
        for needed, pattern in self._patterns:
            words = sorted(needed, key=lambda word: len(holding.get(word, ())))
            candidates = set(range(len(strings))) if not words else set(holding.get(words[0], ()))
            for word in words[1:]:
                if not candidates:
                    break
                candidates &= holding.get(word, set())
            found.update(position for position in candidates - found if pattern.search(strings[position]))
        return sorted(found)


@dataclass(frozen=True)
class MentionCount:
    """The past turns a deletion takes with it, as the Memories page says them before it asks to confirm."""

    yours: int = 0  # the user's own messages
    agents: int = 0  # the agent's replies
    repeated: int = 0  # of all of them, those that say a text only in the other person ("you paid" for "I paid")

    @property
    def total(self) -> int:
        return self.yours + self.agents


def _mentioning(cur, user_id, texts: Sequence[str]) -> tuple[list[str], list[dict[str, Any]]]:
    """The `forgettable` texts and the user's turns (id, speaker, content) that say one of them as whole words,
    any case, or say it back in the other person (as the caller's scope)."""
    kept = forgettable(cur, texts)
    says = Mentions(kept)
    if not says:
        return kept, []
    # a withheld turn says nothing of what was said: its marker is no mention of anything
    cur.execute(
        "select id, session_id, speaker, content, created_at from public.conversation_turns "
        "where user_id = %s and not withheld",
        (user_id,),
    )
    rows = cur.fetchall()
    return kept, [rows[position] for position in says.among([row["content"] for row in rows])]


def count_mentions(scope: Scope, texts: Sequence[str]) -> int:
    """How many of the user's past turns deleting these memory texts would delete with them; as the user,
    RLS decides."""
    return mention_count(scope, texts).total


def mention_count(scope: Scope, texts: Sequence[str]) -> MentionCount:
    """Whose past turns, and how many, deleting these memory texts would delete with them (what the Memories
    page says before it asks to confirm); as the user, RLS decides."""
    with transaction(scope) as cur:
        kept, rows = _mentioning(cur, scope.user_id, texts)
    agents = sum(1 for row in rows if row["speaker"] != "user")
    in_their_words = set(Mentions(kept, other_person=False).among([row["content"] for row in rows]))
    return MentionCount(len(rows) - agents, agents, len(rows) - len(in_their_words))


def delete_mentions(cur, user_id, texts: Sequence[str], *, spare: tuple[str, datetime] | None = None) -> int:
    """Delete the user's conversation turns (theirs and the agent's) that say any of `texts` as whole words,
    any case, or say it back in the other person (Mentions); returns how many. `spare`: (session id, time),
    that session's turns from that time on are kept (a turn still in progress). Runs in the caller's
    transaction, as the user (RLS) or the scoped service."""
    _, rows = _mentioning(cur, user_id, texts)
    if spare is not None:
        rows = [row for row in rows if row["session_id"] != spare[0] or row["created_at"] < spare[1]]
    if not rows:
        return 0
    cur.execute(
        "delete from public.conversation_turns where user_id = %s and id = any(%s)",
        (user_id, [row["id"] for row in rows]),
    )
    return cur.rowcount


def forgettable_texts(scope: Scope, texts: Sequence[str]) -> list[str]:
    """`forgettable`, in a transaction of its own."""
    with transaction(scope) as cur:
        return forgettable(cur, texts)


def forget_mentions(
    scope: Scope, texts: Sequence[str], *, spare: tuple[str, datetime] | None = None
) -> tuple[list[str], int]:
    """For a conversation still open when the user deleted memories (agent/forgetting.py): which of the
    deleted `texts` a deletion forgets (`forgettable`), and how many of the user's turns that mention them
    are deleted now (turns stored after the deletion itself, from a turn queue in another process); the
    turns `spare` names (`delete_mentions`) are not."""
    with transaction(scope) as cur:
        kept = forgettable(cur, texts)
        return kept, delete_mentions(cur, scope.user_id, kept, spare=spare) if kept else 0


def list_turns(scope: Scope, session_id: str) -> list[ConversationTurn]:
    """A session's turns in order (as the user: RLS decides; as the service: scoped by user)."""
    session_id = clean_text(session_id, what="session id", max_length=MAX_SESSION_ID_LENGTH)
    with transaction(scope) as cur:
        cur.execute(
            f"select {_COLUMNS} from public.conversation_turns where user_id = %s and session_id = %s "
            "order by turn_index",
            (scope.user_id, session_id),
        )
        return [ConversationTurn(**row) for row in cur.fetchall()]


def last_conversation(scope: Scope, *, before_session_id: str | None = None) -> list[ConversationTurn]:
    """The turns of the session in which the user said something last, other than
    `before_session_id` (the one going on), but its opening (the greeting says nothing the user told): what
    "what did we talk about last time?" is about. Empty when there is none. As the user: RLS decides; as
    the service: scoped by user."""
    current = (
        None
        if not before_session_id
        else clean_text(before_session_id, what="session id", max_length=MAX_SESSION_ID_LENGTH)
    )
    with transaction(scope) as cur:
        # the session of the user's latest message, not the latest session started: a conversation still open
        # in another tab since before the one just ended was "last time" until 2026-12-07. Read newest first
        # along the user's turns by time (conversation_turns_user_time_idx): the first row is the answer.
        cur.execute(
            "select t.session_id from public.conversation_turns t where t.user_id = %s and t.speaker = 'user' "
            "and t.session_id is distinct from %s::text "
            "and exists (select 1 from public.sessions s where s.user_id = t.user_id and s.session_id = t.session_id) "
            "order by t.created_at desc, t.id desc limit 1",
            (scope.user_id, current),
        )
        row = cur.fetchone()
    return [turn for turn in list_turns(scope, row["session_id"]) if not turn.opening] if row else []


@dataclass(frozen=True)
class HeldConversation:
    """An earlier conversation as held on some days: its first turns of those days, and how many it had."""

    session_id: str
    turns: list[ConversationTurn]
    turn_count: int  # its turns on those days, shown or not


def conversations_within(
    scope: Scope,
    window: DateWindow,
    *,
    except_session_id: str | None = None,
    most: int = 5,
    turns_each: int = 12,
    conninfo: str | None = None,
) -> tuple[list[HeldConversation], int]:
    """The user's conversations in which they said something on the window's days (of its time zone), other
    than `except_session_id` (the one going on): the latest `most`, oldest first, each with its first
    `turns_each` turns of those days, openings left out (a greeting says nothing the user told); and how
    many such conversations there were. What "what did we talk about yesterday?" is about. As the user: RLS
    decides; as the service: scoped by user. A range read of the user's turns by time
    (conversation_turns_user_time_idx)."""
    current = (
        None
        if not except_session_id
        else clean_text(except_session_id, what="session id", max_length=MAX_SESSION_ID_LENGTH)
    )
    since, before = window.bounds()
    # open ends as infinities, not "is null or": a plan prepared for any bounds still reads a range
    within = (
        "t.user_id = %(user)s and t.created_at >= coalesce(%(since)s::timestamptz, '-infinity') "
        "and t.created_at < coalesce(%(before)s::timestamptz, 'infinity') and not t.opening"
    )
    with transaction(scope, conninfo=conninfo) as cur:
        cur.execute(
            f"with held as (select t.session_id, min(t.created_at) as started, count(*) as turn_count "
            f"  from public.conversation_turns t where {within} and t.session_id is distinct from %(current)s "
            "  group by t.session_id having bool_or(t.speaker = 'user')), "
            "latest as (select h.*, count(*) over () as held_count from held h "
            "  order by h.started desc, h.session_id desc limit %(most)s), "
            f"shown as (select t.*, row_number() over (partition by t.session_id order by t.turn_index) as place "
            f"  from public.conversation_turns t join latest l on l.session_id = t.session_id where {within}) "
            "select l.turn_count, l.held_count, s.id, s.session_id, s.turn_index, s.speaker, s.content, s.created_at, "
            "s.embedding is not null as embedded, s.opening, s.withheld "
            "from latest l join shown s on s.session_id = l.session_id and s.place <= %(each)s "
            "order by l.started, l.session_id, s.turn_index",
            {
                "user": scope.user_id,
                "since": since,
                "before": before,
                "current": current,
                "most": max(int(most), 1),
                "each": max(int(turns_each), 1),
            },
        )
        rows = cur.fetchall()
    held_count = int(rows[0]["held_count"]) if rows else 0
    held: dict[str, HeldConversation] = {}
    for row in rows:
        turn_count, _ = row.pop("turn_count"), row.pop("held_count")
        turn = ConversationTurn(**row)
        held.setdefault(turn.session_id, HeldConversation(turn.session_id, [], int(turn_count))).turns.append(turn)
    return list(held.values()), held_count


def count_user_turns(scope: Scope, session_ids: Sequence[str]) -> dict[str, int]:
    """How many turns the user said in each of these sessions, from the stored turns (what a session
    still open has instead of a report); a session without turns is left out."""
    ids = [clean_text(s, what="session id", max_length=MAX_SESSION_ID_LENGTH) for s in session_ids]
    if not ids:
        return {}
    with transaction(scope) as cur:
        cur.execute(
            "select session_id, count(*) as said from public.conversation_turns "
            "where user_id = %s and session_id = any(%s) and speaker = 'user' group by session_id",
            (scope.user_id, ids),
        )
        return {row["session_id"]: int(row["said"]) for row in cur.fetchall()}


def get_turn(scope: Scope, turn_id: int) -> ConversationTurn:
    with transaction(scope) as cur:
        cur.execute(
            f"select {_COLUMNS} from public.conversation_turns where id = %s and user_id = %s",
            (int(turn_id), scope.user_id),
        )
        row = cur.fetchone()
    if row is None:
        raise NotFound("That conversation turn does not exist.")
    return ConversationTurn(**row)


def search(
    scope: Scope,
    query: str,
    *,
    limit: int = 10,
    params: RrfParams | None = None,
    mode: SearchMode = "hybrid",
    text_match: Literal["any", "all"] = "any",
    exclude_session_id: str | None = None,
    embed=embeddings.embed_one,
) -> ConversationSearch:
    """Hybrid search over the scope's past turns (see core.retrieval.search_conversations)."""
    return search_conversations(
        scope,
        query,
        limit=limit,
        params=params,
        mode=mode,
        text_match=text_match,
        exclude_session_id=exclude_session_id,
        embed=embed,
    )
