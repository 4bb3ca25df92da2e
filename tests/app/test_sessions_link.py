"""The Sessions page's address names the session shown (`/sessions?session=…`): a reload, a bookmark or a
link opens it again; a link to a session that is not the visitor's, or to no session at all, says so."""

from __future__ import annotations

import uuid

from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.testing.v1.element_tree import Selectbox

from core import sessions
from core.db import Scope
from core.erasure import delete_everything


def _with_sessions(at, count: int) -> list[str]:
    """`count` saved sessions of the AppTest's visitor, oldest first."""
    service = Scope.service(at.session_state["mp_visitor"].user_id)
    ids = [f"text-{uuid.uuid4().hex[:16]}" for _ in range(count)]
    for session_id in ids:
        sessions.save_report(service, session_id, {"playground": {"turns": 1, "mode": "text"}})
    return ids


def _open_sessions_page(at, link: str | None):
    if link is not None:
        at.query_params["session"] = link
    at.switch_page("pages/sessions.py")
    at.run()
    assert not at.exception, at.exception
    return at


def test_the_address_names_the_session_shown_and_a_link_opens_it(app):
    at = app()
    older, newer = _with_sessions(at, 2)
    _open_sessions_page(at, older)
    picker = at.selectbox(key="u_sessions_pick")
    assert picker.value == older  # not the newest, which the page shows when nothing is asked for
    assert any(older in header.value for header in at.subheader)
    assert at.query_params["session"] == older

    picker.set_value(newer)
    at.run()
    assert at.query_params["session"] == newer  # the address follows the picker
    at.run()  # any later interaction: the address it wrote itself does not pull the page back
    assert at.selectbox(key="u_sessions_pick").value == newer
    delete_everything(at.session_state["mp_visitor"].scope)


def test_a_link_to_someone_elses_session_shows_nothing_of_it(app, new_user):
    stranger = new_user()
    theirs = f"text-{uuid.uuid4().hex[:16]}"
    sessions.save_report(Scope.service(stranger.user_id), theirs, {"playground": {"turns": 1, "mode": "text"}})
    at = app()
    [mine] = _with_sessions(at, 1)
    _open_sessions_page(at, theirs)
    assert any(f"Session `{theirs}` is not among your sessions" in w.value for w in at.warning)
    assert at.selectbox(key="u_sessions_pick").value != theirs
    assert not any(theirs in option for option in at.selectbox(key="u_sessions_pick").options)
    assert not any(theirs in header.value for header in at.subheader)
    assert at.query_params["session"] != theirs  # the page now names what it shows
    assert any(mine in option for option in at.selectbox(key="u_sessions_pick").options)
    # the reruns that follow (a poll, a click) say it too: it was
    # gone within a second, the page showing another session without a word (found 2026-12-06)
    at.run()
    at.run()
    assert [w.value for w in at.warning if "is not among your sessions" in w.value] == [
        f"Session `{theirs}` is not among your sessions: it has not been saved yet, or it was deleted."
    ]
    at.switch_page("pages/chat.py")  # until the visitor moves on
    at.run()
    at.switch_page("pages/sessions.py")
    at.run()
    assert not any("is not among your sessions" in w.value for w in at.warning)
    delete_everything(at.session_state["mp_visitor"].scope)


def test_an_address_naming_no_session_id_is_said_and_the_page_works(app):
    for junk in ("x" * 5000, "bad\x00id"):
        at = _open_sessions_page(app(), junk)
        assert any("which is not a session id" in w.value for w in at.warning), junk[:20]
        at.run()  # and on the run that follows
        assert any("which is not a session id" in w.value for w in at.warning), junk[:20]
    at = _open_sessions_page(app(), "   ")  # an empty link is no link
    assert not any("session id" in w.value for w in at.warning)


def test_an_address_with_backticks_is_quoted_whole(app):
    """`?session=`x`**b**` showed "Session ``x**b**…": one backtick each side ended the code span at the
    address's own first backtick, and the rest was drawn as Markdown (a walkthrough, 2026-12-07)."""
    at = _open_sessions_page(app(), "text-`x`**b**")
    assert any(w.value.startswith("Session ``text-`x`**b**`` is not among your sessions") for w in at.warning), [
        w.value for w in at.warning
    ]


def test_a_later_run_naming_another_session_does_not_pull_the_page_there(app):
    """Seen in a fresh-clone run: Delete this session replaced the address, but a rerun the browser had asked
    for before the new address reached it still named the deleted session, and the page said "Session … was
    deleted, so it cannot be opened" instead of "Deleted session …". Only the first run reads the address."""
    at = app()
    older, newer = _with_sessions(at, 2)
    _open_sessions_page(at, newer)
    assert at.selectbox(key="u_sessions_pick").value == newer
    at.query_params["session"] = older  # a stale address in a later run of the same browser session
    at.run()
    assert at.selectbox(key="u_sessions_pick").value == newer and at.query_params["session"] == newer
    at.session_state["u_sessions_delete_pressed"] = newer  # what Delete this session's callback sets
    at.query_params["session"] = newer  # the address of the run that deletes it, and of a stale one after
    at.run()
    assert any(f"Deleted session {newer} and its transcript" in s.value for s in at.success)
    at.run()
    assert not any("cannot be opened" in w.value for w in at.warning)
    shown = at.selectbox(key="u_sessions_pick").value  # the newest left (the app's own chat, once stored)
    assert shown != newer and at.query_params["session"] == shown
    delete_everything(at.session_state["mp_visitor"].scope)


def test_delete_everything_clears_the_address(app):
    at = app()
    [mine] = _with_sessions(at, 1)
    _open_sessions_page(at, mine)
    assert at.query_params["session"] == mine
    at.text_input(key="u_sessions_erase_phrase").set_value("DELETE")
    at.run()  # the button is enabled by the typed phrase
    at.button(key="u_sessions_erase_button").click()
    at.run()
    assert not at.exception, at.exception
    assert "session" not in at.query_params or at.query_params["session"] != mine
    assert not any(mine in w.value for w in at.warning)  # not "was deleted, so it cannot be opened" after it


def _stale_picker(monkeypatch, at, label: str) -> None:
    """The next runs get the picker's value as the browser sent it after a deletion: the label of an option
    the page no longer lists (AppTest's set_value refuses one)."""
    picker_id = at.selectbox(key="u_sessions_pick").id
    listed = Selectbox._widget_state

    def sent(self):
        return WidgetState(id=self.id, string_value=label) if self.id == picker_id else listed.fget(self)

    monkeypatch.setattr(Selectbox, "_widget_state", property(sent))


def test_a_deletion_is_confirmed_through_stale_reruns_until_the_visitor_moves_on(app, monkeypatch):
    """Fresh-clone browser runs: Delete this session deleted the session, then reruns the browser had asked
    for meanwhile (the cookie writer's, each with the picker still naming the deleted session) replaced the
    run's output, and the last of them came after the confirmation had been taken down: "Deleted session …"
    was never seen and the page said the session had been deleted "in another tab or window". The
    confirmation now stays until the visitor picks another session or leaves the page."""
    at = app()
    oldest, older, newer = _with_sessions(at, 3)  # older: a session left between the other two
    _open_sessions_page(at, newer)
    [newer_label] = [label for label in at.selectbox(key="u_sessions_pick").options if newer in label]
    at.button(key="u_session_delete").click()
    at.run()
    assert not at.exception, at.exception
    left = [record.session_id for record in sessions.list_sessions(at.session_state["mp_visitor"].scope)]
    assert newer not in left and {older, oldest} <= set(left)
    confirmation = f"Deleted session {newer} and its transcript."
    assert any(s.value == confirmation for s in at.success)
    shown_after = at.selectbox(key="u_sessions_pick").value  # the newest left (the app's own chat, once stored)
    assert shown_after in left and shown_after != oldest
    _stale_picker(monkeypatch, at, newer_label)
    for _ in range(2):  # stale reruns: the picker still names the deleted session
        at.run()
        assert not at.exception, at.exception
        assert any(s.value == confirmation for s in at.success)
        assert not any("another tab" in i.value for i in at.info)
        assert not any("cannot be opened" in w.value for w in at.warning)
        assert at.selectbox(key="u_sessions_pick").value == shown_after
    monkeypatch.undo()
    at.run()  # a rerun of the page as it is (the one shown after the deletion): still said
    assert any(s.value == confirmation for s in at.success)
    at.selectbox(key="u_sessions_pick").set_value(oldest)  # the visitor moves on
    at.run()
    assert not any(s.value.startswith("Deleted session") for s in at.success)
    _stale_picker(monkeypatch, at, newer_label)  # a stale picker later still is not "another tab"
    at.run()
    assert not any("another tab" in i.value for i in at.info)
    delete_everything(at.session_state["mp_visitor"].scope)
