"""The offline demo brain as a livekit ``llm.LLM``: a deterministic, rule-based stand-in for a model.

No instruction-tuned model ships with this project, so by default the agent
talks through this brain. It goes through the normal function-calling path:
for a user message it recognises the intent (agent/brain/intents.py) and
answers with a tool call chunk; once the tool output is in the chat context it
writes its reply from that output (agent/brain/replies.py).
"""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, date, datetime
from typing import Any

from livekit.agents import llm
from livekit.agents.llm import ChatChunk, ChoiceDelta, FunctionToolCall
from livekit.agents.types import DEFAULT_API_CONNECT_OPTIONS, NOT_GIVEN, APIConnectOptions, NotGivenOr

from agent.brain.earlier import this_conversation, today_so_far
from agent.brain.facts import RELATIONS, search_query, slot_words
from agent.brain.intents import Intent, classify, remember_note
from agent.brain.patterns import is_question
from agent.brain.replies import ToolResult, compose_reply, follow_up, greeting_from_context, load_output
from agent.brain.told_then_asked import told_then_asked
from agent.brain.two_questions import two_questions
from agent.chat_format import instruction_of, user_words
from agent.prompts import CONTEXT_NOTES, PAST_TURNS_LEAD, stated_today


def recalled_memories(message_text: str) -> list[tuple[str, str]]:
    """The (slot, content) pairs in a user message's recall block: what the per-turn recall put into context."""
    if "</recall>" not in message_text:
        return []
    block = message_text.rsplit("</recall>", 1)[0].rsplit("<recall>", 1)[-1].split(PAST_TURNS_LEAD, 1)[0]
    return [(match.group(1), match.group(2)) for match in re.finditer(r"^- ([\w-]+): (.+)$", block, re.M)]


def _names_a_memory(user_text: str, recalled: list[tuple[str, str]]) -> bool:
    """Whether the question names someone or something (a capitalised word) that a recalled memory holds:
    "where does Ana live?" is about the user's sister, not about the shop."""
    names = set(re.findall(r"(?<!^)(?<![.!?] )\b[A-Z][a-z]{2,}\b", user_text))
    return any(name in re.findall(r"\w+", content) for _, content in recalled for name in names)


# where someone lives now, said by their name: "Actually Anika moved to Sydney last month."
_MOVED = re.compile(
    r"^(?i:(?:actually|so|oh|btw|by the way|update)[,:]? )?(?P<name>[A-Z][a-z]{2,})"
    r"(?P<news> (?:(?:just|recently|finally) )?(?:moved|relocated) (?:back )?to .+?|(?:now )?lives in .+?)[.!]*$"
)
_WHERE = re.compile(r"\b(?:lives?|living|moved|relocated|based) (?:in|to)\b")


def _relative_moved(user_text: str, recalled: list[tuple[str, str]]) -> Intent | None:
    """A move of someone whose recalled memory (a relative's slot) says where they live, by the name it
    starts with ("Anika lives in Melbourne", under `sister`): the news replaces it, rather than being a
    question for the shop's documents. Only a move: "Anika is great" must not replace where she lives."""
    match = _MOVED.match(user_text.strip())
    if match is None:
        return None
    name = match.group("name")
    for slot, content in recalled:
        if slot_words(slot) in RELATIONS and re.match(rf"{name}\b", content) and _WHERE.search(content):
            news = name + match.group("news")
            return Intent("remember", calls=[("remember_detail", {"memory_type": slot, "content": news})])
    return None


def _text_of(item) -> str:
    return (item.text_content or "").strip()


def _today(chat_ctx: llm.ChatContext) -> date:
    """Today's date as the context states it, in the user's time zone (a model knows no other; the
    present UTC date when the context does not say)."""
    for item in chat_ctx.items:
        if item.type == "message" and item.role == "system" and (today := stated_today(_text_of(item))):
            return today
    return datetime.now(UTC).date()


def _said_before(items: list[llm.ChatItem], last_user: int) -> list[str]:
    """What the user said in this conversation before the message at `last_user` (per-call instructions left
    out)."""
    return [
        user_words(_text_of(item))
        for item in items[:last_user]
        if item.type == "message"
        and item.role == "user"
        and user_words(_text_of(item)) not in CONTEXT_NOTES
        and instruction_of(user_words(_text_of(item))) is None
    ]


def _tool_results(items: list[llm.ChatItem]) -> list[ToolResult]:
    """The tool calls among `items` that have their output, as (name, arguments, output, is_error)."""
    outputs = {item.call_id: item for item in items if item.type == "function_call_output"}
    results = []
    for item in items:
        if item.type == "function_call" and item.call_id in outputs:
            out = outputs[item.call_id]
            args = load_output(item.arguments)
            results.append((item.name, args if isinstance(args, dict) else {}, out.output, out.is_error))
    return results


def _tell_then_ask(
    told_and_asked: tuple[str, Intent, str, Intent],
    results: list[ToolResult],
    available: set[str],
    recalled: list[tuple[str, str]],
    today: date,
) -> tuple[list[tuple[str, dict]], str | None] | None:
    """The plan for facts told with a question after them ("My favorite color is green. What is my favorite
    color?"): remember them, then (a step of its own, so the question reads what was just kept) answer the
    question; the reply says both. None when the tools to remember are not at hand."""
    told, told_intent, asked, asked_intent = told_and_asked
    told_calls = [(name, args) for name, args in told_intent.calls if name in available]
    if not told_calls:
        return None
    if not results:
        return told_calls, None
    told_results, asked_results = results[: len(told_calls)], results[len(told_calls) :]
    said_told = compose_reply(told, told_results)
    # "I'm a teacher. What is my name and where do I live?": both questions, after what was told
    both = two_questions(asked, today)
    if both and (plan := _answer_both(both, asked_results, available, recalled, today)):
        calls, answers = plan
        return (calls, None) if calls else ([], f"{said_told} {answers}")
    if not asked_results:
        asked_calls = [(name, args) for name, args in asked_intent.calls if name in available]
        if asked_calls:
            return asked_calls, None
        answer = "I can't use my tools for that right now." if asked_intent.calls else asked_intent.reply
        return [], f"{said_told} {answer or ''}".strip()
    more = [(name, args) for name, args in follow_up(asked, asked_results, today) if name in available]
    if more:
        return more, None
    return [], f"{said_told} {compose_reply(asked, asked_results, recalled)}"


def _answer_both(
    questions: tuple[str, Intent, str, Intent],
    results: list[ToolResult],
    available: set[str],
    recalled: list[tuple[str, str]],
    today: date,
) -> tuple[list[tuple[str, dict]], str | None] | None:
    """The plan for two questions in one message ("What is my name and where do I live?"): each step calls the
    tools for both (each question's follow-ups, as its answers come back), and the reply says both answers. A
    step for both at once: one after the other took more steps than livekit allows a turn. A result is told
    to its question by its call, not its place: the calls of one step come back in the order they finish.
    None when the tools for either are not at hand."""
    first, first_intent, second, second_intent = questions
    step = [
        [(name, args) for name, args in intent.calls if name in available] for intent in (first_intent, second_intent)
    ]
    if not all(step):
        return None
    left, got = list(results), [[], []]
    while any(step):
        answered = [[_take_result(left, call) for call in calls] for calls in step]
        if not all(result for results_of in answered for result in results_of):  # this step has not run yet
            return [call for calls in step for call in calls], None
        for index, results_of in enumerate(answered):
            got[index] += results_of
        step = [
            [(name, args) for name, args in follow_up(asked, got[index], today) if name in available] if calls else []
            for index, (asked, calls) in enumerate(zip((first, second), step, strict=True))
        ]
    return [], f"{compose_reply(first, got[0], recalled)} {compose_reply(second, got[1], recalled)}"


def _take_result(results: list[ToolResult], call: tuple[str, dict]) -> ToolResult | None:
    """The first of `results` that answers `call` (the same tool and arguments), taken out of the list."""
    for index, result in enumerate(results):
        if (result[0], result[1]) == call:
            return results.pop(index)
    return None


class OfflineBrain(llm.LLM):
    """Deterministic rule-based LLM. See the module docstring."""

    def __init__(self) -> None:
        super().__init__()
        self.last_chat_ctx: llm.ChatContext | None = None  # what the model was last given (tests inspect it)

    @property
    def model(self) -> str:
        return "offline-demo-brain"

    @property
    def provider(self) -> str:
        return "memory-playground"

    def chat(
        self,
        *,
        chat_ctx: llm.ChatContext,
        tools: list[llm.Tool] | None = None,
        conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS,
        parallel_tool_calls: NotGivenOr[bool] = NOT_GIVEN,
        tool_choice: NotGivenOr[llm.ToolChoice] = NOT_GIVEN,
        extra_kwargs: NotGivenOr[dict[str, Any]] = NOT_GIVEN,
    ) -> BrainStream:
        self.last_chat_ctx = chat_ctx.copy()
        return BrainStream(
            self, chat_ctx=chat_ctx, tools=tools or [], conn_options=conn_options, tool_choice=tool_choice
        )


class BrainStream(llm.LLMStream):
    def __init__(self, brain: OfflineBrain, *, chat_ctx, tools, conn_options, tool_choice) -> None:
        super().__init__(brain, chat_ctx=chat_ctx, tools=tools, conn_options=conn_options)
        self._tool_choice = tool_choice
        self._request_id = f"brain-{uuid.uuid4().hex[:12]}"

    def _available_tools(self) -> set[str]:
        if self._tool_choice == "none":
            return set()
        return {tool.id for tool in self._tools}

    async def _run(self) -> None:
        plan_calls, text = self.plan()
        if plan_calls:
            calls = [
                FunctionToolCall(name=name, arguments=json.dumps(args), call_id=f"call_{uuid.uuid4().hex[:10]}")
                for name, args in plan_calls
            ]
            self._event_ch.send_nowait(
                ChatChunk(id=self._request_id, delta=ChoiceDelta(role="assistant", tool_calls=calls))
            )
            return
        # sentence by sentence, so a TTS can start on the first one
        for index, sentence in enumerate(re.split(r"(?<=[.!?])\s+", text or "")):
            if sentence:
                self._event_ch.send_nowait(
                    ChatChunk(
                        id=self._request_id,
                        delta=ChoiceDelta(role="assistant", content=(" " if index else "") + sentence),
                    )
                )

    def plan(self) -> tuple[list[tuple[str, dict]], str | None]:
        """(tool calls, None) or ([], reply text) for the current chat context."""
        items = self._chat_ctx.items
        last_user = max(
            (i for i, item in enumerate(items) if item.type == "message" and item.role == "user"), default=None
        )
        if last_user is None:
            return [], greeting_from_context(self._chat_ctx)
        user_text = user_words(_text_of(items[last_user]))
        recalled = recalled_memories(_text_of(items[last_user]))
        after = items[last_user + 1 :]
        results = _tool_results(after)
        available = self._available_tools()
        today = _today(self._chat_ctx)
        told_and_asked = told_then_asked(user_text, today)
        if told_and_asked and (plan := _tell_then_ask(told_and_asked, results, available, recalled, today)):
            return plan
        questions = None if told_and_asked else two_questions(user_text, today)
        if questions and (plan := _answer_both(questions, results, available, recalled, today)):
            return plan
        if results:
            if results[0][0] == "recall_conversations" and classify(user_text, today).name == "today":
                held = load_output(results[0][2]) if not results[0][3] else {}
                return [], today_so_far(_said_before(items, last_user), held if isinstance(held, dict) else {}, today)
            more = [(name, args) for name, args in follow_up(user_text, results, today) if name in available]
            if more:
                return more, None
            return [], compose_reply(user_text, results, recalled)
        # generate_reply(instructions=...) after a user turn, e.g. a greeting on a handoff
        asked_to_greet = (
            after
            and after[-1].type == "message"
            and after[-1].role == "system"
            and "greet" in _text_of(after[-1]).lower()
        )
        if asked_to_greet:
            return [], greeting_from_context(self._chat_ctx)
        instruction = instruction_of(user_text)
        if instruction is not None:  # a per-call instruction sent as a user turn (agent/chat_format.py)
            if "greet" in instruction.lower():
                return [], greeting_from_context(self._chat_ctx)
            return [], "Okay."
        intent = classify(user_text, today)
        if intent.name == "today" and "recall_conversations" not in available:
            intent = Intent("this_conversation")  # without the tool, this conversation is what it can tell
        if intent.name == "this_conversation":
            return [], this_conversation(_said_before(items, last_user))
        if intent.name == "knowledge":
            intent = _relative_moved(user_text, recalled) or intent
        if intent.name == "knowledge" and _names_a_memory(user_text, recalled):
            if is_question(user_text):  # "where does Ana live?": about the user's sister, not the shop
                intent = Intent("recall", calls=[("search_memories", {"query": search_query(user_text)})])
            else:  # "Maya is 7 and Leo is 4." after "I have two kids, Maya and Leo": more about them, kept
                intent = remember_note(user_text)
        if intent.calls:
            calls = [(name, args) for name, args in intent.calls if name in available]
            if calls:
                return calls, None
            return [], "I can't use my tools for that right now."
        return [], intent.reply
