"""The shared UI pieces as plain functions: the retrieval panel's views and tables (fed by real searches
and the agent's events for them), turn grouping, report reading, formatting."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from agent import events
from core import conversations, memories
from core.conversations import TurnInput
from core.date_window import DateWindow
from core.retrieval import (
    RELEVANT_MAX_DISTANCE,
    RrfParams,
    is_relevant,
    match_kind,
    search_conversations,
    search_knowledge,
    search_memories,
)
from tests.support.eval_sets import first_sessions
from tests.support.panels import expand
from ui import button_names
from ui import format as fmt
from ui.report_view import read_report
from ui.retrieval import (
    RetrievalView,
    compact_knowledge_table,
    compact_memory_table,
    contribution_rows,
    conversation_table,
    knowledge_table,
    loose_hits_note,
    memory_chart,
    memory_table,
    summary_line,
    view_of_event,
    view_of_search,
)
from ui.session_end import after_session_lines
from ui.turns import group_turns


def test_retrieval_panel_shows_a_search_and_the_agents_event_for_it_alike(new_user):
    user = new_user()
    memories.remember(user.scope, "car", "Drives a blue 2019 Subaru Outback")
    memories.remember(user.scope, "favorite_color", "teal")
    search = search_memories(user.scope, "which car do I drive", params=RrfParams(0.5, 0.5, 20))
    # the retrieval event the agent publishes for the same search (its per-turn recall)
    event = events.stamped(
        events.memory_search_retrieval(search, trigger="per_turn_recall", latency_ms=9.0, injected=search.hits[:1]),
        ts=1.0,
        session_id="s",
        turn=1,
        seq=4,
    )
    as_search, as_event = view_of_search(search), view_of_event(event)
    for view in (as_search, as_event):
        assert view.kind == "memories"
        assert [h["memory_type"] for h in view.hits] == [h.memory_type for h in search.hits]
        assert view.params == {"vector_weight": 0.5, "text_weight": 0.5, "k": 20}
    assert as_event.trigger == "per_turn_recall" and as_event.latency_ms == 9.0
    table = memory_table(as_event.hits, as_event.injected)
    assert table.iloc[0]["Slot"] == "★ car"  # put into the model's context
    assert table.iloc[0]["Vector RRF"] == pytest.approx(0.5 / (20 + int(table.iloc[0]["Vector rank"])))
    assert (table["Fused score"] - table["Vector RRF"] - table["Text RRF"]).abs().max() < 1e-9
    bars = contribution_rows(as_event.hits)
    assert len(bars) == 2 * len(search.hits) and set(bars["branch"]) == {"vector", "text"}
    skipped = events.stamped(
        events.skipped_recall("which car", search.params, reason="over the 50 ms budget", latency_ms=50.0),
        ts=1.0,
        session_id="s",
        turn=1,
        seq=5,
    )
    assert view_of_event(skipped).note == "Skipped: over the 50 ms budget."

    knowledge = search_knowledge(user.scope, "what payment methods do you accept", limit=3)
    event = events.stamped(
        events.knowledge_search_retrieval(knowledge, trigger="tool:search_knowledge"),
        ts=1.0,
        session_id="s",
        turn=1,
        seq=6,
    )
    view = view_of_event(event)
    assert view.kind == "knowledge" == view_of_search(knowledge).kind
    assert list(knowledge_table(view.hits)["Rank"]) == [1, 2, 3]
    assert view.params == {
        "vector_weight": knowledge.params.vector_weight,
        "text_weight": knowledge.params.text_weight,
        "k": knowledge.params.k,
    }
    table = knowledge_table(view.hits)
    assert list(table["Fused score"]) == [hit.rrf_score for hit in knowledge.hits]
    assert list(table["Vector rank"]) == [str(h.vector_rank) if h.vector_rank else "—" for h in knowledge.hits]
    # the side panels' table: the same numbers in four columns that wrap instead of being cut off
    compact = expand(compact_knowledge_table(view.hits).rename(columns={"Document": "Memory"}))
    assert list(compact["Slot"]) == [hit.title for hit in knowledge.hits]
    assert list(compact["Vector rank"]) == list(table["Vector rank"])
    assert list(compact["Text rank"]) == list(table["Text rank"])
    assert list(compact["Vector RRF"]) == pytest.approx([hit.vector_rrf for hit in knowledge.hits], abs=1e-5)
    assert list(compact["Text RRF"]) == pytest.approx([hit.text_rrf for hit in knowledge.hits], abs=1e-5)
    assert list(compact["Fused score"]) == [hit.rrf_score for hit in knowledge.hits]


def said_earlier(user, said: list[tuple[str, str]]) -> None:
    """Store (speaker, text) pairs as one earlier session of the user's, a minute apart."""
    start = datetime(2026, 11, 1, tzinfo=UTC)
    conversations.store_turns(
        user.service,
        [
            TurnInput(f"earlier-{user.user_id}", i, who, text, start + timedelta(minutes=i))
            for i, (who, text) in enumerate(said)
        ],
    )


def summary_lines(search) -> list[str]:
    """The panel's summary line of a search of past turns, drawn from the agent's event for it and from the
    search itself (the two ways a panel gets one)."""
    event = events.stamped(
        events.conversation_search_retrieval(search, trigger="per_turn_recall"), ts=1.0, session_id="s", turn=1, seq=1
    )
    return [summary_line(view_of_event(event)), summary_line(view_of_search(search))]


def test_the_panel_says_when_a_search_of_past_turns_used_less_text_weight(new_user):
    user = new_user()
    said = [
        ("user", "Quick update: the neighbours are drilling again."),
        ("user", "My doctor says I must keep away from sesame and poppy."),
        *[("assistant", f"Happy to help with question number {i}.") for i in range(10)],
    ]
    said_earlier(user, said)
    params = RrfParams(0.5, 0.5, 2)
    # only "quick" of the question is in a turn: the text branch counts for less, and the panel says so
    asked = search_conversations(user.scope, "Quick, remind me which seeds I should avoid?", params=params)
    used = asked.hits[0].text_weight_used
    assert used is not None and 0 < used < 0.5
    for line in summary_lines(asked):
        assert f"w_text 0.5 ({used:.2f} used" in line
    named = search_conversations(user.scope, "sesame and poppy", params=params)
    assert named.hits[0].text_weight_used == 0.5
    assert "w_text 0.5 · k 2" in summary_line(view_of_search(named))


def test_the_panel_says_when_a_search_of_past_turns_used_less_vector_weight(new_user):
    user = new_user()
    # 136 turns (c01's first four sessions of the conversational dev set): from 100 turns on, the vector
    # weight follows how far the nearest turn stands out from the others
    said_earlier(user, [(t["speaker"], t["content"]) for t in first_sessions("c01", 4)])
    params = RrfParams(0.5, 0.5, 2)
    asked = search_conversations(user.scope, "What's the project I'm leading called?", params=params)
    used = asked.hits[0].vector_weight_used
    assert used is not None and 0 < used < 0.5
    for line in summary_lines(asked):
        assert f"w_vector 0.5 ({used:.2f} used: the nearest turn hardly stands out" in line
    named = search_conversations(user.scope, "flight number to Bangkok", params=params)
    assert named.hits[0].vector_weight_used == 0.5
    assert "w_vector 0.5 (half on the turn in context) · w_text 0.5 · k 2" in summary_line(view_of_search(named))


def test_the_panel_names_the_days_a_search_of_past_turns_kept_to(new_user):
    user = new_user()
    said_earlier(user, [("user", "We hiked the Cedar Creek Loop with Nora.")])  # on 2026-11-01
    for from_date, to_date, shown, found in (
        ("2026-11-01", "2026-11-07", "said 2026-11-01 to 2026-11-07", 1),
        ("2026-11-02", None, "said from 2026-11-02", 0),
    ):
        window = DateWindow.from_dates(from_date, to_date)
        asked = search_conversations(user.scope, "the trail with Nora", window=window)
        assert len(asked.hits) == found
        event = events.stamped(
            events.conversation_search_retrieval(asked, trigger="tool:search_past_conversations"),
            ts=1.0, session_id="s", turn=1, seq=1,
        )  # fmt: skip
        for view in (view_of_event(event), view_of_search(asked)):
            assert f"for “the trail with Nora” {shown}  ·  hybrid" in summary_line(view)
    unbounded = search_conversations(user.scope, "the trail with Nora")
    assert " said " not in summary_line(view_of_search(unbounded))
    assert "window" not in events.conversation_search_retrieval(unbounded, trigger="per_turn_recall")


def test_a_past_turn_shows_its_rank_in_context_and_the_parts_add_up(new_user):
    user = new_user()
    said = [
        ("user", "Booked it for the third of March, finally."),
        ("assistant", "Nice, your dentist check-up is on the third of March."),
        *[("user", f"Just thinking out loud, note {i}.") for i in range(6)],
    ]
    said_earlier(user, said)
    hits = search_conversations(user.scope, "when is my dentist check-up?").as_dict()["hits"]
    compact = compact_memory_table(hits, turns=True)
    assert list(compact.columns) == ["Said", "Vector", "In context", "Text", "Fused score"]
    full = conversation_table(hits)
    for column in ("Context rank", "Context RRF"):
        assert column in full.columns
    assert (full["Fused score"] - full["Vector RRF"] - full["Context RRF"] - full["Text RRF"]).abs().max() < 1e-9
    # the chart's bars: vector, then in context, then text, ending at the fused score
    bars = contribution_rows(hits)
    assert list(bars["branch"][:3]) == ["vector", "in context", "text"]
    ends = bars.groupby("order")["end"].max()
    assert list(ends) == pytest.approx([hit["rrf_score"] for hit in hits])
    # one branch alone: no context column, the two-part sum as before
    vector_only = search_conversations(user.scope, "when is my dentist check-up?", mode="vector").as_dict()["hits"]
    assert list(compact_memory_table(vector_only, turns=True).columns) == ["Said", "Vector", "Text", "Fused score"]


def test_a_past_turn_is_dated_in_the_users_time_zone_as_the_agent_was_told():
    """A turn said at 19:00 UTC on November 30 was said on December 1 in Kiritimati (UTC+14): the event carries
    that day (said_on), and the table shows it; an event without it (older reports) shows the UTC day."""
    hit = {"id": "t1", "speaker": "user", "content": "the Cedar Creek Loop", "rrf_score": 0.25, "vector_rank": 1}
    hit |= {"created_at": "2026-11-30T19:00:00+00:00", "text_rank": None, "vector_distance": 0.3}
    assert conversation_table([hit | {"said_on": "2026-12-01"}])["When"].tolist() == ["2026-12-01 user"]
    assert conversation_table([hit])["When"].tolist() == ["2026-11-30 user"]


def test_turn_grouping_and_reading_a_worker_report_without_agent_events():
    published = [
        {"type": "transcript", "role": "assistant", "text": "Hi!", "final": True, "turn": 0, "ts": 1.0},
        {
            "type": "transcript",
            "role": "user",
            "text": "my favorite color is teal",
            "final": True,
            "turn": 1,
            "ts": 2.0,
        },
        {"type": "transcript", "role": "user", "text": "my fav", "final": False, "turn": 1, "ts": 1.9},
        {
            "type": "tool_call",
            "name": "remember_detail",
            "arguments": {"memory_type": "favorite_color"},
            "output": "ok",
            "error": None,
            "duration_ms": 12.5,
            "turn": 1,
            "ts": 2.1,
        },
        {"type": "metric", "name": "turn_total_ms", "value": 80.0, "turn": 1, "ts": 2.2},
        {"type": "transcript", "role": "assistant", "text": "Got it.", "final": True, "turn": 1, "ts": 2.2},
        {"type": "turn_done", "turn": 1, "ts": 2.3},
    ]
    turns = group_turns(published)
    assert [t.number for t in turns] == [0, 1]
    assert turns[1].user_text == "my favorite color is teal"  # the interim transcript is not the message
    assert turns[1].assistant_text == "Got it." and turns[1].done
    assert turns[1].summary == "1 tool call (remember_detail) · 80 ms"  # a text turn: its turn total
    # an answer the visitor stopped: said so, and not a failure
    stopped = [
        {"type": "transcript", "role": "user", "text": "where is order 1001?", "final": True, "turn": 2, "ts": 3.0},
        {"type": "turn_done", "turn": 2, "ts": 3.5},
        {"type": "error", "message": "You stopped this answer.", "kind": "stopped", "turn": 2, "ts": 3.5},
    ]
    last = group_turns(published + stopped)[-1]
    assert last.stopped and not last.failed and last.errors == [] and last.summary.startswith("stopped")
    # a tool called more than once says how often: "3 tool calls (update_profile, remember_detail)" did not
    calls = [
        {"type": "tool_call", "name": name, "arguments": {}, "output": "ok", "error": None, "turn": 3, "ts": 4.0}
        for name in ("update_profile", "remember_detail", "update_profile")
    ]
    several = group_turns(
        [
            *published,
            {"type": "transcript", "role": "user", "text": "I'm Ada", "final": True, "turn": 3, "ts": 3.9},
            *calls,
        ]
    )[-1]
    assert several.summary.startswith("3 tool calls (update_profile ×2, remember_detail)"), several.summary

    # a timing recorded twice in a turn (two LLM calls, two replies) is kept as the Sessions page and the voice
    # table keep it: the calls' durations added up, of a first token or first audio the first; the panel kept
    # the last first token, where the call's table kept the first and Sessions added them up
    twice = [
        {"type": "metric", "name": name, "value": value, "turn": 3, "ts": 4.0 + n / 10}
        for n, (name, value) in enumerate(
            [
                ("llm_ttft_ms", 40.0),
                ("llm_duration_ms", 90.0),
                ("llm_ttft_ms", 25.0),
                ("llm_duration_ms", 60.0),
                ("e2e_ms", 1100.0),
                ("e2e_ms", 2500.0),
            ]
        )
    ]
    repeated = group_turns(twice)[-1].metrics
    assert repeated == {"llm_ttft_ms": 40.0, "llm_duration_ms": 150.0, "e2e_ms": 1100.0}

    # a LiveKit worker's report before any playground section: livekit's chat_history shape
    worker = {
        "chat_history": {
            "items": [
                {"type": "message", "role": "user", "content": ["where is order 1001?"]},
                {"type": "function_call", "call_id": "c1", "name": "lookup_order", "arguments": '{"order_id": "1001"}'},
                {"type": "function_call_output", "call_id": "c1", "output": "Order 1001 shipped", "is_error": False},
                {"type": "message", "role": "assistant", "content": ["Order 1001 has shipped."]},
            ]
        },
        "duration_ms": 4200,
        "user_turns": 1,
    }
    view = read_report(worker)
    assert [line["role"] for line in view.transcript] == ["user", "assistant"]
    assert view.tool_calls[0]["name"] == "lookup_order" and view.tool_calls[0]["output"] == "Order 1001 shipped"
    assert view.user_turns == 1 and view.duration_ms == 4200
    assert read_report(None).transcript == [] and read_report({"playground": "junk"}).tool_calls == []


def test_formatting_helpers():
    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    assert fmt.ago(now - timedelta(minutes=5), now=now) == "5 minutes ago"
    assert fmt.ago(now - timedelta(days=1), now=now) == "1 day ago"
    assert fmt.ago("not a time") == "—"
    assert fmt.duration(75) == "1 min 15 s" and fmt.duration(None) == "—"
    assert fmt.ms(1500) == "1.50 s" and fmt.ms(3.25) == "3.2 ms" and fmt.ms("x") == "—"
    assert fmt.clip("a" * 10, 5) == "aaaa…"
    assert fmt.session_ref("text-a50283de052c4b03") == "text-a50283de052c4b03"  # whole, as the Sessions page has it
    assert fmt.session_ref(None) == "—"


def _hit(slot, vector_rank, text_rank, vector_rrf, text_rrf, hit_id=None):
    return {
        "id": hit_id or slot,
        "memory_type": slot,
        "content": f"{slot} text",
        "vector_rank": vector_rank,
        "text_rank": text_rank,
        "vector_distance": 0.4,
        "vector_rrf": vector_rrf,
        "text_rrf": text_rrf,
        "rrf_score": vector_rrf + text_rrf,
    }


def test_a_hit_with_a_fused_score_of_0_is_never_starred():
    hits = [_hit("diet", None, 1, 0.0, 1 / 61), _hit("dog_name", 1, None, 0.0, 0.0)]  # vector weight 0
    injected = {"diet", "dog_name"}
    assert list(memory_table(hits, injected)["Slot"]) == ["★ diet", "dog_name"]
    assert list(compact_memory_table(hits, injected)["Memory"]) == ["★ diet: diet text", "dog_name: dog_name text"]
    # and the agent never puts it into context: the one relevance rule says so
    assert is_relevant(1, 0.4, 1 / 61) and not is_relevant(None, 0.4, 0.0)


def test_the_chart_bars_end_at_the_tables_fused_scores_in_vector_mode(new_user):
    """Issue: rank 1 (0.01148) was drawn shorter than rank 3 (0.01111). Each bar now ends at its fused score."""
    user = new_user()
    for slot, text in [("car", "blue Subaru"), ("pet", "a dog called Rex"), ("diet", "vegetarian"), ("city", "Porto")]:
        memories.remember(user.scope, slot, text)
    search = search_memories(user.scope, "what car do I drive", mode="vector")
    hits = [hit.as_dict() for hit in search.hits]
    table = memory_table(hits)
    bars = contribution_rows(hits)
    ends = bars.groupby("order")["end"].max()
    assert list(ends.round(8)) == list(table["Fused score"].round(8))
    defaults = RrfParams()  # vector mode: only the vector branch, w_vector / (k + rank)
    assert ends.is_monotonic_decreasing and ends.iloc[0] == pytest.approx(defaults.vector_weight / (defaults.k + 1))
    spec = memory_chart(hits).to_dict()
    assert spec["encoding"]["x"]["field"] == "start" and spec["encoding"]["x2"]["field"] == "end"
    assert spec["encoding"]["y"]["sort"] == [f"{n + 1}. {hit['memory_type']}" for n, hit in enumerate(hits)]
    # the legend names the lists a memory search has: no "in context", which only past turns are ranked by
    assert spec["encoding"]["color"]["scale"]["domain"] == ["vector", "text"]
    turn = {**hits[0], "speaker": "user", "session_id": "s", "turn_index": 0, "content": "x"}
    turn |= {"context_rank": 1, "context_rrf": 0.1, "created_at": "2026-11-28T00:00:00+00:00"}
    assert memory_chart([turn]).to_dict()["encoding"]["color"]["scale"]["domain"] == ["vector", "in context", "text"]


def test_each_hit_says_how_it_matches_and_the_merely_nearest_are_named_so():
    """The vector branch returns the nearest rows however far; a table row says whether the hit shares a
    word with the search, is close in meaning (cosine distance <= RELEVANT_MAX_DISTANCE), both, or neither."""
    near, far = RELEVANT_MAX_DISTANCE - 0.01, RELEVANT_MAX_DISTANCE + 0.01
    hits = [
        {**_hit("a", 1, 1, 0.1, 0.1), "vector_distance": near},
        {**_hit("b", None, 2, 0.0, 0.1), "vector_distance": far},
        {**_hit("c", 2, None, 0.1, 0.0), "vector_distance": near},
        {**_hit("d", 3, None, 0.1, 0.0), "vector_distance": far},
    ]
    assert [match_kind(h) for h in hits] == ["words and meaning", "words", "meaning", "nearest only"]
    assert list(memory_table(hits)["Match"]) == ["words and meaning", "words", "meaning", "nearest only"]
    # the narrow side-panel tables mark it instead: ○, unless the agent put it into the context (★)
    assert [t.split(":")[0] for t in compact_memory_table(hits)["Memory"]] == ["a", "b", "c", "○ d"]
    assert compact_memory_table(hits, {"a"})["Memory"][0].startswith("★ a")
    # a search in half a page says it in words as well, beside the text
    with_match = compact_memory_table(hits, match=True)
    assert list(with_match.columns) == ["Memory", "Match", "Vector", "Text", "Fused score"]
    assert list(with_match["Match"]) == ["words and meaning", "words", "meaning", "nearest only"]
    # the agent's rule agrees: only the last would be left out of its context
    assert [is_relevant(h["text_rank"], h["vector_distance"], h["rrf_score"]) for h in hits] == [True] * 3 + [False]
    view = RetrievalView(kind="memories", query="pizza dough recipe", hits=hits)
    assert loose_hits_note(view).startswith("1 of 4 is *nearest only*")
    view.hits = [*hits[:2], hits[3], {**hits[3], "id": "e"}]
    assert loose_hits_note(view).startswith("2 of 4 are *nearest only*")
    view.hits = hits[3:]
    assert loose_hits_note(view).startswith("Nothing matches “pizza dough recipe”: no memory shares a word")
    # a search kept to a part (a knowledge category) does not say that nothing at all matches
    searched_part = loose_hits_note(view, "the shipping documents")
    assert searched_part.startswith("Nothing in the shipping documents matches “pizza dough recipe”: no memory there")
    view.hits = hits[:3]
    assert loose_hits_note(view) is None
    # knowledge hits carry `distance`, not `vector_distance`
    assert match_kind({"text_rank": None, "distance": far, "vector_rank": 1}) == "nearest only"
    assert match_kind({"text_rank": None, "distance": near, "vector_rank": 1}) == "meaning"


def test_button_names_reach_the_script_as_data_whatever_the_text():
    """A memory's text goes into the page's script as a name: markup and a closing script tag stay text."""
    names = {"u_mem_delete_1": 'Delete memory note: </script><script>alert(1)</script> "quoted" & more'}
    page_script = button_names.script(names)
    assert page_script.count("</script>") == 1 and page_script.rstrip().endswith("</script>")
    encoded = page_script.split("Object.assign(names, ", 1)[1].split(");", 1)[0]
    assert json.loads(encoded) == names


def _a_skipped_recall_drawn():
    from agent import events
    from core.retrieval import RrfParams
    from ui.retrieval import render_retrieval

    for tier in ("slots", "conversations"):
        skipped = events.skipped_recall(
            "which car", RrfParams(), reason="over the 250 ms budget", latency_ms=251.0, tier=tier
        )
        render_retrieval(events.stamped(skipped, ts=1.0, session_id="s", turn=1, seq=5), key=f"skipped_{tier}")


def test_a_skipped_search_is_not_said_to_have_found_nothing():
    """A walkthrough (2026-12-07): the panel said "Skipped: over the 250 ms budget." and then "No earlier turns
    matched.", as if the search had run."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_a_skipped_recall_drawn, default_timeout=30).run()
    captions = [c.value for c in at.caption]
    assert captions.count("Skipped: over the 250 ms budget.") == 2, captions
    assert not [c for c in captions if "matched" in c], captions


def test_a_clipped_text_is_one_line_and_literal_keeps_line_breaks():
    """A walkthrough (2026-12-07): "line one⏎line two" showed as "line one line two" in the chat and as
    "line oneline two" in the turn picker's label."""
    from ui.format import clip, literal

    assert clip("line one\nline two\r\n  three", 14) == "line one line…"
    assert clip("line one\nline two") == "line one line two"
    assert literal("line one\nline two\r\n\n- item") == "line one  \nline two  \n  \n\\- item"


def test_after_a_session_the_page_lists_what_the_extraction_remembered_and_says_why_it_failed():
    def report(written, extraction=None):
        return {"playground": {"memories_written": written, "extraction": extraction}}

    written = [
        {
            "action": "remembered",
            "memory_type": "pet",
            "content": "a dog named Rex",
            "source": "tool",
        },  # said in a turn
        {"action": "remembered", "memory_type": "home_city", "content": "Denver", "source": "extraction"},
        {
            "action": "updated",
            "memory_type": "favorite_color",
            "content": "teal",
            "previous_content": "blue",
            "source": "extraction",
        },
        {"action": "forgot", "memory_type": "job", "content": None, "source": "extraction"},
    ]
    assert after_session_lines(report(written)) == ["`home_city` Denver", "`favorite_color` teal (was blue)"]
    failed = after_session_lines(report([], {"method": None, "facts": [], "error": "The database is unreachable."}))
    assert failed == [":orange[Nothing more could be picked out of it: The database is unreachable.]"]
    for nothing in (None, {}, {"playground": None}, {"playground": {"memories_written": "x"}}, report([])):
        assert after_session_lines(nothing) == []
