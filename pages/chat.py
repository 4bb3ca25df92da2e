"""Chat: talk to the agent by text. The agent runs in-process (agent.runtime),
one conversation per browser session. Beside the conversation: per turn, the
tool calls, what was retrieved with its RRF breakdown, and the timings; and
the fusion sliders that change the agent's searches live."""

from __future__ import annotations

import time

import streamlit as st

from agent import MAX_MESSAGE_LENGTH, Conversation, llm_wait_seconds
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
# The conversation and the panel beside it scroll inside their own boxes, and the message box sits under
# the conversation (not pinned to the page's bottom, which makes Streamlit scroll the page to its end on
# every rerun): a growing panel never pushes the newest reply out of view.
CONVERSATION_HEIGHT = 470
PANEL_HEIGHT = 560
_PENDING = "u_chat_pending_prompt"  # a suggestion clicked: send it on this run
_DRAFT = "u_chat_draft"  # a message over the limit: kept here, whole, until it is sent or discarded
_ENDED = "u_chat_ended"  # (session_id, saved: bool) of the conversation just ended
_INSPECT = "u_chat_inspect_turn"

SUGGESTIONS = [
    "My favorite color is teal",
    "What is my favorite color?",
    "Where is order 1001?",
    "How long does shipping take?",
    "What do you know about me?",
]


def _send_draft() -> None:
    draft = st.session_state.get(_DRAFT) or ""
    if 0 < len(draft.strip()) <= MAX_MESSAGE_LENGTH:
        st.session_state[_PENDING] = draft
        st.session_state.pop(_DRAFT, None)


def _send_first_part() -> None:
    """Send what fits; the rest stays in the draft for the next message."""
    draft = st.session_state.get(_DRAFT) or ""
    cut = draft.rfind(" ", 0, MAX_MESSAGE_LENGTH + 1)
    cut = cut if cut > MAX_MESSAGE_LENGTH // 2 else MAX_MESSAGE_LENGTH
    st.session_state[_PENDING] = draft[:cut]
    rest = draft[cut:].strip()
    if rest:
        st.session_state[_DRAFT] = rest
    else:
        st.session_state.pop(_DRAFT, None)


def _discard_draft() -> None:
    st.session_state.pop(_DRAFT, None)


def _draft_panel() -> None:
    """A message over the limit, kept whole: shorten it and send, send it in parts, or discard it."""
    if _DRAFT not in st.session_state:
        return
    length = len(st.session_state[_DRAFT])
    with st.container(border=True, key="u_chat_draft_box"):
        st.warning(
            f"Your message is {length:,} characters long; messages can be up to {MAX_MESSAGE_LENGTH:,}. "
            "It was not sent, and nothing is lost: it is below. Shorten it and send it, or send it in parts.",
            icon=":material/content_cut:",
        )
        st.text_area("Your message (not sent yet)", key=_DRAFT, height=140)
        buttons = st.container(horizontal=True)
        buttons.button(
            "Send",
            key="u_chat_draft_send",
            type="primary",
            on_click=_send_draft,
            disabled=length > MAX_MESSAGE_LENGTH or not st.session_state[_DRAFT].strip(),
            icon=":material/send:",
        )
        buttons.button(
            f"Send the first {MAX_MESSAGE_LENGTH:,} characters",
            key="u_chat_draft_part",
            on_click=_send_first_part,
            disabled=length <= MAX_MESSAGE_LENGTH,
            help="The rest stays here, ready to send next.",
        )
        buttons.button("Discard", key="u_chat_draft_discard", type="tertiary", on_click=_discard_draft)


def _message_input() -> str | None:
    """The message box (its limit in the placeholder); a longer message goes to the draft, not to the agent."""
    prompt = st.chat_input(
        f"Message the agent… (up to {MAX_MESSAGE_LENGTH:,} characters)", key="u_chat_input", width="stretch"
    )
    if prompt and len(prompt) > MAX_MESSAGE_LENGTH:
        st.session_state[_DRAFT] = prompt
        return None
    return prompt or st.session_state.pop(_PENDING, None)


def _suggestion_clicked() -> None:
    choice = st.session_state.get("u_chat_suggestion")
    if choice:
        st.session_state[_PENDING] = choice
    st.session_state["u_chat_suggestion"] = None


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


def _wait_for_turn(chat, future, cursor: int) -> None:
    """Show the agent's steps live while the turn runs (tool calls appear as they happen)."""
    with st.chat_message("assistant"), st.status("Thinking…", expanded=True) as status:
        deadline = time.monotonic() + max(TURN_TIMEOUT_SECONDS, llm_wait_seconds())
        while not future.done() and time.monotonic() < deadline:
            events, cursor = chat.events_since(cursor)
            for event in events:
                if event["type"] == "tool_call":
                    status.write(f":material/build: `{event['name']}` · {ms(event.get('duration_ms'))}")
                elif event["type"] == "retrieval":
                    status.write(
                        f":material/manage_search: searched {event.get('source')} ({len(event.get('hits') or [])} hits)"
                    )
            time.sleep(0.05)
        if not future.done():
            status.update(label="The agent is still working", state="error")
            st.warning(
                "The agent has not answered yet. Its answer will appear here when it "
                "is ready; you can also end the session and start again."
            )
            st.stop()
        try:
            result = future.result()
        except InvalidInput as exc:
            status.update(label="Not sent", state="error")
            st.warning(str(exc))
            st.stop()
        except Exception as exc:
            status.update(label="The turn failed", state="error")
            show_error(exc)
            st.stop()
        if result.error:
            status.update(label="The turn failed", state="error", expanded=False)
        else:
            status.update(label=f"Answered in {ms(result.timings.get('total_ms'))}", state="complete", expanded=False)
    st.session_state[_INSPECT] = None  # follow the newest turn
    st.rerun()


def _end_session(chat) -> None:
    session_id = chat.session_id
    with st.spinner("Saving the session report…"):
        report = chat_state.close_chat_session(reason="end button", wait=True)
    st.session_state[_ENDED] = (session_id, report is not None)
    st.session_state.pop(_INSPECT, None)
    st.rerun()


def _inspector(turns: list[Turn], visitor) -> None:
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
        st.segmented_control(
            "Turn",
            numbers,
            key=_INSPECT,
            format_func=lambda n: f"Turn {n}",
            required=True,
            width="stretch",
            wrap=True,  # every turn's button stays reachable, on as many rows as it takes
        )
        if len(numbers) > 1
        else numbers[0]
    )
    turn = next(t for t in answered if t.number == (chosen or numbers[-1]))
    st.caption(f"“{clip(turn.user_text, 90)}” · {turn.summary}")
    render_turn_details(turn, key=f"u_chat_turn{turn.number}", scope=visitor.scope, params=rrf.current_params())


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


def _started_conversation(visitor) -> Conversation | None:
    """This browser session's conversation, started, with the sliders' fusion; None (and why) if it failed."""
    params = rrf.current_params()
    chat = chat_state.get_chat_session(visitor, rrf=params)
    if chat.rrf != params:
        chat.set_rrf(params)  # the sliders changed: the agent's next search uses the new fusion
    if not chat.ready.done():
        with st.spinner("Starting the agent (the first start loads the embedding model)…"):
            try:
                chat.ready.result(timeout=chat_state.START_TIMEOUT_SECONDS)
            except TimeoutError:
                st.warning("The agent is still starting; this page will continue when it is ready.")
                time.sleep(2)
                st.rerun()
    if chat.ready.exception() is not None:
        show_error(chat.ready.exception())
        if st.button("Try again", icon=":material/refresh:"):
            chat_state.close_chat_session(reason="failed start")
            st.rerun()
        return None
    return chat


def _header(chat: Conversation, visitor) -> bool:
    """Which model and session this is; True when End session was pressed."""
    label, demo_brain = _llm_label()
    header_left, header_right = st.columns([4, 1], vertical_alignment="center")
    with header_left:
        st.caption(
            f":material/smart_toy: **{label}**{' — not an LLM; see the sidebar' if demo_brain else ''}"
            f" · session `{chat.session_id}` · user `{visitor.short_id}`"
        )
    with header_right:
        return st.button(
            "End session",
            key="u_chat_end",
            icon=":material/stop_circle:",
            width="stretch",
            help="Ends this conversation and saves its report to the Sessions page.",
        )


# Brings the conversation's newest message into view when a turn is added. The container's own autoscroll
# follows content added while it is on screen, but a rerun redraws the conversation in one go.
_FOLLOW_NEWEST = """<script>
(() => {
  const host = parent.document.querySelector('.st-key-u_chat_box');
  if (!host) return;
  const scrollers = () => [host, ...host.querySelectorAll('div')].filter(e => e.scrollHeight > e.clientHeight + 1);
  const seen = host.getAttribute('data-turns');
  if (seen === '%(turns)s') return;
  host.setAttribute('data-turns', '%(turns)s');
  let tries = 0;
  const down = () => {
    scrollers().forEach(e => { e.scrollTop = e.scrollHeight; });
    if (++tries < 10) setTimeout(down, 100);
  };
  down();
})();
</script>"""


def _conversation(box, chat: Conversation, turns: list[Turn], cursor: int, prompt: str | None) -> None:
    with box:
        for turn in turns:
            _render_message(turn)
        if not turns:
            st.caption("Connecting…")
    st.html(_FOLLOW_NEWEST % {"turns": len(turns)}, unsafe_allow_javascript=True)
    if not any(t.number > 0 for t in turns) and not prompt:
        with box:  # under the greeting, wrapping onto as many rows as the column needs
            st.pills(
                "Try",
                SUGGESTIONS,
                key="u_chat_suggestion",
                on_change=_suggestion_clicked,
                label_visibility="collapsed",
                width="stretch",
                wrap=True,
            )
    if prompt:
        with box:
            with st.chat_message("user"):
                st.markdown(prompt)
            with reported():
                future = chat.send(prompt)
                _wait_for_turn(chat, future, cursor)


def main() -> None:
    visitor = auth.current_visitor()
    page_header(
        "Chat",
        "Talk to the agent. It remembers what you tell it, per user, in Postgres — and shows "
        "you why it recalled what it did.",
        icon=":material/chat:",
    )
    ended = st.session_state.get(_ENDED)
    if ended and chat_state.current_chat_session() is None and _PENDING not in st.session_state:
        top = st.container()
        prompt = _message_input()
        _draft_panel()
        if prompt:  # typing after the end starts a new conversation with that message
            st.session_state[_PENDING] = prompt
            st.session_state.pop(_ENDED, None)
            st.rerun()
        with top:
            _ended(*ended)
        return
    st.session_state.pop(_ENDED, None)
    chat = _started_conversation(visitor)
    if chat is None:
        return
    end = _header(chat, visitor)
    events, cursor = chat.events_since(0)
    turns = group_turns(events)
    conversation, inspector = st.columns([1, 1], gap="medium")
    with conversation:
        box = st.container(height=CONVERSATION_HEIGHT, border=True, autoscroll=True, key="u_chat_box")
        prompt = _message_input()
        _draft_panel()
        _conversation(box, chat, turns, cursor, prompt)
    with inspector, st.container(height=PANEL_HEIGHT, border=False, key="u_chat_panel"):
        _inspector(turns, visitor)
        with st.expander(
            "Tune the fusion (weights and k): re-ranks the turn shown and the agent's next searches",
            icon=":material/tune:",
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
