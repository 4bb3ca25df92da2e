"""Reading the side panel's compact retrieval table (ui.retrieval.compact_memory_table) back into numbers."""

from __future__ import annotations

import re

import pandas as pd

_BRANCH = re.compile(r"^#(?P<rank>\d+) · (?P<rrf>\d+\.\d+)$")


def as_drawn(cell: str) -> str:
    """A text cell as the browser shows it: st.table draws Markdown, and the page escapes what users wrote
    (ui.format.literal), so the backslashes and word joiners are not part of the text."""
    return re.sub(r"\\(.)", r"\1", cell).replace("\u2060", "")


def branch(cell: str) -> tuple[str, float]:
    """'#1 · 0.01148' -> ('1', 0.01148); '—' -> ('—', 0.0)."""
    match = _BRANCH.match(cell.strip())
    return (match.group("rank"), float(match.group("rrf"))) if match else ("—", 0.0)


def expand(table: pd.DataFrame) -> pd.DataFrame:
    """The compact table with the full table's columns: Slot (for a turn: when and who), Vector rank, Text rank,
    Vector RRF, Text RRF."""
    out = table.copy()
    for column in ("Said", "Memory", "Document"):
        if column in out:
            out[column] = out[column].map(as_drawn)
    out["Fused score"] = out["Fused score"].astype(float)
    text = "Said" if "Said" in out else "Memory"  # past turns: "2026-11-16 user: …"
    out["Slot"] = out[text].map(lambda text: text.removeprefix("★ ").removeprefix("○ ").split(": ", 1)[0])
    out["Vector rank"], out["Vector RRF"] = zip(*out["Vector"].map(branch), strict=True)
    out["Text rank"], out["Text RRF"] = zip(*out["Text"].map(branch), strict=True)
    return out
