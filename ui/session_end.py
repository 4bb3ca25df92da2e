"""What a session's end did that its conversation never showed: the memories the fact extraction wrote once it
ended (agent/extraction.py), or why that extraction failed. The Chat and Voice pages say it under their
"ended" notice, with the way to the Memories page, where each can be seen, edited or deleted."""

from __future__ import annotations

from typing import Any

import streamlit as st

from ui.format import clip, code_span, literal
from ui.report_view import extraction_failure, remembered_at_the_end


def after_session_lines(report: dict[str, Any] | None) -> list[str]:
    """Markdown lines, one per memory written at the end, or one saying why none could be (empty: nothing)."""
    lines = []
    for memory in remembered_at_the_end(report):
        was = memory.get("previous_content")
        lines.append(
            f"{code_span(memory.get('memory_type') or '')} {literal(clip(memory.get('content'), 120))}"
            + (f" (was {literal(clip(was, 60))})" if memory.get("action") == "updated" and was else "")
        )
    failure = extraction_failure(report)
    if failure:
        lines.append(f":orange[Nothing more could be picked out of it: {literal(clip(failure, 200))}]")
    return lines


def show_after_session(lines: list[str]) -> None:
    if not lines:
        return
    written = sum(1 for line in lines if not line.startswith(":orange["))
    lead = f"**Remembered when it ended**, from what you said ({written}):" if written else "**When it ended:**"
    st.markdown(":material/neurology: " + lead + "  \n" + "  \n".join(f"· {line}" for line in lines))
    if written:
        st.page_link("pages/memories.py", label="See, edit or delete them on Memories", icon=":material/neurology:")
