"""Chat: talk to the agent by text. The agent runs in-process (agent.runtime),
one conversation per browser session. Beside the conversation: per turn, the
tool calls, what was retrieved with its RRF breakdown, and the timings; and
the fusion sliders that change the agent's searches live."""

from __future__ import annotations

import concurrent.futures
import time
from typing import NamedTuple

import streamlit as st

from agent import Conversation, llm_wait_seconds, warmup
from core.errors import InvalidInput
from ui import auth, chat_state, rrf
from ui.errors import reported, show_error
from ui.format import clip, ms, short_id
from ui.shell import run_page
from ui.sidebar import model_rows
from ui.style import page_header
from ui.turn_panel import render_tool_calls, render_turn_details
from ui.turns import Turn, group_turns

TURN_TIMEOUT_SECONDS = 120
POLL_SECONDS = 0.25  # while the agent starts or answers, the page checks this often whether it is done
# A message just handed over is drawn with its answer when the answer comes this quickly (one page run
# instead of two); otherwise its bubble is drawn after this long and the answer when it comes.
QUICK_ANSWER_SECONDS = 0.8
_OUTBOX = "u_chat_outbox"  # messages typed or clicked and not yet handed to the agent (see _queue)
_WAITING_SINCE = "u_chat_waiting_since"  # ((ready, busy), when the page started waiting in that state)
_ENDED = "u_chat_ended"  # (session_id, saved: bool) of the conversation just ended
_INSPECT = "u_chat_inspect_turn"
_ANSWERED = "u_chat_answered_turns"  # how many turns were answered when the page was last drawn

SUGGESTIONS = [
    "My favorite color is teal",
    "What is my favorite color?",
    "Where is order 1001?",
    "How long does shipping take?",
    "What do you know about me?",
]


def _queue(text: str | None) -> None:
    """Keep a message until the agent has taken it.

    Called from the input's callbacks, which Streamlit runs at the start of the next run, before the
    script: a message is kept even when that run is cut short (a cookie write, the agent still starting,
    a page change), and the page hands it to the agent once the agent is ready."""
    if text and text.strip():
        st.session_state.setdefault(_OUTBOX, []).append(text)


def _typed() -> None:
    _queue(st.session_state.get("u_chat_input"))


def _suggestion_clicked() -> None:
    _queue(st.session_state.get("u_chat_suggestion"))
    st.session_state["u_chat_suggestion"] = None


def _outbox() -> list[str]:
    return st.session_state.setdefault(_OUTBOX, [])


def _hand_over(chat: Conversation) -> None:
    """Give the agent every kept message, in order (it answers them one after another)."""
    outbox = _outbox()
    futures = []
    while outbox:
        futures.append(chat.send(outbox.pop(0)))  # no Streamlit call in between: a rerun cannot cut them apart
    concurrent.futures.wait(futures, timeout=QUICK_ANSWER_SECONDS if futures else 0)
    for future in futures:
        if future.done() and isinstance(future.exception(), InvalidInput):
            st.warning(str(future.exception()), icon=":material/warning:")


def _llm_label() -> tuple[str, bool]:
    for row in model_rows():
        if row["role"] == "LLM":
            return row["label"], bool(row.get("demo_brain"))
    return "unknown model", False


def _render_message(turn: Turn) -> None:
    if turn.user_text:
        with st.chat_message("user"):
            st.markdown(turn.user_text)
    if turn.assistant_texts or turn.tool_calls or turn.errors:
        # keyed so the browser tests (and CSS) can tell a finished turn from the live status
        with st.container(key=f"chat_turn_{turn.number}"), st.chat_message("assistant"):
            if turn.assistant_texts or not turn.errors:
                st.markdown(turn.assistant_text or "…")
            for message in dict.fromkeys(turn.errors):
                st.error(message, icon=":material/error:")
            if turn.number > 0:
                with st.expander(f":material/insights: {turn.summary}"):
                    render_tool_calls(turn)
                    if turn.retrievals:
                        st.caption(
                            "Retrieval details for this turn are in the panel on the right "
                            "(choose turn " + str(turn.number) + ")."
                        )


class _Drawn(NamedTuple):
    """What the page was drawn from; when any of it changes, the whole page is drawn again."""

    ready: bool  # the start is over (successfully or not)
    busy: bool  # a sent message is not answered yet
    done_turns: int
    waiting: tuple[str, ...]  # sent, and not among the events yet
    kept: int  # messages in the outbox

    @property
    def settled(self) -> bool:
        return self.ready and not self.busy and not self.waiting and not self.kept


def _snapshot(chat: Conversation) -> _Drawn:
    events, cursor = chat.events_since(0)
    done_turns = sum(1 for event in events if event["type"] == "turn_done")
    return _Drawn(chat.ready.done(), chat.busy, done_turns, tuple(chat.waiting_messages(cursor)), len(_outbox()))


def _warming_up() -> str:
    pending = warmup.current().pending() if warmup.current() else []
    return f" (still loading {', '.join(part.label for part in pending)})" if pending else ""


def _live_status(chat: Conversation, shown: _Drawn, since: float) -> None:
    """While the agent starts or answers: its steps as they happen; the page redraws when it is done.

    A fragment polling every POLL_SECONDS, so the page run itself never waits: a message sent
    meanwhile starts a new run at once and shows as the visitor's bubble."""
    if _snapshot(chat) != shown:
        st.rerun(scope="app")
    waited = time.monotonic() - since
    if not chat.ready.done():
        st.status(f"Starting the agent{_warming_up()}… {waited:.0f} s", state="running")
        return
    if waited > max(TURN_TIMEOUT_SECONDS, llm_wait_seconds()):
        st.warning(
            "The agent has not answered yet. Its answer will appear here when it "
            "is ready; you can also end the session and start again."
        )
    with st.status(f"Thinking… {waited:.0f} s", state="running", expanded=True):
        turns = group_turns(chat.events_since(0)[0])
        live = turns[-1] if turns and turns[-1].number > 0 and not turns[-1].done else None
        for call in live.tool_calls if live else []:
            st.write(f":material/build: `{call['name']}` · {ms(call.get('duration_ms'))}")
        for search in live.retrievals if live else []:
            st.write(f":material/manage_search: searched {search.get('source')} ({len(search.get('hits') or [])} hits)")


def _end_session(chat) -> None:
    session_id = chat.session_id
    with st.spinner("Saving the session report…"):
        report = chat_state.close_chat_session(reason="end button", wait=True)
    st.session_state[_ENDED] = (session_id, report is not None)
    st.session_state.pop(_INSPECT, None)
    st.rerun()


def _inspector(turns: list[Turn]) -> None:
    answered = [t for t in turns if t.number > 0]
    st.markdown("#### :material/insights: What the agent did")
    if not answered:
        st.caption(
            "Send a message: the tool calls, the memories and knowledge retrieved (with vector rank, text "
            "rank, each branch's RRF contribution and the fused score) and the timings of each turn "
            "appear here."
        )
        return
    numbers = [t.number for t in answered]
    wanted = st.session_state.get(_INSPECT)
    if wanted not in numbers:
        st.session_state[_INSPECT] = numbers[-1]
    chosen = (
        st.segmented_control("Turn", numbers, key=_INSPECT, format_func=lambda n: f"Turn {n}", required=True)
        if len(numbers) > 1
        else numbers[0]
    )
    turn = next(t for t in answered if t.number == (chosen or numbers[-1]))
    st.caption(f"“{clip(turn.user_text, 90)}” · {turn.summary}")
    render_turn_details(turn, key=f"u_chat_turn{turn.number}")


def _ended(session_id: str, saved: bool) -> None:
    """The conversation just ended: where its report went, and a new start."""
    if saved:
        st.success(f"Session `{short_id(session_id, 16)}` ended and its report was saved.", icon=":material/task_alt:")
        st.page_link("pages/sessions.py", label="Open it on the Sessions page", icon=":material/history:")
    else:
        st.warning(
            "The session ended, but its report could not be saved yet; it is kept on disk and "
            "saved automatically when the database is reachable.",
            icon=":material/save:",
        )
    if st.button("Start a new conversation", type="primary", icon=":material/add_comment:"):
        st.session_state.pop(_ENDED, None)
        st.rerun()


def _conversation_of(visitor) -> Conversation:
    """This browser session's conversation (started in the background), with the sliders' fusion."""
    params = rrf.current_params()
    chat = chat_state.get_chat_session(visitor, rrf=params)
    if chat.rrf != params:
        chat.set_rrf(params)  # the sliders changed: the agent's next search uses the new fusion
    return chat


def _start_failed(chat: Conversation) -> None:
    """The agent could not start: why, and a new start (the messages typed meanwhile are kept)."""
    if not chat.ready.done() or chat.ready.exception() is None:
        return
    show_error(chat.ready.exception())
    if st.button("Try again", icon=":material/refresh:"):
        chat_state.close_chat_session(reason="failed start")
        st.rerun()


def _header(chat: Conversation, visitor) -> bool:
    """Which model and session this is; True when End session was pressed."""
    label, demo_brain = _llm_label()
    header_left, header_right = st.columns([4, 1], vertical_alignment="center")
    with header_left:
        session = f"session `{chat.session_id}`" if chat.session_id else "the session is starting"
        st.caption(
            f":material/smart_toy: **{label}**{' — not an LLM; see the sidebar' if demo_brain else ''}"
            f" · {session} · user `{visitor.short_id}`"
        )
    with header_right:
        return st.button(
            "End session",
            key="u_chat_end",
            icon=":material/stop_circle:",
            width="stretch",
            help="Ends this conversation and saves its report to the Sessions page.",
        )


def _conversation(chat: Conversation, shown: _Drawn, turns: list[Turn], waiting: list[str]) -> None:
    """The turns so far, then every message not answered yet (shown from the moment it was sent)."""
    box = st.container(height=560, border=True, autoscroll=True)
    with box:
        for turn in turns:
            if shown.busy and turn is turns[-1] and turn.number > 0 and not turn.done:
                with st.chat_message("user"):  # the turn in progress: its steps are in the status below
                    st.markdown(turn.user_text or "")
            else:
                _render_message(turn)
        for text in waiting:
            with st.chat_message("user"):
                st.markdown(text)
        if not turns and not waiting:
            st.caption("Connecting…")
        if shown.settled:
            return
        if shown.ready and chat.ready.exception() is not None:
            st.caption(":material/schedule_send: Kept until the agent starts; nothing you typed is lost.")
            return
        state = (shown.ready, shown.busy)
        since = st.session_state.get(_WAITING_SINCE)
        if since is None or since[0] != state:
            since = st.session_state[_WAITING_SINCE] = (state, time.monotonic())
        st.fragment(run_every=POLL_SECONDS)(_live_status)(chat, shown, since[1])


def main() -> None:
    visitor = auth.current_visitor()
    page_header(
        "Chat",
        "Talk to the agent. It remembers what you tell it, per user, in Postgres — and shows "
        "you why it recalled what it did.",
        icon=":material/chat:",
    )
    ended = st.session_state.get(_ENDED)
    st.chat_input("Message the agent…", key="u_chat_input", max_chars=2000, on_submit=_typed)
    if ended and not _outbox() and chat_state.current_chat_session() is None:
        _ended(*ended)
        return
    st.session_state.pop(_ENDED, None)
    chat = _conversation_of(visitor)
    if chat.ready.done() and chat.ready.exception() is None:
        _hand_over(chat)
    shown = _snapshot(chat)  # before what it draws: a change after this draws the page again
    if st.session_state.get(_ANSWERED) != shown.done_turns:
        st.session_state[_ANSWERED] = shown.done_turns
        st.session_state[_INSPECT] = None  # a turn was answered: the panel follows the newest turn
    end = _header(chat, visitor)
    events, cursor = chat.events_since(0)
    waiting = chat.waiting_messages(cursor) + list(_outbox())
    turns = group_turns(events)
    conversation, inspector = st.columns([1, 1], gap="large")
    with conversation:
        _start_failed(chat)
        _conversation(chat, shown, turns, waiting)
        if not any(t.number > 0 for t in turns) and not waiting:
            st.pills(
                "Try", SUGGESTIONS, key="u_chat_suggestion", on_change=_suggestion_clicked, label_visibility="collapsed"
            )
    with inspector:
        _inspector([t for t in turns if t.done or not shown.busy])
        with st.expander(
            "Tune the fusion (weights and k) — applies to the agent's next search", icon=":material/tune:"
        ):
            rrf.render_controls()
            st.caption(
                f"In force for this conversation: w_vector {chat.rrf.vector_weight:g} · "
                f"w_text {chat.rrf.text_weight:g} · k {chat.rrf.k}"
            )
        rrf.render_formula()
    if end:
        with reported():
            _end_session(chat)


run_page(main)
