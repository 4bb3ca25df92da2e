"""Where should the per-turn recall go in a request? `python -m bench.recall_placement`

Runs the same scripted conversation (a user with a few memories, 8 turns,
tool calls included) through the real agent and the real openai plugin
against the OpenAI-compatible stand-in (tests/support/openai_standin.py), once per
placement of the per-turn recall:

* ``livekit default``: what the agent sent before (livekit's own context):
  instructions and preload as two system messages, the recall as a third
  system message just before the user's message, the greeting with no user turn;
* ``system``: one system message; the current turn's recall appended to it;
* ``latest user turn``: one system message; the recall in front of the latest
  user message only;
* ``every user turn``: one system message; each user message keeps the recall
  it was retrieved for (what the agent does).

For each it reports how many requests the strictest common chat templates
accept (tests/support/openai_standin.check_messages), and how much of each request a
server's prompt cache can reuse: the share of the rendered request (tools and
messages, in order) that repeats the previous request's start. llama.cpp's
server, vLLM (automatic prefix caching), Ollama and OpenAI all reuse a cached
prefix; everything after the first changed character is processed again.
Prints a markdown table (docs/AGENT.md quotes it).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import statistics

from livekit.agents import llm

from agent import PlaygroundAgent, PlaygroundSession, plugins, recall_block
from core import identity, memories
from core.config import reload_settings
from core.db import Scope, admin_connection
from core.errors import PlaygroundError
from tests.support.openai_standin import OpenAIStandIn, TemplateError, check_messages

TURNS = [
    "what is my favorite color?",
    "where do I live?",
    "I drive a blue Subaru Outback",
    "what car do I drive?",
    "where is order 1002?",
    "how long is the warranty?",
    "what do you know about me?",
    "forget my favorite color",
]
MEMORIES = {
    "favorite_color": "teal",
    "home_city": "Denver, Colorado",
    "allergies": "peanuts",
    "favorite_drink": "Oat milk flat white, extra hot",
}
PLACEMENTS = ("livekit default", "system", "latest user turn", "every user turn")


def _agent_class(placement: str) -> type[PlaygroundAgent]:
    class Measured(PlaygroundAgent):
        def shape_request(self, chat_ctx):
            if placement != "livekit default":
                return super().shape_request(chat_ctx)
            # the context as livekit builds it, with the recall as a system message before the user's
            items = list(chat_ctx.items)
            last_user = max(
                (i for i, item in enumerate(items) if item.type == "message" and item.role == "user"), default=None
            )
            if last_user is not None and self._recalls.get(items[last_user].id):
                items.insert(
                    last_user,
                    llm.ChatMessage(role="system", content=[recall_block(self._recalls[items[last_user].id])]),
                )
            return llm.ChatContext(items)

    return Measured


def _rendered(body: dict) -> str:
    return json.dumps(body.get("tools") or [], sort_keys=True) + "".join(
        json.dumps(message, sort_keys=True) for message in body.get("messages") or []
    )


def _shared_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


async def _conversation(placement: str, user_id) -> None:
    placement_option = {
        "livekit default": "user_turns",
        "system": "system",
        "latest user turn": "latest_user_turn",
        "every user turn": "user_turns",
    }[placement]
    ps = PlaygroundSession(
        user_id,
        mode="text",
        agent_class=_agent_class(placement),
        agent_options={"recall_placement": placement_option, "recall_budget_ms": 30_000},
    )
    await ps.start()
    for text in TURNS:
        with contextlib.suppress(PlaygroundError):  # a refused request is part of what is measured
            await ps.run_text(text)
    await ps.finish(extract=False)


def _accepted(body: dict) -> bool:
    try:
        check_messages(body["messages"])
    except TemplateError:
        return False
    return True


def measure() -> list[dict]:
    plugins.register()
    rows = []
    for placement in PLACEMENTS:
        with OpenAIStandIn(check_templates=False) as server:
            os.environ.update(server.env())
            reload_settings()
            verified = identity.verify(identity.sign_in_anonymously().access_token)
            for slot, content in MEMORIES.items():
                memories.remember(Scope.service(verified.user_id), slot, content)
            try:
                asyncio.run(_conversation(placement, verified.user_id))
            finally:
                with admin_connection() as conn:
                    conn.execute("delete from auth.users where id = %s", (verified.user_id,))
            bodies = [r.body for r in server.chat_requests() if (r.body or {}).get("tools")]
        accepted = sum(_accepted(body) for body in bodies)
        rendered = [_rendered(body) for body in bodies]
        reused = [_shared_prefix(before, after) / len(after) for before, after in itertools.pairwise(rendered)]
        new_chars = [len(after) - _shared_prefix(before, after) for before, after in itertools.pairwise(rendered)]
        rows.append(
            {
                "placement": placement,
                "requests": len(bodies),
                "accepted": accepted,
                "reused_mean": statistics.fmean(reused),
                "reused_min": min(reused),
                "new_chars_total": sum(new_chars),
                "chars_total": sum(len(r) for r in rendered[1:]),
            }
        )
    return rows


def main() -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    rows = measure()
    print(
        "| recall placement | requests strict templates accept | request start reused from the previous "
        "request (mean / worst) | characters processed again over the conversation |"
    )
    print("| --- | --- | --- | --- |")
    for row in rows:
        print(
            f"| {row['placement']} | {row['accepted']} of {row['requests']} | {row['reused_mean']:.0%} / "
            f"{row['reused_min']:.0%} | {row['new_chars_total']:,} of {row['chars_total']:,} "
            f"({row['new_chars_total'] / row['chars_total']:.0%}) |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
