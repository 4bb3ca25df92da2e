"""The sidebar's "Running on": every part of the configuration with its live check
(core.doctor), run in the background so a page never waits for it, with Re-check
and Full check buttons. AppTest of the real entry point, then the real app in
Chromium with an LLM endpoint that is down and then comes up."""

from __future__ import annotations

import re
import time

import pytest

from core import ctranslate2_cpu, doctor
from core.config import get_settings
from tests.support.app import start_streamlit, stop_streamlit
from tests.support.browser import send, wait_for_app
from tests.support.openai_standin import OpenAIStandIn
from ui import sidebar

ROW_TITLES = ["Database", "Auth", "Embeddings", "LLM", "STT", "TTS", "LiveKit"]


def sidebar_rows(at) -> str:
    block = next(m.value for m in at.sidebar.markdown if "**Database**" in m.value)
    return block


def sidebar_captions(at) -> list[str]:
    return [c.value for c in at.sidebar.caption]


def test_running_on_shows_every_check_without_waiting_for_it(app):
    sidebar.configuration_checks.clear()  # a fresh runner: this process may have one from other tests
    at = app()
    assert not at.exception
    rows = sidebar_rows(at)
    for title in ROW_TITLES:
        assert f"**{title}**" in rows
    assert "Offline demo brain (rule-based)" in rows and "PostgreSQL" in rows

    runner = sidebar.configuration_checks()
    report = runner.wait(180)
    assert report is not None and report.depth == doctor.QUICK
    at.run()
    rows = sidebar_rows(at)
    lines = {title: next(line for line in rows.split("\n") if f"**{title}**" in line) for title in ROW_TITLES}
    for title in ("Database", "Auth", "Embeddings", "STT", "TTS"):
        assert lines[title].startswith(":green[:material/check_circle:]"), lines[title]
    for title in ("LLM", "LiveKit"):
        assert lines[title].startswith(":gray[:material/do_not_disturb_on:]"), lines[title]
    assert re.search(r"PostgreSQL 18\.\d+ \(embedded\)", lines["Database"])
    assert any(c.startswith("Quick check") and "all configured parts healthy" in c for c in sidebar_captions(at))
    details = [m.value for m in at.sidebar.markdown if "(ok," in m.value or "(skipped," in m.value]
    assert any("**Auth** (ok" in d and "test user deleted" in d for d in details)

    # Full check: what `make doctor` runs, in the background; the rerun after the click returns at once
    full = next(b for b in at.sidebar.button if b.label == "Full check")
    started = time.monotonic()
    full.click().run()
    assert time.monotonic() - started < 30
    assert runner.running or runner.report.depth == doctor.FULL
    assert runner.wait(300).depth == doctor.FULL
    at.run()
    assert any(c.startswith("Full check") and "all configured parts healthy" in c for c in sidebar_captions(at))
    details = " ".join(m.value for m in at.sidebar.markdown)
    weights = ctranslate2_cpu.whisper_compute_type(get_settings().stt_compute_type)
    assert f"Whisper tiny.en (local, {weights})\\: loaded in" in details  # the full check ran the voice models


@pytest.mark.browser
@pytest.mark.slow
def test_a_broken_llm_shows_in_the_sidebar_and_recheck_sees_it_fixed(database_uri, new_browser_page):
    """The app runs with OPENAI_BASE_URL at a server that is down: the LLM row says so and which
    setting to check; once the server is up, Re-check turns the row green without a reload."""
    server = OpenAIStandIn().start()
    env = server.env()
    server.stop()  # keeps its port for the restart below
    process, url = start_streamlit(env)
    try:
        page = new_browser_page()
        page.goto(f"{url}/knowledge")  # a page that does not talk to the LLM
        wait_for_app(page)
        side = page.locator('[data-testid="stSidebar"]')
        side.get_by_text("Fix: check OPENAI_BASE_URL").wait_for(timeout=120_000)
        text = side.inner_text()
        assert "cannot reach http://127.0.0.1" in text
        assert re.search(r"Quick check \d+ s ago: 1 failed", text), text

        server.start()
        side.get_by_role("button", name="Re-check").click()
        side.get_by_text(re.compile(r"Quick check \d+ s ago: all configured parts healthy")).wait_for(timeout=120_000)
        assert "Fix: check OPENAI_BASE_URL" not in side.inner_text()
        assert any(r.path == "/v1/models" for r in server.requests)
        assert server.chat_requests() == []  # the sidebar's check spends no tokens
    finally:
        stop_streamlit(process)
        server.stop()


def test_a_turn_that_contradicts_the_last_check_starts_a_new_one_once(app, monkeypatch):
    """The sidebar said "all configured parts healthy" for minutes after turns had failed (and went on
    saying "failed" after they were answered again): a finished turn that says otherwise of the LLM than the
    last check starts a check, once."""
    from agent.brain import llm as brain_llm
    from tests.app.conftest import settle

    compose = brain_llm.compose_reply

    def breaks(user_text, *args, **kwargs):
        if "explode" in user_text:
            raise RuntimeError("the model fell over")
        return compose(user_text, *args, **kwargs)

    monkeypatch.setattr(brain_llm, "compose_reply", breaks)
    sidebar.configuration_checks.clear()
    at = app()
    runner = sidebar.configuration_checks()
    first = runner.wait(180)
    assert first is not None and not first.result("llm").failed
    at.run()
    assert not runner.running  # an answered greeting agrees with the check: nothing new

    at.chat_input(key="u_chat_input").set_value("where is order 1001? explode")
    at.run()
    settle(at)
    at.run()
    again = runner.wait(180)
    assert again is not None and again.started_at > first.started_at  # the failed turn asked for a check
    at.run()
    assert not runner.running and runner.report is again  # once: the new check is newer than the turn


@pytest.mark.browser
@pytest.mark.slow
def test_the_llm_row_follows_the_turns_a_failed_one_and_an_answered_one_after_it(database_uri, new_browser_page):
    """A walkthrough (2026-12-07): with the LLM gone, the chat said "could not be reached" while the sidebar
    still said "all configured parts healthy"; back up, turns were answered while the row stayed red."""
    server = OpenAIStandIn().start()
    process, url = start_streamlit(server.env())
    try:
        page = new_browser_page()
        page.goto(url)
        wait_for_app(page)
        side = page.locator('[data-testid="stSidebar"]')
        healthy = re.compile(r"Quick check \d+ s ago: all configured parts healthy")
        side.get_by_text(healthy).wait_for(timeout=120_000)
        assert "tool" not in send(page, "hello").lower()

        server.stop()
        assert "could not be reached" in send(page, "where is order 1001?")
        side.get_by_text("Fix: check OPENAI_BASE_URL").wait_for(timeout=60_000)
        assert re.search(r"Quick check \d+ s ago: 1 failed", side.inner_text()), side.inner_text()

        server.start()
        assert "1001" in send(page, "where is order 1001?")
        side.get_by_text(healthy).wait_for(timeout=60_000)
        assert "Fix: check OPENAI_BASE_URL" not in side.inner_text()
    finally:
        stop_streamlit(process)
        server.stop()
