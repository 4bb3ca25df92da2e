"""Text clean-up the brain's fact parser, intent rules and replies share."""

from __future__ import annotations

import re

STOPWORDS = {
    "a", "an", "the", "my", "me", "i", "is", "are", "was", "to", "of", "and", "or", "in", "on", "at", "for",
    "that", "this", "it", "be", "do", "you", "your", "what", "please", "about", "with", "from", "by", "just",
    "really", "so", "very", "too", "also", "now", "again", "still", "am", "i'm", "im", "we", "our", "us",
}  # fmt: skip


def clean(text: str) -> str:
    """Typographic quotes made plain, British spellings made American, what speech-to-text mangles, and
    what formatting a typed message carries (Markdown, HTML tags, one line a sentence)."""
    text = _without_markup(text or "")
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    text = re.sub(r"\bfavourite\b", "favorite", text, flags=re.IGNORECASE)
    text = re.sub(r"\bcolour\b", "color", text, flags=re.IGNORECASE)
    # speech-to-text writes "my favorite color's teal", and Whisper tiny often "my favorite colors teal"
    text = re.sub(
        r"\b(my (?:favorite|usual) [a-z]+?)(?:'s|s) (?!(?:are|were|is|was|include|and)\b)(?=[a-z0-9])",
        r"\1 is ",
        text,
        flags=re.IGNORECASE,
    )
    # a correction says the new value: "my name isn't Priya, it's Priyanka" is "my name is Priyanka" (the name
    # kept was "Not Priya", or a note of the whole sentence)
    text = _CORRECTION.sub(r"\g<what> is \g<new>", text)
    return re.sub(r"\s+", " ", text).strip()


_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+", re.M)
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9]*(?:\s[^<>]{0,80})?/?>")
_EMPHASIS = re.compile(r"(?<![\w*_`])[*_`]{1,3}(?=[^\s*_`])|(?<=[^\s*_`])[*_`]{1,3}(?![\w*_`])")
_LINE_END = re.compile(r"(?<![.!?;:,])[ \t]*\n+[ \s]*")


def _without_markup(text: str) -> str:
    """ "# heading⏎my cat is called `Miso`" as "heading. my cat is called Miso", "my name is <i>Bob</i>" as
    "my name is Bob": the formatting hid the fact from every rule, and the reply promised to find it later."""
    text = _TAG.sub("", _HEADING.sub("", text.replace("\r\n", "\n")))
    text = _EMPHASIS.sub("", text)
    return _LINE_END.sub(". ", text.strip())


_CORRECTION = re.compile(
    r"\b(?P<what>(?:my|our) [\w' -]+?) (?:is not|isn't|was not|wasn't) (?!sure\b)[^,;.!?]+?[,;]? "
    r"(?:it's|it is|it was|but|rather) (?P<new>.+)$",
    re.IGNORECASE,
)
_PAIRS = {")": "(", "]": "[", "}": "{"}
_END_PUNCTUATION = " .!?;:,"


def strip_end(text: str) -> str:
    """Without trailing politeness ("..., please", "thanks") and punctuation, a closing bracket that closes
    nothing included ("my name is Robert'); DROP TABLE ..." names Robert), and without a quote at either end
    that pairs with none ('"flat white" with oat milk' keeps both of its quotes)."""
    text = re.sub(r"\s*(,?\s*(please|thanks|thank you|ok|okay))+[.!?]*$", "", text.strip(), flags=re.IGNORECASE)
    text = _unquoted(text.strip().strip(_END_PUNCTUATION))
    while text and text[-1] in _PAIRS and text.count(_PAIRS[text[-1]]) < text.count(text[-1]):
        text = _unquoted(text[:-1].strip().strip(_END_PUNCTUATION))
    return text


def _unquoted(text: str) -> str:
    """`text` without the quotes at its ends that pair with none inside it, or that quote all of it ('"teal"');
    a quote is an opening one after a space or at the start, a closing one before a space, punctuation or
    the end. Until 2026-12-07 every quote at either end went: '"flat white" with oat milk' lost its first."""
    for quote in "\"'":
        q = re.escape(quote)
        closing = [m.start() for m in re.finditer(q + r"(?=$|[\s.,;:!?)\]])", text) if m.start() > 0]
        opening = [m.start() for m in re.finditer(r"(?:^|(?<=[\s(\[]))" + q, text) if m.start() < len(text) - 1]
        if text.startswith(quote) and closing[:1] == [len(text) - 1]:
            text = text[1:-1]  # all of it quoted
        elif text.startswith(quote) and not closing:
            text = text[1:]
        elif text.endswith(quote) and not opening:
            text = text[:-1]
    return text.strip().strip(_END_PUNCTUATION)


def content_words(text: str) -> list[str]:
    """The lower-cased words of `text` that carry meaning (no stopwords)."""
    return [word for word in re.findall(r"[a-z0-9]+", text.lower()) if word not in STOPWORDS]


# the user's words as the agent says them back: "my home" -> "your home", "I'm" -> "you're"
# fmt: off
_SECOND_PERSON = {
    "i": "you", "me": "you", "my": "your", "mine": "yours", "myself": "yourself", "i'm": "you're",
    "i've": "you've", "i'll": "you'll", "i'd": "you'd", "am": "are", "we": "you", "us": "you", "our": "your",
    "ours": "yours", "we're": "you're", "we've": "you've", "was": "were",
}
# fmt: on
_PERSON_WORD = re.compile(r"\b(?:i'm|i've|i'll|i'd|we're|we've|myself|mine|ours|our|my|me|us|we|i|am|was)\b", re.I)


def second_person(text: str) -> str:
    """'hiking near my home' -> 'hiking near your home'; 'I don't eat meat' -> 'you don't eat meat'.
    "am" and "was" turn only after a turned "I" ("I am" -> "you are"), so "I was" -> "you were"."""
    words = _PERSON_WORD.split(text)
    found = _PERSON_WORD.findall(text)
    out = [words[0]]
    previous = ""
    for word, after in zip(found, words[1:], strict=True):
        lower = word.lower()
        if lower in ("am", "was") and not (previous == "i" and out[-1].strip() == ""):
            turned = word
        else:
            turned = _SECOND_PERSON[lower]
        out.extend([turned, after])
        previous = lower
    return "".join(out)


# words a sentence often begins with that are no name: lower-cased when the sentence is said inside another
# ("I'll remember that last weekend you hiked ..."); any other capitalised word may be a name ("Maya is 7",
# "Monday is my day off") and keeps its capital, as does an acronym ("NASA")
# fmt: off
_OPENERS = {
    "a", "an", "the", "this", "that", "these", "those", "some", "any", "every", "each", "all", "both", "no",
    "most", "many", "much", "few", "several", "another", "one", "two", "three", "his", "her", "their", "its",
    "he", "she", "they", "it", "there", "here", "someone", "somebody", "everyone", "everybody", "nobody",
    "something", "everything", "nothing", "last", "next", "yesterday", "today", "tonight", "tomorrow", "recently",
    "lately", "earlier", "later", "now", "then", "once", "sometimes", "usually", "often", "always", "never",
    "since", "after", "before", "during", "when", "while", "until", "on", "in", "at", "for", "from", "with",
    "without", "by", "about", "over", "under", "between", "to", "of", "around", "through", "and", "but", "or",
    "so", "because", "although", "though", "if", "as", "like", "also", "actually", "just", "still", "only",
    "even", "maybe", "probably", "definitely", "honestly", "apparently", "basically", "back", "growing",
}
# fmt: on


def mid_sentence(text: str) -> str:
    """`text` as said inside another sentence: its first word lower-cased when it is a common opener."""
    first_word = re.match(r"[A-Za-z]*", text).group(0)
    capitalised = first_word[1:] == first_word[1:].lower()  # "Last", not "LAST" (an acronym, or shouted)
    return text[:1].lower() + text[1:] if capitalised and first_word.lower() in _OPENERS else text


_ABBREVIATION = re.compile(r"\b(Co|Inc|Ltd|No|St|Mt|Mr|Mrs|Ms|Dr|Jr|Sr|vs|etc|e\.g|i\.e|P\.O|U\.S)\.", re.I)


# what a person says before a name: "a nurse at St. Mary's", "I saw Dr. Patel" (not "No." or "etc.", which a
# spoken sentence can end with)
TITLE = re.compile(r"\b(St|Mt|Mr|Mrs|Ms|Dr|Jr|Sr|e\.g|i\.e)\.", re.I)


def split_sentences(text: str, abbreviation: re.Pattern = _ABBREVIATION) -> list[str]:
    """Sentences, not cut after an abbreviation ("a nurse at St. Mary's" is one)."""
    protected = abbreviation.sub(lambda m: m.group(0).replace(".", "\x00"), text.strip())
    return [s.replace("\x00", ".") for s in re.split(r"(?<=[.!?])\s+", protected) if s]


def stems(text: str) -> set[str]:
    # crude stemming is enough to match "Canada" with "Canadian", "ship" with "shipping"
    return {w[:4] for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOPWORDS and len(w) > 2}


def best_sentences(query: str, content: str, limit: int = 2) -> str:
    """The `limit` sentences of `content` sharing most stems with `query`, in their order (the first if none),
    and the sentences between them when that makes at most `limit` + 2: "E03 means …" and "If E03 persists
    after descaling, contact support." skipped the two that say what to do first, descaling among them."""
    sentences = split_sentences(content)
    terms = stems(query)
    scored = [(len(terms & stems(sentence)), -index, index) for index, sentence in enumerate(sentences)]
    best = sorted(scored, reverse=True)[:limit]
    chosen = sorted(index for score, _, index in best if score > 0) or [0]
    if chosen[-1] - chosen[0] + 1 <= limit + 2:
        chosen = list(range(chosen[0], chosen[-1] + 1))
    return " ".join(sentences[index] for index in chosen)


def last_words(text: str, length: int = 80) -> str:
    """The end of `text`, at most `length` characters from a word's start, "…" before it when cut: what a
    reply quotes of a long message (quoting all of a 2,000-character one filled a phone's screen)."""
    text = " ".join(text.split())
    if len(text) <= length:
        return text
    end = text[-length:]
    return "…" + (end.split(" ", 1)[1] if " " in end else end)
