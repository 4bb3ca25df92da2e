"""The event contract: what the agent publishes while it runs.

Every event is a plain JSON-able dict. The chat and voice pages, the session
report, the terminal chat and the LiveKit voice bridge all read this one shape.
Each kind is a TypedDict below and has one builder here; an :class:`EventBus`
(agent/event_bus.py) stamps what a builder returns with the keys every event
has::

    {"type": str, "ts": float (epoch seconds), "session_id": str, "turn": int, "seq": int}

``turn`` is 0 for the greeting and counts user turns from 1. ``seq`` is the
event's position in its session (0, 1, 2, ...), so a reader can spot gaps.

Kinds (the keys each adds):

``transcript``
    ``role`` ("user" | "assistant"), ``text``, ``final`` (False for interim
    speech-to-text results, which also carry ``stt_final``). Fillers ("One
    moment...") are assistant transcripts too; a final assistant transcript says
    whether it was ``interrupted``.
``tool_call``
    ``name``, ``arguments`` (dict), ``output`` (str | None), ``error``
    (str | None; the message the model read back), ``duration_ms``.
``retrieval``
    ``source`` ("memories" | "conversations" | "knowledge"), ``tier`` (the
    memory tier searched: "slots" for memories, "conversations" for past
    conversation turns, "knowledge" for the shared knowledge base),
    ``trigger`` ("per_turn_recall", "tool:search_memories",
    "tool:search_past_conversations", "tool:search_knowledge"), ``query``,
    ``mode`` ("hybrid" | "vector" | "text" for memories and conversations,
    "hybrid" for knowledge),
    ``params`` ({"vector_weight", "text_weight", "k"} or None), ``latency_ms``,
    ``degraded_reason``, ``skipped``, ``skip_reason``, ``hits`` (each a
    ``MemoryHit.as_dict()``, ``ConversationHit.as_dict()`` or
    ``KnowledgeHit.as_dict()``), and for the per-turn recall ``injected``
    (ids of the hits put into the model's context; the per-turn recall
    publishes one event per tier, slots first);
    ``embed_ms`` and ``search_ms`` when a search ran.
``state``
    ``who`` ("agent" | "user"), ``state`` (agent: initializing, idle,
    listening, thinking, speaking; user: speaking, listening, away).
``metric``
    ``name`` (see :data:`METRIC_NAMES`), ``value`` (milliseconds). ``stt_ms``
    is stamped with the user turn it transcribes (the next one: it is measured
    before that message is committed).
``turn_done``
    The agent finished answering turn ``turn``. No extra keys.
``error``
    ``message`` (one sentence to show), ``where`` (llm, stt, tts, agent,
    livekit); ``kind`` and ``recoverable`` when known. Kind ``stopped`` is not a failure: the visitor
    stopped the answer (Conversation.stop).

Any event may carry ``origin`` when it did not come from this process's bus:
"worker" (forwarded from the LiveKit worker's events topic) or
"lk.transcription" (decoded from a LiveKit transcription stream).
"""

import json
import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict, get_args

# No `from __future__ import annotations` here: TypedDict reads NotRequired[...] from evaluated annotations.

if TYPE_CHECKING:
    from datetime import tzinfo

    from core.retrieval import ConversationHit, ConversationSearch, KnowledgeSearch, MemoryHit, MemorySearch, RrfParams

EVENTS_TOPIC = "memory-playground.events"
EventType = Literal["transcript", "tool_call", "retrieval", "state", "metric", "turn_done", "error"]
EVENT_TYPES: tuple[str, ...] = get_args(EventType)
METRIC_NAMES = (
    "llm_ttft_ms",
    "llm_duration_ms",
    "e2e_ms",
    "recall_ms",
    "stt_ms",
    "transcription_delay_ms",
    "tts_ttfb_ms",
    "eou_delay_ms",
    "turn_total_ms",
)
RECALL_TRIGGER = "per_turn_recall"
ORIGIN_WORKER = "worker"
ORIGIN_TRANSCRIPTION = "lk.transcription"

# What a builder returns: one event without the stamp keys the bus adds.
EventFields = dict[str, Any]


class _Common(TypedDict):
    type: EventType
    ts: float
    session_id: str
    turn: int
    seq: int
    origin: NotRequired[str]


class TranscriptEvent(_Common):
    role: Literal["user", "assistant"]
    text: str
    final: bool
    interrupted: NotRequired[bool]
    stt_final: NotRequired[bool]
    segment_id: NotRequired[str]


class ToolCallEvent(_Common):
    name: str
    arguments: dict[str, Any]
    output: str | None
    error: str | None
    duration_ms: float


class RetrievalParams(TypedDict):
    vector_weight: float
    text_weight: float
    k: int


RetrievalTier = Literal["slots", "conversations", "knowledge"]
TIER_OF_SOURCE: dict[str, str] = {"memories": "slots", "conversations": "conversations", "knowledge": "knowledge"}


class RetrievalEvent(_Common):
    source: Literal["memories", "conversations", "knowledge"]
    tier: RetrievalTier
    trigger: str
    query: str
    mode: str
    params: RetrievalParams | None
    latency_ms: float
    degraded_reason: str | None
    skipped: bool
    skip_reason: str | None
    hits: list[dict[str, Any]]
    injected: NotRequired[list[str]]
    embed_ms: NotRequired[float]
    search_ms: NotRequired[float]
    window: NotRequired[str]  # a search of past turns kept to these days ("2026-11-23 to 2026-11-29")


class StateEvent(_Common):
    who: Literal["agent", "user"]
    state: str


class MetricEvent(_Common):
    name: str
    value: float


class TurnDoneEvent(_Common):
    pass


class ErrorEvent(_Common):
    message: str
    where: str
    kind: NotRequired[str]
    recoverable: NotRequired[bool]


Event = TranscriptEvent | ToolCallEvent | RetrievalEvent | StateEvent | MetricEvent | TurnDoneEvent | ErrorEvent
_SCHEMAS: dict[str, type] = {
    "transcript": TranscriptEvent,
    "tool_call": ToolCallEvent,
    "retrieval": RetrievalEvent,
    "state": StateEvent,
    "metric": MetricEvent,
    "turn_done": TurnDoneEvent,
    "error": ErrorEvent,
}


# --- builders: one per kind ---------------------------------------------------------------------


def transcript(
    role: str,
    text: str,
    *,
    final: bool = True,
    interrupted: bool | None = None,
    stt_final: bool | None = None,
    segment_id: str | None = None,
) -> EventFields:
    fields: EventFields = {"type": "transcript", "role": role, "text": text, "final": final}
    for key, value in (("interrupted", interrupted), ("stt_final", stt_final), ("segment_id", segment_id)):
        if value is not None:
            fields[key] = value
    return fields


def tool_call(
    name: str, arguments: Mapping[str, Any], *, output: str | None, error: str | None, duration_ms: float
) -> EventFields:
    return {
        "type": "tool_call",
        "name": name,
        "arguments": dict(arguments),
        "output": output,
        "error": error,
        "duration_ms": round(duration_ms, 2),
    }


def retrieval(
    *,
    source: str,
    trigger: str,
    query: str,
    mode: str,
    params: "RrfParams | None",
    latency_ms: float,
    hits: Iterable[Any] = (),
    degraded_reason: str | None = None,
    skip_reason: str | None = None,
    injected: "Iterable[MemoryHit | ConversationHit] | None" = None,
    embed_ms: float | None = None,
    search_ms: float | None = None,
    window: str | None = None,
) -> EventFields:
    """A search and what it found; `hits` are MemoryHit / ConversationHit / KnowledgeHit (or their dicts)."""
    fields: EventFields = {
        "type": "retrieval",
        "source": source,
        "tier": TIER_OF_SOURCE[source],
        "trigger": trigger,
        "query": query,
        "mode": mode,
        "params": None
        if params is None
        else {"vector_weight": params.vector_weight, "text_weight": params.text_weight, "k": params.k},
        "latency_ms": round(latency_ms, 2),
        "degraded_reason": degraded_reason,
        "skipped": skip_reason is not None,
        "skip_reason": skip_reason,
        "hits": [hit if isinstance(hit, dict) else hit.as_dict() for hit in hits],
    }
    if injected is not None:
        fields["injected"] = [str(hit.id) for hit in injected]
    if embed_ms is not None:
        fields["embed_ms"] = round(embed_ms, 2)
    if search_ms is not None:
        fields["search_ms"] = round(search_ms, 2)
    if window is not None:
        fields["window"] = window
    return fields


def memory_search_retrieval(
    search: "MemorySearch | ConversationSearch",
    *,
    trigger: str,
    query: str | None = None,
    latency_ms: float | None = None,
    injected: "Iterable[MemoryHit | ConversationHit] | None" = None,
    zone: "tzinfo | None" = None,
) -> EventFields:
    """A search of either memory tier that ran (slots, or past turns for a ConversationSearch). `query` is what
    the user said when it differs from the search's cleaned query; `latency_ms` is the caller's wall time when
    it differs from the search's own (the per-turn recall waits on a thread), which is then `search_ms`. With
    `zone` (the user's calendar), each past turn also has `said_on`, its day there, as the model was told."""
    # by name, not isinstance: this module imports nothing from core at run time
    source = "conversations" if type(search).__name__ == "ConversationSearch" else "memories"
    hits: list[Any] = list(search.hits)
    if source == "conversations" and zone is not None:
        hits = [hit.as_dict() | {"said_on": hit.created_at.astimezone(zone).date().isoformat()} for hit in hits]
    return retrieval(
        source=source,
        trigger=trigger,
        query=search.query if query is None else query,
        mode=search.mode,
        params=search.params,
        latency_ms=search.latency_ms if latency_ms is None else latency_ms,
        hits=hits,
        degraded_reason=search.degraded_reason,
        injected=injected,
        embed_ms=search.embed_ms,
        search_ms=None if latency_ms is None else search.latency_ms,
        window=window.describe() if (window := getattr(search, "window", None)) else None,
    )


conversation_search_retrieval = memory_search_retrieval  # the same event, for a search of past turns


def knowledge_search_retrieval(search: "KnowledgeSearch", *, trigger: str) -> EventFields:
    return retrieval(
        source="knowledge",
        trigger=trigger,
        query=search.query,
        mode="hybrid",
        params=search.params,
        latency_ms=search.latency_ms,
        hits=search.hits,
        embed_ms=search.embed_ms,
    )


def skipped_recall(
    query: str, params: "RrfParams", *, reason: str, latency_ms: float, tier: str = "slots"
) -> EventFields:
    """One tier's per-turn recall search that did not run or did not finish in time."""
    return retrieval(
        source="memories" if tier == "slots" else "conversations",
        trigger=RECALL_TRIGGER,
        query=query,
        mode="hybrid",
        params=params,
        latency_ms=latency_ms,
        skip_reason=reason,
        injected=[],
    )


def state(who: str, value: str) -> EventFields:
    return {"type": "state", "who": who, "state": value}


def metric(name: str, value_ms: float) -> EventFields:
    return {"type": "metric", "name": name, "value": round(float(value_ms), 2)}


def turn_done() -> EventFields:
    return {"type": "turn_done"}


def error(message: str, *, where: str, kind: str | None = None, recoverable: bool | None = None) -> EventFields:
    fields: EventFields = {"type": "error", "message": message, "where": where}
    if kind is not None:
        fields["kind"] = kind
    if recoverable is not None:
        fields["recoverable"] = recoverable
    return fields


# --- stamping, encoding, reading ------------------------------------------------------------------


def jsonable(value: Any) -> Any:
    """A value safe for json.dumps (datetimes, UUIDs, NaN...)."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [jsonable(v) for v in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def stamped(fields: EventFields, *, ts: float, session_id: str, turn: int, seq: int) -> Event:
    if fields.get("type") not in EVENT_TYPES:
        raise ValueError(f"unknown event type {fields.get('type')!r}")
    event = {"type": fields["type"], "ts": ts, "session_id": session_id, "turn": turn, "seq": seq}
    event.update(jsonable({key: value for key, value in fields.items() if key != "type"}))
    return event  # type: ignore[return-value]  # the builder made the kind's keys


def missing_keys(event: Mapping[str, Any]) -> list[str]:
    """The keys its kind requires that `event` lacks ([] for a complete event of a known kind)."""
    schema = _SCHEMAS.get(event.get("type"))  # type: ignore[arg-type]
    if schema is None:
        return ["type"]
    return [key for key in schema.__required_keys__ if key not in event]


def encode_event(event: Event) -> str:
    return json.dumps(event, ensure_ascii=False, separators=(",", ":"))


def decode_event(payload: str | bytes) -> Event:
    """Parse one event (e.g. from the room text stream); ValueError if it is not one."""
    if isinstance(payload, bytes):
        payload = payload.decode("utf-8")
    try:
        event = json.loads(payload)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not an event: {exc.msg}") from None
    if not isinstance(event, dict) or event.get("type") not in EVENT_TYPES:
        raise ValueError("not an event: missing or unknown 'type'")
    missing = missing_keys(event)
    if missing:
        raise ValueError(f"{event['type']} event is missing {', '.join(sorted(missing))}")
    return event  # type: ignore[return-value]


def of_type(events: Iterable[Event], kind: str, *, turn: int | None = None) -> list[Any]:
    """The events of one kind (and turn), in order."""
    return [e for e in events if e["type"] == kind and (turn is None or e["turn"] == turn)]
