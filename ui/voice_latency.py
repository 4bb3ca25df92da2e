"""A voice call's latency per turn as one table, the same on the Voice page (the call so far) and on the
Sessions page (the call's report): the pipeline's stages in the order they happen, every time in ms."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from ui.format import in_ms

# the voice pipeline's stages, in the order they happen in a turn (agent/voice/latency.py LATENCY_METRICS)
VOICE_STAGES = {
    "eou_delay_ms": "End-of-utterance delay",
    "transcription_delay_ms": "Transcription delay",
    "stt_ms": "Speech-to-text",
    "recall_ms": "Memory recall",
    "llm_ttft_ms": "LLM first token",
    "tts_ttfb_ms": "TTS first byte",
    "e2e_ms": "End of speech → first agent audio",
}


def stages_measured(rows: list[dict[str, Any]], summary: dict[str, Any] | None = None) -> list[str]:
    """The stages some turn (or the summary) has a time for, in pipeline order."""
    return [name for name in VOICE_STAGES if any(name in row for row in rows) or name in (summary or {})]


def latency_table(rows: list[dict[str, Any]], stages: list[str]) -> pd.DataFrame:
    """One row per turn, one text column per stage: a stage the turn did not measure (a typed message has no
    speech-to-text) is "—", and every time is in ms, so a column reads down without switching units."""
    return pd.DataFrame([{"Turn": row["turn"], **{VOICE_STAGES[n]: in_ms(row.get(n)) for n in stages}} for row in rows])


def show_latency_table(rows: list[dict[str, Any]], *, key: str, summary: dict[str, Any] | None = None) -> None:
    stages = stages_measured(rows, summary)
    st.dataframe(
        latency_table(rows, stages),
        hide_index=True,
        key=key,
        column_config={VOICE_STAGES[n]: st.column_config.TextColumn(alignment="right") for n in stages},
    )
