"""Chat: talk to the agent by text. The agent runs in-process (agent.runtime),
one conversation per browser session. Beside the conversation: per turn, the
tool calls, what was retrieved with its RRF breakdown, and the timings; and
the fusion sliders that change the agent's searches live."""

from __future__ import annotations

import concurrent.futures
import time
from typing import NamedTuple

import streamlit as st

from agent import MAX_MESSAGE_LENGTH, STOPPED_MESSAGE, Conversation, llm_wait_seconds, warmup
from core.errors import InvalidInput
from core.sessions import DELETED_TEXT
from ui import auth, chat_state, resend, rrf
from ui.errors import reported, show_error
from ui.format import clip, literal, ms, session_ref
from ui.fragments import timed_fragment
from ui.session_end import after_session_lines, show_after_session
from ui.shell import redraw_page, run_page
from ui.sidebar import model_rows, recheck_if_a_turn_disagrees
from ui.style import page_header
from ui.turn_panel import render_tool_calls, render_turn_details
from ui.turns import FORGOTTEN_MESSAGE, Turn, group_turns

TURN_TIMEOUT_SECONDS = 120
SESSIONS_REQUEST = "u_sessions_request"  # pages/sessions.py opens the session named here (its REQUEST)
# The conversation and the panel beside it scroll inside their own boxes, and the message box sits under
# the conversation (not pinned to the page's bottom, which makes Streamlit scroll the page to its end on
# every rerun): a growing panel never pushes the newest reply out of view.
CONVERSATION_HEIGHT = 470
PANEL_HEIGHT = 560
# On a short screen both boxes are as much shorter as it takes to keep the message box in the window
# (at 1024×768 with the sidebar open it was 40 px below it): what lies above the conversation box, and
# the message box with its margins under it, in the worst case of a laptop (the header on two lines more,
# and the box's placeholder on two lines, which put its send button 21 px below the window until 2026-12-07).
_ABOVE_AND_BELOW_THE_BOX = 400
_UNDER_THE_BOX = PANEL_HEIGHT - CONVERSATION_HEIGHT  # the message box: the panel ends where it does
# Streamlit sizes a box by its wrapper's flex-basis as well as its height: both are set, on both.
_SHORT_SCREEN_CSS = f"""<style>
@media (min-width: 641px) {{  /* beside each other: on a phone the columns stack and the page scrolls */
  .st-key-u_chat_box, div:has(> .st-key-u_chat_box) {{
    --box-height: min({CONVERSATION_HEIGHT}px, max(260px, 100dvh - {_ABOVE_AND_BELOW_THE_BOX}px));
    height: var(--box-height) !important; flex-basis: var(--box-height) !important;
  }}
  .st-key-u_chat_panel, div:has(> .st-key-u_chat_panel) {{
    --panel-height: min({PANEL_HEIGHT}px, max({260 + _UNDER_THE_BOX}px,
                        100dvh - {_ABOVE_AND_BELOW_THE_BOX - _UNDER_THE_BOX}px));
    height: var(--panel-height) !important; flex-basis: var(--panel-height) !important;
  }}
}}
</style>"""
POLL_SECONDS = 0.25  # while the agent starts or answers, the page checks this often whether it is done
STOP_TIMEOUT_SECONDS = 10  # how long the Stop button waits for the turn to stop (the interruption is immediate)
# A message just handed over is drawn with its answer when the answer comes this quickly (one page run
# instead of two); otherwise its bubble is drawn after this long and the answer when it comes.
QUICK_ANSWER_SECONDS = 0.8
_OUTBOX = "u_chat_outbox"  # messages typed or clicked and not yet handed to the agent (see _queue)
_WAITING_SINCE = "u_chat_waiting_since"  # ((ready, busy, turns answered), when the page began waiting so)
_BLANK = "u_chat_blank"  # the visitor sent a message of only spaces: said once under the box
_DRAFT_SHOWN = "u_chat_draft_shown"  # the draft just made: scrolled into view once (below the fold on a phone)
_DRAFT = "u_chat_draft"  # a message over the limit: kept here, whole, until sent (in parts) or discarded
# (session_id, saved: bool or _NOTHING_SAID, ui.session_end lines) of the conversation just ended
_ENDED = "u_chat_ended"
_NOTHING_SAID = "nothing said"  # it ended before the visitor said anything: not kept, not on the Sessions page
# The turn picker's widget key. Streamlit drops a widget's state when a page without it is drawn, so the
# choice is kept under _PICKED, which outlives a visit to another page, and handed to the picker each run.
_PICKER = "u_chat_inspect_turn"
_PICKED = "u_chat_picked_turn"  # (session id, turn number) the visitor picked; absent: the newest turn
MAX_TURN_BUTTONS = 12  # two rows of turn buttons beside the conversation; more turns get a drop-down
_ANSWERED = "u_chat_answered_turns"  # how many turns were answered when the page was last drawn
# (id of the deleted conversation, messages sent in the new one when the notice was first drawn)
_DELETED_SHOWN = "u_chat_deleted_shown"
_INPUT = "u_chat_input"
_RECEIVED = "u_chat_received"  # every message typed in this browser session, as received (ui/resend.py)
_ARRIVALS = "u_chat_arrivals"  # when each of them arrived, and whether the page had sent it again

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


def _still_waiting() -> list[str]:
    """Messages kept but not yet taken up by the agent: in the outbox, or sent and waiting for their turn."""
    chat = chat_state.current_chat_session()
    return list(_outbox()) + (chat.waiting_messages() if chat is not None else [])


def _typed() -> None:
    """The message box's submit: a message over the limit goes to the draft, whole, not to the agent.
    A message the browser sent again because it looked lost is dropped if it had arrived after all."""
    text = resend.take(
        st.session_state.get(_INPUT),
        st.session_state.setdefault(_RECEIVED, []),
        st.session_state.setdefault(_ARRIVALS, []),
        still_waiting=_still_waiting(),
    )
    if text is None:
        return
    if not text.strip():  # the box clears itself, so say why nothing was sent rather than drop it silently
        st.session_state[_BLANK] = True
        return
    st.session_state.pop(_BLANK, None)
    if len(text.strip()) > MAX_MESSAGE_LENGTH:  # measured as the agent measures it
        st.session_state[_DRAFT] = text
        st.session_state[_DRAFT_SHOWN] = False
    else:
        _queue(text)


def _send_draft() -> None:
    draft = st.session_state.get(_DRAFT) or ""
    if 0 < len(draft.strip()) <= MAX_MESSAGE_LENGTH:
        _queue(draft)
        st.session_state.pop(_DRAFT, None)


def _send_first_part() -> None:
    """Send what fits; the rest stays in the draft for the next message."""
    draft = st.session_state.get(_DRAFT) or ""
    cut = draft.rfind(" ", 0, MAX_MESSAGE_LENGTH + 1)
    cut = cut if cut > MAX_MESSAGE_LENGTH // 2 else MAX_MESSAGE_LENGTH
    _queue(draft[:cut])
    rest = draft[cut:].strip()
    if rest:
        st.session_state[_DRAFT] = rest
    else:
        st.session_state.pop(_DRAFT, None)


def _discard_draft() -> None:
    st.session_state.pop(_DRAFT, None)


_SHOW_DRAFT = """<script>
setTimeout(() => {
  const el = document.querySelector('.st-key-u_chat_draft_box');
  if (el) el.scrollIntoView({block: "nearest"});
}, 300);
</script>"""


def _draft_panel() -> None:
    """A message over the limit, kept whole: shorten it and send, send it in parts, or discard it. What is
    left in it (the last part, or the message shortened) may fit: then it is offered to send as it is."""
    if _DRAFT not in st.session_state:
        return
    length = len(st.session_state[_DRAFT].strip())  # measured as it is sent (without the outer spaces)
    with st.container(border=True, key="u_chat_draft_box"):
        if length > MAX_MESSAGE_LENGTH:
            st.warning(
                f"Your message is {length:,} characters long; messages can be up to {MAX_MESSAGE_LENGTH:,}. "
                "It was not sent, and nothing is lost: it is below. Shorten it and send it, or send it in parts.",
                icon=":material/content_cut:",
            )
        elif length:
            st.info(
                f"Not sent yet: {length:,} characters, within the {MAX_MESSAGE_LENGTH:,} a message can be. "
                "Send it when it is ready.",
                icon=":material/edit_note:",
            )
        else:
            st.info("Nothing left to send: write something, or discard the draft.", icon=":material/edit_note:")
        st.text_area("Your message (not sent yet)", key=_DRAFT, height=140)
        buttons = st.container(horizontal=True)
        buttons.button(
            "Send",
            key="u_chat_draft_send",
            type="primary",
            on_click=_send_draft,
            disabled=not 0 < length <= MAX_MESSAGE_LENGTH,
            icon=":material/send:",
        )
        if length > MAX_MESSAGE_LENGTH:  # only while there is something to cut
            buttons.button(
                f"Send the first {MAX_MESSAGE_LENGTH:,} characters",
                key="u_chat_draft_part",
                on_click=_send_first_part,
                help="The rest stays here, ready to send next.",
            )
        buttons.button("Discard", key="u_chat_draft_discard", type="tertiary", on_click=_discard_draft)
    if st.session_state.get(_DRAFT_SHOWN) is False:
        # On a phone the draft and its message land under the fold, and the box the paste went into is empty:
        # the message looked lost. Bring them into view once ("nearest": on a laptop they are in view already).
        st.session_state[_DRAFT_SHOWN] = True
        st.html(_SHOW_DRAFT, unsafe_allow_javascript=True)


def _message_input() -> None:
    """The message box (its limit in the placeholder) and, under it, a message that was over the limit."""
    st.chat_input(
        f"Message the agent… (up to {MAX_MESSAGE_LENGTH:,} characters)",
        key=_INPUT,
        width="stretch",
        on_submit=_typed,
    )
    if st.session_state.pop(_BLANK, False):
        st.info("Nothing was sent: the message had only spaces in it. Type something first.", icon=":material/info:")
    _draft_panel()


def _suggestion_clicked() -> None:
    _queue(st.session_state.get("u_chat_suggestion"))
    st.session_state["u_chat_suggestion"] = None


def _outbox() -> list[str]:
    return st.session_state.setdefault(_OUTBOX, [])


def _hand_over(chat: Conversation) -> bool:
    """Give the agent every kept message, in order (it answers them one after another); True when it gave any."""
    outbox = _outbox()
    futures = []
    while outbox:
        futures.append(chat.send(outbox.pop(0)))  # no Streamlit call in between: a rerun cannot cut them apart
    concurrent.futures.wait(futures, timeout=QUICK_ANSWER_SECONDS if futures else 0)
    for future in futures:
        if future.done() and isinstance(future.exception(), InvalidInput):
            st.warning(str(future.exception()), icon=":material/warning:")
    return bool(futures)


def _llm_label() -> tuple[str, bool]:
    for row in model_rows():
        if row["role"] == "LLM":
            return row["label"], bool(row.get("demo_brain"))
    return "unknown model", False


def _said(text: str, *, markdown: bool = False) -> None:
    """One message as said, or what is left of one that mentioned a memory the visitor deleted meanwhile
    (agent/forgetting.py blanks it in the open conversation, as the deletion did in stored ones)."""
    if text == DELETED_TEXT:
        st.caption(f":material/delete: {FORGOTTEN_MESSAGE}")
    else:
        st.markdown(text if markdown else literal(text))


def _render_message(turn: Turn, *, last: bool = False) -> None:
    """`last`: the newest turn, which offers Try again when it failed (the message had to be typed again)."""
    if turn.user_text:
        with st.chat_message("user"):
            _said(turn.user_text)
    if turn.assistant_texts or turn.tool_calls or turn.errors or turn.stopped:
        # keyed so the browser tests (and CSS) can tell a finished turn from the live status
        with st.container(key=f"chat_turn_{turn.number}"), st.chat_message("assistant"):
            if turn.assistant_texts or not (turn.errors or turn.stopped):
                if DELETED_TEXT in turn.assistant_texts:
                    for text in turn.assistant_texts:
                        _said(text, markdown=True)
                else:
                    st.markdown(turn.assistant_text or "…")
            for message in dict.fromkeys(turn.errors):
                st.error(message, icon=":material/error:")
            if last and turn.failed and turn.user_text not in (None, "", FORGOTTEN_MESSAGE, DELETED_TEXT):
                st.button(
                    "Try again",
                    key=f"u_chat_retry_{turn.number}",
                    icon=":material/refresh:",
                    on_click=_queue,
                    args=(turn.user_text,),
                    help="Send this message again.",
                )
            if turn.stopped:
                st.caption(f":material/stop_circle: {STOPPED_MESSAGE}")
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
    forgotten: int  # messages blanked because they mentioned a memory deleted meanwhile

    @property
    def settled(self) -> bool:
        return self.ready and not self.busy and not self.waiting and not self.kept


def _snapshot(chat: Conversation) -> _Drawn:
    events, cursor = chat.events_since(0)
    done_turns = sum(1 for event in events if event["type"] == "turn_done")
    return _Drawn(
        chat.ready.done(),
        chat.busy,
        done_turns,
        tuple(chat.waiting_messages(cursor)),
        len(_outbox()),
        chat.forgotten_messages,
    )


def _warming_up() -> str:
    pending = warmup.current().pending() if warmup.current() else []
    return f" (still loading {', '.join(part.label for part in pending)})" if pending else ""


def _live_status(chat: Conversation, shown: _Drawn, since: float) -> None:
    """While the agent starts or answers: its steps as they happen; the page redraws when it is done.

    A fragment polling every POLL_SECONDS, so the page run itself never waits: a message sent
    meanwhile starts a new run at once and shows as the visitor's bubble."""
    if _snapshot(chat) != shown:
        redraw_page()
    waited = time.monotonic() - since
    if not chat.ready.done():
        st.status(f"Starting the agent{_warming_up()}… {waited:.0f} s", state="running")
        return
    turns = group_turns(chat.events_since(0)[0])
    live = turns[-1] if turns and turns[-1].number > 0 and not turns[-1].done else None
    if live is not None and live.started_ts is not None:  # from its message: a reload started again at 0 s
        waited = max(0.0, time.time() - live.started_ts)
    if waited > max(TURN_TIMEOUT_SECONDS, llm_wait_seconds()):
        st.warning(
            "The agent has not answered yet. Its answer will appear here when it "
            "is ready; you can also end the session and start again."
        )
    # not `with st.status(...)`: leaving the block marks it complete, and a ✓ showed while the agent still waited
    status = st.status(f"Thinking… {waited:.0f} s", state="running", expanded=True)
    if chat.busy:  # a slow model need not be waited out: the answer can be stopped, the conversation goes on
        st.button(
            "Stop",
            icon=":material/stop_circle:",
            key="u_chat_stop",
            on_click=_stop_answer,
            args=(chat,),
            help="Stop the answer being prepared. Messages you sent after it are still answered.",
        )
    for call in live.tool_calls if live else []:
        status.write(f":material/build: `{call['name']}` · {ms(call.get('duration_ms'))}")
    for search in live.retrievals if live else []:
        found = len(search.get("hits") or [])
        status.write(
            f":material/manage_search: searched {search.get('source')} ({found} hit{'' if found == 1 else 's'})"
        )


def _stop_answer(chat: Conversation) -> None:
    try:
        chat.stop().result(timeout=STOP_TIMEOUT_SECONDS)
    except concurrent.futures.TimeoutError:  # the turn still ends with the model's timeout
        st.toast("The agent did not stop in time; its answer will end on its own.", icon=":material/schedule:")


def _end_session(chat) -> None:
    session_id = chat.session_id
    with st.spinner("Saving the session report…"):
        report = chat_state.close_chat_session(reason="end button", wait=True)
    saved = report is not None if chat.kept else _NOTHING_SAID
    st.session_state[_ENDED] = (session_id, saved, after_session_lines(report))
    st.session_state.pop(_PICKED, None)
    st.rerun()


def _picked(session_id: str | None) -> None:
    """The turn picker's on_change: keep the visitor's pick where leaving the page does not drop it."""
    st.session_state[_PICKED] = (session_id, st.session_state.get(_PICKER))


def _inspector(turns: list[Turn], visitor, session_id: str | None) -> None:
    answered = [t for t in turns if t.number > 0]
    st.markdown("#### :material/insights: What the agent did", anchors=False)
    if not answered:
        st.caption(
            "Send a message: the tool calls, the memories and knowledge retrieved (with vector rank, text "
            "rank, each branch's RRF contribution and the fused score) and the timings of each turn "
            "appear here."
        )
        return
    numbers = [t.number for t in answered]
    # the turn the visitor picked while it is still in this conversation, else the newest
    picked_session, picked_number = st.session_state.get(_PICKED) or (None, None)
    shown_number = picked_number if picked_session == session_id and picked_number in numbers else numbers[-1]
    if len(numbers) > 1:
        st.session_state[_PICKER] = shown_number
    picker = {"key": _PICKER, "on_change": _picked, "args": (session_id,)}
    if len(numbers) > MAX_TURN_BUTTONS:
        # a long conversation: rows of buttons would push the panel's contents off the screen
        said = {t.number: t.user_text for t in answered}
        st.selectbox("Turn", numbers, format_func=lambda n: f"Turn {n} · “{clip(said[n], 70)}”", **picker)
    elif len(numbers) > 1:
        st.segmented_control(
            "Turn",
            numbers,
            **picker,
            format_func=lambda n: f"Turn {n}",
            required=True,
            width="stretch",
            wrap=True,  # every turn's button stays reachable, on as many rows as it takes
        )
    turn = next(t for t in answered if t.number == shown_number)
    # the drop-down already names what was said
    st.caption(
        turn.summary if len(numbers) > MAX_TURN_BUTTONS else f"“{literal(clip(turn.user_text, 90))}” · {turn.summary}"
    )
    render_turn_details(turn, key=f"u_chat_turn{turn.number}", scope=visitor.scope, params=rrf.current_params())


def _ended(session_id: str, saved: bool | str, after: list[str]) -> None:
    """The conversation just ended: where its report went, what was remembered from it then, and a new start."""
    if saved == _NOTHING_SAID:  # no report and no turns: there is nothing to open on the Sessions page
        st.info(
            f"Session `{session_ref(session_id)}` ended before you said anything, so nothing of it is kept: a "
            "conversation shows on the Sessions page once you have said something in it.",
            icon=":material/info:",
        )
    elif saved:
        st.success(f"Session `{session_ref(session_id)}` ended and its report was saved.", icon=":material/task_alt:")
        # a button, not a link to the Sessions page: that page shows the newest session, which another tab's
        # conversation had become (found in a fresh-clone walkthrough, 2026-12-07)
        if st.button(
            "Open it on the Sessions page", key="u_chat_open_ended", type="tertiary", icon=":material/history:"
        ):
            st.session_state[SESSIONS_REQUEST] = session_id
            st.switch_page("pages/sessions.py")
    else:
        st.warning(
            "The session ended, but its report could not be saved yet; it is kept on disk and "
            "saved automatically when the database is reachable.",
            icon=":material/save:",
        )
    show_after_session(after)
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
    # a row, not columns: the button takes the width its label needs (a fifth of the page cut it to
    # "End se…" at 1024 px with the sidebar open) and the line beside it wraps in the rest (wrap=False:
    # else the button went under the line, a row lower)
    with st.container(horizontal=True, wrap=False, vertical_alignment="center", gap="medium"):
        session = f"session `{session_ref(chat.session_id)}`" if chat.session_id else "the session is starting"
        st.caption(
            f":material/smart_toy: **{label}**{' — not an LLM; see the sidebar' if demo_brain else ''}"
            f" · {session} · user `{visitor.short_id}`"
        )
        # not while the agent starts: a message typed meanwhile waits for it, and ending then left that message
        # to start a new conversation at once, without a word of the end (found in a walkthrough, 2026-12-07)
        starting = not chat.ready.done()
        return st.button(
            "End session",
            key="u_chat_end",
            icon=":material/stop_circle:",
            width="content",
            disabled=starting,
            help="Available once the agent has started."
            if starting
            else "Ends this conversation and saves its report to the Sessions page (one you said nothing in "
            "is not kept).",
        )


# Brings the conversation's newest message into view when one is added. The container's own autoscroll
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


def _conversation(box, chat: Conversation, shown: _Drawn, turns: list[Turn], waiting: list[str]) -> None:
    """The turns so far, then every message not answered yet (shown from the moment it was sent)."""
    with box:
        for turn in turns:
            if shown.busy and turn is turns[-1] and turn.number > 0 and not turn.done:
                with st.chat_message("user"):  # the turn in progress: its steps are in the status below
                    _said(turn.user_text or "")
            else:
                _render_message(turn, last=turn is turns[-1] and not waiting)
        for text in waiting:
            with st.chat_message("user"):
                st.markdown(literal(text))
        if not turns and not waiting:
            st.caption("Connecting…")
        if not any(t.number > 0 for t in turns) and not waiting:
            st.pills(  # under the greeting, wrapping onto as many rows as the column needs
                "Try",
                SUGGESTIONS,
                key="u_chat_suggestion",
                on_change=_suggestion_clicked,
                label_visibility="collapsed",
                width="stretch",
                wrap=True,
            )
    st.html(
        _FOLLOW_NEWEST % {"turns": f"{len(turns)}-{len(waiting)}"}
        + resend.script(st.session_state.get(_RECEIVED, []), input_key=_INPUT),
        unsafe_allow_javascript=True,
    )
    if shown.settled:
        st.session_state.pop(_WAITING_SINCE, None)  # the next wait is timed from its own start
        return
    with box:
        if shown.ready and chat.ready.exception() is not None:
            st.caption(":material/schedule_send: Kept until the agent starts; nothing you typed is lost.")
            return
        # a wait per state and per turn answered: the second turn's "Thinking…" counted from the first's start
        # ("Thinking… 35 s" two seconds in, and past 272 s the warning that the agent has not answered)
        state = (shown.ready, shown.busy, shown.done_turns)
        since = st.session_state.get(_WAITING_SINCE)
        if since is None or since[0] != state:
            since = st.session_state[_WAITING_SINCE] = (state, time.monotonic())
        timed_fragment(run_every=POLL_SECONDS)(_live_status)(chat, shown, since[1])


def main() -> None:
    visitor = auth.current_visitor()
    page_header(
        "Chat",
        "Talk to the agent. It remembers what you tell it, per user, in Postgres — and shows "
        "you why it recalled what it did.",
        icon=":material/chat:",
    )
    ended = st.session_state.get(_ENDED)
    if ended and not _outbox() and chat_state.current_chat_session() is None:
        _ended(*ended)
        _message_input()  # typing after the end starts a new conversation with that message
        return
    st.session_state.pop(_ENDED, None)
    chat = _conversation_of(visitor)
    # an answer that came within this run: the sidebar was drawn before it (other runs' sidebars see it)
    handed = chat.ready.done() and chat.ready.exception() is None and _hand_over(chat)
    if handed and recheck_if_a_turn_disagrees():
        redraw_page()  # so the sidebar follows the check
    shown = _snapshot(chat)  # before what it draws: a change after this draws the page again
    if st.session_state.get(_ANSWERED) != shown.done_turns:
        st.session_state[_ANSWERED] = shown.done_turns
        st.session_state.pop(_PICKED, None)  # a turn was answered: the panel follows the newest turn
    end = _header(chat, visitor)
    events, cursor = chat.events_since(0)
    waiting = chat.waiting_messages(cursor) + list(_outbox())
    turns = group_turns(events)
    moved = st.session_state.get(chat_state.MOVED_KEY)
    if moved is not None and (waiting or any(t.user_text for t in turns)):
        st.session_state.pop(chat_state.MOVED_KEY, None)  # shown until this tab's new conversation starts
        moved = None
    restarted = st.session_state.get(chat_state.RESTARTED_KEY)
    if restarted and (waiting or any(t.user_text for t in turns)):
        st.session_state[chat_state.RESTARTED_KEY] = restarted = None  # said until the new one is under way
    deleted = st.session_state.get(chat_state.DELETED_KEY)
    if deleted is not None:
        # said until the new conversation answers a message sent after the notice was first drawn: a tab left
        # open finds the deletion only when a message is sent, and that message's answer took it away at once
        asked = sum(1 for t in turns if t.user_text) + len(waiting)
        first_drawn = st.session_state.get(_DELETED_SHOWN)
        if first_drawn is None or first_drawn[0] != deleted:
            st.session_state[_DELETED_SHOWN] = first_drawn = (deleted, asked)
        if sum(1 for t in turns if t.user_text and t.done) > first_drawn[1]:
            st.session_state.pop(chat_state.DELETED_KEY, None)
            deleted = None
    st.html(_SHORT_SCREEN_CSS)
    conversation, inspector = st.columns([1, 1], gap="medium")
    with conversation:
        if moved is not None:
            which = f"Your conversation `{session_ref(moved)}`" if moved else "Your conversation"
            st.info(
                f"{which} went on in another tab of this browser while this tab was disconnected, and "
                "continues there. This tab starts a new conversation.",
                icon=":material/tab:",
            )
        if restarted:
            st.info(
                f"Your conversation `{session_ref(restarted)}` ended when the app restarted; its report and "
                "transcript are on the Sessions page, and what you told the agent is remembered. This is a new "
                "conversation.",
                icon=":material/restart_alt:",
            )
        if deleted is not None:
            which = f"Your conversation `{session_ref(deleted)}`" if deleted else "Your conversation"
            st.info(
                f"{which} was deleted in another tab or window (Delete this session or Delete everything), so it ended "
                "here and nothing of it is kept. This is a new conversation.",
                icon=":material/delete:",
            )
        _start_failed(chat)
        box = st.container(height=CONVERSATION_HEIGHT, border=True, autoscroll=True, key="u_chat_box")
        _message_input()
        _conversation(box, chat, shown, turns, waiting)
    with inspector, st.container(height=PANEL_HEIGHT, border=False, key="u_chat_panel"):
        _inspector([t for t in turns if t.done or not shown.busy], visitor, chat.session_id)
        with st.expander(
            "Tune the fusion (weights and k): re-ranks the turn shown and the agent's next searches",
            icon=":material/tune:",
            # keyed: the "What if" a change adds above it moved it, and the browser drew it again closed
            key="u_chat_fusion",
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
