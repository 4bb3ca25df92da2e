"""The English rarity the hybrid searches add to a query word's per-user IDF (for reference computations)."""

from __future__ import annotations


def english_rarity(conn, lexemes) -> dict[str, float]:
    """-ln(English frequency) of each lexeme; a lexeme not in the table is as rare as its rarest."""
    known = dict(
        conn.execute(
            "select lexeme, rarity::float8 from public.english_word_rarity where lexeme = any(%s)", (list(lexemes),)
        ).fetchall()
    )
    floor = conn.execute("select max(rarity)::float8 from public.english_word_rarity").fetchone()[0]
    return {x: known.get(x, floor) for x in lexemes}
