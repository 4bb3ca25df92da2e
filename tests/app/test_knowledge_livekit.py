"""The Knowledge page, and the LiveKit panel with core.livekit_tokens (tokens
decoded with livekit.api.TokenVerifier)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import jwt
import pandas as pd
import pytest
from livekit import api

from core import config, doctor, profiles
from core.errors import ConfigurationError, InvalidInput
from core.livekit_tokens import mint_user_token
from tests.support.app import free_port
from tests.support.panels import as_drawn, branch
from ui.sidebar import configuration_checks

LIVEKIT_ENV = {
    "LIVEKIT_URL": "wss://playground-test.livekit.cloud",
    "LIVEKIT_API_KEY": "APItestkey",
    "LIVEKIT_API_SECRET": "test-secret-that-is-long-enough-for-hs256-0123456789",
}


@pytest.fixture
def livekit_settings(monkeypatch):
    for name, value in LIVEKIT_ENV.items():
        monkeypatch.setenv(name, value)
    yield config.reload_settings()
    monkeypatch.undo()
    config.reload_settings()


def _results(at) -> pd.DataFrame:
    """The search's table (ui.retrieval.compact_knowledge_table), its cells read back into numbers."""
    shown = next(t.value for t in at.table if "Similarity" in t.value.columns)
    table = pd.DataFrame({"Title": shown["Document"].map(lambda cell: cell.removeprefix("○ ").rsplit(" · ", 1)[0])})
    table["Category"] = shown["Document"].map(lambda cell: cell.rsplit(" · ", 1)[1])
    table["Match"] = shown["Match"]
    table["Vector rank"], table["Vector RRF"] = zip(*shown["Vector"].map(branch), strict=True)
    table["Text rank"], table["Text RRF"] = zip(*shown["Text"].map(branch), strict=True)
    table["Fused score"] = shown["Fused score"].astype(float)
    table["Similarity"] = shown["Similarity"].astype(float)
    return table


def test_knowledge_search_shows_ranked_documents_with_scores(app):
    at = app("pages/knowledge.py")
    assert not at.exception
    assert any("30 documents" in c.value for c in at.caption)  # browse lists the seeded knowledge base
    at.text_input(key="kb_query").set_value("how long does shipping take?")
    next(b for b in at.button if b.label == "Search" and b.form_id == "knowledge_search_form").click()
    at.run()
    table = _results(at)
    # ranked by the hybrid search (vector + text, fused): cosine similarity is one input, not the order
    assert table["Similarity"].between(-1, 1).all() and table["Similarity"].iloc[0] == table["Similarity"].max()
    assert "ship" in table.iloc[0]["Title"].lower()
    # and why: each branch's rank and the fused score, in fused order, with the weights it ran with
    assert table["Fused score"].is_monotonic_decreasing and (table["Fused score"] > 0).all()
    assert {"Vector rank", "Text rank"} <= set(table.columns)
    assert any("w_vector" in m.value and "k " in m.value for m in at.markdown)
    # a code only the text branch tells apart ("E03" against the E01 article) ranks first, with a text rank
    at.text_input(key="kb_query").set_value("my machine shows E03")
    next(b for b in at.button if b.label == "Search" and b.form_id == "knowledge_search_form").click()
    at.run()
    table = _results(at)
    assert "E03" in table.iloc[0]["Title"] and table.iloc[0]["Text rank"] in ("1", "2")
    assert table.iloc[0]["Match"] in ("words", "words and meaning")
    assert not any(i.value.startswith("Nothing matches") for i in at.info)
    # a question the knowledge base knows nothing about: the nearest documents, said to be only that
    at.text_input(key="kb_query").set_value("how many moons does Jupiter have")
    next(b for b in at.button if b.label == "Search" and b.form_id == "knowledge_search_form").click()
    at.run()
    table = _results(at)
    assert set(table["Match"]) == {"nearest only"}
    assert any(i.value.startswith("Nothing matches “how many moons does Jupiter have”") for i in at.info)
    at.text_input(key="kb_query").set_value("how long does shipping take?")
    # filtering by category only returns that category
    at.selectbox(key="kb_category").set_value("payments")
    next(b for b in at.button if b.label == "Search" and b.form_id == "knowledge_search_form").click()
    at.run()
    table = _results(at)
    assert set(table["Category"]) == {"payments"}
    assert any(c.value.endswith("Searched the payments documents only.") for c in at.caption)
    # nothing in the category chosen does not mean nothing anywhere (found in a fresh-clone walkthrough:
    # "warranty" in shipping said no document shares a word with it)
    at.selectbox(key="kb_category").set_value("shipping")
    at.text_input(key="kb_query").set_value("warranty")
    next(b for b in at.button if b.label == "Search" and b.form_id == "knowledge_search_form").click()
    at.run()
    said = [i.value for i in at.info if i.value.startswith("Nothing")]
    assert said and said[0].startswith("Nothing in the shipping documents matches “warranty”"), said
    # every column in view in half the page: a table whose text wraps, not a grid cut at "Vector ra…"
    assert not any("Similarity" in df.value.columns for df in at.dataframe)


def test_livekit_panel_explains_how_to_configure_when_unset(app):
    at = app("pages/livekit.py")
    assert any("LiveKit is not configured" in i.value for i in at.info)
    assert not [b for b in at.button if b.key == "u_livekit_mint"]


def test_livekit_token_carries_the_verified_user_in_identity_and_dispatch(app, livekit_settings):
    at = app("pages/livekit.py")
    visitor = at.session_state["mp_visitor"]
    # nothing on the page can choose the user id: no text input or query parameter is read
    assert not at.main.text_input
    at.query_params["user_id"] = str(uuid.uuid4())
    at.button(key="u_livekit_mint").click()
    at.run()
    assert not at.exception
    token = at.code[0].value
    claims = api.TokenVerifier(LIVEKIT_ENV["LIVEKIT_API_KEY"], LIVEKIT_ENV["LIVEKIT_API_SECRET"]).verify(token)
    assert claims.identity == str(visitor.user_id)
    assert claims.video.room_join and claims.video.room.startswith("mp-")
    dispatch = list(claims.room_config.agents)
    assert [d.agent_name for d in dispatch] == [livekit_settings.agent_name]
    assert json.loads(dispatch[0].metadata) == {"user_id": str(visitor.user_id)}
    first_room = claims.video.room

    at.button(key="u_livekit_mint").click()  # one room per session: a new token, a new room
    at.run()
    again = api.TokenVerifier(LIVEKIT_ENV["LIVEKIT_API_KEY"], LIVEKIT_ENV["LIVEKIT_API_SECRET"]).verify(
        at.code[0].value
    )
    assert again.video.room != first_room and again.identity == str(visitor.user_id)


def test_the_page_says_when_the_livekit_server_is_out_of_reach(app, monkeypatch):
    """Found in a fresh-clone walkthrough: with LIVEKIT_URL pointing at a server that was not running, the page
    minted tokens and looked ready, while the sidebar's check said the server was not reachable."""
    closed = f"ws://127.0.0.1:{free_port()}"  # nothing listens there: refused at once
    for name, value in {**LIVEKIT_ENV, "LIVEKIT_URL": closed}.items():
        monkeypatch.setenv(name, value)
    settings = config.reload_settings()
    checks = configuration_checks()
    before = checks.report
    try:
        checks.report = doctor.run_checks(settings, depth=doctor.QUICK, request_timeout=5)  # as the sidebar runs them
        assert checks.report.result("livekit").failed  # the real check, against a closed port
        at = app("pages/livekit.py")
        warning = next(as_drawn(w.value) for w in at.warning if "configuration check of LiveKit failed" in w.value)
        assert "not reachable at http://127.0.0.1:" in warning and "nothing can join its room" in warning
        assert [b for b in at.button if b.key == "u_livekit_mint"]  # a token still mints

        passed = doctor.CheckResult("livekit", doctor.OK, "the API answered")
        checks.report.results = [passed if row.name == "livekit" else row for row in checks.report.results]
        at.run()
        assert not [w for w in at.warning if "configuration check of LiveKit" in w.value]
    finally:
        checks.report = before
        monkeypatch.undo()
        config.reload_settings()


def test_the_tokens_expiry_is_shown_in_the_users_time_zone(app, livekit_settings):
    at = app("pages/livekit.py")
    visitor = at.session_state["mp_visitor"]
    profiles.update_profile(visitor.scope, "timezone", "Pacific/Kiritimati")
    at.button(key="u_livekit_mint").click()
    at.run()
    expiry = jwt.decode(at.code[0].value, options={"verify_signature": False})["exp"]  # what LiveKit will enforce
    expires = datetime.fromtimestamp(expiry, UTC).astimezone(ZoneInfo("Pacific/Kiritimati"))
    assert f"valid until {expires:%Y-%m-%d %H:%M} +14." in at.success[0].value, at.success[0].value


def test_mint_user_token_refuses_anything_but_a_verified_user(new_user, livekit_settings):
    user = new_user()
    minted = mint_user_token(user.verified, ttl=timedelta(minutes=5))
    claims = api.TokenVerifier(LIVEKIT_ENV["LIVEKIT_API_KEY"], LIVEKIT_ENV["LIVEKIT_API_SECRET"]).verify(minted.token)
    assert claims.identity == minted.identity == str(user.user_id)
    assert minted.meet_url.startswith("https://meet.livekit.io/custom?liveKitUrl=")
    for forged in (str(user.user_id), user.user_id, {"user_id": str(user.user_id)}):
        with pytest.raises(InvalidInput):
            mint_user_token(forged)
    with pytest.raises(InvalidInput):
        mint_user_token(user.verified, room_name="../other room")
    with pytest.raises(InvalidInput):
        mint_user_token(user.verified, ttl=timedelta(days=3))


def test_mint_user_token_without_livekit_settings_says_what_to_set(new_user):
    with pytest.raises(ConfigurationError, match="LIVEKIT_URL"):
        mint_user_token(new_user().verified)
