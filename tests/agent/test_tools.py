"""The agent's tools, preload and per-turn recall, run through AgentSession.run
with the offline brain and the real embedded database."""

from __future__ import annotations

import json
import time

import pytest
from livekit.agents import AgentSession, llm

from agent.brain.llm import OfflineBrain
from agent.playground_agent import PlaygroundAgent, load_preload
from agent.prompts import FILLER_TEXT, PRELOAD_HEADER, RECALL_HEADER
from core import memories, profiles, retrieval
from core.errors import NotFound
from core.retrieval import RrfParams
from tests.support.agent_run import agent_session, reply_text


async def test_remember_writes_the_slot(new_user):
    user = new_user()
    async with agent_session(user.user_id) as run:
        result = await run.session.run(user_input="My favorite color is teal")
        result.expect.next_event().is_function_call(
            name="remember_detail", arguments={"memory_type": "favorite_color", "content": "teal"}
        )
        result.expect.next_event().is_function_call_output(is_error=False)
        message = result.expect.next_event().is_message(role="assistant")
        result.expect.no_more_events()
    assert "teal" in message.event().item.text_content
    stored = memories.recall(user.scope, "favorite_color")
    assert stored.content == "teal"
    assert stored.session_id == run.agent.session_id  # written in this session, as the Memories page shows
    assert run.agent.memories_written[0] | {"ts": 0} == {
        "action": "remembered",
        "memory_type": "favorite_color",
        "content": "teal",
        "previous_content": None,
        "turn": 1,
        "source": "tool",
        "ts": 0,
    }


async def test_a_fact_said_again_is_not_a_memory_written(new_user):
    """Found in a fresh-clone walkthrough: saying a fact the slot already held was answered "I already had
    that", and the report still counted it as a memory written ("updated · green · before: green")."""
    user = new_user()
    async with agent_session(user.user_id) as run:
        await run.session.run(user_input="My favorite color is green")
        result = await run.session.run(user_input="My favorite color is green")
        result.expect.next_event().is_function_call(name="remember_detail")
        result.expect.next_event().is_function_call_output(is_error=False)
        said = result.expect.next_event().is_message(role="assistant").event().item.text_content
    assert "already" in said
    assert [(w["action"], w["content"]) for w in run.agent.memories_written] == [("remembered", "green")]


async def test_recall_reads_back_and_forget_deletes(new_user):
    user = new_user()
    memories.remember(user.scope, "favorite_color", "teal")
    async with agent_session(user.user_id) as run:
        result = await run.session.run(user_input="what's my favorite color?")
        result.expect.next_event().is_function_call(name="recall_detail", arguments={"memory_type": "favorite_color"})
        result.expect.next_event().is_function_call_output(is_error=False)
        assert "teal" in result.expect.next_event().is_message(role="assistant").event().item.text_content

        result = await run.session.run(user_input="please forget my favorite color")
        result.expect.next_event().is_function_call(name="forget_detail", arguments={"memory_type": "favorite_color"})
        result.expect.next_event().is_function_call_output(is_error=False)
        result.expect.next_event().is_message(role="assistant")
        result.expect.no_more_events()
        with pytest.raises(NotFound):
            memories.recall(user.scope, "favorite_color")

        # asked again: recall fails (ToolError read back), the brain falls back to a hybrid search of the
        # slots, then of earlier conversations (this session is not one of them)
        result = await run.session.run(user_input="what's my favorite color?")
        result.expect.next_event().is_function_call(name="recall_detail")
        result.expect.next_event().is_function_call_output(is_error=True)
        result.expect.next_event().is_function_call(name="search_memories")
        result.expect.next_event().is_function_call_output(is_error=False)
        result.expect.next_event().is_function_call(name="search_past_conversations")
        result.expect.next_event().is_function_call_output(is_error=False)
        answer = result.expect.next_event().is_message(role="assistant").event().item.text_content
    assert "teal" not in answer and "don't remember" in answer
    assert answer.endswith("I searched your memories and our earlier conversations too and found nothing close.")


async def test_tools_only_see_the_sessions_user(new_user):
    owner, other = new_user(), new_user()
    memories.remember(owner.scope, "favorite_color", "teal")
    async with agent_session(other.user_id) as run:
        result = await run.session.run(user_input="what do you know about me?")
        result.expect.next_event().is_function_call(name="list_user_memories")
        output = json.loads(result.expect.next_event().is_function_call_output().event().item.output)
        result = await run.session.run(user_input="search my memories for color")
        result.expect.next_event().is_function_call(name="search_memories")
        hits = json.loads(result.expect.next_event().is_function_call_output().event().item.output)["hits"]
    assert output == {"count": 0, "memories": []}
    assert hits == []


async def test_search_hits_tell_the_model_how_they_match(new_user):
    """A model cannot tell from a cosine distance that a hit is only the nearest memory there is: each hit
    says "words", "meaning", both, or "nearest only" (the agent's relevance rule)."""
    user = new_user()
    memories.remember(user.scope, "favorite_color", "teal")
    memories.remember(user.scope, "car", "Drives a blue 2019 Subaru Outback")
    async with agent_session(user.user_id) as run:
        result = await run.session.run(user_input="search my memories for Subaru")
        result.expect.next_event().is_function_call(name="search_memories")
        hits = json.loads(result.expect.next_event().is_function_call_output().event().item.output)["hits"]
        result = await run.session.run(user_input="search my memories for pizza dough")
        result.expect.next_event().is_function_call(name="search_memories")
        far = json.loads(result.expect.next_event().is_function_call_output().event().item.output)["hits"]
    assert hits[0]["memory_type"] == "car" and hits[0]["match"] in ("words", "words and meaning")
    assert {h["memory_type"]: h["match"] for h in far} == {"car": "nearest only", "favorite_color": "nearest only"}


async def test_order_found_and_not_found(new_user):
    user = new_user()
    async with agent_session(user.user_id) as run:
        result = await run.session.run(user_input="where is order 1001?")
        result.expect.next_event().is_function_call(name="lookup_order", arguments={"order_id": "1001"})
        output = json.loads(result.expect.next_event().is_function_call_output(is_error=False).event().item.output)
        reply = result.expect.next_event().is_message(role="assistant").event().item.text_content
        assert output["order"]["status"] == "delivered" and "Order 1001 is delivered" in reply

        result = await run.session.run(user_input="what's the status of order #1234")
        result.expect.next_event().is_function_call(name="lookup_order", arguments={"order_id": "1234"})
        # ToolError: the model reads the message back
        result.expect.next_event().is_function_call_output(output="Order 1234 not found.", is_error=True)
        reply = result.expect.next_event().is_message(role="assistant").event().item.text_content
        result.expect.no_more_events()
    assert "1234 not found" in reply
    errors = [e for e in run.events("tool_call") if e["error"]]
    assert errors[0]["name"] == "lookup_order" and errors[0]["error"] == "Order 1234 not found."


async def test_knowledge_question_searches_the_knowledge_base(new_user):
    user = new_user()
    async with agent_session(user.user_id) as run:
        result = await run.session.run(user_input="how much does shipping to Canada cost?")
        result.expect.next_event().is_function_call(name="search_knowledge")
        output = json.loads(result.expect.next_event().is_function_call_output(is_error=False).event().item.output)
        reply = result.expect.next_event().is_message(role="assistant").event().item.text_content
        result.expect.no_more_events()
    assert output["hits"][0]["title"] == "Shipping to Alaska, Hawaii and Canada"
    assert "$24.95" in reply  # the Canadian rate, quoted from the document
    knowledge = [e for e in run.events("retrieval") if e["source"] == "knowledge"]
    assert knowledge[0]["trigger"] == "tool:search_knowledge"
    assert knowledge[0]["hits"][0]["similarity"] > knowledge[0]["hits"][-1]["similarity"]


async def test_an_error_code_on_the_users_machine_is_looked_up_not_remembered(new_user):
    """ "my machine shows E03, what does it mean?" is a support question, not a fact to search memories for."""
    user = new_user()
    async with agent_session(user.user_id) as run:
        result = await run.session.run(user_input="my machine shows E03, what does it mean?")
        result.expect.next_event().is_function_call(name="search_knowledge")
        output = json.loads(result.expect.next_event().is_function_call_output(is_error=False).event().item.output)
        reply = result.expect.next_event().is_message(role="assistant").event().item.text_content
        result.expect.no_more_events()
        # "my machine shows E03" was answered "E03 means … If E03 persists after descaling, contact support.",
        # without the steps it refers to: the sentences between the two that match are said too
        said = reply_text(await run.session.run(user_input="my machine shows E03"))
    assert output["hits"][0]["title"] == "Error code E03: no water flow"  # the text branch finds the code
    assert "water" in reply.lower()
    assert said.endswith("run the Descale program. If E03 persists after descaling, contact support."), said
    knowledge = next(e for e in run.events("retrieval") if e["source"] == "knowledge")
    assert knowledge["params"] is not None and knowledge["hits"][0]["text_rank"] is not None


async def test_slow_knowledge_search_says_a_filler_and_fast_one_does_not(new_user, monkeypatch):
    user = new_user()
    real_search = retrieval.search_knowledge

    async with agent_session(user.user_id, filler_delay=0.2) as run:
        fast = await run.session.run(user_input="what is your return policy?")
        fast.expect.next_event().is_function_call(name="search_knowledge")
        fast.expect.next_event().is_function_call_output()
        fast.expect.next_event().is_message(role="assistant")
        fast.expect.no_more_events()

        def slow_search(*args, **kwargs):  # a slow network or a cold index
            time.sleep(0.8)
            return real_search(*args, **kwargs)

        monkeypatch.setattr(retrieval, "search_knowledge", slow_search)
        slow = await run.session.run(user_input="do you ship to P.O. boxes?")
        slow.expect.next_event().is_function_call(name="search_knowledge")
        filler = slow.expect.next_event().is_message(role="assistant").event().item.text_content
        slow.expect.next_event().is_function_call_output(is_error=False)
        slow.expect.next_event().is_message(role="assistant")
        slow.expect.no_more_events()
    assert filler == FILLER_TEXT


async def test_update_profile_call_me_sam(new_user):
    user = new_user()
    async with agent_session(user.user_id) as run:
        result = await run.session.run(user_input="call me Sam")
        result.expect.contains_function_call(name="update_profile", arguments={"field": "name", "value": "Sam"})
        result.expect.contains_function_call(
            name="remember_detail", arguments={"memory_type": "name", "content": "Sam"}
        )
        assert "Sam" in reply_text(result)
        result = await run.session.run(user_input="what's my name?")
        result.expect.next_event().is_function_call(name="recall_detail", arguments={"memory_type": "name"})
        assert "Sam" in reply_text(result)
    assert profiles.get_profile(user.scope).name == "Sam"


async def test_writes_are_not_interruptible(new_user, monkeypatch):
    user = new_user()
    seen = []
    real_remember = memories.remember

    async with agent_session(user.user_id) as run:
        handles = []
        run.session.on("speech_created", lambda ev: handles.append(ev.speech_handle))

        def remember(*args, **kwargs):  # runs while the tool writes
            seen.append(handles[-1].allow_interruptions)
            return real_remember(*args, **kwargs)

        monkeypatch.setattr(memories, "remember", remember)
        await run.session.run(user_input="remember that my parking spot is B12")
    assert seen == [False]


async def test_preload_puts_profile_and_memories_in_context_and_greets_by_name(new_user):
    user = new_user()
    profiles.update_profile(user.scope, "name", "Priya")
    memories.remember(user.scope, "home_city", "Seattle")
    profiles.touch_last_seen(user.scope)  # she has been here before
    preload = load_preload(user.user_id)
    assert preload.returning

    brain = OfflineBrain()
    agent = PlaygroundAgent(user.user_id, preload=preload)
    context = agent.chat_ctx.items[0].text_content
    assert context.startswith(PRELOAD_HEADER)
    assert "The user's name is Priya." in context and "- home_city: Seattle" in context

    async with brain, AgentSession(llm=brain, vad=None, turn_handling={"turn_detection": "manual"}) as session:
        greeting = await session.start(agent, capture_run=True)
        greeting.expect.next_event().is_agent_handoff(new_agent_type=PlaygroundAgent)
        message = greeting.expect.next_event().is_message(role="assistant").event().item.text_content
        greeting.expect.no_more_events()
    assert message.startswith("Welcome back, Priya!")
    # the model saw one leading system message: the instructions, then the preload
    sent = [item for item in brain.last_chat_ctx.items if item.type == "message"]
    assert [m.role for m in sent] == ["system", "user"]
    assert sent[0].text_content.startswith("You are the Memory Playground agent")
    assert sent[0].text_content.endswith(context)
    assert sent[1].text_content.startswith("<instructions>\nGreet the user by name (Priya)")  # a user turn


async def test_preload_without_a_preload_argument_loads_it_on_enter(new_user):
    user = new_user()
    profiles.update_profile(user.scope, "name", "Marcus")
    brain = OfflineBrain()
    agent = PlaygroundAgent(user.user_id)  # nothing loaded yet
    async with brain, AgentSession(llm=brain, vad=None, turn_handling={"turn_detection": "manual"}) as session:
        greeting = await session.start(agent, capture_run=True)
        greeting.expect.skip_next_event_if(type="agent_handoff")
        text = greeting.expect.next_event().is_message(role="assistant").event().item.text_content
    assert "Marcus" in text
    assert profiles.get_profile(user.scope).last_seen_at is not None  # preload stamped the visit


async def test_per_turn_recall_goes_in_before_the_users_message(new_user):
    user = new_user()
    memories.remember(user.scope, "favorite_drink", "Oat milk flat white, extra hot")
    memories.remember(user.scope, "car", "Drives a blue 2019 Subaru Outback")
    async with agent_session(user.user_id) as run:
        await run.session.run(user_input="what car do I drive?")
        items = run.brain.last_chat_ctx.items
        user = [item for item in items if item.type == "message" and item.role == "user"][-1]
        lines = user.text_content.splitlines()
        assert lines[0] == "<recall>" and lines[1].startswith(RECALL_HEADER)
        assert lines[2] == "- car: Drives a blue 2019 Subaru Outback"
        assert user.text_content.endswith("</recall>\n\nwhat car do I drive?")
        assert sum(item.type == "message" and item.role == "system" for item in items) == 1
        event = run.events("retrieval")[0]
    assert event["trigger"] == "per_turn_recall" and event["skipped"] is False and event["turn"] == 1
    top = event["hits"][0]
    assert top["memory_type"] == "car" and top["vector_rank"] == 1
    assert top["rrf_score"] == pytest.approx(top["vector_rrf"] + top["text_rrf"])
    assert event["injected"][0] == top["id"]
    assert event["params"] == {"vector_weight": 0.5, "text_weight": 0.5, "k": RrfParams().k}


async def test_per_turn_recall_in_the_voice_hook(new_user):
    """Voice turns go through on_user_turn_completed: the recall runs there, and the model call
    that follows puts the hit in front of the user's message."""
    user = new_user()
    memories.remember(user.scope, "home_city", "Denver, Colorado")
    agent = PlaygroundAgent(user.user_id, preload=load_preload(user.user_id))
    turn_ctx = agent.chat_ctx.copy()
    message = llm.ChatMessage(role="user", content=["where do I live?"])
    await agent.on_user_turn_completed(turn_ctx, message)
    assert agent.bus.turn == 1
    turn_ctx.insert(message)  # what livekit does next
    sent = agent.shape_request(turn_ctx).items
    assert [item.role for item in sent] == ["system", "user"]
    assert "- home_city: Denver, Colorado" in sent[1].text_content.split("</recall>")[0]
    assert sent[1].text_content.endswith("</recall>\n\nwhere do I live?")


async def test_recall_over_budget_is_skipped_and_recorded(new_user):
    user = new_user()
    memories.remember(user.scope, "favorite_color", "teal")
    async with agent_session(user.user_id, recall_budget_ms=0.01) as run:
        result = await run.session.run(user_input="what's my favorite color?")
        assert "teal" in reply_text(result)  # the turn went on without the recall
        items = run.brain.last_chat_ctx.items
        event = run.events("retrieval")[0]
    assert not any(item.type == "message" and "<recall>" in (item.text_content or "") for item in items)
    assert event["skipped"] is True and "budget" in event["skip_reason"] and event["hits"] == []


async def test_rrf_params_change_at_run_time(new_user):
    user = new_user()
    memories.remember(user.scope, "favorite_color", "teal")
    async with agent_session(user.user_id) as run:
        await run.session.run(user_input="search my memories for color")
        run.agent.set_rrf(RrfParams(vector_weight=0.2, text_weight=0.8, k=10))
        await run.session.run(user_input="search my memories for color")
        searches = [e for e in run.events("retrieval") if e["trigger"] == "tool:search_memories"]
    before, after = searches[0]["hits"][0], searches[1]["hits"][0]
    assert searches[1]["params"] == {"vector_weight": 0.2, "text_weight": 0.8, "k": 10}
    assert before["rrf_score"] == pytest.approx(2 * 0.5 / (RrfParams().k + 1))
    assert after["rrf_score"] == pytest.approx(0.2 / 11 + 0.8 / 11)


async def test_events_are_ordered_per_turn(new_user):
    user = new_user()
    async with agent_session(user.user_id) as run:
        await run.session.run(user_input="my favorite color is teal")
        turn = [e["type"] for e in await run.finished_turn(1) if e["type"] != "state"]
    assert turn[0] == "transcript" and turn[1] == "retrieval"
    assert turn.index("tool_call") < turn.index("turn_done")
    assert turn[-1] == "turn_done"
    assert [e["seq"] for e in run.events()] == list(range(len(run.events())))
