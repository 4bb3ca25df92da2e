"""Memories: what the agent remembers about the signed-in user. List, hybrid
search with per-branch ranks and scores, edit, delete one, delete all, export.
Every call runs as the user (RLS decides)."""

from __future__ import annotations

import json
from datetime import tzinfo
from types import SimpleNamespace

import streamlit as st

from core import conversations, memories, profiles, sessions
from core.errors import NotFound
from core.retrieval import search_memories
from ui import auth, erase, rrf
from ui.button_names import name_buttons
from ui.errors import reported
from ui.format import ago, clip, literal, nothing_to_search, session_ref, short_id, when
from ui.retrieval import render_retrieval
from ui.shell import run_page
from ui.style import SEARCH_SIDE, empty_state, page_header

DELETE_ALL_PHRASE = "DELETE"
# {id: (slot, text)} of every memory whose edit form is open: several can be, so that opening a second one
# does not throw away what was typed in the first; a form is drawn even once its memory is gone
_EDITING = "u_mem_editing"
_CONFIRM_DELETE = "u_mem_confirm_delete"  # id of the memory awaiting delete confirmation
_FLASH = "u_mem_flash"
_SHOWN = "u_mem_shown"  # how many cards the list shows
_FILTER = "u_mem_filter"
CARD_TEXT = 400  # characters of a memory a card shows before "All N characters"
PAGE = 30  # cards shown at first and added by "Show more": every card has its buttons, and each
# interaction draws them all again (300 took seconds per click)


def _flash(message: str) -> None:
    st.session_state[_FLASH] = message


def _quoted(text: str) -> str:
    return f"“{literal(clip(text, 60))}”"


def _earlier(memory) -> str:
    """The texts a memory held before, newest first, the oldest left out past three."""
    newest_first = list(reversed(memory.earlier_contents))
    said = ", ".join(_quoted(text) for text in newest_first[:3])
    more = len(newest_first) - 3
    return said + (f" and {more:,} earlier" if more > 0 else "")


def _and_mentions(count: int, what: str = "it") -> str:
    if not count:
        return ""
    return f" and {count:,} past conversation message{'s' if count != 1 else ''} that mentioned {what}"


def _memory_list(scope, items, deleted_sessions: set[str]) -> None:
    """The cards, newest first, PAGE at a time; with more than PAGE, a filter on slot and text."""
    shown = items
    if len(items) > PAGE:
        wanted = st.text_input(
            "Filter your memories", key=_FILTER, placeholder="a slot or a word, e.g. dog", icon=":material/filter_list:"
        ).strip()
        if wanted:
            words = wanted.casefold().split()
            shown = [m for m in items if all(w in f"{m.memory_type} {m.content}".casefold() for w in words)]
            if not shown:
                st.caption(f"No memory's slot or text contains {_quoted(wanted)}.")
    limit = max(PAGE, int(st.session_state.get(_SHOWN, PAGE)))
    _edit_of_deleted(scope, items)
    names: dict[str, str] = {}
    zone = profiles.time_zone(scope)  # the user's calendar, as the agent's dates and the Sessions page's
    for memory in shown[:limit]:
        _memory_card(scope, memory, deleted_sessions, zone)
        names |= _card_button_names(memory, session_gone=memory.session_id in deleted_sessions)
    name_buttons(names)
    if len(shown) > limit:
        st.caption(f"Showing {limit} of {len(shown)}, newest first.")
        more = min(PAGE, len(shown) - limit)
        if st.button(f"Show {more} more", key="u_mem_show_more", icon=":material/expand_more:"):
            st.session_state[_SHOWN] = limit + PAGE
            st.rerun()


def _card_button_names(memory, *, session_gone: bool) -> dict[str, str]:
    """The accessible names of a card's buttons (by key): every card's say "Edit" and "Delete", so each
    name also says which memory; it starts with the visible label (ui/button_names.py)."""
    mid = str(memory.id)
    what = f"memory {memory.memory_type}: {clip(' '.join(memory.content.split()), 60)}"
    names = {f"u_mem_edit_{mid}": f"Edit {what}", f"u_mem_delete_{mid}": f"Delete {what}"}
    if memory.session_id and not session_gone:
        names[f"u_mem_open_{mid}"] = f"Open that session ({session_ref(memory.session_id)}), which wrote {what}"
    return names


def _memory_card(scope, memory, deleted_sessions: set[str], zone: tzinfo) -> None:
    mid = str(memory.id)
    # the memory outlives the session that wrote it: a deleted session is neither named nor linked
    session_gone = memory.session_id in deleted_sessions
    with st.container(border=True, key=f"u_memcard_{mid}"):
        # text and meta side by side; the buttons on their own row, each as wide as its label
        text_col, meta_col = st.columns([3, 2], vertical_alignment="top")
        with text_col:
            st.markdown(f"**`{memory.memory_type}`**")
            if len(memory.content) <= CARD_TEXT:
                st.markdown(literal(memory.content))
            else:  # a 2,000-character memory made a card 70 lines tall
                st.markdown(literal(clip(memory.content, CARD_TEXT)))
                with st.expander(f"All {len(memory.content):,} characters", key=f"u_mem_more_{mid}"):
                    st.markdown(literal(memory.content))
            if memory.earlier_contents:  # kept so that deleting the memory deletes their mentions too
                st.caption(f":material/history: before: {_earlier(memory)}")
        with meta_col:
            st.caption(f":material/update: updated {ago(memory.updated_at)}  \n{when(memory.updated_at, zone)}")
            if session_gone:
                st.caption(":material/delete: the agent wrote it in a session you deleted")
            elif memory.session_id:
                st.caption(f":material/forum: the agent wrote it in session `{session_ref(memory.session_id)}`")
            else:
                st.caption(":material/edit: written outside a conversation")
        buttons = st.container(horizontal=True, key=f"u_mem_actions_{mid}")
        if buttons.button("Edit", key=f"u_mem_edit_{mid}", icon=":material/edit:", type="tertiary"):
            _editing()[mid] = (memory.memory_type, memory.content)
            if st.session_state.get(_CONFIRM_DELETE) == mid:
                st.session_state.pop(_CONFIRM_DELETE)
        if buttons.button("Delete", key=f"u_mem_delete_{mid}", icon=":material/delete:", type="tertiary"):
            st.session_state[_CONFIRM_DELETE] = mid
            _stop_editing(mid)
        if (
            memory.session_id
            and not session_gone
            and buttons.button(
                "Open that session",
                key=f"u_mem_open_{mid}",
                type="tertiary",
                icon=":material/open_in_new:",
                help="Its report appears on the Sessions page once the session has ended.",
            )
        ):
            st.session_state["u_sessions_request"] = memory.session_id
            st.switch_page("pages/sessions.py")
        if mid in _editing():
            _edit_form(scope, memory)
        if st.session_state.get(_CONFIRM_DELETE) == mid:
            _confirm_delete(scope, memory)


def _editing() -> dict[str, tuple[str, str]]:
    return st.session_state.setdefault(_EDITING, {})


def _stop_editing(mid: str) -> None:
    _editing().pop(mid, None)


def _edit_of_deleted(scope, items) -> None:
    """The forms of memories deleted while they were being edited (another tab, the agent): their cards are no
    longer drawn, and with them would go the form, its Save and the text typed."""
    listed = {str(m.id) for m in items}
    for mid, (slot, content) in list(_editing().items()):
        if mid not in listed:
            with st.container(border=True, key=f"u_mem_gone_{mid}"):
                _edit_form(scope, SimpleNamespace(id=mid, memory_type=slot, content=content), gone=True)


def _edit_form(scope, memory, *, gone: bool = False) -> None:
    mid = str(memory.id)
    _editing()[mid] = (memory.memory_type, memory.content)
    if gone:
        st.warning(
            "That memory was deleted while you were editing it (in another tab, or the agent forgot it). "
            "Your text is below: save it as a new memory, or copy it from the box.",
            icon=":material/search_off:",
        )
    with st.form(f"u_mem_edit_form_{mid}", border=False):
        # the same key whether or not the memory is still there, so what was typed stays in the box
        new_content = st.text_area(
            # plain, not `code`: a label is also the box's accessible name, read out with its backticks
            f"Edit {memory.memory_type}",
            value=memory.content,
            key=f"u_mem_text_{mid}",
            # no max_chars: the browser then drops a longer paste without a word; Save says what is too long
            help=f"Up to {memories.MAX_CONTENT_LENGTH:,} characters.",
        )
        buttons = st.container(horizontal=True)
        with buttons:
            if gone:
                save = st.form_submit_button("Save as a new memory", type="primary", icon=":material/add:")
                cancel = st.form_submit_button("Discard")
            else:
                save = st.form_submit_button("Save", type="primary", icon=":material/check:")
                cancel = st.form_submit_button("Cancel")
    if cancel:
        _stop_editing(mid)
        st.rerun()
    if save and gone:
        with reported():
            saved = memories.remember(scope, memory.memory_type, new_content)
            _stop_editing(mid)
            slot = memory.memory_type
            # one memory per slot: should the agent have written the slot since, this replaced it
            if saved.created:
                _flash(f"Saved `{slot}` as a new memory.")
            elif saved.unchanged:
                _flash(f"`{slot}` already says that: the agent wrote the same since.")
            else:
                _flash(f"Saved `{slot}`; it replaced {_quoted(saved.previous_content or '')}, written since.")
            st.rerun()
    elif save:
        with reported():
            try:
                saved = memories.update_memory(scope, memory.id, new_content)
            except NotFound:
                st.rerun()  # deleted since this run listed it: the next run draws this form as gone, text kept
            _stop_editing(mid)
            if saved.updated_at == memory.updated_at:
                _flash(f"Nothing to save: `{memory.memory_type}` already says that.")
            else:
                _flash(f"Saved `{memory.memory_type}`.")
            st.rerun()


def _mentions_notice(count: conversations.MentionCount, what: str, said_back: str | None = None) -> str:
    """What deleting also deletes, said before the user confirms (a common word can be in many messages): how
    many past messages, whose, and how many only say it back in the other person (the agent's "you paid $5"
    for "I paid $5"), as `said_back` when there is one memory."""
    if not count.total:
        return f"No past conversation message mentions {what}."
    many = count.total != 1
    whose = " and ".join(
        part
        for part in (
            f"{count.yours:,} of yours" if count.yours else "",
            f"{count.agents:,} of the agent's" if count.agents else "",
        )
        if part
    )
    said = (
        f"**{count.total:,} past conversation message{'s' if many else ''}** that mention{'' if many else 's'} "
        f"{what} {'are' if many else 'is'} deleted too: {whose}"
    )
    if not count.repeated:
        return said + "."
    # one memory: how it is said back; several ("delete everything"): that some are
    one = count.repeated == 1 or not many
    how = (
        f"say{'s' if one else ''} it as {_quoted(said_back)}"
        if said_back
        else (f"repeat{'s' if one else ''} a memory back to you (“you” for “I”)")
    )
    return f"{said}, which {how}." if not many else f"{said}; {count.repeated:,} of them {how}."


def _confirm_delete(scope, memory) -> None:
    mid = str(memory.id)
    with reported():
        mentions = conversations.mention_count(scope, memory.every_content)
        said_back = conversations.other_person_text(memory.content) if not memory.earlier_contents else None
        what = _quoted(memory.content)
        if memory.earlier_contents:
            what += f" or what it said before ({_earlier(memory)})"
        st.warning(
            f"Delete `{memory.memory_type}`? The agent will no longer know this. "
            f"{_mentions_notice(mentions, what, said_back)} This cannot be undone.",
            icon=":material/delete_forever:",
        )
    buttons = st.container(horizontal=True)
    if buttons.button("Yes, delete", key=f"u_mem_delete_yes_{mid}", type="primary"):
        # a long history takes a while (every report that says the text is rewritten): say what is going on
        with reported(), st.spinner("Deleting it from your memories, past messages and session reports…"):
            deleted = memories.delete_memory(scope, memory.id)
            st.session_state.pop(_CONFIRM_DELETE, None)
            _flash(f"Deleted `{memory.memory_type}`{_and_mentions(deleted.mentions_removed)}.")
            st.rerun()
    if buttons.button("Cancel", key=f"u_mem_delete_no_{mid}"):
        st.session_state.pop(_CONFIRM_DELETE, None)
        st.rerun()


def _toolbar(scope, visitor, items) -> None:
    payload = json.dumps(memories.export(scope), indent=2, ensure_ascii=False)
    st.download_button(
        "Export JSON",
        data=payload,
        file_name=f"memories-{visitor.short_id}.json",
        mime="application/json",
        icon=":material/download:",
        key="u_mem_export",
        on_click="ignore",
        disabled=not items,
    )
    # Expanders, not popovers: a popover draws its body at the end of the document, so Tab from its button
    # went through every card before reaching the confirmation; an expander's box is next in the order.
    if items:
        with st.expander(
            "Delete all memories…",
            icon=":material/delete_sweep:",
            key="u_mem_delete_all_box",
            on_change=erase.forget_typed_when_closed,
            args=("u_mem_delete_all_box", "u_mem_delete_all_phrase"),
        ):
            with reported():
                mentions = conversations.mention_count(scope, [text for m in items for text in m.every_content])
                one = items[0] if len(items) == 1 and not items[0].earlier_contents else None
                said_back = conversations.other_person_text(one.content) if one else None
                st.markdown(
                    f"This deletes **{'the 1 memory' if len(items) == 1 else f'all {len(items):,} memories'}**"
                    " the agent keeps about you and the profile details it learned (name, language, time zone,"
                    f" preferences). {_mentions_notice(mentions, 'them' if len(items) > 1 else 'it', said_back)}"
                    " Your session reports stay on the Sessions page, without these texts. It cannot be undone."
                )
            typed = st.text_input(f"Type {DELETE_ALL_PHRASE} to confirm", key="u_mem_delete_all_phrase")
            if st.button(
                "Delete all memories",
                key="u_mem_delete_all",
                type="primary",
                disabled=typed.strip() != DELETE_ALL_PHRASE,
            ):
                with (
                    reported(),
                    st.spinner(
                        f"Deleting {len(items):,} memor{'y' if len(items) == 1 else 'ies'}, the past messages that "
                        "mention them and their texts in your session reports…"
                    ),
                ):
                    deleted = memories.delete_all(scope)
                    st.session_state.pop("u_mem_delete_all_phrase", None)
                    st.session_state.pop(_EDITING, None)  # deleted here, on purpose: no form to keep
                    count = deleted.memories
                    profile = ", and the profile details the agent kept" if deleted.profile_cleared else ""
                    _flash(
                        f"Deleted {count:,} memor{'y' if count == 1 else 'ies'}"
                        f"{_and_mentions(deleted.mentions_removed, 'them' if count > 1 else 'it')}{profile}."
                    )
                    st.rerun()
    with st.expander(
        "Delete everything about me…",
        icon=":material/delete_forever:",
        key=erase.widget_key("u_mem_erase_box"),
        on_change=erase.forget_typed_when_closed,
        args=(erase.widget_key("u_mem_erase_box"), erase.widget_key("u_mem_erase_phrase")),
    ):
        erase.render_delete_everything(visitor, key="u_mem_erase")


_PROFILE_LABELS = {
    "name": "name",
    "preferred_language": "language",
    "timezone": "time zone",
    "preferences": "preferences",
}


def _learned_profile(scope) -> None:
    """The profile details the agent keeps beside the slots (it greets by the name): shown, and clearable."""
    learned = memories.learned_profile(scope)
    if not learned:
        return
    with st.container(border=True, key="u_mem_profile"):
        st.markdown("**`profile`** — the agent also knows these, and greets you by the name")
        st.markdown(
            "  \n".join(
                f"{_PROFILE_LABELS[field]}: "
                + literal(clip(json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else value, 200))
                for field, value in learned.items()
            )
        )
        if st.button("Clear", key="u_mem_profile_clear", icon=":material/backspace:", type="tertiary"):
            with reported():
                memories.clear_learned_profile(scope)
                _flash("Cleared the profile details the agent kept (the email you signed in with stays).")
                st.rerun()


def _search_panel(scope) -> None:
    st.subheader("Search", anchor=False)
    st.caption("The same hybrid search the agent runs: a vector ranking and a full-text ranking, fused by RRF.")
    with st.form("u_mem_search_form", border=False), st.container(horizontal=True, vertical_alignment="bottom"):
        query = st.text_input("Search your memories", key="u_mem_query", placeholder="e.g. what car do I drive?")
        searched = st.form_submit_button("Search", icon=":material/search:")
    mode = st.segmented_control(
        "Ranking",
        ["hybrid", "vector", "text"],
        default="hybrid",
        key="u_mem_mode",
        help="hybrid = both branches fused; vector or text = one branch alone.",
    )
    with st.expander("Tune the fusion (weights and k)", icon=":material/tune:"):
        rrf.render_controls()
    rrf.render_formula()
    if not query and not searched:
        return
    if reason := nothing_to_search(query):  # a search that says nothing back looked like one that found nothing
        st.caption(f":material/info: Nothing was searched: {reason}. Type some words to search.")
        return
    with reported():
        result = search_memories(scope, query, limit=10, params=rrf.current_params(), mode=mode or "hybrid")
        render_retrieval(result, key="mem_search", compact="medium")


def main() -> None:
    visitor = auth.current_visitor()
    scope = visitor.scope
    items = memories.list_memories(scope)
    page_header(
        "Memories",
        "What the agent remembers about you. Only you can see or change these rows "
        "(Postgres row-level security, checked on every query).",
        icon=":material/neurology:",
    )
    flash = st.session_state.pop(_FLASH, None)
    if flash:
        st.success(flash, icon=":material/check_circle:")

    list_col, search_col = st.columns([9, 11], gap="large")
    with list_col:
        written_in = {m.session_id for m in items if m.session_id}
        deleted_sessions = sessions.deleted_ids(scope, written_in)
        metrics = st.container(horizontal=True)
        metrics.metric("Memories", len(items), border=True, width="content")
        metrics.metric("Last updated", ago(items[0].updated_at) if items else "—", border=True, width="content")
        # how many sessions wrote them ("From sessions 2" beside "Memories 7" read as two of the seven)
        metrics.metric(
            "Sessions that wrote them",
            len(written_in - deleted_sessions),
            border=True,
            width="content",
            help="How many of your sessions (still kept) the agent wrote these memories in.",
        )
        _toolbar(scope, visitor, items)
        _learned_profile(scope)
        if not items:
            empty_state(
                ":material/psychology_alt:",
                "Nothing remembered yet",
                "Tell the agent something about yourself on the Chat page, for example "
                "“my favorite color is teal” or “remember that I'm allergic to nuts”. "
                "It will show up here, and you can edit or delete it.",
                link=("pages/chat.py", "Go to Chat", ":material/chat:"),
            )
        _memory_list(scope, items, deleted_sessions)
    with search_col, st.container(key=SEARCH_SIDE):
        _search_panel(scope)
    st.caption(
        f"Signed in as `{short_id(visitor.user_id)}` · memories are stored one per slot; "
        "telling the agent a new value for a slot replaces the old one."
    )


run_page(main)
