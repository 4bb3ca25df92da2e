"""The sidebar: who you are (and how to keep or change that), and what the
playground is running on (embedded or hosted; which database, auth, models and
LiveKit), each part with the live result of core.doctor's check."""

from __future__ import annotations

import logging
import time
from typing import Any

import streamlit as st

from agent import describe_models, warmup
from core import doctor
from core.config import get_settings
from ui import auth, chat_state, erase
from ui.errors import reported
from ui.format import literal
from ui.fragments import timed_fragment
from ui.turns import group_turns

log = logging.getLogger("memory_playground.ui.sidebar")

CHECKS_POLL_SECONDS = 2.0
WARMUP_POLL_SECONDS = 1.0
CHECKS_STALE_SECONDS = 600  # older than this: re-check quietly in the background on the next page load
_STATUS_ICONS = {
    doctor.OK: ":green[:material/check_circle:]",
    doctor.FAILED: ":red[:material/error:]",
    doctor.SKIPPED: ":gray[:material/do_not_disturb_on:]",
}
_PENDING_ICON = ":gray[:material/hourglass_empty:]"
_WARMED_ICONS = {warmup.READY: ":green[:material/check_circle:]", warmup.FAILED: ":orange[:material/error:]"}
# The identity popovers track their open state (keyed, on_change="rerun"). After a success every one of them
# gets a new key (a new generation): the browser may still hold the old popover's "open" and send it with the
# next rerun (the identity cookie's), which reopened it by itself; a new widget starts closed.
_POPOVER_GENERATION = "mp_popover_generation"
_IDENTITY_FLASH = "mp_identity_flash"
# What the last run's messages said. A change of identity restarts the chat, whose page then redraws itself
# as the agent starts: a message popped once showed for a moment (0.3 s) and was gone.
_SAID = "mp_identity_said"


def _succeeded(message: str) -> None:
    """End an identity action: close every popover and say what happened, on the next run."""
    st.session_state[_IDENTITY_FLASH] = message
    _close_popovers()
    st.rerun()


def _close_popovers() -> None:
    st.session_state[_POPOVER_GENERATION] = st.session_state.get(_POPOVER_GENERATION, 0) + 1


def _popover(label: str, key: str, icon: str, *, typed_key: str | None = None):
    """`typed_key`: a confirmation typed in it, which closing it forgets (closing is cancelling)."""
    generation = st.session_state.get(_POPOVER_GENERATION, 0)
    key = f"{key}_{generation}"
    if typed_key is None:
        return st.popover(label, icon=icon, width="stretch", key=key, on_change="rerun")
    return st.popover(
        label, icon=icon, width="stretch", key=key, on_change=erase.forget_typed_when_closed, args=(key, typed_key)
    )


@st.cache_resource(show_spinner=False)
def configuration_checks() -> doctor.BackgroundChecks:
    """One background runner per app process: every visitor sees the same, latest results."""
    return doctor.BackgroundChecks()


def model_rows() -> list[dict[str, Any]]:
    """[{role, label, offline, demo_brain, detail}] for the LLM, STT, TTS and VAD the agent uses."""
    described = describe_models()
    speech_offline = described.speech_backend == "offline"
    return [
        {
            "role": "LLM",
            "label": described.llm,
            "offline": described.llm_backend == "offline",
            "demo_brain": described.offline_brain,
            "detail": described.help,
        },
        {"role": "STT", "label": described.stt, "offline": speech_offline, "demo_brain": False, "detail": None},
        {"role": "TTS", "label": described.tts, "offline": speech_offline, "demo_brain": False, "detail": None},
        {"role": "VAD", "label": described.vad, "offline": True, "demo_brain": False, "detail": None},
    ]


def render(visitor: auth.Visitor, *, redraw: bool = False) -> None:
    """`redraw`: this run is the page redrawing itself (ui.shell.redraw_page), so the messages stay."""
    with st.sidebar:
        _identity_card(visitor, redraw=redraw)
        st.divider()
        _status()


def _identity_card(visitor: auth.Visitor, *, redraw: bool = False) -> None:
    if erase.FLASH_KEY in st.session_state:  # everything was deleted from a popover
        _close_popovers()
    said = [message for message in (st.session_state.pop(_IDENTITY_FLASH, None), erase.take_flash()) if message]
    if not said and redraw:
        said = st.session_state.get(_SAID, [])
    st.session_state[_SAID] = said
    for message in said:
        st.success(message, icon=":material/check_circle:")
    notice = st.session_state.get("mp_auth_notice")
    if notice:
        st.warning(notice, icon=":material/person_alert:")
        resign_email = auth.resign_email()
        if resign_email:  # the session of an email account ended: sign in again right here
            with st.container(border=True, key="resign_card"):
                sign_in_form(prefill=resign_email, key="resign")
        if st.button("Dismiss", key="dismiss_auth_notice", type="tertiary"):
            auth.pop_notice()
            st.rerun()
    with st.container(border=True, key="identity_card"):
        if visitor.is_anonymous:
            st.markdown(f":material/person: **Visitor `{visitor.short_id}`**")
            st.badge("anonymous", icon=":material/visibility_off:", color="gray")
            st.caption("Kept in this browser by a cookie. Save it with an email to keep your memories anywhere.")
        else:
            st.markdown(f":material/verified_user: **{visitor.email}**")
            st.badge(f"user {visitor.short_id}", icon=":material/badge:", color="green")
        st.caption(f"User id: `{visitor.user_id}`")
        if visitor.pending_email:
            st.info(
                f"Confirm **{visitor.pending_email}**: open the link we emailed to it. Then you can sign in "
                "with it from any browser; until then this browser keeps you signed in.",
                icon=":material/mark_email_unread:",
            )
        if visitor.is_anonymous:
            with _popover("Save my memories with an email", "pop_upgrade", ":material/save:"):
                _upgrade_form()
        with _popover("Sign in with email", "pop_sign_in", ":material/login:"):
            sign_in_form(leaving_anonymous=visitor.is_anonymous)
        with _popover("New identity", "pop_new_identity", ":material/person_add:"):
            _new_identity_form(visitor)
        with _popover(
            "Delete everything about me",
            "pop_delete_everything",
            ":material/delete_forever:",
            typed_key=erase.widget_key("sidebar_erase_phrase"),
        ):
            erase.render_delete_everything(visitor, key="sidebar_erase")


def _upgrade_form() -> None:
    st.markdown("Keep the **same user id** and everything remembered, and sign in with it from any browser.")
    with st.form("upgrade_form", clear_on_submit=False, border=False):
        email = st.text_input("Email", key="upgrade_email", autocomplete="email")
        password = st.text_input(
            "Password (8+ characters)", type="password", key="upgrade_password", autocomplete="new-password"
        )
        submitted = st.form_submit_button("Save with this email", type="primary")
    if submitted:
        with reported():
            upgraded = auth.upgrade_to_email(email, password)
            st.session_state.pop("upgrade_password", None)
            if upgraded.pending_email:
                _succeeded(f"Almost done: open the link sent to {upgraded.pending_email} to confirm it.")
            else:
                _succeeded("Saved: this identity can now be signed into with your email.")


def sign_in_form(*, prefill: str | None = None, key: str = "sign_in", leaving_anonymous: bool = False) -> None:
    if prefill is None:
        st.markdown("Continue as an account you saved earlier. This browser switches to that identity.")
    if leaving_anonymous:  # as New identity warns: the anonymous visitor cannot be signed into again
        st.warning(
            "This anonymous identity's memories and chats stay with it and cannot be reached again unless you "
            "save it with an email first."
        )
    with st.form(f"{key}_form", clear_on_submit=False, border=False):
        email = st.text_input("Email", value=prefill or "", key=f"{key}_email", autocomplete="email")
        password = st.text_input("Password", type="password", key=f"{key}_password", autocomplete="current-password")
        submitted = st.form_submit_button("Sign in", type="primary")
    if submitted:
        with reported():
            signed_in = auth.sign_in_with_email(email, password)
            st.session_state.pop(f"{key}_password", None)
            _succeeded(f"Signed in as {signed_in.email or email}.")


def _new_identity_form(visitor: auth.Visitor) -> None:
    if visitor.is_anonymous:
        st.warning(
            "You will become a brand-new anonymous visitor. This identity's memories stay with it and "
            "cannot be reached again unless you saved it with an email first."
        )
    else:
        st.info(
            "You will be signed out of this account and continue as a new anonymous visitor. "
            "You can sign in again with your email."
        )
    if st.button("Start as a new visitor", key="confirm_new_identity", type="primary", icon=":material/person_add:"):
        with reported():
            auth.start_new_identity()
            _succeeded("You are now a new anonymous visitor.")


def _status() -> None:
    settings = get_settings()
    st.markdown("**Running on**")
    mode = settings.mode_label
    st.badge(
        f"{mode} mode",
        icon=":material/dns:" if mode == "embedded" else ":material/cloud:",
        color="primary" if mode == "embedded" else "violet",
    )
    checks = configuration_checks()
    report = checks.report
    # a turn that showed the LLM otherwise than the last check starts one; else a check too old does
    stale = report is None or time.time() - report.started_at > CHECKS_STALE_SECONDS
    if not recheck_if_a_turn_disagrees() and not checks.running and stale:
        # quick: no tokens spent, no hosted user created, no voice model loaded on a page load
        checks.start(doctor.QUICK)
    # Poll only while a run is in progress; the page itself never waits for a check.
    timed_fragment(run_every=CHECKS_POLL_SECONDS if checks.running else None)(_check_rows)()
    warming = warmup.current()
    if warming is not None and not warming.done:
        timed_fragment(run_every=WARMUP_POLL_SECONDS)(_warmup_rows)()
    llm = next(row for row in model_rows() if row["role"] == "LLM")
    if llm["demo_brain"]:
        st.info(
            "**The LLM is a rule-based demo brain**, not a language model. "
            "It understands a fixed set of requests and calls the real tools.",
            icon=":material/smart_toy:",
        )
        with st.expander("Use a real model"):
            st.markdown(llm["detail"])
            st.code(
                "OPENAI_BASE_URL=http://localhost:11434/v1   # e.g. Ollama\nOPENAI_API_KEY=ollama\nLLM_MODEL=llama3.1",
                language="bash",
            )


def recheck_if_a_turn_disagrees() -> bool:
    """Start a quick check when this visitor's latest finished turn says otherwise of the LLM than the last
    check (`_llm_contradicts`); True when one started. The Chat page asks again after its own run answered a
    turn: the sidebar was drawn before it, and an answer that came within that run drew no page after it, so
    the row said "all configured parts healthy" beside a turn that could not reach the LLM."""
    checks = configuration_checks()
    report = checks.report
    if checks.running or report is None or not _llm_contradicts(report):
        return False
    checks.start(doctor.QUICK)
    return True


def _llm_contradicts(report: doctor.DoctorReport) -> bool:
    """True when this visitor's latest turn, finished after the last check, says otherwise of the LLM: a turn
    failed while the check said healthy, or one was answered while the check said failed. The sidebar kept
    the stale one for up to CHECKS_STALE_SECONDS; a check started now is newer than the turn, so this asks
    once per turn."""
    chat = chat_state.current_chat_session()
    llm = next((result for result in report.results if result.name == "llm"), None)
    if chat is None or llm is None:
        return False
    finished = [t for t in group_turns(chat.events_since(0)[0]) if t.number > 0 and t.done and t.ended_ts]
    if not finished or finished[-1].ended_ts <= report.started_at:
        return False
    return finished[-1].failed != llm.failed


def _labels(report: doctor.DoctorReport | None) -> dict[str, str]:
    """What each part is configured to be, whether or not it has been checked yet."""
    settings = get_settings()
    if settings.embedded_database:
        database = "PostgreSQL (embedded)"
    else:
        database = f"PostgreSQL at {doctor.redacted_dsn(settings.database_url)}"
    if report is not None and report.result("database").details.get("server_version"):
        version = report.result("database").details["server_version"]
        database = database.replace("PostgreSQL", f"PostgreSQL {version}", 1)
    models = {row["role"]: row["label"] for row in model_rows()}
    return {
        "database": database,
        "auth": "Supabase Auth" if settings.hosted_auth else "embedded issuer",
        "embeddings": settings.embedding_model or "all-MiniLM-L6-v2 (bundled)",
        "llm": models.get("LLM", ""),
        "stt": models.get("STT", ""),
        "tts": models.get("TTS", ""),
        "livekit": f"`{settings.livekit_url}` · agent `{settings.agent_name}`"
        if settings.livekit_url
        else "not configured",
    }


def _plain(text: str | None) -> str:
    """Server messages shown as text, not as markdown (brackets, stars, backticks, emoji codes)."""
    return literal((text or "").rstrip(".").replace("[", "(").replace("]", ")"))  # so it can sit inside :red[...]


def _warmup_rows() -> None:
    """What the server is still loading since it started (agent/warmup.py), until it is all loaded."""
    warming = warmup.current()
    if warming is None or warming.done:
        st.caption(":material/bolt: Warmed up: the models, the database and the agent are loaded.")
        return  # polls on (cheaply) until the next page run, which no longer draws this
    lines = [
        f"{_PENDING_ICON if part.pending else _WARMED_ICONS[part.state]} {part.label}" for part in warming.status()
    ]
    with st.container(key="warmup_status"):
        st.caption(
            f":material/progress_activity: **Warming up** ({time.time() - warming.started_at:.0f} s)  \n"
            + "  \n".join(lines)
        )


def _check_rows() -> None:
    checks = configuration_checks()
    report = checks.report
    labels = _labels(report)
    lines = []
    for check in doctor.CHECKS:
        result = report.result(check.name) if report is not None else None
        icon = _STATUS_ICONS[result.status] if result is not None else _PENDING_ICON
        lines.append(f"{icon} **{check.title}** · {labels[check.name]}")
        if result is not None and result.failed:
            lines.append(f"↳ :red[{_plain(result.summary)}.] **Fix:** {_plain(result.fix)}.")
    lines.append(":gray[:material/graphic_eq:] **VAD** · Silero VAD (local)")
    st.markdown("  \n".join(lines))
    if checks.running:
        st.caption(f":material/progress_activity: Checking the configuration ({checks.depth})…")
    elif report is not None:
        age = max(0, int(time.time() - report.started_at))
        ago = f"{age} s" if age < 120 else f"{age // 60} min"
        verdict = "all configured parts healthy" if report.healthy else f"{len(report.failed)} failed"
        st.caption(f"{report.depth.capitalize()} check {ago} ago: {verdict}.")
    elif checks.error:
        st.caption(f":red[The configuration check could not run: {checks.error}.]")
    if report is not None:
        with st.expander("Check details"):
            for result in report.results:
                st.markdown(
                    f"{_STATUS_ICONS[result.status]} **{doctor.TITLES[result.name]}** "
                    f"({result.status}, {result.seconds:.1f} s): {_plain(result.summary)}"
                )
            st.caption(
                "The quick check (automatic) spends no tokens, creates no hosted user and loads no voice "
                "model. The full check is what `make doctor` runs: a completion and a tool call, an "
                "anonymous sign-in, the voice models loaded and run."
            )
    left, right = st.columns(2)
    recheck = left.button(
        "Re-check",
        key="doctor_recheck",
        icon=":material/refresh:",
        disabled=checks.running,
        width="stretch",
        help="Quick check: settings, reachability, credentials, database",
    )
    full = right.button(
        "Full check",
        key="doctor_full_check",
        icon=":material/stethoscope:",
        disabled=checks.running,
        width="stretch",
        help="What `make doctor` checks",
    )
    if recheck or full:
        checks.start(doctor.FULL if full else doctor.QUICK)
        st.rerun()  # a full run, so the fragment polls until the check is done
