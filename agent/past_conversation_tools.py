"""The agent's tools over the user's earlier conversations: search them, recall the last one, recall those
of some days. A mixin of :class:`agent.playground_agent.PlaygroundAgent` (livekit finds tools on base
classes too), which provides what is declared below; like every tool, each is a thin call into ``core/``
scoped by the verified user id, and excludes the conversation going on."""

from __future__ import annotations

from collections.abc import Callable
from datetime import tzinfo
from typing import Any

from livekit.agents import RunContext, function_tool

from agent import events, tool_outputs
from agent.event_bus import EventBus
from core import conversations, retrieval
from core.date_window import DateWindow
from core.db import Scope
from core.errors import InvalidInput
from core.retrieval import RrfParams

# what "what did we talk about on Monday?" reads: enough to sum up a day, not every transcript of a week
HELD_CONVERSATIONS_SHOWN = 5
HELD_TURNS_SHOWN = 12


class PastConversationTools:
    scope: Scope
    session_id: str
    rrf: RrfParams
    bus: EventBus
    zone: tzinfo
    _call: Callable[..., Any]

    @function_tool
    async def search_past_conversations(
        self, ctx: RunContext, query: str, from_date: str | None = None, to_date: str | None = None
    ) -> str:
        """Search what the user and the agent said in the user's earlier conversations (hybrid vector + keyword
        search, best first; each hit has the date it was said). Use it when the user refers to something
        mentioned before, e.g. "that trail I told you about last week".

        Args:
            query: what to look for, in the user's words
            from_date: only what was said on or after this day (YYYY-MM-DD, the user's time zone), if they say when
            to_date: only what was said on or before this day (YYYY-MM-DD, the user's time zone), if they say when
        """
        params, zone = self.rrf, self.zone
        arguments = {"query": query} | {
            name: value for name, value in (("from_date", from_date), ("to_date", to_date)) if value is not None
        }
        result, output = await self._call(
            "search_past_conversations",
            arguments,
            lambda: retrieval.search_conversations(
                self.scope,
                retrieval.query_from_message(query),
                limit=5,
                params=params,
                exclude_session_id=self.session_id,
                window=DateWindow.from_dates(from_date, to_date, zone),
            ),
            lambda found: tool_outputs.conversations_found(found, zone),
        )
        self.bus.emit(events.conversation_search_retrieval(result, trigger="tool:search_past_conversations", zone=zone))
        return output

    @function_tool
    async def recall_last_conversation(self, ctx: RunContext) -> str:
        """What the user and the agent said in the user's most recent earlier conversation, in order, with
        its date. Use it when the user asks what you talked about last time or where you left off."""
        _, output = await self._call(
            "recall_last_conversation",
            {},
            lambda: conversations.last_conversation(self.scope, before_session_id=self.session_id),
            lambda turns: tool_outputs.last_conversation(turns, self.zone),
        )
        return output

    @function_tool
    async def recall_conversations(self, ctx: RunContext, from_date: str, to_date: str | None = None) -> str:
        """What the user and the agent said in the user's earlier conversations held on some days, each
        conversation in order with its date and start time (the latest five, their first turns). Use it when
        the user asks what you talked about on a day or in a span: today, yesterday, on Monday, last week.

        Args:
            from_date: the first day (YYYY-MM-DD, the user's time zone)
            to_date: the last day (YYYY-MM-DD, the user's time zone); leave it out for from_date alone
        """
        zone = self.zone
        arguments = {"from_date": from_date} | ({"to_date": to_date} if to_date is not None else {})

        def held() -> tuple[DateWindow, tuple[list[conversations.HeldConversation], int]]:
            if not str(from_date or "").strip():
                raise InvalidInput("from_date is required: the first day (YYYY-MM-DD) of the conversations asked for.")
            window = DateWindow.from_dates(from_date, to_date if str(to_date or "").strip() else from_date, zone)
            return window, conversations.conversations_within(
                self.scope,
                window,
                except_session_id=self.session_id,
                most=HELD_CONVERSATIONS_SHOWN,
                turns_each=HELD_TURNS_SHOWN,
            )

        _, output = await self._call(
            "recall_conversations",
            arguments,
            held,
            lambda found: tool_outputs.conversations_held(*found[1], window=found[0], zone=zone),
        )
        return output
