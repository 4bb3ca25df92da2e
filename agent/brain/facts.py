"""Facts about the user in what they say: the slot a phrase names, and the facts a statement holds.

Shared by the brain's remember, recall and forget paths and by post-session
extraction (agent/extraction.py), so "where I live", "my address" and "I live
in Denver" all meet in `home_city`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent.brain.names import name_only
from agent.brain.text import TITLE, clean, content_words, mid_sentence, second_person, split_sentences, strip_end

# Phrases people use for a fact -> the slot it is stored under.
# fmt: off
SLOT_SYNONYMS: dict[str, str] = {
    "where i live": "home_city", "where i'm living": "home_city", "where i am living": "home_city",
    "home": "home_city", "home city": "home_city", "city": "home_city", "address": "home_city",
    "home address": "home_city", "hometown": "home_city", "location": "home_city", "where i'm based": "home_city",
    "where i am": "home_city",
    "where i work": "employer", "work": "employer", "workplace": "employer", "employer": "employer",
    "company": "employer", "job": "job", "occupation": "job", "profession": "job", "what i do": "job",
    "what i do for work": "job", "what i do for a living": "job",
    "car": "car", "vehicle": "car", "what i drive": "car", "what car i drive": "car", "ride": "car",
    "allergy": "allergies", "allergies": "allergies", "what i'm allergic to": "allergies",
    "what i am allergic to": "allergies", "that i'm allergic": "allergies",
    "name": "name", "my name": "name", "who i am": "name",
    "favorite colour": "favorite_color", "colour": "favorite_color", "color": "favorite_color",
    "drink": "favorite_drink", "usual drink": "favorite_drink", "coffee order": "favorite_drink",
    "usual order": "favorite_drink", "usual": "favorite_drink", "usual coffee": "favorite_drink",
    "coffee": "favorite_drink", "favorite coffee": "favorite_drink",
    "birthday": "birthday", "birth date": "birthday", "date of birth": "birthday",
    "pet": "pet", "pets": "pet",
    "diet": "diet", "dietary": "diet",
    "what i go by": "name", "what you call me": "name",
    "machine": "machine_owned", "espresso machine": "machine_owned", "coffee machine": "machine_owned",
}
# fmt: on


def slot_for(phrase: str) -> str:
    """'my favorite color' -> 'favorite_color'; 'where I live' -> 'home_city'."""
    phrase = clean(phrase).lower().strip(" ?.!'\"")
    phrase = re.sub(r"^(that|what|the|about)\s+", "", phrase)
    phrase = re.sub(r"^(my|your)\s+", "", phrase)
    phrase = re.sub(r"'s\b", "", phrase)
    phrase = re.sub(r"\s+(is|are|was|were)$", "", phrase).strip()
    if phrase in SLOT_SYNONYMS:
        return SLOT_SYNONYMS[phrase]
    words = content_words(phrase)
    if not words:
        return "note"
    if len(words) > 1 and words[-1] in ("called", "named"):  # "my dog called" is kept as `dog_name`
        words = [*words[:-1], "name"]
    joined = " ".join(words)
    if joined in SLOT_SYNONYMS:
        return SLOT_SYNONYMS[joined]
    return "_".join(words[:4])


# words in a question about the user -> the slot words a memory about it is stored under (the text branch
# matches slot names, so "what should you not cook for me?" finds `diet: vegetarian`)
TOPIC_SLOTS = [
    (
        re.compile(r"\b(?:cook|eat|eats|food|meal|meals|dinner|lunch|breakfast|diet|meat|vegetarian|vegan)\b", re.I),
        "diet dislikes allergies",
    ),
    (re.compile(r"\b(?:pets?|animals?|dog|cat|puppy|kitten)\b", re.I), "pet dog cat"),
    (re.compile(r"\b(?:usual|drink|coffee|order|beverage)\b", re.I), "favorite drink usual coffee"),
    (re.compile(r"\b(?:job|work|living|profession|career|occupation)\b", re.I), "job employer work"),
    (re.compile(r"\b(?:hobby|hobbies|fun|free time|spare time|like to do|enjoy|weekends?)\b", re.I), "likes hobby"),
    (re.compile(r"\b(?:name|call)\b", re.I), "name"),
    (re.compile(r"\b(?:live|living|home|city|based|from)\b", re.I), "home city hometown"),
    (
        re.compile(
            r"\b(?:family|sister|brother|mom|mum|mother|dad|father|wife|husband|partner|son|daughter|kids?|child|"
            r"children)\b",
            re.I,
        ),
        "sister brother mother mom mum father dad wife husband partner son daughter kids",
    ),
]


def search_query(question: str) -> str:
    """The question with the slot words its topic is stored under ('do I have pets?' + 'pet dog cat name')."""
    extra = [slots for pattern, slots in TOPIC_SLOTS if pattern.search(question)]
    return " ".join([question, *extra])


def slot_words(slot: str) -> str:
    return slot.replace("_", " ")


# the user's own names of a kind, not someone's name: "your full name", where `dog_name` is "your dog's name"
_OWN_NAMES = ("full", "first", "last", "middle", "maiden", "given", "family", "legal", "real", "nick")


def slot_phrase(slot: str) -> str:
    """The slot as said after "your": 'dog_name' -> "dog's name", 'favorite_color' -> 'favorite color',
    'daughter_birthday' -> "daughter's birthday" (a relative's or a pet's)."""
    if slot.endswith("_name") and slot != "name" and slot[: -len("_name")] not in _OWN_NAMES:
        return f"{_possessive(slot_words(slot[: -len('_name')]))} name"
    whose, _, what = slot.partition("_")
    if what and (whose in RELATIONS or whose in ("dog", "cat", "pet")):
        return f"{_possessive(whose)} {slot_words(what)}"
    return slot_words(slot)


def _possessive(noun: str) -> str:
    # a plural's is its apostrophe ("kids' names", not "kids's names"); "boss" is one boss ("boss's name")
    return f"{noun}'" if noun.endswith("s") and not noun.endswith("ss") else f"{noun}'s"


# family and friends: "my sister Ana lives in Porto" is kept under `sister` as "Ana lives in Porto"
RELATIONS = (
    "sister", "brother", "mother", "mom", "mum", "father", "dad", "wife", "husband", "partner", "son",
    "daughter", "girlfriend", "boyfriend", "friend", "best friend", "boss", "neighbor", "neighbour", "grandma",
    "grandmother", "grandpa", "grandfather", "aunt", "uncle", "cousin", "roommate", "flatmate", "colleague",
    "kids", "children", "parents",
)  # fmt: skip
PROFESSIONS = (
    "engineer", "developer", "teacher", "nurse", "doctor", "designer", "barista", "student", "manager", "lawyer",
    "chef", "baker", "writer", "artist", "accountant", "scientist", "firefighter", "veterinarian", "pilot",
    "farmer", "programmer",
)  # fmt: skip
# "I'm a software engineer in Toronto": the job, and where (a city) or for whom (an employer)
_JOB_AND_WHERE = re.compile(
    r"^i(?:'m| am) (?:an? )?(?P<job>(?:\w+ )?(?:" + "|".join(PROFESSIONS) + r")) (?P<prep>in|at|for) "
    r"(?P<where>[A-Z][\w'&.-]*(?: [A-Z][\w'&.-]*){0,3})$",
    re.I,
)
# what a pet is called when people say they have, got or adopted one ("a corgi named Biscuit")
PETS = (
    "dogs?", "cats?", "pets?", "rabbits?", "bunny", "bunnies", "parrots?", "hamsters?", "guinea pigs?", "fish",
    "goldfish", "horses?", "ponies", "pony", "puppy", "puppies", "kittens?", "turtles?", "tortoises?", "lizards?",
    "geckos?", "snakes?", "ferrets?", "budgies?", "cockatiels?", "retrievers?", "terriers?", "labs?", "labradors?",
    "corgis?", "poodles?", "beagles?", "huskies", "husky", "dachshunds?", "spaniels?", "shepherds?", "bulldogs?",
    "pugs?", "collies?", "chihuahuas?", "greyhounds?", "whippets?", "tabby", "tabbies", "siamese",
)  # fmt: skip
DIETS = ("vegetarian", "vegan", "pescatarian", "gluten-free", "gluten free", "keto", "kosher", "halal")
NOTE_PREFIX = "note_"  # a statement about the user that fits no known slot keeps its own words


def _with_article(noun: str) -> str:
    """'nurse' -> 'a nurse', 'engineer' -> 'an engineer'; left alone when it already has one or is plural."""
    if re.match(r"^(?:an?|the|my|your)\b", noun, re.I) or noun.endswith("s"):
        return noun
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


def describe_fact(slot: str, content: str) -> str:
    """A fact as a grammatical clause about the user, their words turned to the second person:
    'you live in Denver', 'your dog's name is Pixel', 'you like hiking near your home'."""
    content = second_person(" ".join(content.split()).rstrip("."))  # one line: "- x" or "# y" on a line are Markdown
    # a note or a negation kept in the user's own words ("you don't eat fish"); a slot's value that only begins
    # with "your" is still said with its slot ("you drive your dad's truck", not "your dad's truck")
    if re.match(r"^you\b", content, re.I) or (slot.startswith(NOTE_PREFIX) and re.match(r"^your\b", content, re.I)):
        return content[:1].lower() + content[1:]
    templates = {
        "home_city": "you live in {c}",
        "employer": "you work at {c}",
        "car": "you drive {c}",
        "allergies": "you're allergic to {c}",
        "name": "your name is {c}",
        "pet": "you have {c}",
        "hometown": "you're from {c}",
        "age": "you're {c} years old",
        "birthday": "your birthday is {c}",
        "birthplace": "you were born in {c}",
        "languages_spoken": "you speak {c}",
        "preference": "you prefer {c}",
    }
    if slot in templates:
        return templates[slot].format(c=content)
    if slot == "job":
        return f"you work as {_with_article(content)}"
    if slot == "diet":
        return f"you're {content}" if content.lower() in DIETS else f"your diet is {content}"
    if slot == "likes" or slot.startswith("likes_"):
        return f"you like {content}"
    if slot == "dislikes" or slot.startswith("dislikes_"):
        return f"you don't like {content}"
    if slot.endswith("_name") and slot != "name":
        return f"your {slot_phrase(slot)} is {content}"
    if slot_words(slot) in RELATIONS:
        # kept with its verb ("Ana lives in Porto", "is a doctor") or, from "my sister is Ana", without
        with_verb = re.match(
            r"^(?:[A-Z][\w'-]* )?(?:lives?|works?|is|was|are|plays?|studies|goes|has|likes|loves|"
            r"teaches|runs|moved|just)\b",
            content,
        )
        return f"your {slot_words(slot)} {content}" if with_verb else f"your {slot_words(slot)} is {content}"
    if slot.startswith(NOTE_PREFIX):  # the user's words as they said them ("Maya is 7 and Leo is 4")
        return mid_sentence(content)  # said after "I'll remember that": "last weekend you hiked ..."
    return f"your {slot_phrase(slot)} is {content}"


@dataclass(frozen=True)
class Fact:
    memory_type: str
    content: str
    confidence: float  # how sure the parser is that this is a durable fact about the user


_MONTH = r"january|february|march|april|may|june|july|august|september|october|november|december"
# when a move happened, said after where to ("last month", "in May", "in 2024", "recently"): not the place
_MOVED_WHEN = (
    r"(?: (?:last|this) (?:year|month|week|summer|spring|fall|autumn|winter)| recently| in (?:" + _MONTH + r"|\d{4}))?"
)
_DRINKS = r"(?:coffee|tea|espresso|latte|cappuccino|flat white|americano|cortado|mocha|macchiato|chai|matcha)"
_TAKEN = r"(?:black|white|strong|weak|sweet|unsweetened|decaf|iced|hot|cold|(?:with|without|no) [\w ]+)"
# (pattern, slot or None to take it from the subject `s`, confidence); the first match wins
# fmt: off
_DECLARATIVES: list[tuple[re.Pattern, str | None, float]] = [
    (re.compile(r"^my name is (?P<c>.+)$", re.I), "name", 0.95),
    # "my dog is called Pixel", "my cat's called Luna", "my dog's name is Rex" -> dog_name
    (re.compile(r"^my (?P<s>[\w -]+?)(?:'s| is) (?:called|named) (?P<c>.+)$", re.I), "_name", 0.85),
    (re.compile(r"^my (?P<s>[\w -]+?)'s name is (?P<c>.+)$", re.I), "_name", 0.85),
    (re.compile(r"(?i:^my (?P<s>" + "|".join(RELATIONS) + r"))(?P<c>(?: [A-Z][\w'-]*)? (?i:lives?|works?|is|was|"
                r"plays?|studies|goes|has|likes|loves|teaches|runs|moved|just)\b.*)$"), "_relation", 0.8),
    (re.compile(r"^my (?P<s>[\w' -]+?) (?:is|are|was) (?P<c>.+)$", re.I), None, 0.85),
    # "I just moved to a new apartment in Brooklyn": the place is Brooklyn, not the apartment
    (re.compile(r"^i(?:'ve)? (?:just |recently |finally )?moved (?:in)?to (?:a |an |my |our )?"
                r"(?:new |bigger |smaller )?(?:apartment|place|house|flat|home|condo|studio|loft|room) in "
                r"(?P<c>.+?)" + _MOVED_WHEN + r"$", re.I),
     "home_city", 0.85),
    (re.compile(r"^i(?:'ve)? (?:just |recently |finally )?moved to (?P<c>.+?)" + _MOVED_WHEN + r"$", re.I),
     "home_city", 0.85),
    (re.compile(r"^i (?:live|reside|stay) in (?P<c>.+)$", re.I), "home_city", 0.9),
    (re.compile(r"^i(?:'m| am) (?:based|located) in (?P<c>.+)$", re.I), "home_city", 0.85),
    (re.compile(r"^i(?:'m| am) (?:originally )?from (?P<c>.+?)(?: originally)?$", re.I), "hometown", 0.8),
    (re.compile(r"^i work (?:at|for) (?P<c>.+)$", re.I), "employer", 0.85),
    (re.compile(r"^i work as (?:an? )?(?P<c>.+)$", re.I), "job", 0.85),
    # "I just started a new job as a nurse at St. Mary's", "I've started working as a barista"
    (re.compile(r"^i(?:'ve| have)? (?:just |recently |finally )?(?:started|got|landed|took|accepted) (?:a |my |the )?"
                r"(?:new )?(?:job|position|role) as (?:an? )?(?P<c>.+)$", re.I), "job", 0.85),
    (re.compile(r"^i(?:'ve| have)? (?:just |recently )?started working as (?:an? )?(?P<c>.+)$", re.I), "job", 0.85),
    (re.compile(r"^i(?:'m| am) (?:an? )?(?P<c>(?:\w+ )?(?:" + "|".join(PROFESSIONS) + r"))$", re.I), "job", 0.8),
    (re.compile(r"^i(?:'m| am) (?:severely |very |mildly )?allergic to (?P<c>.+)$", re.I), "allergies", 0.9),
    # "I have a peanut allergy": peanuts are what the user is allergic to ("allergic to peanut allergy" before)
    (re.compile(r"^i have (?:an? )?(?:severe |mild |bad )?(?P<c>[\w -]+?) allerg(?:y|ies)$", re.I), "allergies", 0.85),
    (re.compile(r"^i have (?:an? )?(?:severe |mild |bad )?allerg(?:y|ies) to (?P<c>.+)$", re.I), "allergies", 0.85),
    (re.compile(r"^i have an? (?P<c>.*allergy.*)$", re.I), "allergies", 0.85),
    # with its article, as "my car is a Tesla" is kept: said back "you drive a Subaru Outback"
    (re.compile(r"^i drive (?P<c>.+)$", re.I), "car", 0.85),
    (re.compile(r"^(?:i|we) (?:just |recently |finally )?(?:own|have|'ve got|have got|adopted|rescued|got) "
                r"(?P<c>(?:an?|two|three|four|\d+) (?:[\w-]+ )?(?:" + "|".join(PETS) + r")\b.*)$", re.I), "pet", 0.85),
    (re.compile(r"^i(?:'m| am) (?:an? )?(?P<c>vegetarian|vegan|pescatarian|gluten[- ]free|keto|kosher|halal)$",
                re.I), "diet", 0.85),
    # negations about food are the diet, in the user's own words: "I don't eat meat", "I can't have dairy"; each
    # in a slot of its own (diet_meat), so "I don't drink alcohol" no longer replaced "vegetarian"
    (re.compile(r"^(?P<c>i (?:don't|do not|never|can't|cannot|can not) (?:eat|have|drink) (?P<o>.+))$", re.I),
     "_diet", 0.8),
    (re.compile(r"^i(?:'m| am) (?P<c>lactose intolerant|coeliac|celiac)$", re.I), "diet", 0.8),
    (re.compile(r"^i (?:really )?(?:hate|dislike|can't stand|don't like|do not like) (?P<c>.+)$", re.I), "dislikes",
     0.75),
    # "I was born in Lagos" is a place ("your birthday is Lagos" before); "born in March", "on May 2" a date
    (re.compile(r"^i (?:was )?born (?:on |in (?=(?:" + _MONTH + r"|\d)))(?P<c>.+)$", re.I), "birthday", 0.8),
    (re.compile(r"^i (?:was )?born in (?P<c>.+)$", re.I), "birthplace", 0.8),
    (re.compile(r"^i(?:'m| am) (?P<c>\d{1,3}) years? old$", re.I), "age", 0.8),
    (re.compile(r"^i speak (?P<c>.+)$", re.I), "languages_spoken", 0.8),
    # how the user takes a drink, in their words: "I take my coffee black" is "you take your coffee black" (it kept
    # "black" and said "your favorite drink is black"); "I have my coffee at 7" is not how they take it
    (re.compile(r"^(?P<c>i (?:usually |always |normally |typically )?(?:take|drink|have) my (?:" + _DRINKS + r") "
                r"(?!(?:at|in|on|every|each|before|after|around|by|when|while|during)\b).+)$", re.I),
     "favorite_drink", 0.7),
    (re.compile(r"^i (?:(?:usually|always|normally|typically) (?:drink|order|get|have)|"
                r"drink) (?:an? )?(?P<c>.+?)(?: every (?:day|morning))?$", re.I),
     "favorite_drink", 0.7),
    (re.compile(r"^i (?:really )?(?:love|like|enjoy|adore) (?P<c>.+)$", re.I), "likes", 0.75),
    (re.compile(r"^i prefer (?P<c>.+)$", re.I), "preference", 0.75),
    # inverted: "Teal is my favorite color", "Denver is where I live". Only slot-like subjects, and never a
    # pronoun as the content, so "this is my first time" or "that is my question" stay out.
    (re.compile(r"^(?:an? )?(?P<c>(?!(?:it|this|that|these|those|there|here|what|which|who|he|she|they|we|you|i|my|"
                r"mine)\b)"
                r"[\w'&.,-]+(?: [\w'&.,-]+){0,5}) (?:is|are) (?P<s>my (?:favorite|usual|preferred)(?: [\w' -]+?)?|"
                r"my (?:home|home city|hometown|city|employer|workplace|job|occupation|profession|car|birthday|"
                r"allergy|allergies|diet|pet)|where i (?:live|work|(?:'m|am) based))$", re.I), None, 0.8),
]
# fmt: on


# a question after a comma is not part of the fact ("I live in Denver, what is my name?"); "Dune, Who..." a title
_QUESTION_AFTER = r"(?-i:what|what's|where|where's|when|who|who's|which|how|why|do|does|did|can|could|is|are|will)\b"
_STATEMENT_SPLIT = re.compile(
    r";\s+|,?\s+(?:and|but|also|plus)\s+(?=(?:i|i'm|my|i've)\b)|,\s*(?=(?:i|i'm|my|i've)\b)|"
    r",\s*(?:and\s+)?(?=" + _QUESTION_AFTER + r")|\s+and\s+(?=" + _QUESTION_AFTER + r"[^.!]*\?$)",
    re.I,
)


def split_statements(text: str) -> list[str]:
    """'I live in Boulder and I work at Globex.' -> ['I live in Boulder', 'I work at Globex.'] (also at a comma
    before 'I' or 'my': 'Hi, my name is Ada, I work at Globex')"""
    parts = (part for sentence in split_sentences(text, TITLE) for part in _STATEMENT_SPLIT.split(sentence))
    return [part.strip() for part in parts if part and part.strip()]


# a request to keep the fact, said after it: not part of the fact
_ASKED_TO_KEEP = re.compile(
    r",?\s+(?:so |and )?(?:please )?(?:keep (?:that|this|it) in mind|remember (?:that|this|it)|"
    r"(?:make a )?note (?:of )?(?:that|this|it)|don't forget (?:that|this|it)|for future reference)(?: please)?$",
    re.I,
)


def parse_facts(text: str) -> list[Fact]:
    """Every fact in a message, one per slot (the last mention of a slot wins)."""
    found: dict[str, Fact] = {}
    for part in split_statements(text):
        for fact in _job_and_where(part) or [parse_fact(part)]:
            if fact is not None:
                found.pop(fact.memory_type, None)
                found[fact.memory_type] = fact
    return list(found.values())


def _job_and_where(statement: str) -> list[Fact]:
    match = _JOB_AND_WHERE.match(strip_end(clean(statement)))
    if not match or not match.group("where")[:1].isupper():
        return []
    where = "home_city" if match.group("prep").lower() == "in" else "employer"
    return [Fact("job", match.group("job"), 0.8), Fact(where, match.group("where"), 0.8)]


def parse_fact(statement: str) -> Fact | None:
    """A durable-looking fact in one statement, or None. 'I live in Denver' -> home_city: Denver."""
    text = strip_end(clean(statement))
    text = re.sub(
        r"^(?:(?:also|and|oh|so|well|by the way|btw|fyi|actually|just so you know|no wait|no|wait|sorry|"
        r"correction)[,:!]? +)+",
        "",
        text,
        flags=re.I,
    )
    text = re.sub(r"(?<=\w) (?:now|these days|nowadays)$", "", text, flags=re.I)
    text = _ASKED_TO_KEEP.sub("", text)  # "I'm allergic to shellfish, so please keep that in mind"
    if not text or text.endswith("?"):
        return None
    for pattern, slot, confidence in _DECLARATIVES:
        match = pattern.match(text)
        if not match:
            continue
        content = strip_end(match.group("c"))
        if not content or len(content) > 300:
            return None
        if slot is None:
            subject = match.group("s")
            if re.fullmatch(
                r"(?:latest |last |recent |new )?(?:order|package|parcel|shipment|delivery)s?", subject, re.I
            ) or re.search(r"\d", subject):
                return None  # "my order is late" is a support question, not a fact about the user
            slot = slot_for(subject)
            if re.fullmatch(_DRINKS, subject, re.I) and re.fullmatch(_TAKEN, content, re.I):
                content = f"I take my {subject.lower()} {content}"  # "my coffee is black": how, not which drink
            if slot.removesuffix("_name") in _OWN_NAMES:  # "my full name is Ada Lovelace, call me Ada"
                content = name_only(content)
        elif slot == "name":
            content = name_only(content)
            if not content:
                return None
        elif slot in ("likes", "dislikes"):
            words = content_words(content)
            slot = f"{slot}_" + "_".join(words[:2]) if words else slot
        elif slot == "_diet":
            slot = "_".join(["diet", *[w for w in content_words(match.group("o")) if w != "anymore"][:2]])
        elif slot == "_name":
            slot = slot_for(match.group("s")) + "_name"
        elif slot == "_relation":
            slot = "_".join(match.group("s").lower().split())
            content = strip_end(match.group("c"))
        return Fact(memory_type=slot, content=content, confidence=confidence)
    return None


def forget_target(rest: str) -> str | None:
    """The slot named after 'forget'; "" when none is named; None for 'everything'."""
    rest = strip_end(rest)
    rest = re.sub(
        r"^(?:about|that|what you know about|what you remember about|the fact that|everything about)\s+",
        "",
        rest,
        flags=re.I,
    ).strip()
    if re.fullmatch(r"(?:it|that|this)?\s*", rest, re.I):
        return ""
    if re.fullmatch(
        r"(?:everything|all|all of it|all my (?:memories|data|info|information)|it all|me|"
        r"everything (?:about me|you know|you remember)|all (?:about me|you know))",
        rest,
        re.I,
    ):
        return None
    fact = parse_fact(rest)
    if fact:
        return fact.memory_type
    return slot_for(rest)
