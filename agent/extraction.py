"""After a session: pull a few durable facts out of what the user said.

0-5 facts, each with a confidence. Volatile things ("I'm tired today") and
sensitive ones (health details, card numbers, passwords, government ids) are
dropped whatever produced them. Slots the tools already wrote or forgot in
this session are left alone: the conversation decided those explicitly, unless
the user said the fact after that ("I live in Boston." answered with a tool,
then "Where is order 1002? By the way I live in Denver.", which no tool wrote:
Denver was dropped until 2026-12-07, and Boston stayed).

With a real LLM the model proposes facts (JSON) and these same rules filter
them; with the offline brain the brain's own fact parser proposes them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from livekit.agents import llm

from agent.brain.facts import Fact, parse_fact, split_statements
from agent.model_factory import llm_connect_options
from agent.prompts import extraction_request
from agent.sensitive import rejection_reason
from core.text import normalize_slot

log = logging.getLogger(__name__)

MAX_FACTS = 5
MIN_CONFIDENCE = 0.6


@dataclass(frozen=True)
class ExtractedFact:
    memory_type: str
    content: str
    confidence: float
    evidence: str  # the user's words it came from

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Extraction:
    facts: list[ExtractedFact]
    dropped: list[dict[str, Any]]  # proposals rejected, with the reason (for the report)
    method: str  # "rules" | "llm" | "llm+rules"

    def as_dict(self) -> dict[str, Any]:
        return {"method": self.method, "facts": [f.as_dict() for f in self.facts], "dropped": self.dropped}


def propose_with_rules(user_turns: Iterable[str]) -> list[tuple[Fact, str]]:
    """Each user statement through the brain's fact parser; the last word on a slot wins."""
    proposals: dict[str, tuple[Fact, str]] = {}
    for text in user_turns:
        # a turn may hold several statements: "I live in Denver. My dog is Rex."
        for sentence in split_statements(text):
            fact = parse_fact(sentence)
            if fact is not None:
                proposals.pop(fact.memory_type, None)
                proposals[fact.memory_type] = (fact, sentence.strip())
    return list(proposals.values())


def _decided_by_a_tool(slot: str, evidence: str, touched_slots: set[str] | Mapping[str, int], user_turns) -> bool:
    """Whether a tool wrote or forgot `slot` in or after the message `evidence` comes from (the last that
    holds it; one not found counts as earlier)."""
    if slot not in touched_slots:
        return False
    if not isinstance(touched_slots, Mapping):
        return True
    words = " ".join(evidence.split()).lower()
    said = [i for i, text in enumerate(user_turns) if words and words in " ".join(text.split()).lower()]
    return not said or said[-1] <= touched_slots[slot]


def filter_facts(
    proposals: Iterable[tuple[Fact, str]],
    *,
    touched_slots: set[str] | Mapping[str, int],
    existing: dict[str, str],
    user_turns: list[str] | None = None,
) -> tuple[list[ExtractedFact], list[dict[str, Any]]]:
    """`touched_slots`: the slots the tools wrote or forgot, each with the index in `user_turns` of the last
    message whose turn did (a set: every message's); a fact said in a later message is kept."""
    kept: list[ExtractedFact] = []
    dropped: list[dict[str, Any]] = []
    for fact, evidence in proposals:
        reason = None
        if _decided_by_a_tool(fact.memory_type, evidence, touched_slots, user_turns or []):
            reason = "handled by a tool during the session"
        elif existing.get(fact.memory_type, "").strip().lower() == fact.content.strip().lower():
            reason = "already remembered"
        elif fact.confidence < MIN_CONFIDENCE:
            reason = f"low confidence ({fact.confidence:.2f})"
        else:
            reason = rejection_reason(fact.memory_type, fact.content, evidence=evidence)
        if reason:
            dropped.append({"memory_type": fact.memory_type, "content": fact.content, "reason": reason})
            continue
        kept.append(ExtractedFact(fact.memory_type, fact.content, round(fact.confidence, 2), evidence))
    kept.sort(key=lambda f: f.confidence, reverse=True)
    for extra in kept[MAX_FACTS:]:
        dropped.append({"memory_type": extra.memory_type, "content": extra.content, "reason": "over the limit of 5"})
    return kept[:MAX_FACTS], dropped


async def propose_with_llm(llm_model, user_turns: list[str]) -> list[tuple[Fact, str]]:
    """Ask a real model for candidate facts; raises on failure (the caller falls back to rules)."""
    chat_ctx = llm.ChatContext.empty()
    chat_ctx.add_message(role="user", content=extraction_request(user_turns))
    response = await llm_model.chat(chat_ctx=chat_ctx, conn_options=llm_connect_options()).collect()
    text = response.text.strip()
    text = text[text.find("[") : text.rfind("]") + 1]
    items = json.loads(text)
    proposals = []
    for item in items[: MAX_FACTS * 2]:
        slot = normalize_slot(str(item["memory_type"]))
        confidence = min(1.0, max(0.0, float(item.get("confidence", 0.0))))
        proposals.append((Fact(slot, str(item["content"]).strip(), confidence), str(item.get("evidence", ""))))
    return proposals


async def extract_facts(
    user_turns: list[str], *, touched_slots: set[str] | Mapping[str, int], existing: dict[str, str], llm_model=None
) -> Extraction:
    """`touched_slots`: as `filter_facts` takes them, the indexes into `user_turns`."""
    turns = [t for t in (t.strip() for t in user_turns) if t]
    method = "rules"
    proposals: list[tuple[Fact, str]] | None = None
    if llm_model is not None and turns:
        try:
            proposals = await propose_with_llm(llm_model, turns)
            method = "llm"
        except Exception as exc:  # a model that cannot do JSON must not cost the session its facts
            log.warning("LLM fact extraction failed (%s); using the rules", exc)
            method = "llm+rules"
    if proposals is None:
        proposals = propose_with_rules(turns)
    if isinstance(touched_slots, Mapping):  # indexes into what is left of user_turns once the blank ones go
        kept = [i for i, t in enumerate(user_turns) if t.strip()]
        touched_slots = {slot: sum(1 for i in kept if i <= at) - 1 for slot, at in touched_slots.items()}
    facts, dropped = filter_facts(proposals, touched_slots=touched_slots, existing=existing, user_turns=turns)
    return Extraction(facts=facts, dropped=dropped, method=method)
