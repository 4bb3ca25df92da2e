"""The identity gate and the sidebar's identity actions, through AppTest runs of
the real entry point against the real embedded database and issuer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from dataclasses import asdict
from pathlib import Path

import pytest

from core import db, identity, memories, session_store
from core.db import Scope, admin_connection
from core.errors import AuthError, DatabaseUnavailable
from ui import auth as ui_auth


def _visitor(at):
    return at.session_state["mp_visitor"]


def _button(at, label):
    matches = [b for b in at.button if b.label == label]
    assert matches, f"no button {label!r}; have {[b.label for b in at.button]}"
    return matches[0]


def _auth_users_row(user_id):
    with admin_connection() as conn:
        return conn.execute("select is_anonymous, email from auth.users where id = %s", (user_id,)).fetchone()


def test_first_visit_signs_in_a_real_anonymous_user(app):
    at = app()
    assert not at.exception
    visitor = _visitor(at)
    # a real auth user with a real, verifiable JWT
    assert _auth_users_row(visitor.user_id) == (True, None)
    assert identity.verify(visitor.auth.access_token).user_id == visitor.user_id
    sidebar_text = " ".join(m.value for m in at.sidebar.markdown) + " ".join(c.value for c in at.sidebar.caption)
    assert visitor.short_id in sidebar_text
    assert "anonymous" in sidebar_text
    # the sidebar says what runs: embedded mode and the offline brain, labelled as a rule-based demo brain
    assert "embedded mode" in sidebar_text
    assert "rule-based" in sidebar_text
    assert any("rule-based demo brain" in i.value for i in at.sidebar.info)

    # a rerun keeps the same identity; a query string cannot choose another one
    other = uuid.uuid4()
    at.query_params["user_id"] = str(other)
    at.run()
    assert _visitor(at).user_id == visitor.user_id


def test_two_browser_sessions_are_two_visitors(app):
    first, second = app(), app()
    assert _visitor(first).user_id != _visitor(second).user_id


def test_restoring_from_the_cookie_refresh_token(database_uri, monkeypatch):
    original = identity.sign_in_anonymously()
    restored, notice, family = ui_auth.restore_or_sign_in(original.refresh_token)
    assert notice is None
    assert restored.user_id == original.user_id
    assert restored.refresh_token != original.refresh_token  # rotated
    assert identity.verify(restored.access_token).user_id == original.user_id
    # a second tab (or a reload racing the cookie write) presenting the same token right away
    # gets the session the first one obtained, instead of tripping reuse detection
    again, notice, same_family = ui_auth.restore_or_sign_in(original.refresh_token)
    assert (again, notice, same_family) == (restored, None, family)
    # an old rotated-away token presented later is a replay: refused, and a new visitor starts
    monkeypatch.setattr(ui_auth, "REUSE_INTERVAL_SECONDS", 0.0)
    monkeypatch.setattr(identity, "REFRESH_REUSE_INTERVAL_SECONDS", 0.0)  # the issuer's own interval, too
    replay, notice, _ = ui_auth.restore_or_sign_in(original.refresh_token)
    assert replay.user_id != original.user_id
    assert notice and "could not be restored" in notice
    with pytest.raises(AuthError):  # reuse detection revoked the family
        identity.refresh(restored.refresh_token)
    # a bare user id in the cookie is not a credential
    forged, notice, _ = ui_auth.restore_or_sign_in(str(original.user_id))
    assert forged.user_id != original.user_id and notice
    # no cookie: a new anonymous user, no notice
    fresh, notice, _ = ui_auth.restore_or_sign_in(None)
    assert fresh.is_anonymous and notice is None


def test_the_cookie_script_carries_any_token_as_data():
    """The script that writes the cookie (ui.auth.cookie_script) holds the token as a JavaScript string: a
    token that says `</script>` or the script's own placeholders cannot end the element or change the code."""
    token = 'a</script><script>alert(1)</script> SECURE "NAME" \\'
    script = ui_auth.cookie_script(token, secure=False)
    assert script.count("</script>") == 1 and script.count("<script>") == 1
    literal = json.dumps(token).replace("<", "\\u003c")
    assert f"encodeURIComponent({literal})" in script
    assert "(false ?" in script and "SameSite=Strict" in script and "Max-Age=" in script
    assert "(true ?" in ui_auth.cookie_script("t", secure=True)  # https: Secure


def test_two_tabs_of_one_browser_renew_without_tripping_reuse_detection(database_uri):
    first_tab, _, family = ui_auth.restore_or_sign_in(None)
    second_tab, _, second_family = ui_auth.restore_or_sign_in(first_tab.refresh_token)  # opened later
    assert second_family == family and second_tab.user_id == first_tab.user_id
    # an hour later the first tab renews with the token it holds, which the second tab rotated away:
    # it adopts the newer session instead of presenting the old token
    renewed_first = ui_auth.renew(first_tab, family)
    assert renewed_first.user_id == first_tab.user_id
    # both near expiry: each renewal refreshes the family's newest token, and both keep working
    renewed_second = ui_auth.renew(second_tab, family, margin=10**9)
    renewed_first = ui_auth.renew(renewed_first, family, margin=10**9)
    for session in (renewed_first, renewed_second):
        assert identity.verify(session.access_token).user_id == first_tab.user_id
    identity.refresh(renewed_first.refresh_token)  # the newest token is still good


def test_a_tab_never_writes_back_a_token_another_tab_rotated_away(app, monkeypatch):
    """Tab A open; tab B opens (its restore trades the cookie's token for a new one); tab A is used again;
    tab B is reloaded after the reuse interval. Tab A must write the newest token into the shared cookie:
    writing back its own would make that reload a replay, and reuse detection would end the identity."""
    written = []
    monkeypatch.setattr(ui_auth, "_write_cookie", written.append)
    tab_a = app()
    user = _visitor(tab_a).user_id
    token_a = _visitor(tab_a).auth.refresh_token
    assert written[-1] == token_a
    tab_b, notice, _ = ui_auth.restore_or_sign_in(token_a)  # tab B's first run, from the cookie
    assert notice is None and tab_b.user_id == user and tab_b.refresh_token != token_a
    written.append(tab_b.refresh_token)  # tab B's run writes its token
    tab_a.run()  # a click in tab A
    assert not tab_a.exception
    assert written[-1] == tab_b.refresh_token  # not token_a again
    assert _visitor(tab_a).user_id == user and _visitor(tab_a).auth.refresh_token == tab_b.refresh_token
    assert identity.verify(_visitor(tab_a).auth.access_token).user_id == user
    # tab B reloaded later, past the reuse interval: the cookie's token is still good
    monkeypatch.setattr(ui_auth, "REUSE_INTERVAL_SECONDS", 0.0)
    monkeypatch.setattr(identity, "REFRESH_REUSE_INTERVAL_SECONDS", 0.0)
    reloaded, notice, _ = ui_auth.restore_or_sign_in(written[-1])
    assert notice is None and reloaded.user_id == user
    # the control: the token tab A held, presented then, is a replay that ends the identity
    replay, notice, _ = ui_auth.restore_or_sign_in(token_a)
    assert replay.user_id != user and notice and "presented twice" in notice


# One app process taking one step for a browser's session (a renewal, or a restore from its cookie),
# started as its own Python process. The auth server here has no reuse interval and is slow to answer, so
# two processes taking the step at once are both inside the exchange together: without a lock shared by
# the processes, both present the same token, and the second is refused as a replay
# ("refresh_token_already_used"): its tab signed out, or its reload made a new anonymous visitor.
_STEP_IN_ITS_OWN_PROCESS = """
import json, sys, time, uuid
from core import identity
from core.errors import AuthError
from ui import auth as ui_auth

identity.REFRESH_REUSE_INTERVAL_SECONDS = 0.0
exchange = identity.refresh
def slow_exchange(token):
    time.sleep(0.6)
    return exchange(token)
identity.refresh = slow_exchange
given = json.loads(sys.argv[1])
held = identity.AuthSession(**{**given["auth"], "user_id": uuid.UUID(given["auth"]["user_id"])})
print("ready", flush=True)
sys.stdin.readline()  # both processes take their step together
try:
    if given["step"] == "renew":
        session, notice = ui_auth.renew(held, given["family"], margin=10**9), None
    else:
        session, notice, _ = ui_auth.restore_or_sign_in(held.refresh_token)
    print(json.dumps({"user_id": str(session.user_id), "refresh_token": session.refresh_token, "notice": notice}))
except AuthError as exc:
    print(json.dumps({"refused": exc.code}))
"""


@pytest.mark.parametrize("step", ["renew", "restore"])
def test_two_app_processes_renewing_or_restoring_one_browser_at_once_keep_it_signed_in(database_uri, step):
    tab, _, family = ui_auth.restore_or_sign_in(None)
    given = {"auth": {**asdict(tab), "user_id": str(tab.user_id)}, "family": family, "step": step}
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _STEP_IN_ITS_OWN_PROCESS, json.dumps(given)],
            cwd=Path(__file__).resolve().parents[2],
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for process in processes:
        assert process.stdout.readline().strip() == "ready", process.stderr.read()[-3000:]
    for process in processes:
        process.stdin.write("go\n")
        process.stdin.flush()
    outcomes = []
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err[-3000:]
        outcomes.append(json.loads(out.strip().splitlines()[-1]))
    # both tabs are still this visitor, and neither was told its identity was lost
    assert all(o.get("user_id") == str(tab.user_id) and o.get("notice") is None for o in outcomes), outcomes
    # one exchange, then the other process took what it obtained: the family's newest token is still good
    not_yet_exchanged = {o["refresh_token"] for o in outcomes if session_store.lookup(o["refresh_token"])[1] is None}
    assert len(not_yet_exchanged) == 1, outcomes
    assert identity.refresh(not_yet_exchanged.pop()).user_id == tab.user_id


def test_a_stuck_renewal_delays_the_next_one_of_its_family_only_and_never_fails_it(database_uri):
    family = uuid.uuid4().hex
    with session_store.family_lock(family) as first:
        assert first is True
        started = time.monotonic()
        with session_store.family_lock(family, wait_seconds=0.5) as second:
            assert second is False  # waited its time, then goes on without the lock instead of failing the page
        assert time.monotonic() - started >= 0.45
        with session_store.family_lock(uuid.uuid4().hex, wait_seconds=0.5) as other_family:
            assert other_family is True
    with session_store.family_lock(family, wait_seconds=0.5) as after:
        assert after is True  # released when its holder was done

    # a holder that leaves without unlocking (it cannot, through family_lock; a bug could) does not keep the
    # lock: its connection is reset on its way back into the pool
    def held_family_locks() -> int:
        with admin_connection() as conn:
            return conn.execute(
                "select count(*) from pg_locks where locktype = 'advisory' and objsubid = 2 and classid = %s::oid",
                (session_store._LOCK_SPACE,),
            ).fetchone()[0]

    with db.pooled_connection(db.service_url(), purpose="locks") as conn:
        conn.execute("select pg_advisory_lock(%s::int, hashtext(%s))", (session_store._LOCK_SPACE, family))
        assert held_family_locks() == 1
    assert held_family_locks() == 0
    with session_store.family_lock(family, wait_seconds=0.5) as again:
        assert again is True


def test_upgrade_keeps_the_user_id_and_email_sign_in_returns_to_it(app):
    at = app()
    before = _visitor(at)
    memories.remember(before.scope, "favorite_color", "teal")
    email = f"visitor-{uuid.uuid4().hex[:8]}@example.com"
    at.text_input(key="upgrade_email").set_value(email)
    at.text_input(key="upgrade_password").set_value("short")
    _button(at, "Save with this email").click()
    at.run()
    assert any("at least 8 characters" in w.value for w in at.warning)
    assert _visitor(at).is_anonymous

    at.text_input(key="upgrade_password").set_value("correct horse battery")
    _button(at, "Save with this email").click()
    at.run()
    after = _visitor(at)
    assert after.user_id == before.user_id and not after.is_anonymous and after.email == email
    assert _auth_users_row(before.user_id) == (False, email)

    # a different browser session (another visitor) signs in with the email: same user, same memories
    other = app()
    assert _visitor(other).user_id != before.user_id
    # signing in leaves this anonymous visitor behind for good: the form says so, as New identity does
    leaving = "This anonymous identity's memories and chats stay with it and cannot be reached again"
    assert any(leaving in w.value for w in other.warning)
    assert not any(leaving in w.value for w in at.warning)  # an email account can be signed into again
    other.text_input(key="sign_in_email").set_value(email)
    other.text_input(key="sign_in_password").set_value("wrong password")
    _button(other, "Sign in").click()
    other.run()
    assert any("Wrong email or password" in e.value for e in other.error)
    other.text_input(key="sign_in_password").set_value("correct horse battery")
    _button(other, "Sign in").click()
    other.run()
    assert _visitor(other).user_id == before.user_id
    assert [m.content for m in memories.list_memories(_visitor(other).scope)] == ["teal"]


def test_new_identity_starts_clean_and_revokes_the_old_refresh_token(app):
    at = app("pages/memories.py")
    old = _visitor(at)
    memories.remember(old.scope, "home_city", "Lisbon")
    at.run()
    assert any("Lisbon" in m.value for m in at.markdown)
    at.button(key="confirm_new_identity").click()
    at.run()
    new = _visitor(at)
    assert new.user_id != old.user_id and new.is_anonymous
    assert not any("Lisbon" in m.value for m in at.markdown)
    assert any("Nothing remembered yet" in m.value for m in at.markdown)
    with pytest.raises(AuthError):
        identity.refresh(old.auth.refresh_token)
    # the old user's data is still there (it just is not this visitor's any more)
    assert [m.content for m in memories.list_memories(Scope.service(old.user_id))] == ["Lisbon"]


def _another_tab(at):
    """A second tab of the same browser as `at`: the same identity and token family (one cookie)."""
    return _visitor(at).auth, at.session_state["mp_auth_family"]


def test_a_new_identity_taken_in_another_tab_is_not_undone_by_this_one(app, monkeypatch):
    """Found by reading the code (2026-12-06 note), then shown here: tab A takes a new identity (the old
    one is signed out); tab B, still holding the old one, wrote the old token back into the shared cookie,
    so the next reload could not restore it and made yet another anonymous visitor: the identity chosen in
    tab A was lost with everything said to it."""
    written = []
    monkeypatch.setattr(ui_auth, "_write_cookie", written.append)
    tab_b = app()
    old = _visitor(tab_b)
    held, family = _another_tab(tab_b)
    tab_a = app()  # tab A: its own Streamlit session, made the browser's identity by the shared cookie
    tab_a.session_state["mp_auth_session"], tab_a.session_state["mp_auth_family"] = held, family
    tab_a.run()
    assert _visitor(tab_a).user_id == old.user_id
    tab_a.button(key="confirm_new_identity").click()
    tab_a.run()
    chosen = _visitor(tab_a)
    assert chosen.user_id != old.user_id and written[-1] == chosen.auth.refresh_token

    tab_b.run()  # tab B is used again
    assert not tab_b.exception
    assert written[-1] == chosen.auth.refresh_token  # it did not write the old identity's token back
    assert [i.value for i in tab_b.info if "changed identity in another tab" in i.value]
    assert any("location.reload" in h.proto.body for h in tab_b.get("html"))
    reloaded, notice, _ = ui_auth.restore_or_sign_in(written[-1])  # the reload: the identity tab A chose
    assert notice is None and reloaded.user_id == chosen.user_id


def test_a_sign_in_in_another_tab_is_followed_by_this_one(app, monkeypatch):
    """Tab A signs in with an email account; tab B, still the anonymous visitor, must not write that
    visitor's token back over the account's (the next reload was the anonymous visitor again)."""
    written = []
    monkeypatch.setattr(ui_auth, "_write_cookie", written.append)
    email, password = f"tabs-{uuid.uuid4().hex[:8]}@example.com", "correct horse battery"
    account = identity.upgrade_to_email(identity.sign_in_anonymously(), email, password)
    tab_b = app()
    held, family = _another_tab(tab_b)
    tab_b.run()  # the control: while the browser keeps its identity, tab B writes its token as always
    assert written[-1] == _visitor(tab_b).auth.refresh_token
    assert not [i for i in tab_b.info if "another tab" in i.value]
    tab_a = app()
    tab_a.session_state["mp_auth_session"], tab_a.session_state["mp_auth_family"] = held, family
    tab_a.run()
    tab_a.text_input(key="sign_in_email").set_value(email)
    tab_a.text_input(key="sign_in_password").set_value(password)
    _button(tab_a, "Sign in").click()
    tab_a.run()
    assert _visitor(tab_a).user_id == account.user_id
    signed_in_token = written[-1]

    tab_b.run()
    assert written[-1] == signed_in_token  # not the anonymous visitor's token
    assert [i.value for i in tab_b.info if "changed identity in another tab" in i.value]
    reloaded, notice, _ = ui_auth.restore_or_sign_in(written[-1])
    assert notice is None and reloaded.user_id == account.user_id


def test_database_outage_is_explained_and_the_app_recovers(app, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from tests.support.app import APP_SCRIPT

    def down(*_args, **_kwargs):
        raise DatabaseUnavailable("The database is not reachable right now (test outage).")

    monkeypatch.setattr(identity, "sign_in_anonymously", down)
    monkeypatch.setattr("core.db.ping", down)
    at = AppTest.from_file(str(APP_SCRIPT), default_timeout=180)
    at.run()
    assert not at.exception
    assert any("The database is not reachable right now" in e.value for e in at.error)
    assert "mp_auth_session" not in at.session_state  # no identity was invented during the outage
    monkeypatch.undo()
    at.run()  # what the page's timed check does once the database answers
    assert not at.error
    assert _auth_users_row(_visitor(at).user_id) == (True, None)

    # a page whose query fails mid-session says so, then shows its data again
    page = app("pages/memories.py")
    monkeypatch.setattr(memories, "list_memories", down)
    page.run()
    assert any("not reachable" in e.value for e in page.error)
    monkeypatch.undo()
    page.run()
    assert not page.error
    assert any("Nothing remembered yet" in m.value for m in page.markdown)
