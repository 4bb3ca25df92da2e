"""The Memory Playground agent: one livekit ``Agent`` with its tools.

The same class serves the LiveKit worker, the text chat page and the local voice pipeline. Every tool is
a thin call into ``core/`` through ``Scope.service(self.user_id)``, where ``user_id`` is the verified id
given to the constructor (dispatch metadata or a verified session): no tool takes a user id, so the model
can never act for someone else.

Context the model gets:

* **Preload** (before the first word): profile, every remembered fact and today's date in the user's time
  zone, in the initial chat context (see :func:`load_preload`); each model call sends it, as it is then,
  inside the one leading system message, after the instructions.
* **Per-turn recall**: before each reply, a hybrid search of both memory tiers (remembered slots, and the
  turns of the user's earlier sessions) with the user's words; the top hits, within a token budget, go in
  front of the user's message, in ``<recall>`` tags (agent/recall.py). It has a time budget: when a search
  is slower, the turn goes on without it and its ``retrieval`` event records the skip.

Every model call goes through :func:`agent.chat_format.shape`, which gives the request the form every
common chat template accepts (one leading system message, a user turn, alternating turns); the stored
history is not changed. Each tool call, retrieval and turn is published on the agent's
:class:`~agent.event_bus.EventBus` (the event contract is agent/events.py). The tools over earlier
conversations live in agent/past_conversation_tools.py, a base class of this one.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterable, Awaitable, Callable
from dataclasses import replace
from datetime import tzinfo
from typing import Any

from livekit.agents import Agent, ModelSettings, RunContext, function_tool, llm

from agent import events, tool_outputs
from agent.chat_format import DEFAULT_RECALL_PLACEMENT, PRELOAD_MESSAGE_ID, RecallPlacement, shape
from agent.event_bus import EventBus
from agent.forgetting import scrub_chat_items
from agent.past_conversation_tools import PastConversationTools
from agent.prompts import FILLER_TEXT, INSTRUCTIONS, greeting_instruction, preload_message
from agent.recall import Searches, recall, start_searches
from agent.sensitive import withhold_answered_secrets
from agent.tool_calls import call_core
from core import memories, orders, profiles, retrieval
from core.config import get_settings
from core.conversations import Mentions
from core.date_window import today_in, user_zone, zone_name
from core.db import Scope, parse_user_id
from core.profiles import Preload
from core.retrieval import RrfParams


def load_preload(user_id: uuid.UUID | str) -> Preload:
    """Stamp last_seen_at and read profile + memories (blocking; run it in a thread)."""
    return profiles.preload(Scope.service(parse_user_id(user_id)))


class PlaygroundAgent(PastConversationTools, Agent):
    """See the module docstring. ``rrf`` may be reassigned at any time (the chat page's sliders)."""

    def __init__(
        self,
        user_id: uuid.UUID | str,
        *,
        preload: Preload | None = None,
        bus: EventBus | None = None,
        session_id: str | None = None,
        rrf: RrfParams | None = None,
        greet: bool = True,
        recall_budget_ms: float | None = None,
        recall_limit: int = 5,
        recall_inject: int = 3,
        recall_inject_turns: int = 3,
        recall_token_budget: int | None = None,
        filler_delay: float = 0.5,
        instructions: str = INSTRUCTIONS,
        recall_placement: RecallPlacement = DEFAULT_RECALL_PLACEMENT,
    ) -> None:
        self.user_id = parse_user_id(user_id)
        self.scope = Scope.service(self.user_id)
        self.session_id = session_id or f"agent-{uuid.uuid4().hex}"
        self.bus = bus or EventBus(self.session_id)
        self.rrf = (rrf or RrfParams.from_settings()).validated()
        self.greet = greet
        self.recall_budget_ms = recall_budget_ms if recall_budget_ms is not None else get_settings().recall_budget_ms
        self.recall_limit = recall_limit
        self.recall_inject = recall_inject
        self.recall_inject_turns = recall_inject_turns
        self.recall_token_budget = (
            recall_token_budget if recall_token_budget is not None else get_settings().recall_token_budget
        )
        self.filler_delay = filler_delay
        self.preload = preload
        self.memories_written: list[dict[str, Any]] = []
        self.profile_updates: list[dict[str, Any]] = []
        self.recall_placement = recall_placement
        self.greeting_instruction: str | None = None  # what the greeting was generated from
        # memories the user deleted during the conversation (agent/forgetting.py): what says them, and the
        # check that forgets them, which the forget tool waits for before the model reads its result
        self.forgotten: Mentions | None = None
        self.memories_deleted: Callable[[], Awaitable[Any]] | None = None
        self._recalls: OrderedDict[str, str | None] = OrderedDict()  # user message id -> recall block text
        self._early_searches: Searches | None = None  # started from a voice turn's speculative transcript
        chat_ctx = llm.ChatContext.empty()
        if preload is not None:
            chat_ctx.add_message(role="system", content=self.preload_text(), id=PRELOAD_MESSAGE_ID)
        super().__init__(instructions=instructions, chat_ctx=chat_ctx)

    @property
    def zone(self) -> tzinfo:
        """The user's calendar (their profile's time zone, UTC without one): every date the agent reads or says."""
        return user_zone(self.preload.profile.timezone if self.preload else None)

    def preload_text(self) -> str:
        """The profile, the remembered facts and today's date, as the model reads them now."""
        return preload_message(self.preload.as_context(), today_in(self.zone), zone_name(self.zone))

    def set_rrf(self, params: RrfParams) -> RrfParams:
        self.rrf = params.validated()
        return self.rrf

    # ------------------------------------------------------------------ memories deleted meanwhile

    async def reload_preload(self) -> None:
        """The user's memories changed during the conversation (agent/forgetting.py): the model reads the
        profile and memories as they are now from its next call on."""
        if self.preload is not None:
            fresh = await asyncio.to_thread(profiles.preload, self.scope, visit=False)
            self.preload = replace(fresh, returning=self.preload.returning)

    def forget_mentions(self, says: Mentions, *, keep: str | None = None) -> int:
        """Blank what the model would read again that says a deleted memory: its messages and tool results,
        each turn's recall block, and the greeting's instruction (which may name the user)."""
        changed = scrub_chat_items(self.chat_ctx.items, says, keep=keep)
        for message_id, block in self._recalls.items():
            if block and says(block):
                self._recalls[message_id] = None
                changed += 1
        if self.greeting_instruction and says(self.greeting_instruction):
            self.greeting_instruction = greeting_instruction(None)
            changed += 1
        return changed

    # ------------------------------------------------------------------ lifecycle

    async def on_enter(self) -> None:
        if self.preload is None:  # not loaded by the caller: load it now, before the first word
            self.preload = await asyncio.to_thread(load_preload, self.user_id)
            chat_ctx = self.chat_ctx.copy()
            chat_ctx.add_message(role="system", content=self.preload_text(), id=PRELOAD_MESSAGE_ID)
            await self.update_chat_ctx(chat_ctx)
        if self.greet:
            self.greeting_instruction = greeting_instruction(self.preload.profile.name if self.preload else None)
            self.session.generate_reply(instructions=self.greeting_instruction)

    # ------------------------------------------------------------------ per-turn recall

    async def on_user_turn_completed(self, turn_ctx: llm.ChatContext, new_message: llm.ChatMessage) -> None:
        """Voice path: the user finished speaking; recall before the reply is generated."""
        await self._prepare_turn(turn_ctx, new_message)

    async def llm_node(
        self, chat_ctx: llm.ChatContext, tools: list[llm.Tool], model_settings: ModelSettings
    ) -> AsyncIterable[llm.ChatChunk | str]:
        # Typed turns (session.run, generate_reply, room text input) do not pass through
        # on_user_turn_completed, so the first model call of a turn does the recall instead.
        user_message = next(
            (item for item in reversed(chat_ctx.items) if item.type == "message" and item.role == "user"), None
        )
        if user_message is not None:
            await self._prepare_turn(chat_ctx, user_message)
        request = self.shape_request(chat_ctx)
        async for chunk in Agent.default.llm_node(self, request, tools, model_settings):
            yield chunk

    def shape_request(self, chat_ctx: llm.ChatContext) -> llm.ChatContext:
        """The context one model call sends: `chat_ctx` in the form every chat template accepts,
        with each user turn's recall in front of it (agent/chat_format.py)."""
        return shape(
            chat_ctx,
            recalls=self._recalls,
            opening_instruction=self.greeting_instruction,
            recall_placement=self.recall_placement,
            # the preload as it is now (a time zone set, a day begun), not as the session began
            preload=self.preload_text() if self.preload is not None else None,
        )

    async def _prepare_turn(self, chat_ctx: llm.ChatContext, message: llm.ChatMessage) -> None:
        """Once per user message: start its turn on the event bus and run its recall."""
        text = (message.text_content or "").strip()
        self.bus.begin_user_turn(message.id, text)
        if message.id not in self._recalls:
            if self.forgotten is not None:  # what the last turn said of a memory deleted in it (the tool's result);
                # not this message: "my favorite color is teal", said again after teal was deleted, reached the
                # model as the deletion's note, and could never be told again in this conversation
                self.forget_mentions(self.forgotten, keep=message.id)
            withhold_answered_secrets(self.chat_ctx.items, message.id)  # answered: not sent again
            self._recalls[message.id] = await self.recall(text)
            while len(self._recalls) > 256:  # a very long call: the oldest turns lose their block
                self._recalls.popitem(last=False)

    def start_recall_early(self, text: str) -> None:
        """Speech recognition's speculative transcript of a voice turn that has not ended yet: start the
        recall's searches now, so the turn, when it ends with these words, waits only for what is left."""
        if self._early_searches is not None:
            self._early_searches.abandon()
        self._early_searches = start_searches(
            self.scope, text.strip(), params=self.rrf, limit=self.recall_limit, session_id=self.session_id
        )

    async def recall(self, text: str) -> str | None:
        """Hybrid-search both memory tiers with the user's words; the recall text with the top hits, or None."""
        early, self._early_searches = self._early_searches, None
        return await recall(
            self.scope,
            text,
            params=self.rrf,
            bus=self.bus,
            budget_ms=self.recall_budget_ms,
            limit=self.recall_limit,
            inject=self.recall_inject,
            session_id=self.session_id,
            inject_turns=self.recall_inject_turns,
            token_budget=self.recall_token_budget,
            started_searches=early,
            zone=self.zone,
        )

    # ------------------------------------------------------------------ tool plumbing

    async def _call(
        self, name: str, arguments: dict[str, Any], work: Callable[[], Any], render: Callable[[Any], dict[str, Any]]
    ) -> tuple[Any, str]:
        return await call_core(self.bus, name, arguments, work, render)

    def note_write(
        self, action: str, memory_type: str, content: str | None, previous: str | None = None, source: str = "tool"
    ) -> None:
        self.memories_written.append(
            {
                "action": action,
                "memory_type": memory_type,
                "content": content,
                "previous_content": previous,
                "turn": self.bus.turn,
                "source": source,
                "ts": time.time(),
            }
        )

    # ------------------------------------------------------------------ tools

    @function_tool
    async def search_knowledge(self, ctx: RunContext, query: str) -> str:
        """Search the Kestrel Coffee knowledge base (products, shipping, returns, warranty, subscriptions).

        Args:
            query: the user's question in their own words
        """
        async with ctx.with_filler(FILLER_TEXT, delay=self.filler_delay):
            result, output = await self._call(
                "search_knowledge",
                {"query": query},
                lambda: retrieval.search_knowledge(self.scope, retrieval.query_from_message(query), limit=3),
                tool_outputs.knowledge_found,
            )
        self.bus.emit(events.knowledge_search_retrieval(result, trigger="tool:search_knowledge"))
        return output

    @function_tool
    async def remember_detail(self, ctx: RunContext, memory_type: str, content: str) -> str:
        """Remember one lasting fact about the user. A slot holds one fact; saving it again replaces it.

        Args:
            memory_type: short snake_case slot name, e.g. favorite_color, home_city, allergies
            content: the fact itself, e.g. "teal"
        """
        ctx.disallow_interruptions()  # a half-heard "remember" must not leave a half-written slot
        result, output = await self._call(
            "remember_detail",
            {"memory_type": memory_type, "content": content},
            lambda: memories.remember(self.scope, memory_type, content, session_id=self.session_id),
            tool_outputs.remembered,
        )
        if not result.unchanged:  # the same words again write nothing
            self.note_write(
                "remembered" if result.created else "updated",
                result.memory.memory_type,
                result.memory.content,
                result.previous_content,
            )
        return output

    @function_tool
    async def recall_detail(self, ctx: RunContext, memory_type: str) -> str:
        """Read one remembered fact about the user by its slot name.

        Args:
            memory_type: the slot name, e.g. favorite_color
        """
        _, output = await self._call(
            "recall_detail",
            {"memory_type": memory_type},
            lambda: memories.recall(self.scope, memory_type),
            tool_outputs.recalled,
        )
        return output

    @function_tool
    async def forget_detail(self, ctx: RunContext, memory_type: str) -> str:
        """Forget (delete) one remembered fact about the user.

        Args:
            memory_type: the slot name to forget, e.g. favorite_color
        """
        ctx.disallow_interruptions()

        # core.memories.forget stores this session's queued turns first, then deletes the memory with its mentions
        forgotten, output = await self._call(
            "forget_detail",
            {"memory_type": memory_type},
            lambda: memories.forget(self.scope, memory_type),
            tool_outputs.forgotten,
        )
        self.note_write("forgotten", forgotten.memory.memory_type, None, forgotten.memory.content)
        if self.memories_deleted is not None:  # the earlier messages that said it are forgotten first
            await self.memories_deleted()
        return output

    @function_tool
    async def search_memories(self, ctx: RunContext, query: str) -> str:
        """Search everything remembered about the user (hybrid vector + keyword search, best first).

        Args:
            query: what to look for, in the user's words
        """
        params = self.rrf
        result, output = await self._call(
            "search_memories",
            {"query": query},
            lambda: retrieval.search_memories(self.scope, retrieval.query_from_message(query), limit=5, params=params),
            tool_outputs.memories_found,
        )
        self.bus.emit(events.memory_search_retrieval(result, trigger="tool:search_memories"))
        return output

    @function_tool
    async def list_user_memories(self, ctx: RunContext) -> str:
        """List every fact remembered about the user, most recently updated first."""
        _, output = await self._call(
            "list_user_memories",
            {},
            lambda: memories.list_memories(self.scope),
            tool_outputs.listed,
        )
        return output

    @function_tool
    async def update_profile(self, ctx: RunContext, field: str, value: str) -> str:
        """Update one field of the user's profile.

        Args:
            field: one of name, email, preferred_language, timezone, preferences
            value: the new value; for preferences a JSON object such as {"units": "metric"}
        """
        ctx.disallow_interruptions()
        profile, output = await self._call(
            "update_profile",
            {"field": field, "value": value},
            lambda: profiles.update_profile(self.scope, field, value),
            lambda profile: tool_outputs.profile_updated(field, value, profile),
        )
        if self.preload is not None:  # the next model call reads the new name, and dates in the new zone
            self.preload = replace(self.preload, profile=profile)
        self.profile_updates.append({"field": field, "value": value, "turn": self.bus.turn, "ts": time.time()})
        return output

    @function_tool
    async def lookup_order(self, ctx: RunContext, order_id: str) -> str:
        """Look up a Kestrel Coffee order's status, items, shipping and delivery estimate.

        Args:
            order_id: the order number, e.g. 1001
        """
        _, output = await self._call(
            "lookup_order",
            {"order_id": order_id},
            lambda: orders.lookup(self.scope, order_id),
            tool_outputs.order_found,
        )
        return output
