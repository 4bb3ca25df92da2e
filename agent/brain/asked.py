"""Whose detail a question asks for, and whether a memory found for it is the answer: "what is my dog's name?"
is not answered by the user's own `name`, "what's my job?" not by the partner's, "what is my favorite food?"
not by `favorite_color` (a shared word made each a match)."""

from __future__ import annotations

import re

from agent.brain.facts import PETS, RELATIONS, TOPIC_SLOTS, search_query, slot_words
from agent.brain.text import stems

# "my dog's name", "my sister's birthday", "my kids' names" (straight or curly apostrophe): whose detail the
# question asks for ("kids", with its s: "kid" did not match the memory that says "kids")
_POSSESSOR = re.compile(r"\bmy\s+([a-z]+(?:\s+[a-z]+)?)(?:'s|\u2019s|(?<=s)'|(?<=s)\u2019)\s", re.I)

# words that ask about every relative (or every pet) at once ("what do you know about my family?")
_FAMILY = {"family", "relatives", "kids", "children", "parents", "siblings", "folks"}
_ALL_PETS = {"pet", "pets", "animal", "animals"}
_PET_WORD = re.compile("(?:" + "|".join(PETS) + ")", re.I)
_CHILDREN = {"kid", "kids", "child", "children"}


def _one_of(asked_word: str, word: str) -> bool:
    """'pet' asked, 'cat' kept ("what's my pet's name?" is answered by `cat_name`); 'kid' asked, 'daughter' kept."""
    if asked_word in _ALL_PETS:
        return bool(_PET_WORD.fullmatch(word))
    return asked_word in _CHILDREN and word in {"son", "daughter", *_CHILDREN}


# one person under two words ("what's my mother's name?" is answered by `mom_name`)
_ALSO_CALLED = {"mother": "mom", "mum": "mom", "father": "dad", "grandmother": "grandma", "grandfather": "grandpa",
                "neighbour": "neighbor", "flatmate": "roommate"}  # fmt: skip


# the animal a pet word names ("corgi" is a dog), so that a cat is not the answer about a dog
_DOGS = ("puppy", "puppies", "retriever", "terrier", "lab", "labrador", "corgi", "poodle", "beagle", "husky",
         "huskies", "dachshund", "spaniel", "shepherd", "bulldog", "pug", "collie", "chihuahua", "greyhound",
         "whippet")  # fmt: skip
_CATS = ("kitten", "kittens", "tabby", "tabbies", "siamese")
_KINDS = {**dict.fromkeys(_DOGS, "dog"), **dict.fromkeys(_CATS, "cat"), "bunny": "rabbit", "bunnies": "rabbit",
          "pony": "horse", "ponies": "horse", "goldfish": "fish"}  # fmt: skip


def _animals(text: str) -> set[str]:
    """The kinds of animal `text` names: 'a corgi called Rex' -> {'dog'} ('pet' names none)."""
    words = (w.lower() for w in re.findall(r"[A-Za-z]+", text))
    return {
        _KINDS.get(w) or _KINDS.get(w.removesuffix("s")) or w.removesuffix("s")
        for w in words
        if _PET_WORD.fullmatch(w) and w not in _ALL_PETS
    }


def _same(word: str, other: str) -> bool:
    return _ALSO_CALLED.get(word, word) == _ALSO_CALLED.get(other, other)


def _owner(slot: str) -> str | None:
    """Whose detail a slot holds when it is not the user's own: 'partner', 'sister_birthday' -> 'sister',
    'dog_name' -> 'dog'; None for the user's ('birthday', 'pet')."""
    words = slot_words(slot)
    relation = next((r for r in RELATIONS if words == r or words.startswith(r + " ")), None)
    if relation:
        return relation
    first, _, rest = words.partition(" ")
    return first if rest and _PET_WORD.fullmatch(first) else None


# what a text says of someone else's detail ("my dog's name is", "your sister's birthday"), and of the user's own
_SOMEONE_ELSES = re.compile(r"\b(?:my|your)\s+[a-z]+(?:\s+[a-z]+)?(?:'s|\u2019s|(?<=s)'|(?<=s)\u2019)\s+(\w+)", re.I)
_OWN = re.compile(r"\b(?:my|your)\s+(\w+)\b(?!['\u2019])", re.I)


def _someone_elses(content: str) -> set[str]:
    return {word.lower() for word in _SOMEONE_ELSES.findall(content)}


def _own(content: str) -> set[str]:
    return {word.lower() for word in _OWN.findall(content)}


def about_what_was_asked(user_text: str, slot: str, content: str) -> bool:
    """False for a memory that does not name whose detail was asked for (or its topic's slots): the word "name"
    in "what is my dog's name?" also matches the user's own `name`, which is not the answer."""
    # with the slots its topic is stored under: "my pet's name" is answered by `dog_name`
    asked = [stems(search_query(m)) for m in _POSSESSOR.findall(user_text or "")]
    have = stems(f"{slot_words(slot)} {content}")
    if not all(stems & have for stems in asked if stems):
        return False
    # "what's my job?" asks about the user: "partner: Sam works as a nurse" is someone else's job, and
    # "when is my birthday?" is not answered by `sister_birthday`, nor "what's my name?" by `dog_name`
    mine = {word.lower() for word in re.findall(r"\bmy\s+(\w+)", user_text or "", re.I)}
    asked_animals, kept_animals = _animals(user_text or ""), _animals(f"{slot_words(slot)} {content}")
    if asked_animals and kept_animals and not asked_animals & kept_animals:
        return False  # "what is my dog called?" or "did I mention a cat?", and "a corgi called Rex"
    if mine & _someone_elses(content) and not mine & _own(content):
        return False  # "what is my name?", and "My dog's name is Biscuit" said in an earlier conversation
    owner = _owner(slot)
    if not mine or owner is None or any(_same(word, owner.split()[0]) or _one_of(word, owner) for word in mine):
        return True
    everyone = _ALL_PETS if _PET_WORD.fullmatch(owner) else _FAMILY
    return bool(mine & {*everyone, owner + "s"})


# words that ask rather than say what is asked about: "did I mention Halfords?" is about Halfords
_ASKING = {"did", "does", "have", "has", "had", "ever", "tell", "told", "mention", "mentioned", "say", "said",
           "remember", "know", "knew", "who", "when", "where", "which", "how", "any", "can", "could", "would",
           "before", "earlier", "ask", "asked"}  # fmt: skip
# slot words that every slot of a kind holds (favorite_color, favorite_drink; dog_name, name)
_EVERY_KIND = {"favorite", "name"}
_MODALS = stems("should shall will might must may")  # "what should you call me?" says what is asked no more


def said_stems(user_text: str) -> set[str]:
    """The stems of what the question is about, in the user's own words (not the words that only ask)."""
    return stems(" ".join(w for w in re.findall(r"[A-Za-z0-9']+", user_text or "") if w.lower() not in _ASKING))


def on_the_topic(user_text: str, slot: str, content: str) -> bool:
    """For a question that names no slot: when it has a topic (facts.TOPIC_SLOTS: "order" is about drinks and
    coffee), a memory answers only if it shares a word the user said or one of the topic's own words.
    "favorite" and "name" do not count while the topic has other words: every favorite_* slot holds
    "favorite", so "what did I order?" (favorite drink, usual, coffee) is not answered by favorite_color."""
    topics = [words for pattern, words in TOPIC_SLOTS if pattern.search(user_text or "")]
    if not topics:
        return True
    topic_words = set(" ".join(topics).split())
    own = stems(" ".join(topic_words - _EVERY_KIND)) or stems(" ".join(topic_words))
    said, every = said_stems(user_text), stems(" ".join(_EVERY_KIND))
    shared = stems(f"{slot_words(slot)} {content}") & (own | said)
    # "name" alone, while the question says what it is the name of: "what was the name of the trail I hiked?"
    # was answered "You told me your name is Dana" (the words that named the topic, "call", say nothing more)
    named = stems(" ".join(m[0] for pattern, _ in TOPIC_SLOTS for m in pattern.finditer(user_text or "")))
    return bool(shared) and not (shared <= every and said - every - named - _MODALS)


def _another_of_its_kind(asked_slot: str | None, slot: str) -> bool:
    """True when the question named a slot and this memory is the same kind of detail about something else:
    `favorite_color` for "what is my favorite food?", `cat_name` for "what is my dog called?". The shared word
    ("favorite", "name") makes it a text match, and it is not the answer."""
    if not asked_slot or asked_slot == slot:
        return False
    asked, other = asked_slot.split("_"), slot.split("_")
    if len(asked) != len(other) or len(asked) < 2:
        return False
    differ = [(a, b) for a, b in zip(asked, other, strict=True) if a != b]
    return len(differ) == 1 and not _one_of(*differ[0])


def answers_the_question(user_text: str, asked_slot: str | None, slot: str, content: str, *, word_match: bool) -> bool:
    """Whether a memory found by a search (or put into context by the per-turn recall) answers the question;
    `asked_slot`: the slot the question named (its recall_detail), if any. When that slot is not kept, only a
    memory sharing the question's words (`word_match`) can be the answer: every short memory is "near" a short
    question in meaning. The nearest of all counted too until 2026-12-07, and "where do I live?", its home city
    just forgotten, was answered "You told me you're 34 years old" (no scored question needed it). A question
    that names no slot is answered by a memory on its topic (`on_the_topic`)."""
    if not about_what_was_asked(user_text, slot, content) or _another_of_its_kind(asked_slot, slot):
        return False
    if not asked_slot:
        return on_the_topic(user_text, slot, content)
    return word_match


def shares_words(user_text: str, slot: str, content: str) -> bool:
    return bool(stems(search_query(user_text)) & stems(f"{slot_words(slot)} {content}"))
