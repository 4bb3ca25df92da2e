"""Text clean-up the brain's fact parser, intent rules and replies share."""

from __future__ import annotations

import re

STOPWORDS = {
    "a", "an", "the", "my", "me", "i", "is", "are", "was", "to", "of", "and", "or", "in", "on", "at", "for",
    "that", "this", "it", "be", "do", "you", "your", "what", "please", "about", "with", "from", "by", "just",
    "really", "so", "very", "too", "also", "now", "again", "still", "am", "i'm", "im", "we", "our", "us",
}  # fmt: skip


def clean(text: str) -> str:
    """Typographic quotes made plain, British spellings made American, and what speech-to-text mangles."""
    text = (text or "").replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    text = re.sub(r"\bfavourite\b", "favorite", text, flags=re.IGNORECASE)
    text = re.sub(r"\bcolour\b", "color", text, flags=re.IGNORECASE)
    # speech-to-text writes "my favorite color's teal", and Whisper tiny often "my favorite colors teal"
    text = re.sub(
        r"\b(my (?:favorite|usual) [a-z]+?)(?:'s|s) (?!(?:are|were|is|was|include|and)\b)(?=[a-z0-9])",
        r"\1 is ",
        text,
        flags=re.IGNORECASE,
    )
    return re.sub(r"\s+", " ", text).strip()


def strip_end(text: str) -> str:
    """Without trailing politeness ("..., please", "thanks") and punctuation."""
    text = re.sub(r"\s*(,?\s*(please|thanks|thank you|ok|okay))+[.!?]*$", "", text.strip(), flags=re.IGNORECASE)
    return text.strip().strip(" .!?;:,\"'")


def content_words(text: str) -> list[str]:
    """The lower-cased words of `text` that carry meaning (no stopwords)."""
    return [word for word in re.findall(r"[a-z0-9]+", text.lower()) if word not in STOPWORDS]
