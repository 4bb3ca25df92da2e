"""The identity gate: every page runs as a verified user.

Design (see docs/APP.md):
  * The browser keeps only the *refresh token*, in a first-party cookie
    (SameSite=Strict, Secure over https, 30 days). Streamlit cannot set HttpOnly
    cookies, so a line of script in the page writes it (`document.cookie`) and
    the server reads it from the websocket's initial request (`st.context.cookies`).
  * On a new browser session the server trades that refresh token for a new
    session (`core.identity.refresh`; tokens rotate and a reused one revokes the
    whole family), then verifies the access token. A user id is never stored in
    the browser and never accepted from it: the id comes out of `verify()` only.
  * The access token, refresh token and verified user live in `st.session_state`
    (server memory, per browser session); they are refreshed before expiry.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import unquote

import streamlit as st

from core import identity, session_store
from core.db import Scope
from core.errors import AuthError, AuthUnavailable, DatabaseUnavailable
from core.identity import AuthSession, VerifiedUser
from ui import chat_state
from ui.format import short_id

log = logging.getLogger("memory_playground.ui.auth")

COOKIE_NAME = "mp_refresh_token"
COOKIE_MAX_AGE = timedelta(days=30)
REFRESH_MARGIN_SECONDS = 120  # renew the access token this long before it expires

_AUTH_KEY = "mp_auth_session"
_FAMILY_KEY = "mp_auth_family"
_NOTICE_KEY = "mp_auth_notice"
_GENERATION_KEY = "mp_identity_generation"
_RESIGN_KEY = "mp_auth_resign_email"  # the email of an account whose session ended: offer to sign in again
# Session-state keys that hold one user's view state (edit boxes, selections, the chat).
# They are dropped when the identity changes so nothing of one user shows for the next.
USER_STATE_PREFIX = "u_"


@dataclass(frozen=True)
class Visitor:
    """The verified visitor of this browser session. Pages build scopes from it."""

    auth: AuthSession
    verified: VerifiedUser
    generation: int  # changes whenever the identity changes (new identity, email sign-in)

    @property
    def user_id(self):
        return self.verified.user_id

    @property
    def short_id(self) -> str:
        return short_id(self.verified.user_id)

    @property
    def is_anonymous(self) -> bool:
        return self.verified.is_anonymous

    @property
    def email(self) -> str | None:
        return self.verified.email

    @property
    def pending_email(self) -> str | None:
        """An email added to this anonymous identity that waits for its confirmation link."""
        return self.verified.pending_email if self.verified.is_anonymous else None

    @property
    def scope(self) -> Scope:
        """As the user: RLS decides what every statement may see and change."""
        return Scope.for_user(self.verified)


# Refresh tokens rotate, and presenting a rotated-away token again ends its family
# (reuse detection). The tabs of one browser are separate Streamlit sessions that share
# one cookie, possibly served by different app processes, so they share one family: a
# quick double reload, or two tabs renewing an hour later, would otherwise trip the
# detection. core.session_store keeps, in Postgres, every token handed out with its
# family and, sealed under each exchanged token, the session that replaced it, so
#   * a tab about to renew follows its own token's hand-offs to the newest session
#     another tab (in any process) already obtained, and
#   * a restore that presents a token exchanged less than REUSE_INTERVAL_SECONDS ago
#     (a parallel tab or a reload racing the cookie write) gets that newer session once
#     the auth server has confirmed it (a reload must see a sign-out from elsewhere),
# like Supabase Auth's refresh-token reuse interval. Older replays still go through
# refresh() and its reuse detection.
REUSE_INTERVAL_SECONDS = 30.0

_family_locks: dict[str, threading.Lock] = {}
_family_locks_guard = threading.Lock()


def _lock_for(family: str) -> threading.Lock:
    """One renewal at a time per family in this process; `_one_exchange_at_a_time` adds the
    lock shared by every process."""
    with _family_locks_guard:
        if len(_family_locks) > 10_000:
            _family_locks.clear()
        return _family_locks.setdefault(family, threading.Lock())


@contextmanager
def _one_exchange_at_a_time(family: str) -> Iterator[None]:
    """The family's lock in this process, then in the database (every app process): two
    processes renewing the same browser at once would otherwise present the same token."""
    with _lock_for(family), session_store.family_lock(family):
        yield


def renew(auth: AuthSession, family: str, *, margin: float = REFRESH_MARGIN_SECONDS) -> AuthSession:
    """A session for the same user valid for at least `margin` seconds: a newer one
    another tab of this family already obtained, else a refresh of the family's
    newest refresh token. Raises AuthError if refreshing fails."""
    with _one_exchange_at_a_time(family):
        newest = session_store.newest(auth.refresh_token, user_id=auth.user_id) or auth
        if newest.refresh_token != auth.refresh_token and newest.expires_at - time.time() >= margin:
            return newest
        return session_store.record(family, newest.refresh_token, identity.refresh(newest.refresh_token))


# Why an auth server ends a session, in the visitor's words (Supabase Auth's error codes).
_SESSION_END_REASONS = {
    "session_expired": "the session expired",
    "refresh_token_not_found": "the session was signed out, for example from another device",
    "session_not_found": "the session was signed out, for example from another device",
    "refresh_token_already_used": "its sign-in token was presented twice, which can mean it was copied, "
    "so the session was closed",
    "user_not_found": "the account no longer exists",
    "user_banned": "the account is blocked",
}


def session_end_reason(exc: AuthError) -> str:
    return _SESSION_END_REASONS.get(exc.code or "", str(exc).rstrip("."))


def _still_standing(latest: AuthSession, family: str) -> AuthSession:
    """The family's newest session once the auth server confirms it (asked, not the
    verification cache: it may have been signed out elsewhere since this process
    last asked), else what one refresh of it gives. Raises AuthError when the
    session has ended. The caller holds the family's lock."""
    try:
        identity.verify(latest.access_token, use_cache=False)
        return latest
    except AuthUnavailable:
        raise
    except AuthError as exc:
        log.info("newest session of a restored family refused (%s); refreshing it once", exc)
    return session_store.record(family, latest.refresh_token, identity.refresh(latest.refresh_token))


def client_address() -> str:
    """Whom to throttle: the address the visitor connects from, as Streamlit reports it
    (None for localhost, which is one client)."""
    try:
        return st.context.ip_address or "local"
    except Exception:  # outside a server run (AppTest)
        return "local"


def restore_or_sign_in(
    stored_refresh_token: str | None, *, client: str | None = None
) -> tuple[AuthSession, str | None, str]:
    """(session, notice, family) for a new browser session: restored from the
    cookie's refresh token when it is still good, otherwise a new anonymous user
    (with a notice saying why). DatabaseUnavailable and AuthUnavailable propagate:
    an outage must not hand the visitor a new identity (the cookie keeps the old one).
    RateLimited propagates too: too many new visitors from `client`."""
    notice = None
    if stored_refresh_token:
        try:
            known = session_store.lookup(stored_refresh_token)
            # An unknown token locks on its own hash: two processes restoring it at once are then
            # one exchange and one hand-off, seen by the lookup again under the lock.
            lock_key = known[0] if known else identity.hash_refresh_token(stored_refresh_token)
            with _one_exchange_at_a_time(lock_key):
                known = session_store.lookup(stored_refresh_token)
                family = known[0] if known else uuid.uuid4().hex
                if known is not None and known[1] is not None and known[1] <= REUSE_INTERVAL_SECONDS:
                    # A parallel tab or a reload that raced the cookie write.
                    latest = session_store.newest(stored_refresh_token)
                    if latest is not None and latest.expires_at - time.time() >= REFRESH_MARGIN_SECONDS:
                        return _still_standing(latest, family), None, family
                    if latest is not None:  # about to expire: renew the newest, never the stale token
                        return (
                            session_store.record(family, latest.refresh_token, identity.refresh(latest.refresh_token)),
                            None,
                            family,
                        )
                restored = identity.refresh(stored_refresh_token)
                return session_store.record(family, stored_refresh_token, restored), None, family
        except AuthUnavailable:
            raise
        except AuthError as exc:
            log.info("stored identity not restored: %s", exc)
            notice = (
                f"Your previous identity could not be restored: {session_end_reason(exc)}. "
                "If you saved it with an email, sign in again with it (Sign in with email, in this "
                "sidebar); until then you are a new anonymous visitor."
            )
    fresh = identity.sign_in_anonymously(client=client)
    return fresh, notice, session_store.start(fresh)


def _read_cookie() -> str | None:
    value = st.context.cookies.get(COOKIE_NAME)
    value = unquote(value).strip() if isinstance(value, str) else ""  # written URI-encoded (cookie_script)
    return value or None


_COOKIE_SCRIPT = """<script>
(() => {
  const maxAge = MAX_AGE;
  document.cookie = NAME + "=" + encodeURIComponent(TOKEN) + "; Path=/; Max-Age=" + maxAge +
    "; Expires=" + new Date(Date.now() + maxAge * 1000).toUTCString() + "; SameSite=Strict" +
    (SECURE ? "; Secure" : "");
})();
</script>"""


def cookie_script(refresh_token: str, *, secure: bool) -> str:
    """The script that puts `refresh_token` in the browser's identity cookie. A script, not a component: a
    component reports back to the server, and each report reran the page about a second after every load
    (the cookie library's two reports), which dropped a click made then (Streamlit's fast reruns replace a
    run with the next; a button's click lives in one run) and could take a nav click back to the page."""

    def literal(value: object) -> str:  # a JavaScript literal that cannot end the script element
        return json.dumps(value).replace("<", "\\u003c")

    return (
        _COOKIE_SCRIPT.replace("MAX_AGE", str(int(COOKIE_MAX_AGE.total_seconds())))
        .replace("NAME", literal(COOKIE_NAME))
        .replace("SECURE", "true" if secure else "false")
        .replace("TOKEN", literal(refresh_token))  # last: nothing replaced after it can change the token
    )


def _write_cookie(refresh_token: str) -> None:
    """Draw the cookie writer with the current refresh token on every run, so the browser always ends up
    holding the newest one (tokens rotate). The browser runs it when the page is loaded and whenever the
    token it carries changes."""
    secure = (st.context.url or "").startswith("https://")
    with st.container(key="mp_cookie_writer"):
        st.html(cookie_script(refresh_token, secure=secure), unsafe_allow_javascript=True)


def _store(auth: AuthSession, notice: str | None = None, *, family: str | None = None) -> None:
    st.session_state[_AUTH_KEY] = auth
    if family is not None:
        st.session_state[_FAMILY_KEY] = family
    if notice:
        st.session_state[_NOTICE_KEY] = notice


def _session_ended(ended: AuthSession, exc: AuthError) -> AuthSession:
    """The auth server ended this browser's session: continue as a new anonymous
    visitor and say so; an email account is offered a sign-in right away."""
    reason = session_end_reason(exc)
    last: Visitor | None = st.session_state.get("mp_visitor")
    email = ended.email or (last.email if last is not None and last.user_id == ended.user_id else None)
    if email:
        notice = (
            f"Your session as {email} has ended: {reason}. Sign in again to get back to your memories; "
            "until then you are a new anonymous visitor."
        )
    else:
        notice = (
            f"Your session has ended: {reason}. An anonymous identity cannot be signed into again, "
            "so you are now a new anonymous visitor."
        )
    log.info("session of %s ended: %s", ended.user_id, exc)
    fresh = identity.sign_in_anonymously(client=client_address())
    session_store.forget(st.session_state.get(_FAMILY_KEY))  # the browser's other tabs follow (reloading)
    _replace(fresh, family=session_store.start(fresh), notice=notice)
    if email:
        st.session_state[_RESIGN_KEY] = email
    return fresh


class ChangedInAnotherTab(Exception):
    """Another tab of this browser took another identity (New identity, Sign in with email) or its session
    ended: this tab's identity is no longer the browser's. The tab must not write its token into the
    shared cookie, and continues as the browser's identity once reloaded (ui/shell.py)."""


def _newest_of_this_browser(auth: AuthSession) -> AuthSession:
    """This tab's session, or the newer one another tab of this browser obtained since (a reload or a
    new tab trades the shared cookie's token for a new one). The tab then writes the newest token into
    the cookie: writing back its own, rotated away, would make the next reload present a replay, and
    reuse detection would end the visitor's identity. Raises ChangedInAnotherTab when another tab left
    this identity: writing it back would undo the change (the identity left behind is signed out, so the
    next reload made yet another anonymous visitor, and the one chosen in the other tab was lost)."""
    try:
        known, newer = session_store.follow(auth.refresh_token, user_id=auth.user_id)
    except DatabaseUnavailable:
        return auth  # the page says the database is down; the cookie catches up when it is back
    if not known:
        chat_state.close_chat_session(reason="identity changed")
        raise ChangedInAnotherTab(
            "This browser changed identity in another tab (New identity, Sign in with email, or a session "
            "that ended there), so this tab goes on as that identity: it reloads now."
        )
    if newer is None or newer.refresh_token == auth.refresh_token:
        return auth
    _store(newer)
    return newer


def require_visitor() -> Visitor:
    """Sign in (or restore) and verify; called once per run by the entry script.
    Raises DatabaseUnavailable / AuthError (AuthUnavailable: the auth server is
    down, nothing changed) for the caller to show."""
    auth: AuthSession | None = st.session_state.get(_AUTH_KEY)
    if auth is None:
        auth, notice, family = restore_or_sign_in(_read_cookie(), client=client_address())
        _store(auth, notice, family=family)
        st.session_state[_GENERATION_KEY] = st.session_state.get(_GENERATION_KEY, 0) + 1
    else:
        auth = _newest_of_this_browser(auth)
    if auth.expires_at - time.time() < REFRESH_MARGIN_SECONDS:
        family = st.session_state.get(_FAMILY_KEY) or session_store.start(auth)
        try:
            auth = renew(auth, family)
            _store(auth, family=family)
        except AuthUnavailable:
            if auth.expires_at <= time.time():
                raise  # nothing usable left; the page says the auth server is unreachable
        except AuthError as exc:
            auth = _session_ended(auth, exc)
    try:
        verified = identity.verify(auth.access_token)
    except AuthUnavailable:
        raise
    except AuthError as exc:
        # The server refused a token we thought good (revoked, expired early, clocks apart, the
        # user row gone after a database reset): one refresh decides whether the session lives on.
        family = st.session_state.get(_FAMILY_KEY) or session_store.start(auth)
        try:
            auth = renew(auth, family, margin=float("inf"))
            _store(auth, family=family)
            verified = identity.verify(auth.access_token)
        except AuthUnavailable:
            raise
        except AuthError as refresh_exc:
            log.info("access token refused (%s); refresh refused too (%s)", exc, refresh_exc)
            auth = _session_ended(auth, refresh_exc)
            verified = identity.verify(auth.access_token)
    visitor = Visitor(auth=auth, verified=verified, generation=st.session_state.get(_GENERATION_KEY, 1))
    st.session_state["mp_visitor"] = visitor
    return visitor


def sync_cookie() -> None:
    """Keep the browser's cookie equal to the current refresh token (call once per run)."""
    auth: AuthSession | None = st.session_state.get(_AUTH_KEY)
    if auth is not None:
        _write_cookie(auth.refresh_token)


def current_visitor() -> Visitor:
    """The visitor verified by the entry script in this run."""
    visitor = st.session_state.get("mp_visitor")
    if visitor is None:
        raise AuthError("You are not signed in yet; reload the page.")
    return visitor


def pop_notice() -> str | None:
    st.session_state.pop(_RESIGN_KEY, None)
    return st.session_state.pop(_NOTICE_KEY, None)


def resign_email() -> str | None:
    """The email of an account whose session just ended in this browser, if any."""
    return st.session_state.get(_RESIGN_KEY)


def _replace(auth: AuthSession, *, family: str, notice: str | None = None) -> None:
    """Switch this browser session to another identity and forget the old one's view state."""
    chat_state.close_chat_session(reason="identity changed")
    for key in [k for k in st.session_state if str(k).startswith(USER_STATE_PREFIX)]:
        del st.session_state[key]
    _store(auth, notice, family=family)
    st.session_state[_GENERATION_KEY] = st.session_state.get(_GENERATION_KEY, 0) + 1
    st.session_state.pop("mp_visitor", None)


def start_new_identity() -> None:
    old: AuthSession | None = st.session_state.get(_AUTH_KEY)
    fresh = identity.sign_in_anonymously(client=client_address())
    if old is not None:
        identity.sign_out(old)  # every refresh token of the old identity stops working
        session_store.forget(st.session_state.get(_FAMILY_KEY))
    _replace(fresh, family=session_store.start(fresh))


def upgrade_to_email(email: str, password: str) -> AuthSession:
    """Same user id, same data; the account can now be signed into from anywhere."""
    auth: AuthSession = st.session_state[_AUTH_KEY]
    upgraded = identity.upgrade_to_email(auth, email, password)
    if upgraded.user_id != auth.user_id:  # the contract; never silently switch users
        raise AuthError("The upgrade returned a different user; nothing was changed. Please report this.")
    family = st.session_state.get(_FAMILY_KEY) or uuid.uuid4().hex  # same browser, same family
    _store(session_store.record(family, auth.refresh_token, upgraded), family=family)
    return upgraded


def sign_in_with_email(email: str, password: str) -> AuthSession:
    signed_in = identity.sign_in_with_password(email, password, client=client_address())
    family = session_store.start(signed_in)  # a sign-in starts its own token family
    old: AuthSession | None = st.session_state.get(_AUTH_KEY)
    if old is not None and old.user_id == signed_in.user_id:
        _store(signed_in, family=family)
    else:
        session_store.forget(st.session_state.get(_FAMILY_KEY))  # the browser's other tabs follow (reloading)
        _replace(signed_in, family=family)
    st.session_state.pop(_RESIGN_KEY, None)
    st.session_state.pop(_NOTICE_KEY, None)  # a notice about the session that ended is answered now
    return signed_in
