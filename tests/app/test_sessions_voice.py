"""The Sessions page shows a voice call's per-turn latency (the `voice` part of
the report that agent/voice/local_call.py writes)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

from agent import events, reports
from core import sessions
from core.db import Scope
from ui.report_view import read_report


def _voice_report(session_id: str) -> dict:
    rows = [
        {
            "turn": 1,
            "eou_delay_ms": 512.0,
            "transcription_delay_ms": 433.0,
            "stt_ms": 641.5,
            "recall_ms": 27.0,
            "llm_ttft_ms": 3.5,
            "tts_ttfb_ms": 287.0,
            "e2e_ms": 1187.0,
        },
        {"turn": 2, "eou_delay_ms": 604.0, "stt_ms": 702.0, "llm_ttft_ms": 4.0, "tts_ttfb_ms": 301.0, "e2e_ms": 1333.0},
        {"turn": 3, "llm_ttft_ms": 2.0},  # typed during the call: no speech stages
    ]
    summary = {
        "eou_delay_ms": {"count": 2, "p50": 558.0, "max": 604.0},
        "stt_ms": {"count": 2, "p50": 671.8, "max": 702.0},
        "llm_ttft_ms": {"count": 3, "p50": 3.5, "max": 4.0},
        "tts_ttfb_ms": {"count": 2, "p50": 294.0, "max": 301.0},
        "e2e_ms": {"count": 2, "p50": 1260.0, "max": 1333.0},
    }
    said = ["my favorite color is teal", "what is my favorite color", "where is order 1001"]
    published = [
        events.stamped(
            events.transcript("user", text), ts=1000.0 + turn, session_id=session_id, turn=turn, seq=turn - 1
        )
        for turn, text in enumerate(said, start=1)
    ]
    section = reports.playground_section(
        session_id=session_id,
        user_id=uuid.uuid4(),
        mode="voice",
        events=published,
        started_at=1000.0,
        ended_at=1060.0,
        memories_written=[],
    )
    return {"playground": section, "voice": {"pipeline": "local", "turn_latency_ms": rows, "latency_summary": summary}}


def test_report_view_reads_voice_latency_and_ignores_junk():
    view = read_report(_voice_report("voice-x"))
    assert next(line["text"] for line in view.transcript) == "my favorite color is teal" and view.user_turns == 3
    assert [row["turn"] for row in view.voice_latency] == [1, 2, 3]
    assert view.voice_latency[0]["stt_ms"] == 641.5 and "stt_ms" not in view.voice_latency[2]
    assert view.voice_latency_summary["e2e_ms"] == {"count": 2.0, "p50": 1260.0, "max": 1333.0}
    junk = read_report(
        {
            "voice": {
                "turn_latency_ms": [None, {"turn": "x"}, {"turn": 4, "stt_ms": "slow"}],
                "latency_summary": ["nope"],
            }
        }
    )
    assert junk.voice_latency == [] and junk.voice_latency_summary == {}
    assert read_report({"voice": "broken"}).voice_latency == []


def test_sessions_page_shows_per_turn_voice_latency(app):
    at = app()
    visitor = at.session_state["mp_visitor"]
    session_id = f"voice-{uuid.uuid4().hex[:16]}"
    now = datetime.now(UTC)
    sessions.save_report(
        Scope.service(visitor.user_id),
        session_id,
        _voice_report(session_id),
        started_at=now - timedelta(seconds=60),
        ended_at=now,
    )

    at.switch_page("pages/sessions.py")
    at.run()
    assert not at.exception, at.exception
    assert at.selectbox(key="u_sessions_pick").value == session_id
    assert any("Voice latency per turn" in m.value for m in at.markdown)

    table = next(df.value for df in at.dataframe if "End of speech → first agent audio" in df.value.columns)
    assert list(table["Turn"]) == [1, 2, 3]
    first = table[table["Turn"] == 1].iloc[0]
    assert first["End-of-utterance delay"] == "512 ms"
    assert first["Speech-to-text"] == "642 ms"
    assert first["LLM first token"] == "3.5 ms"
    assert first["TTS first byte"] == "287 ms"
    assert first["End of speech → first agent audio"] == "1,187 ms"  # every column in ms, not "1.19 s" beside "642 ms"
    typed = table[table["Turn"] == 3].iloc[0]
    assert typed["LLM first token"] == "2.0 ms" and typed["Speech-to-text"] == "—"

    summary = next(df.value for df in at.dataframe if "Median (ms)" in df.value.columns).set_index("Stage")
    assert summary.loc["End of speech → first agent audio", "Median (ms)"] == pytest.approx(1260.0)
    assert summary.loc["Speech-to-text", "Max (ms)"] == pytest.approx(702.0)
    assert next(iter(summary.index)) == "End-of-utterance delay"  # in pipeline order


def _open_voice_session(app):
    at = app()
    visitor = at.session_state["mp_visitor"]
    session_id = f"voice-{uuid.uuid4().hex[:16]}"
    sessions.save_report(Scope.service(visitor.user_id), session_id, _voice_report(session_id))
    at.switch_page("pages/sessions.py")
    at.run()
    assert not at.exception, at.exception
    return at


def _charts(at):
    """Each Altair chart on the page: its Vega-Lite spec and its data (Streamlit sends the data apart)."""
    for chart in at.get("vega_lite_chart"):
        proto = chart.proto
        datasets = [convert_arrow_bytes_to_pandas_df(named.data.data) for named in proto.datasets]
        data = datasets[0] if datasets else convert_arrow_bytes_to_pandas_df(proto.data.data)
        yield json.loads(proto.spec), data


def test_a_stage_a_turn_did_not_measure_reads_as_a_dash_as_elsewhere_not_none(app):
    """A fresh-clone run showed "None" in turn 2's Memory recall, LLM first token, TTS first byte and end of
    speech cells, where the page's other tables (and the Voice page's latency table) say "—"."""
    at = _open_voice_session(app)
    table = next(df.value for df in at.dataframe if "End of speech → first agent audio" in df.value.columns)
    table = table.set_index("Turn")
    assert table.loc[2, "Memory recall"] == "—" and table.loc[2, "Transcription delay"] == "—"
    assert table.loc[3, "Speech-to-text"] == "—" and table.loc[3, "End of speech → first agent audio"] == "—"
    # measured ones in ms, however long (ui.format.in_ms): a column that switched to "1.33 s" read wrong
    assert table.loc[1, "Memory recall"] == "27 ms" and table.loc[1, "LLM first token"] == "3.5 ms"
    assert table.loc[2, "End of speech → first agent audio"] == "1,333 ms"


def test_the_voice_latency_chart_draws_each_measured_stage_per_turn_with_its_whole_name(app):
    """The chart was a line per stage, 220 px high with a three-column legend under it: the legend took the
    height, leaving a flat plot without y ticks, and cut "End of speech → first age…". Now a bar per stage
    in each turn, the legend beside the plot with its labels whole."""
    at = _open_voice_session(app)
    stage = "End of speech → first agent audio"
    spec, data = next((spec, data) for spec, data in _charts(at) if "stage" in data and stage in set(data["stage"]))
    assert spec["mark"]["type"] == "bar"
    encoding = spec["encoding"]
    assert encoding["x"]["field"] == "turn_label" and encoding["xOffset"]["field"] == "stage"
    assert encoding["x"]["sort"] == ["1", "2", "3"]
    assert encoding["y"] == {"field": "value", "type": "quantitative", "title": "milliseconds"}
    legend = encoding["color"]["legend"]
    assert legend["orient"] == "right" and legend["labelLimit"] == 0  # beside the plot: no height taken, no cut
    # the stages in the pipeline's order
    assert encoding["color"]["scale"]["domain"][0] == "End-of-utterance delay"
    assert encoding["color"]["scale"]["domain"][-1] == stage
    # one bar per measured value (7 + 5 + 1), none for what was not measured
    assert len(data) == 13 and not data["value"].isna().any()
    assert set(data[data["turn"] == 3]["stage"]) == {"LLM first token"}
    first = data[data["turn"] == 1].set_index("stage")["value"]
    assert first["Speech-to-text"] == 641.5 and first[stage] == 1187.0


def test_a_text_session_has_no_voice_latency_section(app):
    at = app()
    visitor = at.session_state["mp_visitor"]
    report = _voice_report("text-x")
    del report["voice"]
    sessions.save_report(Scope.service(visitor.user_id), f"text-{uuid.uuid4().hex[:16]}", report)
    at.switch_page("pages/sessions.py")
    at.run()
    assert not at.exception, at.exception
    assert not any("Voice latency per turn" in m.value for m in at.markdown)
    assert not any("Median (ms)" in df.value.columns for df in at.dataframe)


def _open_text_session(at, visitor, session_id: str, published: list) -> None:
    """Save a text session's report made of `published` events, and open it on the Sessions page."""
    section = reports.playground_section(
        session_id=session_id,
        user_id=visitor.user_id,
        mode="text",
        events=published,
        started_at=1000.0,
        ended_at=1060.0,
        memories_written=[],
    )
    sessions.save_report(Scope.service(visitor.user_id), session_id, {"playground": section})
    at.switch_page("pages/sessions.py")
    at.run()
    assert not at.exception, at.exception


def test_the_median_timings_add_up_a_turns_llm_calls_as_its_chart_does(app):
    """ "LLM total 38 ms · LLM first token 43 ms": the median of single LLM calls (a turn with tools makes
    several) came out below the median first token. Each turn's calls are added up first."""
    at = app()
    visitor = at.session_state["mp_visitor"]
    session_id = f"text-{uuid.uuid4().hex[:16]}"
    # (each LLM call, each reply's first token)
    timings = {1: ([20.0, 25.0], [15.0, 50.0]), 2: ([40.0], [30.0]), 3: ([10.0, 12.0], [8.0])}
    published = []
    for turn, (calls, firsts) in timings.items():
        said = [events.transcript("user", f"question {turn}")]
        said += [events.metric("llm_ttft_ms", first) for first in firsts]
        said += [events.metric("llm_duration_ms", value) for value in calls]
        published += [
            events.stamped(fields, ts=1000.0 + turn, session_id=session_id, turn=turn, seq=len(published) + n)
            for n, fields in enumerate(said)
        ]
    _open_text_session(at, visitor, session_id, published)
    caption = next(c.value for c in at.caption if c.value.startswith("Median per turn: "))
    # per turn the calls add up to 45, 40 and 22 ms: median 40 (single calls: 20 ms); a turn's first token is
    # its first reply's (15, 30, 8: median 15), as the chat panel and the voice table keep it (added up: 30)
    assert "LLM total (every call of the turn) 40 ms" in caption and "LLM first token 15 ms" in caption


def test_the_latency_chart_calls_turn_0_the_greeting(app):
    """Found in a fresh-clone walkthrough: the chart's first tick was "turn 0" (the agent's greeting), while
    the Turns count and the transcript number the visitor's turns from 1."""
    at = app()
    visitor = at.session_state["mp_visitor"]
    session_id = f"text-{uuid.uuid4().hex[:16]}"
    published = [
        events.stamped(events.metric("tts_ttfb_ms", 310.0), ts=1000.0, session_id=session_id, turn=0, seq=0),
        events.stamped(events.transcript("user", "hi"), ts=1001.0, session_id=session_id, turn=1, seq=1),
        events.stamped(events.metric("llm_ttft_ms", 12.0), ts=1002.0, session_id=session_id, turn=1, seq=2),
        events.stamped(events.metric("llm_ttft_ms", 9.0), ts=1003.0, session_id=session_id, turn=2, seq=3),
    ]
    _open_text_session(at, visitor, session_id, published)
    spec, data = next((spec, data) for spec, data in _charts(at) if "metric" in data)
    assert spec["encoding"]["x"]["sort"] == ["greeting", "1", "2"]
    # the legend under the plot has a line a timing: the chart grows with it, the plot keeps its height
    assert spec["height"] == 240 + 20 * 2  # pages/sessions.py PLOT_HEIGHT + LEGEND_LINE a timing (TTS, LLM)
    assert list(data.sort_values("turn")["turn_label"]) == ["greeting", "1", "2"]
