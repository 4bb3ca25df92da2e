"""The retrieval panel: what a search found and *why*.

`render_retrieval(found)` takes a search the page ran itself
(core.retrieval.MemorySearch / ConversationSearch / KnowledgeSearch) or an
agent ``retrieval`` event (agent/events.py), and shows, per hit, the vector
rank, text rank, each branch's RRF contribution and the fused score, as a
table and a stacked bar chart (teal = vector, amber = text). Both memory
tiers look alike: slots (``memories``) name the slot, past conversation turns
(``conversations``) say when and who. Knowledge hits (the same hybrid search
over the shared documents) add the title, category and cosine similarity.
`render_recall_tiers` puts a per-turn recall's two tiers side by side. The chat,
voice, Memories, Knowledge and Sessions pages use it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import streamlit as st

from agent import RetrievalEvent
from core.retrieval import RELEVANT_MAX_DISTANCE, ConversationSearch, KnowledgeSearch, MemorySearch, match_kind
from ui.charts import alt
from ui.format import clip, literal, ms

VECTOR_COLOR = "#0f766e"
TEXT_COLOR = "#d97706"
CONTEXT_COLOR = "#5eb8ad"  # the turn with its reply: a lighter shade of the vector branch it shares a weight with
_TRIGGERS = {
    "per_turn_recall": "per-turn recall",
    "tool:search_memories": "tool search_memories",
    "tool:search_knowledge": "tool search_knowledge",
    "tool:search_past_conversations": "tool search_past_conversations",
}
TIER_TITLES = {"slots": "Slots", "conversations": "Past conversations", "knowledge": "Knowledge"}


@dataclass
class RetrievalView:
    kind: str  # "memories" | "conversations" | "knowledge"
    query: str
    hits: list[dict[str, Any]]
    mode: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    latency_ms: float | None = None
    embed_ms: float | None = None
    degraded_reason: str | None = None
    note: str | None = None  # e.g. "skipped: over the time budget"
    skipped: bool = False  # the search did not run (the note says why): not "nothing matched"
    trigger: str | None = None  # agent events: per_turn_recall, tool:search_memories, ...
    injected: set[str] = field(default_factory=set)  # ids the agent put into the model's context
    window: str | None = None  # a search of past turns kept to these days


def view_of_event(event: RetrievalEvent) -> RetrievalView:
    """What the agent retrieved, as published in a ``retrieval`` event."""
    return RetrievalView(
        kind=event["source"],
        query=event["query"],
        hits=event["hits"],
        mode=event["mode"],
        params=dict(event["params"] or {}),
        latency_ms=event["latency_ms"],
        embed_ms=event.get("embed_ms"),
        degraded_reason=event["degraded_reason"],
        note=f"Skipped: {event['skip_reason']}." if event["skipped"] else None,
        skipped=bool(event["skipped"]),
        trigger=event["trigger"],
        injected=set(event.get("injected") or []),
        window=event.get("window"),
    )


def view_of_search(search: MemorySearch | ConversationSearch | KnowledgeSearch) -> RetrievalView:
    """A search the page ran itself (Memories, Sessions and Knowledge pages)."""
    data = search.as_dict()
    if isinstance(search, KnowledgeSearch):
        return RetrievalView(
            kind="knowledge",
            query=search.query,
            hits=data["hits"],
            mode="hybrid",
            params=data["params"] or {},
            latency_ms=data["latency_ms"],
            embed_ms=data["embed_ms"],
        )
    return RetrievalView(
        kind="conversations" if isinstance(search, ConversationSearch) else "memories",
        query=search.query,
        hits=data["hits"],
        mode=search.mode,
        params=data["params"],
        latency_ms=data["latency_ms"],
        embed_ms=data["embed_ms"],
        degraded_reason=search.degraded_reason,
        window=data.get("window"),
    )


# ---------------------------------------------------------------------------
# Tables (plain data, testable without Streamlit)
# ---------------------------------------------------------------------------


def starred(hit: dict[str, Any], injected: set[str] | None) -> bool:
    """Put into the model's context: in the turn's injected ids, and never with a fused score of 0."""
    return bool(injected) and str(hit.get("id")) in injected and float(hit.get("rrf_score") or 0.0) > 0


def _branch(rank: Any, contribution: Any) -> str:
    """'#1 · 0.01148', or '—' when the branch did not find the memory."""
    if rank is None or rank != rank:
        return "—"
    return f"#{int(rank)} · {float(contribution or 0.0):.5f}"


def _mark(hit: dict[str, Any], injected: set[str] | None) -> str:
    """The narrow tables' mark in front of a hit: ★ put into the model's context, ○ nearest only."""
    if starred(hit, injected):
        return "★ "
    return "○ " if match_kind(hit) == "nearest only" else ""


def compact_memory_table(
    hits: list[dict[str, Any]], injected: set[str] | None = None, *, turns: bool = False, match: bool = False
) -> pd.DataFrame:
    """For side panels (chat, voice), the recall tiers beside each other and the searches in half a page:
    every number of the full table in four columns that fit half a laptop screen: the memory with its slot
    (`turns`: what was said, with when and who said it), each branch's rank and RRF contribution, the fused
    score; `match` adds why the hit is there (words, meaning, nearest only) after the text."""
    text_column = "Said" if turns else "Memory"
    rows = [
        {
            text_column: _mark(hit, injected)
            + (turn_label(hit) if turns else str(hit.get("memory_type")))
            + ": "
            + clip(hit.get("content"), 60)
            + said_times(hit),
            "Match": match_kind(hit),
            "Vector": _branch(hit.get("vector_rank"), hit.get("vector_rrf")),
            "In context": _branch(hit.get("context_rank"), hit.get("context_rrf")),
            "Text": _branch(hit.get("text_rank"), hit.get("text_rrf")),
            "Fused score": float(hit.get("rrf_score") or 0.0),
        }
        for hit in hits
    ]
    columns = [text_column, "Vector", "Text", "Fused score"]
    if in_context(hits):
        columns.insert(2, "In context")
    if match:
        columns.insert(1, "Match")
    return pd.DataFrame(rows, columns=columns)


def compact_knowledge_table(hits: list[dict[str, Any]], *, match: bool = False) -> pd.DataFrame:
    """The side panels' knowledge hits in the compact memory table's four columns: the document (its title,
    which wraps), each branch's rank and RRF contribution, the fused score; in fused order. `match` (the
    Knowledge page's search, in half the page): the category after the title, why the document is there
    and the cosine similarity the vector rank comes from as well."""
    rows = [
        {
            "Document": _mark(hit, None)
            + clip(hit.get("title"), 60)
            + (f" · {hit.get('category')}" if match and hit.get("category") else ""),
            "Match": match_kind(hit),
            "Vector": _branch(hit.get("vector_rank"), hit.get("vector_rrf")),
            "Text": _branch(hit.get("text_rank"), hit.get("text_rrf")),
            "Fused score": float(hit.get("rrf_score") or 0.0),
            "Similarity": float(hit.get("similarity") or 0.0),
        }
        for hit in hits
    ]
    columns = ["Document", "Match", "Vector", "Text", "Fused score", "Similarity"]
    return pd.DataFrame(rows, columns=columns if match else [c for c in columns if c not in ("Match", "Similarity")])


def in_context(hits: list[dict[str, Any]]) -> bool:
    """Whether a search of past turns also ranked each turn with its reply (hybrid searches do)."""
    return any(hit.get("context_rank") is not None for hit in hits)


def memory_table(hits: list[dict[str, Any]], injected: set[str] | None = None) -> pd.DataFrame:
    rows = [
        {
            "Slot": ("★ " if starred(hit, injected) else "") + str(hit.get("memory_type")),
            "Memory": clip(hit.get("content"), 120),
            "Vector rank": hit.get("vector_rank"),
            "Text rank": hit.get("text_rank"),
            "Vector RRF": float(hit.get("vector_rrf") or 0.0),
            "Text RRF": float(hit.get("text_rrf") or 0.0),
            "Fused score": float(hit.get("rrf_score") or 0.0),
            "Match": match_kind(hit),
            "Cosine distance": hit.get("vector_distance"),
        }
        for hit in hits
    ]
    frame = pd.DataFrame(
        rows,
        columns=[
            "Slot",
            "Memory",
            "Match",
            "Vector rank",
            "Text rank",
            "Vector RRF",
            "Text RRF",
            "Fused score",
            "Cosine distance",
        ],
    )
    for column in ("Vector rank", "Text rank"):
        # "—" = the memory is not in that branch's ranking (so the branch contributes 0)
        frame[column] = frame[column].map(lambda rank: "—" if rank is None or rank != rank else str(int(rank)))
    return frame


def turn_label(hit: dict[str, Any]) -> str:
    """When a past turn was said and by whom: "2026-11-16 user" (the day in the user's time zone, as the agent
    was told it; an event from before said_on has only the UTC time)."""
    day = hit.get("said_on") or str(hit.get("created_at") or "")[:10]
    return f"{day} {hit.get('speaker') or ''}".strip()


def said_times(hit: dict[str, Any]) -> str:
    """After a past turn that stands for more turns saying the same words (folded by the search): how many."""
    times = hit.get("repeats")  # absent from the reports saved before searches folded repeats
    return f" (said {times}×)" if isinstance(times, int) and times > 1 else ""


def conversation_table(hits: list[dict[str, Any]], injected: set[str] | None = None) -> pd.DataFrame:
    columns = ["When", "Said", "Match", "Vector rank", "Text rank", "Vector RRF", "Text RRF", "Fused score"]
    columns += ["Cosine distance"]
    ranks = ["Vector rank", "Text rank"]
    if in_context(hits):  # the turn with its reply: its rank and RRF contribution beside the vector branch's
        columns[4:4] = ["Context rank"]
        columns[7:7] = ["Context RRF"]
        ranks.append("Context rank")
    rows = [
        {
            "When": ("★ " if starred(hit, injected) else "") + turn_label(hit),
            "Said": clip(hit.get("content"), 120) + said_times(hit),
            "Vector rank": hit.get("vector_rank"),
            "Context rank": hit.get("context_rank"),
            "Text rank": hit.get("text_rank"),
            "Vector RRF": float(hit.get("vector_rrf") or 0.0),
            "Context RRF": float(hit.get("context_rrf") or 0.0),
            "Text RRF": float(hit.get("text_rrf") or 0.0),
            "Fused score": float(hit.get("rrf_score") or 0.0),
            "Match": match_kind(hit),
            "Cosine distance": hit.get("vector_distance"),
        }
        for hit in hits
    ]
    frame = pd.DataFrame(rows, columns=columns)
    for column in ranks:
        frame[column] = frame[column].map(lambda rank: "—" if rank is None or rank != rank else str(int(rank)))
    return frame


def knowledge_table(hits: list[dict[str, Any]]) -> pd.DataFrame:
    """The documents in fused order, with why: each branch's rank and the fused score (like the memory
    tables), and the cosine similarity the vector rank comes from."""
    columns = ["Rank", "Title", "Match", "Vector rank", "Text rank", "Fused score", "Category", "Similarity"]
    columns += ["Cosine distance", "Excerpt"]  # after the why, so a narrow column still shows it
    rows = [
        {
            "Rank": hit.get("rank"),
            "Title": hit.get("title"),
            "Category": hit.get("category"),
            "Vector rank": hit.get("vector_rank"),
            "Text rank": hit.get("text_rank"),
            "Fused score": float(hit.get("rrf_score") or 0.0),
            "Similarity": float(hit.get("similarity") or 0.0),
            "Match": match_kind(hit),
            "Cosine distance": hit.get("distance"),
            "Excerpt": clip(hit.get("content"), 140),
        }
        for hit in hits
    ]
    frame = pd.DataFrame(rows, columns=columns)
    for column in ("Vector rank", "Text rank"):
        frame[column] = frame[column].map(lambda rank: "—" if rank is None or rank != rank else str(int(rank)))
    return frame


def contribution_rows(hits: list[dict[str, Any]]) -> pd.DataFrame:
    """Long form for the bars: one row per (hit, branch), each segment's start and end drawn as given
    (vector from 0, text after it), so a bar ends exactly at the hit's fused score in the table."""
    rows = []
    for order, hit in enumerate(hits):
        if hit.get("speaker") is not None:  # a past conversation turn
            label = f"{order + 1}. {turn_label(hit)}: {clip(hit.get('content'), 28)}"
        else:  # unique, in table order
            label = f"{order + 1}. {hit.get('memory_type') or hit.get('title') or 'hit'}"
        vector, text = float(hit.get("vector_rrf") or 0.0), float(hit.get("text_rrf") or 0.0)
        context = float(hit.get("context_rrf") or 0.0)
        segments = [("vector", "vector_rank", 0.0, vector)]
        if "context_rrf" in hit:  # a past turn: the turn with its reply, between the vector and text segments
            segments.append(("in context", "context_rank", vector, vector + context))
        segments.append(("text", "text_rank", vector + context, vector + context + text))
        for branch, rank_key, start, end in segments:
            rows.append(
                {
                    "hit": label,
                    "order": order,
                    "branch": branch,
                    "rank": hit.get(rank_key),
                    "contribution": end - start,
                    "start": start,
                    "end": end,
                    "fused": float(hit.get("rrf_score") or 0.0),
                }
            )
    return pd.DataFrame(rows, columns=["hit", "order", "branch", "rank", "contribution", "start", "end", "fused"])


# ---------------------------------------------------------------------------
# Charts
# ---------------------------------------------------------------------------


def memory_chart(hits: list[dict[str, Any]]) -> alt.Chart:
    data = contribution_rows(hits)
    data = data[data["contribution"] > 0]  # an empty segment draws nothing (and no rounded stub)
    order = list(dict.fromkeys(data.sort_values("order")["hit"]))
    # the legend names only the lists this search has: memories and knowledge have no turn in context
    branches = [("vector", VECTOR_COLOR), ("in context", CONTEXT_COLOR), ("text", TEXT_COLOR)]
    if not (data["branch"] == "in context").any():
        branches = [b for b in branches if b[0] != "in context"]
    return (
        alt.Chart(data)
        .mark_bar()
        .encode(
            y=alt.Y("hit:N", sort=order, title=None, axis=alt.Axis(labelLimit=160)),
            x=alt.X(
                "start:Q",
                title=["RRF contribution", "(the parts add up to the fused score)"],  # two lines: half-page charts
                axis=alt.Axis(format=".4f", tickCount=4),
                scale=alt.Scale(zero=True, nice=False),
            ),
            x2="end:Q",
            color=alt.Color(
                "branch:N",
                scale=alt.Scale(domain=[b for b, _ in branches], range=[color for _, color in branches]),
                legend=alt.Legend(orient="bottom", title=None),
            ),
            order=alt.Order("branch:N", sort="descending"),
            tooltip=[
                alt.Tooltip("hit:N", title="hit"),
                alt.Tooltip("branch:N"),
                alt.Tooltip("rank:Q", title="rank in branch"),
                alt.Tooltip("contribution:Q", format=".5f"),
                alt.Tooltip("fused:Q", format=".5f"),
            ],
        )
        .properties(height=alt.Step(26))
    )


# ---------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------


MATCH_HELP = (
    "words = shares a word with the search; meaning = close in meaning (cosine distance ≤ "
    f"{RELEVANT_MAX_DISTANCE:g}); nearest only = neither: listed because the vector branch always returns the "
    "nearest rows there are. The agent leaves those out of its context."
)
LOOSE_LEGEND = f" ○ = nearest only: no shared word with the search, cosine distance above {RELEVANT_MAX_DISTANCE:g}."
MATCH_COLUMN = st.column_config.TextColumn(help=MATCH_HELP, width=130)  # px: "words and meaning" whole


def loose_hits(hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [hit for hit in hits if match_kind(hit) == "nearest only"]


def loose_hits_note(view: RetrievalView, searched_in: str | None = None) -> str | None:
    """What to say when some or all hits of a search are only the nearest there are (None when all match).
    `searched_in`: the part searched when it was not all ("the shipping documents"): nothing there matching
    does not mean nothing matches."""
    loose = loose_hits(view.hits)
    if not loose:
        return None
    what = {"memories": "memory", "conversations": "turn"}.get(view.kind, "document")
    limit = f"{RELEVANT_MAX_DISTANCE:g}"
    if len(loose) == len(view.hits):
        where, there = (f" in {searched_in}", " there") if searched_in else ("", "")
        return (
            f"Nothing{where} matches “{literal(clip(view.query, 60))}”: no {what}{there} shares a word with it, and "
            f"none is close in meaning (all above cosine distance {limit}). These are only the nearest there are."
        )
    verb = "is" if len(loose) == 1 else "are"
    return (
        f"{len(loose)} of {len(view.hits)} {verb} *nearest only*: no shared word and cosine distance above "
        f"{limit}, listed because the vector branch always returns the nearest rows."
    )


# Why a search of past turns used less of a weight than asked: the field it returns the used weight in.
_SCALED_DOWN = {
    "text_weight_used": "the best word match holds little of the question",
    "vector_weight_used": "the nearest turn hardly stands out from the others",
}


def _weight(view: RetrievalView, asked: float, field: str) -> str:
    """A branch weight as asked, and what the search used when it scaled it down (past turns: the text weight
    when the best word match held less than half of the question's word weight, the vector weight when the
    nearest turn hardly stood out from the user's other turns)."""
    used = view.hits[0].get(field) if view.hits else None
    if used is None or abs(float(used) - asked) < 0.0005:
        return f"{asked:g}"
    return f"{asked:g} ({float(used):.2f} used: {_SCALED_DOWN[field]})"


def summary_line(view: RetrievalView) -> str:
    what = {"memories": "Memories", "conversations": "Past conversations"}.get(view.kind, "Knowledge")
    parts = [f"**{what}**"]
    if view.trigger:
        parts.append(f"({_TRIGGERS.get(view.trigger, view.trigger)})")
    if view.query:
        parts.append(f"for “{literal(clip(view.query, 80))}”")  # the visitor's words, shown as typed
    if view.window:
        parts.append(f"said {view.window}")
    details = []
    if view.mode:
        details.append(view.mode)
    if view.params:
        vw, tw, k = view.params.get("vector_weight"), view.params.get("text_weight"), view.params.get("k")
        if vw is not None and tw is not None and k is not None:
            halves = " (half on the turn in context)" if view.kind == "conversations" and in_context(view.hits) else ""
            vector = _weight(view, float(vw), "vector_weight_used")
            text = _weight(view, float(tw), "text_weight_used")
            details.append(f"w_vector {vector}{halves} · w_text {text} · k {int(k)}")
    if view.latency_ms is not None:
        timing = ms(view.latency_ms)
        if view.embed_ms is not None:
            timing += f" (embed {ms(view.embed_ms)})"
        details.append(timing)
    text = " ".join(parts)
    if details:
        text += "  ·  " + "  ·  ".join(details)
    return text


def render_retrieval(
    found: RetrievalEvent | MemorySearch | ConversationSearch | KnowledgeSearch,
    *,
    key: str | None = None,
    chart: bool = True,
    show_summary: bool = True,
    compact: bool | str = False,
    searched_in: str | None = None,
) -> RetrievalView:
    """Draw one retrieval (table + chart) in the current container; returns what was drawn.

    compact: False = every column (a page-wide table that scrolls sideways where it must);
    True or "tier" = four columns whose text wraps (the memory or what was said, each branch's rank and
    contribution, the fused score), for narrow side panels and half a panel (two tiers side by side);
    "medium" = the same with the Match column, for searches in half a page (Memories, Sessions): nothing
    is cut off or hidden behind a sideways scroll. searched_in: the part searched, when not all of it."""
    searched = isinstance(found, MemorySearch | ConversationSearch | KnowledgeSearch)
    view = view_of_search(found) if searched else view_of_event(found)
    if show_summary:
        st.markdown(summary_line(view))
    if view.degraded_reason:
        st.warning(view.degraded_reason, icon=":material/warning:")
    if view.note:
        st.caption(view.note)
    if view.injected:
        st.caption("★ = put into the model's context for this turn.")
    if not view.hits:
        if not view.skipped:  # "Skipped: over the 250 ms budget." then "No earlier turns matched." said it ran
            st.caption(
                {"knowledge": "No matches.", "conversations": "No earlier turns matched."}.get(
                    view.kind, "No memories matched."
                )
            )
        return view
    # a search the visitor ran says which hits are only the nearest there are (the agent's show it per row)
    note = loose_hits_note(view, searched_in) if searched else None
    if note and len(loose_hits(view.hits)) == len(view.hits):
        st.info(note, icon=":material/search_off:")
    elif note:
        st.caption(note)
    if view.kind in ("memories", "conversations"):
        _render_memory_hits(view, key=key, chart=chart, compact=compact)
    else:
        _render_knowledge_hits(view, key=key, chart=chart, compact=compact)
    return view


def _render_memory_hits(view: RetrievalView, *, key: str | None, chart: bool, compact: bool | str) -> None:
    """Slots and past turns: the same numbers; a turn names when it was said and by whom instead of a slot."""
    turns = view.kind == "conversations"
    if compact:  # side panels, half-panel tiers and half-page searches: few columns, text that wraps
        table = compact_memory_table(view.hits, view.injected, turns=turns, match=compact == "medium")
        table["Fused score"] = table["Fused score"].map(lambda score: f"{score:.5f}")
        # st.table draws a cell as Markdown: what a user said shows as said ("*star*" lost its stars)
        table[table.columns[0]] = table[table.columns[0]].map(literal)
        st.table(table, hide_index=True, border="horizontal")
        st.caption(
            (
                "Vector / In context / Text: the rank · its RRF contribution w / (k + rank); In context ranks "
                "each turn with the turn after it, on half the vector weight; — = not ranked there. Fused score "
                "= the three added."
                if turns and in_context(view.hits)
                else "Vector / Text: the branch's rank · its RRF contribution w / (k + rank); — = not found by "
                "that branch. Fused score = the two added."
            )
            + (LOOSE_LEGEND if loose_hits(view.hits) else "")
        )
        if chart:
            st.altair_chart(memory_chart(view.hits), width="stretch", key=f"{key}_chart" if key else None)
        return
    table = conversation_table(view.hits, view.injected) if turns else memory_table(view.hits, view.injected)
    text_column = "Said" if turns else "Memory"
    top = max(float(table["Fused score"].max()), 1e-9)
    st.dataframe(
        table,
        hide_index=True,
        key=f"{key}_table" if key else None,
        column_config={
            "Slot": st.column_config.TextColumn(width="medium"),
            "When": st.column_config.TextColumn(width="medium", help="When it was said, and who said it."),
            text_column: st.column_config.TextColumn(width="medium"),
            "Vector rank": st.column_config.TextColumn(help="Rank by cosine distance (1 = closest)."),
            "Text rank": st.column_config.TextColumn(
                help="Rank by full-text match; — = no keyword match.",
            ),
            "Context rank": st.column_config.TextColumn(
                help="Rank of the turn together with the turn after it, among both branches' candidates, "
                "by cosine distance.",
            ),
            "Vector RRF": st.column_config.NumberColumn(
                format="%.4f",
                help="w_vector / (k + vector rank); half of w_vector when the turn is also ranked in context",
            ),
            "Context RRF": st.column_config.NumberColumn(
                format="%.4f",
                help="(w_vector / 2) / (k + context rank)",
            ),
            "Text RRF": st.column_config.NumberColumn(
                format="%.4f",
                help="w_text (as used) / (k + text rank)",
            ),
            "Fused score": st.column_config.ProgressColumn(
                format="%.4f",
                min_value=0.0,
                max_value=top,
                help="The RRF contributions added",
            ),
            "Cosine distance": st.column_config.NumberColumn(format="%.3f"),
            "Match": MATCH_COLUMN,
        },
    )
    if chart:
        st.altair_chart(memory_chart(view.hits), width="stretch", key=f"{key}_chart" if key else None)


def _render_knowledge_hits(view: RetrievalView, *, key: str | None, chart: bool, compact: bool | str) -> None:
    if compact:  # a side panel or half the page: the compact memory table's columns, wrapping, nothing cut off
        medium = compact == "medium"
        table = compact_knowledge_table(view.hits, match=medium)
        table["Fused score"] = table["Fused score"].map(lambda score: f"{score:.5f}")
        if medium:
            table["Similarity"] = table["Similarity"].map(lambda similarity: f"{similarity:.3f}")
        table["Document"] = table["Document"].map(literal)  # a title as written, not as Markdown
        st.table(table, hide_index=True, border="horizontal")
        st.caption(
            "Vector / Text: the branch's rank · its RRF contribution w / (k + rank); — = not found by that "
            "branch. Fused score = the two added; rows in fused order."
            + (" Similarity = 1 − cosine distance, what the vector rank orders by." if medium else "")
            + (LOOSE_LEGEND if loose_hits(view.hits) and not medium else "")
        )
        if chart:
            st.altair_chart(memory_chart(view.hits), width="stretch", key=f"{key}_chart" if key else None)
        return
    table = knowledge_table(view.hits)
    st.dataframe(
        table,
        hide_index=True,
        key=f"{key}_table" if key else None,
        column_config={
            "Rank": st.column_config.NumberColumn(format="%d", width="small", help="Position in the fused order."),
            "Title": st.column_config.TextColumn(width="medium"),
            "Vector rank": st.column_config.TextColumn(help="Rank by cosine distance (1 = closest).", width="small"),
            "Text rank": st.column_config.TextColumn(
                help="Rank by full-text match; — = no keyword match.", width="small"
            ),
            # a number, not a bar: narrower, so it stays in view beside the title (the chart below has the bars)
            "Fused score": st.column_config.NumberColumn(
                format="%.4f", help="w_vector / (k + vector rank) + w_text / (k + text rank)"
            ),
            "Similarity": st.column_config.NumberColumn(format="%.3f", help="1 − cosine distance"),
            "Cosine distance": st.column_config.NumberColumn(format="%.3f"),
            "Excerpt": st.column_config.TextColumn(width="large"),
            "Match": MATCH_COLUMN,
        },
    )
    if chart:
        st.altair_chart(memory_chart(view.hits), width="stretch", key=f"{key}_chart" if key else None)


def recall_pair(retrievals: list[RetrievalEvent]) -> tuple[list[tuple[RetrievalEvent, RetrievalEvent]], list]:
    """The per-turn recalls as (slots, past conversations) pairs, in order, and every other retrieval."""
    pairs, others, waiting = [], [], None
    for event in retrievals:
        if event.get("trigger") != "per_turn_recall":
            others.append(event)
        elif event.get("tier") == "slots":
            waiting = event
        elif event.get("tier") == "conversations" and waiting is not None:
            pairs.append((waiting, event))
            waiting = None
        else:
            others.append(event)
    if waiting is not None:
        others.insert(0, waiting)
    return pairs, others


def render_recall_tiers(
    slots: RetrievalEvent, turns: RetrievalEvent, *, key: str, compact: bool | str = "tier"
) -> None:
    """One per-turn recall: the slots and the past conversation turns it found, side by side, each with its
    per-branch ranks and RRF scores."""
    st.markdown(f"**Per-turn recall** for “{literal(clip(slots['query'], 80))}”  ·  {ms(slots['latency_ms'])}")
    # side by side where the panel has room for both tables, one under the other where it has not
    # (ui/style.py gives each tier its minimum width)
    row = st.container(horizontal=True, gap="small", key=f"{key}_tiers")
    for event, tier in ((slots, "slots"), (turns, "conversations")):
        with row, st.container(border=True, key=f"{key}_{tier}_tier"):
            st.markdown(f"###### {TIER_TITLES[tier]}", anchors=False)
            render_retrieval(event, key=f"{key}_{tier}", show_summary=False, chart=False, compact=compact)
