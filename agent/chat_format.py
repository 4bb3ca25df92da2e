"""The shape of every request the agent sends to its model, made to suit every common chat template.

Servers that run open models (vLLM, llama.cpp's server, LM Studio, Ollama)
render the messages through the model's chat template, and the strictest
templates (Mistral, Gemma, Qwen 3 and others) refuse a request unless:

* there is at most one system message, and it comes first;
* there is a user turn at all;
* user and assistant turns alternate, starting with the user (tool calls and
  tool results aside).

livekit's context breaks all three: the instructions and our preload are two
system messages, a ``generate_reply(instructions=...)`` (the greeting) adds a
third at the end with no user turn, a failed turn leaves two user messages in
a row, and the greeting leaves the conversation starting with the assistant.
:func:`shape` rewrites the context for each model call, never the stored
history:

1. the leading system messages (instructions, preload) become one;
2. a later system message (a per-call instruction such as the greeting's)
   becomes a user turn wrapped in ``<instructions>`` tags;
3. per-turn recall is put in front of the user message it was retrieved for,
   in ``<recall>`` tags (every user turn keeps its own block, so each request
   starts with the previous one and a server's prompt cache stays valid: see
   docs/AGENT.md for the measurement);
4. a conversation that starts with the assistant (after the greeting) gets
   the greeting's instruction turn in front again, identical to the one the
   greeting was generated from;
5. consecutive user messages, and consecutive assistant texts, are merged.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from livekit.agents import llm

PRELOAD_MESSAGE_ID = "mp.preload"
INSTRUCTIONS_IDS = ("lk.agent_task.instructions", "lk.agent_task.instructions.dynamic", PRELOAD_MESSAGE_ID)
RecallPlacement = Literal["user_turns", "latest_user_turn", "system"]
# Recall goes in front of every user turn it was retrieved for (see the module docstring); the
# other two placements exist for the measurement in bench/recall_placement.py.
DEFAULT_RECALL_PLACEMENT: RecallPlacement = "user_turns"
_INSTRUCTION_TURN = re.compile(r"^\s*<instructions>(?P<text>.*?)</instructions>\s*$", re.S)


def recall_block(text: str) -> str:
    return f"<recall>\n{text.strip()}\n</recall>"


def instruction_turn(text: str) -> str:
    return f"<instructions>\n{text.strip()}\n</instructions>"


def user_words(text: str | None) -> str:
    """A shaped user message's own words: what follows its (last) recall block."""
    text = text or ""
    if "</recall>" in text:
        text = text.rsplit("</recall>", 1)[1]
    return text.strip()


def instruction_of(text: str | None) -> str | None:
    """The instruction in a user turn made by :func:`instruction_turn`, else None."""
    match = _INSTRUCTION_TURN.match(text or "")
    return match.group("text").strip() if match else None


def _text(item: llm.ChatMessage) -> str:
    return item.raw_text_content or ""


def shape(
    chat_ctx: llm.ChatContext,
    *,
    recalls: Mapping[str, str] | None = None,
    opening_instruction: str | None = None,
    recall_placement: RecallPlacement = DEFAULT_RECALL_PLACEMENT,
    preload: str | None = None,
) -> llm.ChatContext:
    """A new context for one model call (see the module docstring). `recalls` maps a user message id to
    its recall text; `opening_instruction` is the instruction the greeting was generated from; `preload`,
    when given, is sent instead of the stored preload message (the profile changed, or a day began)."""
    recalls = recalls or {}
    if preload is not None:
        chat_ctx = llm.ChatContext(
            [
                llm.ChatMessage(id=item.id, role="system", content=[preload], created_at=item.created_at)
                if item.id == PRELOAD_MESSAGE_ID and item.type == "message"
                else item
                for item in chat_ctx.items
            ]
        )
    latest_recall = next(
        (
            item.id
            for item in reversed(chat_ctx.items)
            if item.type == "message" and item.role == "user" and recalls.get(item.id)
        ),
        None,
    )
    system_parts, items = _system_and_turns(chat_ctx.items)  # steps 1 and 2
    if recall_placement != "system":  # step 3
        wanted = None if recall_placement == "user_turns" else latest_recall
        items = [_with_recall(item, recalls, only=wanted) for item in items]
    elif latest_recall is not None:
        system_parts.append(recall_block(recalls[latest_recall]))
    _open_with_a_user_turn(items, opening_instruction)  # step 4
    result: list[llm.ChatItem] = []
    if system_parts:
        result.append(
            llm.ChatMessage(id="lk.agent_task.instructions", role="system", content=["\n\n".join(system_parts)])
        )
    result.extend(_merge_same_role(items))  # step 5
    return llm.ChatContext(result)


def _system_and_turns(chat_items: list[llm.ChatItem]) -> tuple[list[str], list[llm.ChatItem]]:
    """The leading system messages' texts, and every other item, a later system message as a user turn."""
    system_parts: list[str] = []
    items: list[llm.ChatItem] = []
    leading = True
    for item in chat_items:
        if item.type == "message" and item.role in ("system", "developer"):
            text = _text(item).strip()
            if not text:
                continue
            if leading and (item.id in INSTRUCTIONS_IDS or not system_parts):
                system_parts.append(text)
            else:  # a per-call instruction: the greeting's, or one added after the conversation started
                items.append(
                    llm.ChatMessage(
                        id=item.id, role="user", content=[instruction_turn(text)], created_at=item.created_at
                    )
                )
            continue
        if item.type in ("message", "function_call", "function_call_output"):
            leading = False
        items.append(item)
    return system_parts, items


def _with_recall(item: llm.ChatItem, recalls: Mapping[str, str], *, only: str | None) -> llm.ChatItem:
    """A user message with its recall block in front (only the message `only`, when given)."""
    if item.type != "message" or item.role != "user" or not recalls.get(item.id) or only not in (None, item.id):
        return item
    return llm.ChatMessage(
        id=item.id,
        role="user",
        content=[f"{recall_block(recalls[item.id])}\n\n{_text(item)}"],
        created_at=item.created_at,
    )


def _open_with_a_user_turn(items: list[llm.ChatItem], opening_instruction: str | None) -> None:
    first = next((item for item in items if item.type == "message"), None)
    if first is not None and first.role == "assistant":
        opening = instruction_turn(opening_instruction or "The conversation starts.")
        items.insert(0, llm.ChatMessage(role="user", content=[opening], created_at=first.created_at - 1e-3))


def _merge_same_role(items: list[llm.ChatItem]) -> list[llm.ChatItem]:
    merged: list[llm.ChatItem] = []
    last_turn: llm.ChatMessage | None = None  # the latest user or assistant text message kept
    for item in items:
        if item.type != "message":
            merged.append(item)
            continue
        if last_turn is not None and item.role == last_turn.role:
            # join with the previous turn of the same role (a failed turn's user message, a filler said
            # before a tool call): the earlier text moves to this position
            joined = "\n\n".join(t for t in (_text(last_turn).strip(), _text(item).strip()) if t)
            merged.remove(last_turn)
            item = llm.ChatMessage(id=item.id, role=item.role, content=[joined], created_at=item.created_at)
        merged.append(item)
        last_turn = item
    return merged
