"""Per-turn details beside the conversation: tool calls (arguments, output,
time), the retrievals with their RRF breakdown, and the turn's timings.
Used by the chat page; the voice page can reuse `render_turn_details`."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.retrieval import RrfParams, query_from_message, search_memories
from ui.charts import alt
from ui.errors import reported
from ui.format import arguments_text, clip, code_span, literal, ms
from ui.retrieval import recall_pair, render_recall_tiers, render_retrieval
from ui.turns import Turn

METRIC_LABELS = {
    "recall_ms": "memory recall (per turn)",
    "llm_ttft_ms": "LLM first token",
    "llm_duration_ms": "LLM total",
    "turn_total_ms": "turn total",
    "e2e_ms": "end of speech → first audio",
    "stt_ms": "speech-to-text",
    "transcription_delay_ms": "transcription delay",
    "tts_ttfb_ms": "TTS first byte",
    "eou_delay_ms": "end-of-utterance delay",
}


def render_tool_calls(turn: Turn) -> None:
    if not turn.tool_calls:
        st.caption("No tools were called in this turn.")
        return
    for call in turn.tool_calls:
        ok = not call.get("error")
        icon = ":material/check_circle:" if ok else ":material/error:"
        arguments = code_span(f"({clip(arguments_text(call.get('arguments')), 200)})")  # may hold backticks
        with st.container(border=True):
            st.markdown(f"{icon} **`{call.get('name')}`**{arguments}  ·  {ms(call.get('duration_ms'))}")
            result = call.get("error") if not ok else call.get("output")
            if result:
                st.caption(("Error: " if not ok else "→ ") + literal(clip(result, 400)))  # data, not Markdown


def timings_chart(turn: Turn) -> alt.Chart | None:
    rows = [{"step": METRIC_LABELS.get(name, name), "ms": value} for name, value in turn.metrics.items()]
    rows += [
        {"step": f"tool {call.get('name')}", "ms": float(call["duration_ms"])}
        for call in turn.tool_calls
        if isinstance(call.get("duration_ms"), (int, float))
    ]
    if not rows:
        return None
    data = pd.DataFrame(rows)
    return (
        alt.Chart(data)
        .mark_bar(color="#64748b", cornerRadiusEnd=2)
        .encode(
            y=alt.Y("step:N", sort="-x", title=None, axis=alt.Axis(labelLimit=200)),
            x=alt.X("ms:Q", title="milliseconds"),
            tooltip=["step:N", alt.Tooltip("ms:Q", format=".1f")],
        )
        .properties(height=alt.Step(22))
    )


def render_timings(turn: Turn) -> None:
    chart = timings_chart(turn)
    if chart is None:
        st.caption("No timings recorded for this turn yet.")
        return
    st.altair_chart(chart, width="stretch")


def _what_if(retrieval: dict, *, scope, params: RrfParams, key: str) -> None:
    """The shown memory search again with the sliders' fusion, when it differs from what the turn used:
    what the ranking would have been (the agent's next searches use it)."""
    used = retrieval.get("params") or {}
    if retrieval.get("source") != "memories" or retrieval.get("skipped") or not retrieval.get("query"):
        return
    if (used.get("vector_weight"), used.get("text_weight"), used.get("k")) == (
        params.vector_weight,
        params.text_weight,
        params.k,
    ):
        return
    with reported():
        # the recall's event holds the user's whole message: search with what the recall searched with
        query = query_from_message(retrieval["query"])
        again = search_memories(scope, query, limit=max(len(retrieval.get("hits") or []), 5), params=params)
        st.markdown(
            f"**What if** · re-ranked with the sliders (w_vector {params.vector_weight:g} · "
            f"w_text {params.text_weight:g} · k {params.k}); the agent's next search uses them."
        )
        render_retrieval(again, key=f"{key}_whatif", compact=True, show_summary=False)


def render_turn_details(turn: Turn, *, key: str, scope=None, params: RrfParams | None = None) -> None:
    """Everything the agent did in one turn, in the current container. With the user's `scope` and the
    sliders' `params`, each memory search is also shown re-ranked with them when they differ."""
    if turn.errors:
        for message in turn.errors:
            st.error(message, icon=":material/error:")
    st.markdown("##### :material/build: Tool calls", anchors=False)
    render_tool_calls(turn)
    st.markdown("##### :material/manage_search: Retrieved", anchors=False)
    if not turn.retrievals:
        st.caption("Nothing was searched in this turn.")
    pairs, others = recall_pair(turn.retrievals)
    for index, (slots, turns) in enumerate(pairs):
        render_recall_tiers(slots, turns, key=f"{key}_recall{index}")
        if scope is not None and params is not None:
            _what_if(slots, scope=scope, params=params, key=f"{key}_recall{index}")
    for index, retrieval in enumerate(others):
        with st.container(border=True):
            render_retrieval(retrieval, key=f"{key}_r{index}", compact=True)
            if scope is not None and params is not None:
                _what_if(retrieval, scope=scope, params=params, key=f"{key}_r{index}")
    st.markdown("##### :material/timer: Timings", anchors=False)
    render_timings(turn)
