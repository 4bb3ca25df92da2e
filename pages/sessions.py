"""Sessions: the signed-in user's past conversations (reports written when a
session ends, turns stored as they happen) with transcript, tool calls,
retrieval events with scores, latency charts and the memories written during
the session; a search across all of the user's transcripts that jumps to the
matching turn; deleting one session, all of them, or everything.
Every call runs as the user (RLS decides)."""

from __future__ import annotations

import re
from datetime import UTC, tzinfo

import pandas as pd
import streamlit as st

from agent import keep_metric
from core import conversations, memories, profiles, sessions
from core.date_window import DateWindow, zone_name
from core.errors import InvalidInput, NotFound
from core.retrieval import match_kind, search_conversations
from core.text import clean_text
from ui import auth, erase
from ui.button_names import name_buttons
from ui.charts import alt
from ui.errors import reported
from ui.format import (
    ago,
    arguments_text,
    clip,
    code_span,
    duration,
    in_ms,
    literal,
    nothing_to_search,
    session_ref,
    when,
)
from ui.report_view import ReportView, read_report
from ui.retrieval import render_retrieval
from ui.shell import run_page, stayed_on_page
from ui.style import empty_state, page_header
from ui.voice_latency import VOICE_STAGES, show_latency_table, stages_measured

LISTED = 100  # sessions in the table and the picker, newest first (each with what the overview reads of its report)
REQUEST = "u_sessions_request"  # another page sets a session id here before switching to this page
PICK = "u_sessions_pick"
SEARCH = "u_sessions_search"
SEARCH_DAYS = "u_sessions_search_days"  # the days the search keeps to (a date range, empty: every day)
JUMP = "u_sessions_jump"  # (session id, turn index) of the search hit to show
DELETE = "u_sessions_delete_pressed"  # the id of the session whose Delete this session was pressed
DELETED = "u_sessions_deleted"  # (id of the session this tab deleted, id of the one shown after it): confirmed
DELETED_HERE = "u_sessions_deleted_here"  # every session this browser session deleted (not "another tab's")
# (what the page said of a session asked for by name that is not there, its icon, the session shown instead)
NOT_THERE = "u_sessions_not_there"
LINKED = "u_sessions_linked"  # set once the address (?session=…) is the page's own: read, or written, once
LINK_PARAM = "session"
OPEN = "in progress"  # a session whose report is not saved yet (SessionRecord.is_open)
MATCH_KEY = "u_session_turn_match"
# Brings the matched turn into view inside the transcript's scrolling box (st.html runs it in the page), and
# again for two seconds: the transcript's messages are drawn one after another, and each moves it.
_SCROLL_TO_MATCH = f"""<script>
(() => {{
  let tries = 0;
  const centre = () => {{
    const el = document.querySelector('.st-key-{MATCH_KEY}');
    if (el) el.scrollIntoView({{block: "center"}});
    if (++tries < 10) setTimeout(centre, 200);
  }};
  setTimeout(centre, 200);
}})();
</script>"""

METRIC_LABELS = {
    "e2e_ms": "end of speech → first audio",
    "turn_total_ms": "turn total",
    "llm_ttft_ms": "LLM first token",
    "llm_duration_ms": "LLM total (every call of the turn)",
    "recall_ms": "memory recall",
    "stt_ms": "speech-to-text",
    "transcription_delay_ms": "transcription delay",
    "tts_ttfb_ms": "TTS first byte",
    "eou_delay_ms": "end-of-utterance delay",
}


# The user's calendar for this run (the page script runs afresh each run): their profile's time zone, UTC
# without one. Every time shown and the Said between days are in it, as the agent's dates are.
_zone: tzinfo = UTC


def _when(value) -> str:
    return when(value, _zone)


def _duration_seconds(record, view: ReportView) -> float | None:
    if record.duration_seconds is not None:
        return record.duration_seconds
    return view.duration_ms / 1000 if view.duration_ms is not None else None


def _overview(records, views) -> pd.DataFrame:
    rows = []
    for record, view in zip(records, views, strict=True):
        tools = view.tools_used
        rows.append(
            {
                "Date": _when(record.started_at or record.created_at),
                "Duration": OPEN if record.is_open else duration(_duration_seconds(record, view)),
                "Turns": view.user_turns,
                "Tools used": ", ".join(
                    f"{name} ×{count}" if count > 1 else name for name, count in tools.most_common()
                )
                or "—",
                # text: an open session's is not known before its report ("—")
                "Memories written": "—" if record.is_open else str(len(view.memories_written)),
                "Mode": view.mode or ("voice" if record.room_name else "text"),
                "Session": record.session_id,
            }
        )
    return pd.DataFrame(rows)


LABEL_SEPARATOR = " · "


def _label(record, view: ReportView) -> str:
    turns = f"{view.user_turns} turn{'s' if view.user_turns != 1 else ''}"
    parts = [_when(record.started_at or record.created_at), turns, record.session_id]
    return LABEL_SEPARATOR.join(parts + ([OPEN] if record.is_open else []))


def _picked_session_id() -> None:
    """Make the picker's value a session id again. A rerun the browser sends with an option the page no
    longer lists (the session just deleted) arrives as that option's *label*: Streamlit maps only the
    labels it listed last back to values. Taken for a session id, it was "deleted in another tab"."""
    picked = st.session_state.get(PICK)
    if isinstance(picked, str) and picked.count(LABEL_SEPARATOR) >= 2:
        st.session_state[PICK] = picked.split(LABEL_SEPARATOR)[2]


def _per_turn(view: ReportView) -> pd.DataFrame:
    """One value a timing a turn (turn, name, value), kept as the chat panel and the voice table keep them
    (agent.timings.keep_metric): a turn with tools makes several LLM calls, and the median of single calls
    came out below the median first token, so their durations are added up; of a repeated first token or
    first audio, the first."""
    turns: dict[int, dict[str, float]] = {}
    for event in view.metrics:
        keep_metric(turns.setdefault(event["turn"], {}), event["name"], event["value"])
    rows = [
        {"turn": turn, "name": name, "value": value} for turn, values in turns.items() for name, value in values.items()
    ]
    return pd.DataFrame(rows, columns=["turn", "name", "value"])


def _medians(view: ReportView) -> dict[str, float]:
    """Each timing's median over the turns."""
    medians = _per_turn(view).groupby("name")["value"].median()
    return {METRIC_LABELS.get(name, name): float(value) for name, value in medians.items()}


def _bars_per_turn(
    data: pd.DataFrame, kind: str, *, legend: alt.Legend, height: int, order: list[str] | None = None
) -> alt.Chart:
    """A bar per `kind` (a column of `data`) side by side in each turn, its height `value` in ms. `order`
    puts the kinds in that order, beside each other and in the legend (by name without it)."""
    ordered = order or alt.Undefined
    # turn 0 is the agent's greeting, before the visitor said anything: the Turns count starts at 1
    data = data.assign(turn_label=data["turn"].map(lambda turn: "greeting" if turn == 0 else str(turn)))
    turns = [label for _, label in sorted(set(zip(data["turn"], data["turn_label"], strict=True)))]
    return (
        alt.Chart(data)
        .mark_bar(cornerRadiusEnd=2)
        .encode(
            x=alt.X("turn_label:O", title="turn", sort=turns, axis=alt.Axis(labelAngle=0)),
            xOffset=alt.XOffset(f"{kind}:N", sort=ordered),
            y=alt.Y("value:Q", title="milliseconds"),
            color=alt.Color(f"{kind}:N", scale=alt.Scale(scheme="tableau10", domain=ordered), legend=legend),
            tooltip=[
                alt.Tooltip("turn_label:O", title="turn"),
                f"{kind}:N",
                alt.Tooltip("value:Q", format=".1f", title="ms"),
            ],
        )
        # Streamlit fits the whole chart, legend and axes included, into this height
        .properties(height=height)
    )


PLOT_HEIGHT = 240  # px for the latency chart's plot and axes
LEGEND_LINE = 20  # px a line of its legend takes


def _latency_chart(view: ReportView) -> alt.Chart | None:
    if not view.metrics:
        return None
    data = _per_turn(view)
    data["metric"] = data["name"].map(lambda n: METRIC_LABELS.get(n, n))
    # one label a line, whole: three columns in half the page cut "memory recall" to "memory reca…"
    legend = alt.Legend(orient="bottom", title=None, direction="vertical", labelLimit=0)
    # Streamlit fits plot, axes and legend into the height: with the legend under it, a line a label, a fixed
    # 330 px left a voice call's nine timings a plot 60 px high, ticks at 0 and 2,000 only (a walkthrough)
    height = PLOT_HEIGHT + LEGEND_LINE * data["metric"].nunique()
    return _bars_per_turn(data, "metric", legend=legend, height=height)


def _voice_latency(view: ReportView) -> None:
    """Per-turn voice latency from the call's report (STT already matched to the turn it transcribed)."""
    stages = stages_measured(view.voice_latency, view.voice_latency_summary)
    if view.voice_latency:
        show_latency_table(view.voice_latency, key="u_session_voice_latency", summary=view.voice_latency_summary)
        long = pd.DataFrame(
            [
                {"turn": row["turn"], "stage": VOICE_STAGES[n], "value": row[n]}
                for row in view.voice_latency
                for n in stages
                if n in row
            ]
        )
        # the legend beside the plot: under it, in 220 px, it took the plot's height (a flat line, no ticks)
        legend = alt.Legend(orient="right", title=None, labelLimit=0)
        order = [VOICE_STAGES[n] for n in stages]
        st.altair_chart(_bars_per_turn(long, "stage", legend=legend, height=300, order=order), width="stretch")
    if view.voice_latency_summary:
        summary = pd.DataFrame(
            [
                {
                    "Stage": VOICE_STAGES.get(name, METRIC_LABELS.get(name, name)),
                    "Turns": int(stats.get("count", 0)),
                    "Median (ms)": stats.get("p50"),
                    "Max (ms)": stats.get("max"),
                }
                for name, stats in sorted(
                    view.voice_latency_summary.items(),
                    key=lambda item: (
                        list(VOICE_STAGES).index(item[0]) if item[0] in VOICE_STAGES else len(VOICE_STAGES)
                    ),
                )
            ]
        )
        st.dataframe(
            summary,
            hide_index=True,
            key="u_session_voice_summary",
            column_config={
                "Median (ms)": st.column_config.NumberColumn(format="%.0f"),
                "Max (ms)": st.column_config.NumberColumn(format="%.0f"),
            },
        )


def _transcript(scope, record, view: ReportView) -> None:
    """The session's turns as stored in the conversation tier (the report's transcript for sessions from
    before the tier); the turn a search jumped to is marked and scrolled into view."""
    turns = conversations.list_turns(scope, record.session_id)  # as the user: RLS
    if not turns:
        if not view.transcript:
            st.caption("No transcript was stored for this session.")
            return
        with st.container(height=_box_height([line.get("text") or "" for line in view.transcript]), border=True):
            for line in view.transcript:
                role = "user" if line.get("role") == "user" else "assistant"
                with st.chat_message(role):
                    text = line.get("text") or ""
                    st.markdown(literal(text) if role == "user" else text)
        return
    jump = st.session_state.get(JUMP)
    target = jump[1] if jump and jump[0] == record.session_id else None
    # messages deleted with a memory after the last one kept leave no gap in the turn numbers: the report's
    # transcript ends with them, blanked
    trailing = 0 if record.is_open else _deleted_at_the_end(view)
    # a box of chat messages follows its end by itself (Streamlit's autoscroll): it pulled the transcript back
    # to its last message after the one searched for was brought into view
    follow_the_end = None if target is None else False
    with st.container(
        height=_box_height([turn.content for turn in turns]),
        border=True,
        key="u_session_transcript",
        autoscroll=follow_the_end,
    ):
        for position, turn in enumerate(turns):
            role = "user" if turn.speaker == "user" else "assistant"
            if (gone := turn.turn_index - (turns[position - 1].turn_index + 1 if position else 0)) > 0:
                _missing(gone)
            if turn.turn_index == target:
                with st.container(key=MATCH_KEY, border=True):
                    st.caption(
                        f":material/my_location: The message you searched for · {_message_number(turn.turn_index)}"
                        f" · {_when(turn.created_at)}"
                    )
                    with st.chat_message(role):
                        _said(turn, role)
            else:
                with st.chat_message(role):
                    _said(turn, role)
            if role == "user" and _unanswered(turns, position, still_open=record.is_open, ends_deleted=bool(trailing)):
                st.caption(
                    ":material/error: No answer to this message: its turn failed, was interrupted or you "
                    "stopped it" + (f" (the errors are below, {_ERRORS_HEADING})." if view.errors else ".")
                )
        if trailing:
            _missing(trailing)
    if target is not None:
        st.html(_SCROLL_TO_MATCH, unsafe_allow_javascript=True)


TRANSCRIPT_HEIGHT = 440  # a scroll box of its own, for a transcript longer than a screen's share
SHORT_TRANSCRIPT = (4, 400)  # at most this many messages of at most this many characters: no box


def _box_height(texts: list[str]) -> int | str:
    """A long transcript scrolls in a box of TRANSCRIPT_HEIGHT; a short one is as tall as it is (a greeting and
    one answer sat at the top of a 440-pixel box, the rest of it empty)."""
    most_messages, most_characters = SHORT_TRANSCRIPT
    short = len(texts) <= most_messages and sum(len(text) for text in texts) <= most_characters
    return "content" if short else TRANSCRIPT_HEIGHT


_ERRORS_HEADING = "under “error(s) during the session”"
WITHHELD_NOTE = (
    ":material/lock: Not kept: this message may have held a password or another secret, so its words were not "
    "stored, and no search or question to the agent finds it."
)


def _said(turn, role: str) -> None:
    """A stored message; one withheld (core.conversations.WITHHELD_TEXT) says why it is empty."""
    if turn.withheld:
        st.caption(WITHHELD_NOTE)
    else:
        st.markdown(literal(turn.content) if role == "user" else turn.content)


def _missing(count: int) -> None:
    st.caption(
        f":material/delete: {count} message{'s' if count != 1 else ''} missing here: the messages that "
        "mention a memory you deleted are deleted with it."
    )


def _deleted_at_the_end(view: ReportView) -> int:
    """How many of the report's last messages were blanked because they mentioned a deleted memory."""
    count = 0
    for line in reversed(view.transcript):
        if (line.get("text") or "").strip() != sessions.DELETED_TEXT:
            break
        count += 1
    return count


def _unanswered(turns, position: int, *, still_open: bool, ends_deleted: bool = False) -> bool:
    """A message of the user's that no reply of the agent's follows: its turn failed (an unreachable model,
    a tool the model got wrong). The last one of a session still open may just be waiting for its answer;
    the last one of a session whose last messages were deleted with a memory was answered."""
    after = turns[position + 1 : position + 2]
    if after:  # a reply deleted with a memory it mentioned was not missing: the transcript says so
        return after[0].speaker == "user" and after[0].turn_index == turns[position].turn_index + 1
    return not (still_open or ends_deleted)


def _not_yet(what: str) -> None:
    """An open session has no report: its sections say when theirs comes, not that nothing happened."""
    st.caption(f":material/pending: {what} in its report, saved when the session ends.")


def _tool_calls(record, view: ReportView) -> None:
    if record.is_open:
        _not_yet("The tool calls are listed")
        return
    if not view.tool_calls:
        st.caption("No tools were called.")
        return
    table = pd.DataFrame(
        [
            {
                "Turn": call.get("turn"),
                "Tool": call.get("name"),
                # as the chat panel writes them (query="…", limit=5): the JSON's braces and quoted keys took
                # the width, and at 1440 px the column was cut
                "Arguments": arguments_text(call.get("arguments")),
                "Result": clip(call.get("error") or call.get("output"), 160),
                "OK": not call.get("error"),
                "Time (ms)": call.get("duration_ms"),
            }
            for call in view.tool_calls
        ]
    )
    st.dataframe(
        table,
        hide_index=True,
        key="u_session_tools",
        column_config={
            "OK": st.column_config.CheckboxColumn(width="small"),
            "Time (ms)": st.column_config.NumberColumn(format="%.1f"),
            "Arguments": st.column_config.TextColumn(width="medium"),
            "Result": st.column_config.TextColumn(width="large"),
        },
    )


def _memories_so_far(scope, record) -> None:
    """What an open session is known to have written: the memories that name it now (an overwritten value
    or a deleted memory is not among them; the report lists every write)."""
    _not_yet("Every write (with the value it replaced) is listed")
    written = [m for m in memories.list_memories(scope) if m.session_id == record.session_id]
    if written:
        st.caption("Written so far, as they are now:")
        st.dataframe(
            pd.DataFrame([{"Slot": m.memory_type, "Content": m.content, "When": _when(m.updated_at)} for m in written]),
            hide_index=True,
            key="u_session_memories_so_far",
        )


def _delete_pressed(session_id: str) -> None:
    st.session_state[DELETE] = session_id


def _delete_the_pressed_session(visitor) -> None:
    """Delete the session whose Delete this session was pressed, that one only, and say what happened."""
    session_id = st.session_state.pop(DELETE, None)
    if session_id is None:
        return
    if st.session_state.get(PICK) == session_id:
        st.session_state.pop(PICK, None)
    with reported(), st.spinner(f"Deleting session {session_id}…"):
        try:
            erase.delete_session(visitor, session_id)
        except NotFound:
            st.info(
                f"Session {code_span(session_ref(session_id))} had already been deleted (in another tab or window): "
                "nothing else was deleted.",
                icon=":material/info:",
            )
            return
        # inside reported(): a deletion that failed (the database unreachable) shows its error, not this.
        # Said by the runs that follow too (see _say_deleted): reruns the browser asked for meanwhile, their
        # picker still naming the deleted session, cut this run short or replaced its output.
        st.session_state[DELETED] = (session_id, None)
        st.session_state.setdefault(DELETED_HERE, set()).add(session_id)


def _say_deleted() -> None:
    """The confirmation of this tab's deletion, said until the visitor moves on: picks another session than
    the one shown after it, or leaves the page. Not "until a run finishes": the browser can send more than
    one rerun after a deletion (the cookie writer's, a stale picker's), and the last one came after the
    confirmation had been taken down."""
    confirmed = st.session_state.get(DELETED)
    if confirmed is None:
        return
    deleted, shown_after = confirmed
    if _moved_on(deleted, shown_after):
        st.session_state.pop(DELETED, None)
        return
    st.success(f"Deleted session {deleted} and its transcript.", icon=":material/check_circle:")


def _moved_on(*shown: str | None) -> bool:
    """Whether the visitor left the page or picked a session other than `shown`, which ends a notice the
    page says across runs (a deletion's confirmation, a session asked for that is not there)."""
    return not stayed_on_page() or st.session_state.get(PICK) not in (*shown, None)


def _deleted_here(session_id: str) -> bool:
    return session_id in st.session_state.get(DELETED_HERE, ())


def _open_hit(session_id: str, turn_index: int) -> None:
    st.session_state[REQUEST] = session_id
    st.session_state[JUMP] = (session_id, turn_index)


def _detail(visitor, record, view: ReportView) -> None:
    st.subheader(f"Session {record.session_id}", anchor=False)
    st.caption(
        f"Started {_when(record.started_at or record.created_at)} ({ago(record.started_at or record.created_at)})"
        + (f" · room `{record.room_name}`" if record.room_name else "")
    )
    # Expanders, not popovers (as on the Memories page): a popover draws its body at the end of the document,
    # so Tab from its button went through every control of the session before reaching Delete this session.
    # Keyed by the session: the next session shown does not open already expanded.
    with st.expander("Delete this session…", icon=":material/delete:", key=f"u_session_delete_box_{record.session_id}"):
        st.markdown(
            "Delete this session: its report and every turn of its transcript. It cannot be undone."
            + (" It is still open, so it is ended first (the chat starts a new session)." if record.is_open else "")
        )
        # the id goes with the press (args are the run's that drew the button): the next run's chosen session
        # can be another one, when this one was deleted meanwhile in another tab, and deleting that one lost
        # a session nobody asked to delete
        st.button(
            "Delete this session",
            key="u_session_delete",
            type="primary",
            on_click=_delete_pressed,
            args=(record.session_id,),
        )
    if record.is_open:
        st.info(
            "This session is still open (a chat or a call that has not ended yet). Its transcript below is "
            "stored as it happens; its report — tool calls, retrievals, timings, memories written — is saved "
            "when it ends: End session on the Chat page, the end of the call, or when you leave.",
            icon=":material/pending:",
        )
    cols = st.columns(5)
    unknown = "—" if record.is_open else None  # not counted before the report is saved
    cols[0].metric("Duration", OPEN if record.is_open else duration(_duration_seconds(record, view)), border=True)
    cols[1].metric(
        "Turns",
        view.user_turns,
        border=True,
        help="Your messages, those deleted with a memory you deleted included; the agent's replies are not counted.",
    )
    cols[2].metric("Tool calls", unknown or len(view.tool_calls), border=True)
    cols[3].metric("Retrievals", unknown or len(view.retrievals), border=True)
    cols[4].metric("Memories written", unknown or len(view.memories_written), border=True)

    left, right = st.columns([1, 1], gap="large")
    with left:
        st.markdown("##### :material/forum: Transcript", anchors=False)
        _transcript(visitor.scope, record, view)
    with right:
        st.markdown("##### :material/timer: Latency per turn", anchors=False)
        chart = _latency_chart(view)
        if record.is_open:
            _not_yet("Each turn's timings are")
        elif chart is None:
            st.caption("No latency metrics were recorded.")
        else:
            st.altair_chart(chart, width="stretch")
            # one unit, as the chart's axis: "3.41 s" beside "71 ms" read as a mix until 2026-12-07
            st.caption("Median per turn: " + " · ".join(f"{label} {in_ms(v)}" for label, v in _medians(view).items()))
        st.markdown("##### :material/build: Tool calls", anchors=False)
        _tool_calls(record, view)

    if view.voice_latency or view.voice_latency_summary:
        st.markdown("##### :material/graphic_eq: Voice latency per turn", anchors=False)
        _voice_latency(view)

    st.markdown("##### :material/manage_search: Retrieval events", anchors=False)
    if record.is_open:
        _not_yet("Every search the agent ran, with its scores, is")
    elif not view.retrievals:
        st.caption("No searches ran in this session.")
    for index, event in enumerate(view.retrievals):
        source = event.get("source", "memories")
        with st.expander(
            f"Turn {event.get('turn', '?')} · {source} · “{literal(clip(event.get('query'), 60))}” · "
            f"{len(event.get('hits') or [])} hit(s)",
            expanded=index == 0,
        ):
            render_retrieval(event, key=f"u_session_retrieval_{index}", show_summary=True)

    st.markdown("##### :material/neurology: Memories written during this session", anchors=False)
    if record.is_open:
        _memories_so_far(visitor.scope, record)
    elif not view.memories_written:
        st.caption("Nothing was remembered in this session.")
    else:
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "Turn": m.get("turn"),
                        "Action": m.get("action") or "remembered",
                        "Slot": m.get("memory_type") or m.get("slot"),
                        "Content": m.get("content"),
                        "Before": m.get("previous_content") or "",
                        "By": m.get("source") or "tool",
                        "When": _when(m.get("ts") or m.get("updated_at") or m.get("created_at")),
                    }
                    for m in view.memories_written
                ]
            ),
            hide_index=True,
            key="u_session_memories",
        )
    if view.stopped:
        st.caption(f":material/stop_circle: You stopped {view.stopped} answer(s) in this session.")
    if view.errors:
        with st.expander(f"{len(view.errors)} error(s) during the session", icon=":material/error:"):
            for error in view.errors:
                st.error(f"{error.get('where') or 'agent'}: {error.get('message')}")


def _message_number(turn_index: int) -> str:
    """Where a stored turn sits in its session: "message 39" is its 39th message, the user's and the agent's
    counted alike. turn_index counts both from 0 (stored so); "turn 38" read as the user's turns, which the
    Turns count and the report's turn numbers count."""
    return f"message {turn_index + 1}"


def _open_name(hit) -> str:
    """The accessible name of a hit's Open (every hit's says "Open"): which message of which session."""
    said = clip(" ".join(hit.content.split()), 60)
    return f"Open {_message_number(hit.turn_index)} of session {session_ref(hit.session_id)} ({hit.speaker}: {said})"


def _search_hit(hit, index: int) -> None:
    # the button as wide as its label beside the text (a seventh of the row was "O…" at 1024 px)
    with st.container(border=True, key=f"u_sessions_hit_{index}"):
        row = st.container(horizontal=True, vertical_alignment="center")
        text_col = row.container()
        where = f"**{_when(hit.created_at)}** · {hit.speaker} · {_message_number(hit.turn_index)}"
        said = clip(hit.content, 220)
        text_col.markdown(f"{where}  \n{literal(said) if hit.speaker == 'user' else said}")
        # a branch that did not rank the turn says "—", not "#—"; each rank with its share of the RRF score, the
        # turn in context's too, so the parts add up to it ("vector #2 · text #1 · RRF 0.2708" did not: the
        # weights are scaled per search and the third part was not shown)
        ranks = " · ".join(
            f"{name} #{rank} ({share:.4f})" if rank else f"{name} —"
            for name, rank, share in (
                ("vector", hit.vector_rank, hit.vector_rrf),
                ("text", hit.text_rank, hit.text_rrf),
                ("in context", hit.context_rank, hit.context_rrf),
            )
            if rank or name != "in context"
        )
        text_col.caption(f"{ranks} · RRF {hit.rrf_score:.4f} · session {hit.session_id}")
        # the hit goes with the press: by the next run the results can be others (a turn said meanwhile),
        # and the button at this place then opened another hit
        row.button(
            "Open",
            key=f"u_sessions_open_{index}",
            icon=":material/arrow_forward:",
            on_click=_open_hit,
            args=(hit.session_id, hit.turn_index),
            width="content",
        )


def _search_panel(scope) -> None:
    """Search every turn of every one of my sessions (hybrid, as the user); Open jumps to the turn."""
    # the date box as wide as a range and the button as its label, the text box the rest (columns cut them to
    # "yyyy-mm-dd – " and "S…" at 1024 px); on a narrow screen they wrap
    with st.form("u_sessions_search_form", border=False):
        row = st.container(horizontal=True, vertical_alignment="bottom")
        query = row.text_input("Search all my transcripts", key=SEARCH, placeholder="e.g. the trail I hiked with Nora")
        days = row.date_input(
            "Said between",
            value=[],
            key=SEARCH_DAYS,
            format="YYYY-MM-DD",
            width=250,
            help=f"Only what was said on these days ({zone_name(_zone)}, your time zone; the agent sets it when "
            "you tell it yours). Leave empty to search every day.",
        )
        searched = row.form_submit_button("Search", icon=":material/search:", width="content")
    if not query and not searched:
        return
    if reason := nothing_to_search(query):
        st.caption(f":material/info: Nothing was searched: {reason}. Type some words to search.")
        return
    window = DateWindow.of_days(days, _zone)
    with reported():
        # every copy of a thing said is a place to go: not folded into one hit
        found = search_conversations(scope, query, limit=8, window=window, fold_repeats=False)
        if found.degraded_reason:
            st.warning(found.degraded_reason, icon=":material/warning:")
        # a number has no meaning to match by: "4417" listed three unrelated turns as matches by meaning alone
        by_words_only = not re.search(r"[^\W\d_]", query)
        matches = [
            hit
            for hit in found.hits
            if (hit.text_rank is not None if by_words_only else match_kind(hit.as_dict()) != "nearest only")
        ]
        loose = [hit for hit in found.hits if hit not in matches]
        if window is not None:
            st.caption(f"Only what was said {window.describe()} ({zone_name(_zone)}).")
        if not matches:
            st.caption(
                "No turn of your transcripts matches that."
                if window is None
                else "No turn said on those days matches that: clear **Said between** to search every day."
            )
        for index, hit in enumerate(matches):
            _search_hit(hit, index)
        name_buttons({f"u_sessions_open_{index}": _open_name(hit) for index, hit in enumerate(matches + loose)})
        if loose:
            # the vector branch always returns the nearest turns, however far: kept, but apart
            with st.expander(
                f"{len(loose)} loosely related turn{'s' if len(loose) != 1 else ''} (no shared word, not close "
                "in meaning)",
                icon=":material/search_off:",
            ):
                for index, hit in enumerate(loose, start=len(matches)):
                    _search_hit(hit, index)
        if not found.hits:
            return
        with st.expander("How these were ranked"):
            render_retrieval(found, key="u_sessions_search_scores", compact="medium")


def _not_there(scope, session_id: str) -> None:
    """A session asked for by another page (a memory's link), a search hit or the address that is not stored."""
    if st.session_state.get(JUMP, (None,))[0] == session_id:
        st.session_state.pop(JUMP, None)
    if sessions.deleted_ids(scope, [session_id]):
        _say_not_there(
            f"Session {code_span(session_ref(session_id))} was deleted, so it cannot be opened: nothing of it is kept.",
            ":material/delete:",
        )
    else:
        _say_not_there(
            f"Session {code_span(session_ref(session_id))} is not among your sessions: it has not been saved yet, "
            "or it was deleted.",
            ":material/search_off:",
        )


def _say_not_there(text: str, icon: str) -> None:
    """Say why the session asked for is not shown, on this run and on the runs that follow until the visitor
    moves on (as `_say_deleted`): a rerun came right after the first run of a link (the cookie component's,
    until 2026-12-07), and the warning was gone before it could be read, the page showing another session
    without a word."""
    st.warning(text, icon=icon)
    st.session_state[NOT_THERE] = (text, icon, None)


def _said_not_there_before() -> None:
    notice = st.session_state.get(NOT_THERE)
    if notice is None:
        return
    text, icon, shown_instead = notice
    if _moved_on(shown_instead):
        st.session_state.pop(NOT_THERE, None)
        return
    st.warning(text, icon=icon)


def _linked_session() -> str | None:
    """The session the address names (`/sessions?session=…`) on this browser session's first run of the
    page: a link opened, a bookmark, a reload. Only then: a later run's address can be one the page has
    already replaced (a rerun the browser asked for before the new address reached it named the session
    just deleted). It is only ever looked up as the visitor (RLS), so a link to someone else's session
    shows what an unknown one shows."""
    named = st.query_params.get(LINK_PARAM, "")
    if LINKED in st.session_state or not named.strip():
        return None
    st.session_state[LINKED] = True  # taken once: what the page shows next says what became of it
    try:
        return clean_text(named, what="session id", max_length=conversations.MAX_SESSION_ID_LENGTH)
    except InvalidInput:
        _say_not_there(
            f"The address names a session “{literal(clip(named, 60))}”, which is not a session id.",
            ":material/link_off:",
        )
        return None


def _delete_everything(visitor, count: int) -> None:
    # an expander, not a popover: Tab from it reaches the confirmation next (see _detail); keyed, so it stays
    # open while the confirmation is typed (a rerun)
    with st.expander(
        "Delete everything…", icon=":material/delete_sweep:", key=erase.widget_key("u_sessions_erase_box")
    ):
        st.caption(f"{count} session{'s' if count != 1 else ''} with their transcripts, and everything else.")
        erase.render_delete_everything(visitor, key="u_sessions_erase")


def main() -> None:
    global _zone
    visitor = auth.current_visitor()
    _zone = profiles.time_zone(visitor.scope)
    page_header(
        "Sessions",
        "Your past conversations, each from your first message in it. A report is saved when a session "
        "ends — the End session button on the Chat page, a finished call, or when you leave.",
        icon=":material/history:",
    )
    _picked_session_id()
    _delete_the_pressed_session(visitor)
    _say_deleted()
    _said_not_there_before()
    records = sessions.list_sessions(visitor.scope, limit=LISTED, brief=True)  # the chosen one is read whole
    total = sessions.count_sessions(visitor.scope) if len(records) == LISTED else len(records)
    wanted = st.session_state.pop(REQUEST, None) or _linked_session()
    listed = {record.session_id for record in records}
    for older in dict.fromkeys((wanted, st.session_state.get(PICK))):
        # a search hit or a memory in a session older than the listed ones, or the one picked that way on
        # the run before: shown all the same
        if older and older not in listed:
            try:
                records.append(sessions.get_session(visitor.scope, older))
                listed.add(older)
            except NotFound:
                if _deleted_here(older):
                    continue  # deleted by this tab: said when it was (the confirmation above, while shown)
                if older == wanted:  # asked for by name: say so, rather than show another in its place
                    _not_there(visitor.scope, wanted)
                else:  # the one shown on the run before: another is shown now, and the page says why
                    st.info(
                        f"Session {code_span(session_ref(older))}, shown before, has been deleted (in another tab or "
                        "window), so it is no longer shown.",
                        icon=":material/info:",
                    )
    if records:
        _search_panel(visitor.scope)
        _delete_everything(visitor, total)
    if not records:
        empty_state(
            ":material/history_toggle_off:",
            "No sessions yet",
            "Chat with the agent, then press **End session** on the Chat page (or just leave: the session "
            "is saved when your browser session goes away). Its transcript, tool calls, retrieval scores "
            "and timings will show up here.",
            link=("pages/chat.py", "Go to Chat", ":material/chat:"),
        )
        return
    views = [read_report(record.report) for record in records]
    # an open session has no report yet: its turns so far come from the stored transcript
    said = conversations.count_user_turns(visitor.scope, [r.session_id for r in records if r.is_open])
    for record, view in zip(records, views, strict=True):
        if record.is_open:
            view.user_turns = said.get(record.session_id, 0)
    if total > LISTED:
        st.caption(
            f"The newest {LISTED} of your {total:,} sessions; **Search all my transcripts** reaches every one "
            "of them, and its **Open** shows an older one here."
        )
    st.dataframe(
        _overview(records, views),
        hide_index=True,
        key="u_sessions_table",
        # the tools of a long session made the table wider than the page at 1440 px, the session ids cut off
        # ("text-f9…") behind a sideways scroll: a cell too long for its column shows whole on hover
        column_config={
            "Tools used": st.column_config.TextColumn(width="medium"),
            "Session": st.column_config.TextColumn(width="medium"),
        },
    )
    ids = [record.session_id for record in records]
    if wanted in ids:
        st.session_state[PICK] = wanted
    elif st.session_state.get(PICK) not in ids:
        st.session_state[PICK] = ids[0]
    chosen = st.selectbox(
        "Show session", ids, key=PICK, format_func=lambda sid: _label(records[ids.index(sid)], views[ids.index(sid)])
    )
    # the address names the session shown, so a reload, a bookmark or a link opens it again
    st.query_params[LINK_PARAM] = chosen
    st.session_state[LINKED] = True  # from now on the address is the one written here
    record = sessions.get_session(visitor.scope, chosen)  # read again as the user: RLS decides
    view = read_report(record.report)
    if record.is_open:
        view.user_turns = conversations.count_user_turns(visitor.scope, [record.session_id]).get(record.session_id, 0)
    if DELETED in st.session_state:
        st.session_state[DELETED] = (st.session_state[DELETED][0], chosen)  # what the confirmation stays with
    if NOT_THERE in st.session_state:
        st.session_state[NOT_THERE] = (*st.session_state[NOT_THERE][:2], chosen)
    _detail(visitor, record, view)


run_page(main)
