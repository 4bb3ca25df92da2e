"""Generate the long multi-session retrieval set in docs/eval/multisession/ (seeded, deterministic).

    .venv/bin/python docs/eval/make_multisession.py [--seed 20261125] [--out docs/eval/multisession]

Why a second set: on docs/eval/conversations the vector branch alone finds 93% of the evidence in the
top 5, so fusion has nothing left to add, and its balance (vector far ahead of text) is the opposite
of the public long-conversation benchmark (text 0.505, vector 0.365). This set is built the way long
real conversations are hard:

  * every user lives a handful of recurring themes: 6 to 8 hikes, dinners, doctor visits, orders,
    repairs ... each with its own place, person, number and detail, so most turns of a theme look
    alike to an embedding and a question is answered by one detail (a name, a number, a code);
  * the same people (a circle of ten per user) turn up across themes and sessions, in facts and in
    chatter that names them without answering anything ("Nora wants to go hiking again soon");
  * the assistant replies echo the user's names and places without the answer;
  * user turns often carry a second, unrelated sentence (real turns wander);
  * facts change: the gym, the manager, the street, the car are updated later, and the question asks
    for the current one (evidence: the last update only);
  * questions: `name`, `number`, `fact` (share the detail's words), `paraphrase` (keep a name but
    reword the rest: "how far did Nora and I walk out in the hills?" for "Did Cedar Creek Loop with
    Nora, 9 miles"), `code` (an order or flight number, a plate: only the rare token identifies it),
    `when` (the session date answers it), `update` (the current value of a changed fact), `two_turn`
    (compares two facts of a theme: both turns are evidence), `single` (a one-off fact asked without
    any of its words).

No language model was involved: templates with slots filled from vocabularies (shared with
make_conversations.py). Split by user: a user's whole conversation is in dev or in test.
Outputs: {out}/dev/{turns,queries,qrels}.jsonl, {out}/test/..., {out}/stats.json (same shapes as
docs/eval/conversations: load the turns with `python -m core.eval_retrieval --as-turns`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import random
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

_spec = importlib.util.spec_from_file_location("make_conversations", Path(__file__).with_name("make_conversations.py"))
V = importlib.util.module_from_spec(_spec)  # the vocabularies (names, trails, greetings, help requests ...)
sys.modules["make_conversations"] = V  # dataclasses look their module up there
_spec.loader.exec_module(V)

DEFAULT_SEED = 20261125
DEFAULT_OUT = Path(__file__).resolve().parent / "multisession"
N_USERS = 28
TEST_USERS = 12  # the rest are dev
SESSIONS = (20, 26)
CIRCLE = 10  # named people per user
THEMES_PER_USER = 7
EVENTS_PER_THEME = (5, 8)

ANIMALS = [
    "a black bear",
    "two elk",
    "a bald eagle",
    "a rattlesnake",
    "a family of deer",
    "a red fox",
    "a moose",
    "a porcupine",
    "a coyote",
    "wild turkeys",
]
BOOK_TOPICS = [
    "a lighthouse keeper's daughter",
    "a heist in Lisbon",
    "a chess prodigy",
    "two sisters running a farm",
    "a detective who is afraid of the dark",
    "a mapmaker in the 1700s",
    "a family reunion gone wrong",
    "a submarine crew",
    "a chef who loses her sense of taste",
]
REPAIRS = [
    ("water heater", "the hot water"),
    ("dishwasher", "the thing that washes the plates"),
    ("garage door", "the door where the car goes in"),
    ("furnace", "the heating"),
    ("roof leak", "the water dripping from the ceiling"),
    ("washing machine", "the laundry"),
    ("fridge", "the thing that keeps food cold"),
    ("toilet", "the bathroom plumbing"),
    ("window latch", "the broken window"),
]
PRO_FIRST = ["Marco", "Dale", "Anika", "Bruno", "Tess", "Yusuf", "Lorenzo", "Greta", "Ibrahim", "Hollis", "Dmitri"]
SHOPS = ["Lumen", "Hearthware", "Northpeak", "Brightlane", "Kettle & Co", "Fieldhouse", "Tidewell", "Oakmere"]
PRODUCTS = [
    "desk lamp",
    "rain jacket",
    "blender",
    "office chair",
    "yoga mat",
    "coffee grinder",
    "standing fan",
    "hiking backpack",
    "bike helmet",
    "cast iron pan",
    "air purifier",
    "bookshelf",
]
OCCASIONS = [
    ("birthday", "when they turned a year older"),
    ("housewarming", "when they got the new place"),
    ("graduation", "when they finished school"),
    ("promotion", "when they moved up at work"),
    ("retirement", "when they stopped working"),
    ("baby shower", "before the little one arrived"),
]
GIFTS = [
    "a cashmere scarf",
    "a pottery class voucher",
    "a vintage record player",
    "a framed map",
    "a bonsai tree",
    "a leather notebook",
    "concert tickets",
    "a pasta maker",
    "a weighted blanket",
]
INGREDIENTS = [
    "smoked paprika",
    "brown butter",
    "a splash of fish sauce",
    "orange zest",
    "miso",
    "cardamom",
    "anchovies",
    "a shot of espresso",
    "roasted garlic",
]
PROJECTS = ["Falcon", "Bluebird", "Orca", "Juniper", "Atlas", "Nimbus", "Kestrel", "Marigold", "Quartz", "Tundra"]
PROJECT_GOALS = [
    "the billing migration",
    "the new onboarding flow",
    "the warehouse dashboard",
    "the mobile checkout",
    "the data retention cleanup",
    "the partner API",
    "the spring launch site",
    "the support chatbot",
]
VET_ISSUES = [
    ("an ear infection", "the ear"),
    ("a limp in the back leg", "walking funny"),
    ("a tooth that needed pulling", "the mouth"),
    ("an upset stomach", "throwing up"),
    ("itchy skin", "scratching all the time"),
    ("a cut paw", "the foot"),
    ("the yearly shots", "the checkup"),
    ("a bee sting on the nose", "the swollen face"),
    ("a bladder infection", "peeing indoors"),
]
VET_MEDS = [
    "Apoquel",
    "Clavamox",
    "Metacam",
    "Cerenia",
    "Simparica",
    "Galliprant",
    "Baytril",
    "Cytopoint",
    "Gabapentin",
]
PLATFORMS = ["Netflix", "HBO", "Hulu", "Apple TV", "Prime Video", "Disney+"]
GYMS = ["Iron Orchard", "Pulse Athletic", "Summit Fitness", "Granite Gym", "FlexWorks", "Riverbend Y", "Forge Club"]
STREETS = ["Alder Street", "Maple Court", "Birch Lane", "Juniper Avenue", "Harbor Road", "Linden Way", "Quarry Street"]
MANAGERS = ["Sunil", "Marguerite", "Teodor", "Keiko", "Obinna", "Rosalind", "Henrik", "Paloma"]
ALLERGIES = [
    ("cashews", "which nut makes me sick"),
    ("shellfish", "what seafood I can't eat"),
    ("penicillin", "which medicine I react badly to"),
    ("kiwi", "which fruit gives me a reaction"),
    ("sesame", "what seeds I have to avoid"),
]
PETS = [("beagle", "dog"), ("tabby", "cat"), ("corgi", "dog"), ("greyhound", "dog"), ("Siamese", "cat")]

OPENERS = [
    "Long day.",
    "Okay, quick update.",
    "So, news:",
    "Ugh, what a week.",
    "Guess what.",
    "Random thing:",
    "",
    "",
    "",
    "",
]
WANDER = [
    "Also the neighbours are drilling again.",
    "Anyway, I still haven't done my taxes.",
    "Unrelated, but I need new socks.",
    "My phone battery is dying so I'll be quick.",
    "Also it's freezing in here.",
    "Oh and the coffee machine broke again.",
    "Still behind on emails, as usual.",
    "And I forgot to water the plants, oops.",
]
AGENT_GENERIC = [
    "Thanks for telling me, I'll remember that.",
    "Got it.",
    "That sounds like a full week.",
    "Noted! Anything you want help with?",
    "Good to hear from you about that.",
    "Okay, I've got it.",
]
WRAPPERS = [
    "{q}",
    "{q}",
    "{q}",
    "Remind me, {lq}",
    "Quick question: {q}",
    "hey, {lq}",
    "Do you remember {lq}",
    "I forgot - {lq}",
]


@dataclass
class Event:
    theme: str
    statement: str
    echo: str
    questions: list  # (type, query, answer)
    label: str = ""  # how a compare question names it
    ent: str = ""  # the event's own name (trail, restaurant ...), mentioned again in later sessions
    person: str = ""
    value: float | None = None  # what a compare question compares
    session: int = -1
    turn_id: str = ""
    date: str = ""


@dataclass
class User:
    uid: str
    name: str
    rng: random.Random
    circle: list[str]
    pet: str = ""
    used: dict = field(default_factory=dict)

    def fresh(self, key: str, options):
        """A value not yet used for `key` by this user (so a question's detail names one event)."""
        taken = self.used.setdefault(key, set())
        choices = [o for o in options if (o[0] if isinstance(o, tuple) else o) not in taken]
        value = self.rng.choice(choices)
        taken.add(value[0] if isinstance(value, tuple) else value)
        return value


def money(r, low, high, step=5):
    return r.randrange(low, high, step)


# --- themes: each returns one event (a fact in one user turn) -------------------------------------------


def hike(u: User, r, p):
    x = u.fresh("trail", [f"{a} {b} {c}" for a in V.TRAIL_A for b in V.TRAIL_B for c in ("Trail", "Loop")])
    miles = r.randint(3, 13)
    t = u.fresh("animal", ANIMALS)
    s = r.choice(
        [
            f"Did the {x} with {p} on Saturday, {miles} miles. We saw {t} near the top!",
            f"{p} and I hiked {x} yesterday, {miles} miles round trip. Spotted {t} on the way down.",
            f"Finally got out on the {x}: {miles} miles with {p}, and there was {t} right by the trailhead.",
        ]
    )
    echo = r.choice(
        [
            f"{x} is gorgeous this time of year.",
            f"How is {p} doing these days?",
            "That's a good distance. How are your legs?",
            f"Glad you and {p} got outside.",
        ]
    )
    return Event(
        "hike",
        s,
        echo,
        [
            ("name", f"Which trail did I hike with {p}?", x),
            ("number", f"How many miles was the {x} hike?", f"{miles} miles"),
            ("fact", f"What animal did I see on the {x}?", t),
            ("paraphrase", f"How far did {p} and I walk out in the hills?", f"{miles} miles"),
            ("paraphrase", f"What wildlife did I come across while out walking with {p}?", t),
            ("when", f"When did I hike {x}?", x),
        ],
        label=f"the {x} hike",
        value=miles,
        ent=x,
        person=p,
    )


def dinner(u: User, r, p):
    x = u.fresh("restaurant", [f"{a} {b}" for a in V.REST_ADJ for b in V.REST_NOUN])
    cuisine, dishes = u.fresh("cuisine", V.CUISINES)
    dish = r.choice(dishes)
    bill = money(r, 45, 190)
    s = r.choice(
        [
            f"Dinner at {x} with {p} last night, the {cuisine} place. I had the {dish}, ${bill} for the two of us.",
            f"{p} took me to {x} for {cuisine} food. The {dish} was unreal. Bill came to ${bill}.",
            f"Tried {x} with {p}: {cuisine}, ordered the {dish}, ${bill} total, worth it.",
        ]
    )
    echo = r.choice(
        [
            f"{x} sounds great, I've heard good things.",
            f"Fun! Is {p} into {cuisine} food too?",
            "That sounds like a lovely evening.",
            f"The {dish} sounds delicious.",
        ]
    )
    return Event(
        "dinner",
        s,
        echo,
        [
            ("name", f"Which restaurant did I go to with {p}?", x),
            ("fact", f"What did I order at {x}?", dish),
            ("number", f"How much was dinner at {x}?", f"${bill}"),
            ("paraphrase", f"Where did {p} and I eat out that evening?", x),
            ("paraphrase", f"What was the {cuisine} spot I tried?", x),
            ("when", f"When did I eat at {x}?", x),
        ],
        label=x,
        value=bill,
        ent=x,
        person=p,
    )


def book(u: User, r, p):
    x = u.fresh("book", [f"The {a} {b}" for a in V.BOOK_A for b in V.BOOK_B])
    topic = u.fresh("topic", BOOK_TOPICS)
    days = r.randint(2, 20)
    s = r.choice(
        [
            f"{p} lent me {x}, it's about {topic}. Finished it in {days} days.",
            f"Just finished {x} ({p}'s recommendation), the one about {topic}. Took me {days} days.",
            f"Reading {x} now because {p} wouldn't stop talking about it. It's about {topic}; {days} days in.",
        ]
    )
    echo = r.choice(
        [
            f"{x} has great reviews.",
            f"{p} has good taste!",
            "What did you think of the ending?",
            "That premise sounds intriguing.",
        ]
    )
    return Event(
        "book",
        s,
        echo,
        [
            ("name", f"Which book did {p} recommend to me?", x),
            ("fact", f"What is {x} about?", topic),
            ("name", f"Who recommended {x}?", p),
            ("paraphrase", f"What was the novel {p} passed along to me?", x),
            ("paraphrase", f"What's the story in the one I got from {p}?", topic),
        ],
        label=x,
        value=days,
        ent=x,
        person=p,
    )


def concert(u: User, r, p):
    x = u.fresh("band", [f"{a} {b}" for a in V.BAND_A for b in V.BAND_B])
    venue = r.choice(V.VENUES)
    price = money(r, 35, 160)
    s = r.choice(
        [
            f"Saw {x} at {venue} with {p}! Tickets were ${price} each but totally worth it.",
            f"{p} and I went to the {x} show at {venue}. ${price} a ticket, loud and amazing.",
            f"Concert night: {x}, {venue}, me and {p}. Paid ${price} for the ticket.",
        ]
    )
    echo = r.choice(
        [
            f"{x} live must have been great!",
            f"{venue} is a fun venue.",
            f"Did {p} enjoy it too?",
            "Sounds like a great night out.",
        ]
    )
    return Event(
        "concert",
        s,
        echo,
        [
            ("name", f"Which band did I see with {p}?", x),
            ("number", f"How much were the {x} tickets?", f"${price}"),
            ("fact", f"Where did I see {x}?", venue),
            ("paraphrase", f"What group did {p} and I watch perform live?", x),
            ("when", f"When did I see {x} live?", x),
        ],
        label=f"the {x} show",
        value=price,
        ent=x,
        person=p,
    )


def doctor(u: User, r, p):
    last = u.fresh("doctor", V.LAST_NAMES)
    spec, issue = u.fresh("specialty", V.SPECIALTIES)
    copay = money(r, 20, 95)
    s = r.choice(
        [
            f"Saw Dr. {last}, the {spec}, about {issue}. Copay was ${copay}. {p} drove me.",
            f"Appointment with Dr. {last} ({spec}) for {issue} this morning, ${copay} copay.",
            f"Finally got in to see a {spec}, Dr. {last}, about {issue}. ${copay} out of pocket.",
        ]
    )
    echo = r.choice(
        [
            f"I hope Dr. {last} could help.",
            f"How did the {spec} appointment go?",
            "Glad you got that looked at.",
            "Take care of yourself.",
        ]
    )
    return Event(
        "doctor",
        s,
        echo,
        [
            ("name", f"What's the name of the {spec} I saw?", f"Dr. {last}"),
            ("number", f"How much was the copay at Dr. {last}?", f"${copay}"),
            ("fact", f"What did I see Dr. {last} about?", issue),
            ("paraphrase", f"Which physician is looking after {issue}?", f"Dr. {last}"),
            ("when", f"When was my appointment with Dr. {last}?", last),
        ],
        label=f"Dr. {last}",
        value=copay,
        ent=last,
        person=p,
    )


def repair(u: User, r, p):
    thing, para = u.fresh("repair", REPAIRS)
    pro = u.fresh("pro", PRO_FIRST)
    cost = money(r, 90, 900, 10)
    s = r.choice(
        [
            f"The {thing} finally died. {pro} from the repair place fixed it, ${cost} all in.",
            f"{pro} came by to fix the {thing} today. ${cost}, ouch.",
            f"Got the {thing} sorted: {pro} replaced a part, ${cost} total.",
        ]
    )
    echo = r.choice(
        [
            f"Glad {pro} could fix it quickly.",
            f"A broken {thing} is such a pain.",
            "That's a chunk of money, but good it's done.",
            "At least it's working again.",
        ]
    )
    return Event(
        "repair",
        s,
        echo,
        [
            ("name", f"Who fixed the {thing}?", pro),
            ("number", f"How much did the {thing} repair cost?", f"${cost}"),
            ("paraphrase", f"Who sorted out {para} for me?", pro),
            ("paraphrase", f"What did I pay to get {para} working again?", f"${cost}"),
            ("fact", f"What did {pro} fix?", thing),
        ],
        label=f"the {thing}",
        value=cost,
        ent=thing,
        person=p,
    )


def order(u: User, r, p):
    code = u.fresh("order", [str(n) for n in range(40000, 99999, 137)])
    product = u.fresh("product", PRODUCTS)
    shop = r.choice(SHOPS)
    price = money(r, 25, 400)
    s = r.choice(
        [
            f"Ordered the {product} from {shop}, order #{code}, ${price}. Should arrive Thursday.",
            f"The {shop} order ({product}, ${price}) is #{code} if I need to chase it.",
            f"Okay, {shop} confirmation for the {product}: order number {code}, ${price}.",
        ]
    )
    echo = r.choice(
        [
            "I'll remember that order number.",
            f"Hope the {product} arrives on time.",
            f"{shop} is usually quick.",
            "Noted.",
        ]
    )
    return Event(
        "order",
        s,
        echo,
        [
            ("code", f"What was order {code}?", product),
            ("code", f"Which shop is order #{code} from?", shop),
            ("name", f"What's the order number for the {product}?", code),
            ("number", f"How much did I pay for the {product}?", f"${price}"),
        ],
        label=f"the {product}",
        value=price,
        ent=product,
        person=p,
    )


def flight(u: User, r, p):
    city = u.fresh("city", V.CITIES)
    airline, prefix = r.choice(V.AIRLINES)
    code = f"{prefix} {r.randint(100, 2999)}"
    month = r.choice(V.MONTHS)
    s = r.choice(
        [
            f"Booked {city} for {month} with {p}! {airline}, flight {code}.",
            f"Flights are done: {code} on {airline} to {city}, leaving in {month}. {p} is coming too.",
            f"{p} and I are going to {city} in {month}. Flight {code}, {airline}.",
        ]
    )
    echo = r.choice(
        [
            f"{city} in {month}, how exciting!",
            f"Do you want help planning {city}?",
            f"Travelling with {p} will be fun.",
            "I'll keep the flight number in mind.",
        ]
    )
    return Event(
        "flight",
        s,
        echo,
        [
            ("code", f"Where am I flying on {code}?", city),
            ("name", f"What's my flight number to {city}?", code),
            ("fact", f"Who is coming with me to {city}?", p),
            ("paraphrase", f"Which trip am I taking with {p}?", city),
            ("fact", f"When am I going to {city}?", month),
        ],
        label=f"the {city} trip",
        value=None,
        ent=city,
        person=p,
    )


def race(u: User, r, p):
    x = u.fresh("race", [f"{c} {n}" for c in V.HOME_CITIES for n in V.RACES])
    minutes = r.randint(22, 140)
    time = f"{minutes // 60}:{minutes % 60:02d}" if minutes >= 60 else f"{minutes} minutes"
    s = r.choice(
        [
            f"Ran the {x} this morning! Finished in {time}. {p} was cheering at the finish.",
            f"{x} done, {time}. {p} ran it too.",
            f"Signed up for the {x} with {p}, then actually ran it: {time}.",
        ]
    )
    echo = r.choice(
        [
            "Congratulations, that's a great time!",
            f"How did {p} do?",
            f"The {x} sounds fun.",
            "Well done, rest those legs.",
        ]
    )
    return Event(
        "race",
        s,
        echo,
        [
            ("number", f"What was my time in the {x}?", time),
            ("name", f"Which race did I do with {p}?", x),
            ("paraphrase", f"How fast did I finish that run {p} came to?", time),
            ("when", f"When did I run the {x}?", x),
        ],
        label=f"the {x}",
        value=minutes,
        ent=x,
        person=p,
    )


def cooking(u: User, r, p):
    dish = u.fresh("dish", V.DISHES)
    occasion, para = r.choice(OCCASIONS)
    secret = u.fresh("secret", INGREDIENTS)
    s = r.choice(
        [
            f"Made {dish} for {p}'s {occasion}. The trick was {secret}, everyone asked.",
            f"Cooked for {p}'s {occasion}: my {dish}, with {secret} in it. Gone in ten minutes.",
            f"For {p}'s {occasion} I made {dish}, secret ingredient {secret}.",
        ]
    )
    echo = r.choice(
        [
            f"{p} is lucky to have you cooking!",
            f"{secret} in {dish}? I love that idea.",
            "Sounds like a lovely party.",
            "Cooking for a crowd is a lot of work.",
        ]
    )
    return Event(
        "cooking",
        s,
        echo,
        [
            ("fact", f"What did I cook for {p}'s {occasion}?", dish),
            ("fact", f"What was the secret ingredient in my {dish}?", secret),
            ("paraphrase", f"What food did I bring {p} {para}?", dish),
            ("name", f"Whose {occasion} did I make {dish} for?", p),
        ],
        label=f"the {dish}",
        value=None,
        ent=dish,
        person=p,
    )


def project(u: User, r, p):
    x = u.fresh("project", PROJECTS)
    goal = u.fresh("goal", PROJECT_GOALS)
    size = r.randint(3, 14)
    month = r.choice(V.MONTHS)
    s = r.choice(
        [
            f"Kicked off Project {x} at work with {p}: it's {goal}, {size} people, due in {month}.",
            f"New thing at work, {x}. {goal}, me and {p} leading, team of {size}, deadline {month}.",
            f"{p} and I got put on {x} ({goal}). {size} engineers. Has to ship by {month}.",
        ]
    )
    echo = r.choice(
        [
            f"{x} sounds like a big one.",
            f"Good that you're working with {p}.",
            f"{month} is not far away.",
            "Good luck with the new project!",
        ]
    )
    return Event(
        "project",
        s,
        echo,
        [
            ("name", f"Which project am I leading with {p}?", x),
            ("fact", f"What is Project {x} about?", goal),
            ("number", f"How many people are on {x}?", str(size)),
            ("paraphrase", f"What's the work thing {p} and I are in charge of?", x),
            ("fact", f"When is {x} due?", month),
        ],
        label=f"Project {x}",
        value=size,
        ent=x,
        person=p,
    )


def vet(u: User, r, p):
    issue, para = u.fresh("vet", VET_ISSUES)
    med = u.fresh("med", VET_MEDS)
    weight = r.randint(8, 70)
    pet = u.pet
    s = r.choice(
        [
            f"Took {pet} to the vet for {issue}. They gave us {med}. {weight} pounds now, apparently.",
            f"Vet visit for {pet}: {issue}, prescription for {med}, weighed in at {weight} lb.",
            f"{pet} had {issue}, so vet again. {med} twice a day. {p} watched {pet} while I paid.",
        ]
    )
    echo = r.choice(
        [
            f"Poor {pet}! I hope the {med} helps.",
            f"Give {pet} a scratch from me.",
            "Vet visits are stressful.",
            f"Hope {pet} feels better soon.",
        ]
    )
    return Event(
        "vet",
        s,
        echo,
        [
            ("name", f"What did the vet prescribe {pet} for {issue}?", med),
            ("fact", f"Why did {pet} get {med}?", issue),
            ("paraphrase", f"What medicine is {pet} on for {para}?", med),
            ("when", f"When did {pet} go to the vet for {issue}?", issue),
        ],
        label=issue,
        value=None,
        ent=issue,
        person=p,
    )


def gift(u: User, r, p):
    g = u.fresh("gift", GIFTS)
    occasion, para = r.choice(OCCASIONS)
    price = money(r, 20, 260)
    s = r.choice(
        [
            f"Got {p} {g} for the {occasion}, ${price}. Hope they like it.",
            f"Gift sorted for {p}'s {occasion}: {g}. ${price}.",
            f"Bought {g} for {p} (${price}). It's for the {occasion}.",
        ]
    )
    echo = r.choice(
        [f"{p} will love {g}.", "That's a thoughtful present.", f"What a nice gift for {p}.", "Good choice!"]
    )
    return Event(
        "gift",
        s,
        echo,
        [
            ("fact", f"What gift did I get {p}?", g),
            ("number", f"How much did I spend on {p}'s present?", f"${price}"),
            ("paraphrase", f"What did I buy {p} {para}?", g),
            ("name", f"Who did I get {g} for?", p),
        ],
        label=g,
        value=price,
        ent=g,
        person=p,
    )


def show(u: User, r, p):
    x = u.fresh("show", V.SHOWS + V.PODCASTS)
    platform = r.choice(PLATFORMS)
    episodes = r.randint(2, 30)
    s = r.choice(
        [
            f"{p} got me hooked on {x}, it's on {platform}. Watched {episodes} episodes this week.",
            f"Binged {episodes} episodes of {x} on {platform}. Blame {p}.",
            f"Started {x} because {p} insisted. {platform}. {episodes} episodes in.",
        ]
    )
    echo = r.choice(
        [f"{x} is great!", f"{p} has good recommendations.", "Binge weeks are the best.", "No spoilers please!"]
    )
    return Event(
        "show",
        s,
        echo,
        [
            ("name", f"Which show did {p} get me into?", x),
            ("fact", f"Where can I watch {x}?", platform),
            ("paraphrase", f"What series did {p} talk me into?", x),
            ("number", f"How many episodes of {x} did I watch?", str(episodes)),
        ],
        label=x,
        value=episodes,
        ent=x,
        person=p,
    )


THEMES = {
    f.__name__: f
    for f in (hike, dinner, book, concert, doctor, repair, order, flight, race, cooking, project, vet, gift, show)
}
# Chatter that shares a theme's words (and often a person) without any fact to ask about.
CHATTER = {
    "hike": [
        "I need to get back on the trails, it's been weeks.",
        "{p} keeps sending me hiking photos.",
        "Thinking about a hike this weekend if the weather holds.",
        "{p} wants to go hiking again soon.",
    ],
    "dinner": [
        "I'm so tired of cooking, maybe takeout tonight.",
        "{p} wants to try a new restaurant next week.",
        "Does anyone actually like tasting menus?",
        "Dinner with {p} got cancelled, again.",
    ],
    "book": [
        "I have a stack of books I haven't touched.",
        "{p} and I are starting a book club, maybe.",
        "Need something good to read on the train.",
    ],
    "concert": [
        "Concert tickets are getting ridiculous.",
        "{p} asked if I want to see a show next month.",
        "My ears are still ringing from last weekend.",
    ],
    "doctor": [
        "I keep putting off booking a checkup.",
        "{p} says I should see a doctor about my back.",
        "Insurance paperwork is the worst.",
    ],
    "repair": [
        "Something in the house is always broken.",
        "{p} says I should learn basic plumbing.",
        "The landlord never answers about repairs.",
    ],
    "order": [
        "I order way too much stuff online.",
        "Another package got left at the wrong door.",
        "{p} says I should stop buying things at midnight.",
    ],
    "flight": [
        "Flights are so expensive this year.",
        "{p} and I keep talking about a trip.",
        "I need a vacation badly.",
    ],
    "race": [
        "Legs are sore from training.",
        "{p} wants me to sign up for another race.",
        "Running in the rain is underrated.",
    ],
    "cooking": [
        "I burned the rice again.",
        "{p} asked for my recipe, I don't have one written down.",
        "Meal prep Sunday, wish me luck.",
    ],
    "project": [
        "Work is a lot right now.",
        "{p} and I had a long meeting about nothing.",
        "Too many meetings this week.",
    ],
    "vet": ["{pet} is snoring next to me.", "{pet} stole a sock again.", "{p} wants to dog-sit {pet} sometime."],
    "gift": [
        "I'm terrible at picking presents.",
        "{p}'s birthday is coming up, no idea what to get.",
        "Gift wrapping is my nemesis.",
    ],
    "show": [
        "There's nothing good on TV.",
        "{p} keeps telling me to watch something new.",
        "I fell asleep during the finale.",
    ],
}
# Later mentions of an event's name (and often a person) that answer nothing about it.
MENTIONS = {
    "hike": [
        "{p} and I should do {e} again in the fall.",
        "Still thinking about the view on {e}.",
        "Someone at work asked me about {e}, I told them to go early.",
    ],
    "dinner": [
        "{p} wants to go back to {e}.",
        "Walked past {e} today, it was packed.",
        "Is {e} open on Mondays? Never mind, I'll check.",
    ],
    "book": ["Lent {e} to a coworker.", "{p} asked if I finished {e} yet.", "I keep thinking about {e}."],
    "concert": ["{e} just announced another tour.", "Still humming {e} songs.", "{p} sent me a video of {e}."],
    "doctor": ["Need to call Dr. {e}'s office to reschedule.", "Dr. {e}'s office sent a survey, ignored it."],
    "repair": ["The {e} is making that noise again.", "Still waiting on the invoice for the {e}."],
    "order": ["Where is my {e}? Tracking hasn't moved.", "The {e} arrived, the box was crushed."],
    "flight": ["Looking up things to do in {e}.", "{p} sent me a list of cafes in {e}."],
    "race": ["Got the finisher photo from the {e}.", "{p} wants to do the {e} again next year."],
    "cooking": ["{p} asked for my {e} recipe again.", "Made {e} again, not as good this time."],
    "project": ["{e} standup ran long again.", "{p} and I disagree about the {e} timeline."],
    "vet": ["{pet} seems fine now after {e}.", "Still paying off the vet bill for {e}."],
    "gift": ["{p} finally said thanks for {e}.", "Saw {e} on sale for half the price, typical."],
    "show": ["Finished {e}, the ending was weird.", "{p} and I argue about {e} every day."],
}
# "What have I ...": every event of a theme is evidence.
LISTS = {
    "hike": "Which trails have I hiked?",
    "dinner": "Which restaurants have I tried?",
    "book": "What books have people recommended to me?",
    "concert": "Which bands have I seen live?",
    "doctor": "Which doctors have I seen?",
    "repair": "What has needed fixing around the house?",
    "order": "What have I ordered online?",
    "flight": "Where am I flying this year?",
    "race": "Which races have I run?",
    "cooking": "What have I cooked for people?",
    "project": "Which projects am I on at work?",
    "vet": "Why has {pet} been to the vet?",
    "gift": "What gifts have I bought?",
    "show": "What shows have I been watching?",
}
STATES = {  # (initial, update, question, paraphrase-free question)
    "gym": (
        ["Signed up at {x} today, the gym by the station.", "Joined {x}, the gym near work."],
        ["Cancelled my old gym membership and joined {x} instead, cheaper.", "Switched gyms: {x} now."],
        "Which gym am I a member of now?",
        "Where do I work out these days?",
        GYMS,
    ),
    "manager": (
        ["My manager is {x}, seems nice so far.", "Met my manager {x} today."],
        ["Reorg at work, my new manager is {x}.", "I report to {x} now, the old boss left."],
        "Who is my manager now?",
        "Who's my boss at the moment?",
        MANAGERS,
    ),
    "street": (
        ["We live on {x} now, still unpacking.", "Moved into the place on {x}."],
        ["Moved again! New address is on {x}.", "Lease ended, now we're on {x}."],
        "What street do I live on now?",
        "Where's home for me at the moment?",
        STREETS,
    ),
    "car": (
        ["Bought a {x}, my first car in years.", "Picked up a used {x} today."],
        ["Sold the old car, now driving a {x}.", "Traded in my car for a {x}."],
        "What car do I drive now?",
        "What am I driving these days?",
        V.CARS,
    ),
}


def wrap(r, q: str) -> str:
    w = r.choice(WRAPPERS)
    return w.format(q=q, lq=q[0].lower() + q[1:])


def build_user(seed: int, index: int):
    r = random.Random(seed)
    uid = f"m{index + 1:02d}"
    names = r.sample(V.FIRST_NAMES, CIRCLE + 1)
    u = User(uid, names[0], r, names[1:])
    kind, animal = r.choice(PETS)
    u.pet = r.choice(V.FIRST_NAMES[::3])
    themes = r.sample(sorted(THEMES), THEMES_PER_USER)
    n_sessions = r.randint(*SESSIONS)
    events: list[Event] = []
    for theme in themes:
        people = r.sample(u.circle, r.randint(*EVENTS_PER_THEME))  # one event per person in a theme
        for p in people:
            ev = THEMES[theme](u, r, p)
            ev.session = r.randrange(n_sessions)
            events.append(ev)
            for _ in range(r.choice((0, 1, 1, 2))):
                later = r.randrange(ev.session, n_sessions)
                text = r.choice(MENTIONS[theme]).format(e=ev.ent, p=r.choice(u.circle), pet=u.pet)
                events.append(Event("mention", text, r.choice(AGENT_GENERIC), [], session=later))
    # changed facts: first stated early, updated later (once or twice)
    updates = []
    for key in r.sample(sorted(STATES), 3):
        first, later, q, para_q, pool = STATES[key]
        values = r.sample(pool, r.randint(2, 3))
        sessions = sorted(r.sample(range(n_sessions), len(values)))
        chain = []
        for i, (value, session) in enumerate(zip(values, sessions, strict=True)):
            text = r.choice(first if i == 0 else later).format(x=value)
            chain.append(Event("state", text, r.choice(AGENT_GENERIC), [], session=session))
        events.extend(chain)
        updates.append((chain, q if r.random() < 0.5 else para_q, values[-1]))
    # one-off facts, asked later without their words
    allergen, allergy_q = r.choice(ALLERGIES)
    singles = [
        Event(
            "single",
            f"Found out I'm allergic to {allergen}, had hives all evening.",
            "That sounds scary, I'm glad you know now.",
            [("single", f"Remind me {allergy_q}?", allergen)],
        ),
        Event(
            "single",
            f"We adopted a {kind}! Named {animal_name(u)} {u.pet}.",
            f"Welcome home, {u.pet}!",
            [("single", f"What kind of {animal} do I have?", kind)],
        ),
        Event(
            "single",
            f"My sister {u.circle[0]} just got engaged, wedding is in {r.choice(V.MONTHS)}.",
            f"Congratulations to {u.circle[0]}!",
            [("single", "Which of my siblings is getting married?", u.circle[0])],
        ),
    ]
    for ev in singles:
        ev.session = r.randrange(n_sessions // 2)
    events.extend(singles)
    return u, n_sessions, events, updates, themes


def animal_name(u: User) -> str:
    return "him" if sum(map(ord, u.pet)) % 2 else "her"


def render(u: User, n_sessions: int, events: list[Event]):
    """Sessions of greetings, help requests, small talk, chatter and the events, with dates."""
    r = u.rng
    turns = []
    by_session: dict[int, list[Event]] = {}
    for ev in events:
        by_session.setdefault(ev.session, []).append(ev)
    day = dt.datetime(2024, 1, 8, 9, 0) + dt.timedelta(days=r.randint(0, 30))
    themes = sorted({ev.theme for ev in events if ev.theme in CHATTER})
    for s in range(n_sessions):
        day += dt.timedelta(days=r.randint(3, 14), hours=r.randint(-3, 3))
        when = day.replace(hour=r.randint(7, 21), minute=r.randint(0, 59))
        sid = f"{u.uid}-s{s + 1:02d}"
        lines = [("user", r.choice(V.GREETINGS)), ("assistant", r.choice(V.AGENT_GREETINGS).format(name=u.name))]
        items = [("event", ev) for ev in by_session.get(s, [])]
        items += [("help", None)] * r.randint(1, 3) + [("small", None)] * r.randint(0, 2)
        items += [("chatter", None)] * r.randint(1, 3)
        r.shuffle(items)
        for kind, ev in items:
            if kind == "event":
                opener = r.choice(OPENERS)
                text = (opener + " " if opener else "") + ev.statement
                if r.random() < 0.5:  # real turns wander
                    text += " " + r.choice(WANDER + [said for said, _ in V.SMALL_TALK])
                ev.turn_id = f"{sid}-t{len(lines):03d}"
                ev.date = when.date().isoformat()  # the session's day answers "when" questions
                lines += [("user", text), ("assistant", ev.echo if r.random() < 0.7 else r.choice(AGENT_GENERIC))]
            elif kind == "help":
                ask, answer = r.choice(V.HELP)
                lines += [("user", ask), ("assistant", answer)]
                if r.random() < 0.3:
                    lines += [("user", r.choice(V.ACKS)), ("assistant", r.choice(V.AGENT_ACKS))]
            elif kind == "small":
                said, reply = r.choice(V.SMALL_TALK)
                lines += [("user", said), ("assistant", reply)]
            else:
                text = r.choice(CHATTER[r.choice(themes)]).format(p=r.choice(u.circle), pet=u.pet)
                lines += [("user", text), ("assistant", r.choice(AGENT_GENERIC))]
        lines += [("user", r.choice(V.CLOSINGS)), ("assistant", r.choice(V.AGENT_CLOSINGS).format(name=u.name))]
        for i, (speaker, content) in enumerate(lines):
            turns.append(
                {
                    "user": u.uid,
                    "id": f"{sid}-t{i:03d}",
                    "session": sid,
                    "turn": i,
                    "speaker": speaker,
                    "date": when.isoformat(),
                    "content": content,
                }
            )
            when += dt.timedelta(seconds=r.randint(20, 150))
    return turns


def questions_for(u: User, events: list[Event], updates, themes):
    r = u.rng
    out = []
    for ev in events:
        if not ev.questions:
            continue
        if ev.theme == "single":
            qtype, q, answer = ev.questions[0]
            out.append((qtype, q, answer, [ev.turn_id]))
            continue
        for qtype, q, answer in r.sample(ev.questions, 1 if r.random() < 0.7 else 2):
            out.append((qtype, q, ev.date if qtype == "when" else answer, [ev.turn_id]))
    for chain, q, answer in updates:
        out.append(("update", q, answer, [chain[-1].turn_id]))
    compare = {
        "hike": "Which was longer, {a} or {b}?",
        "dinner": "Which dinner cost more, {a} or {b}?",
        "concert": "Which tickets were pricier, {a} or {b}?",
        "repair": "Which repair cost more, {a} or {b}?",
        "race": "Was I faster in {a} or {b}?",
        "order": "Which cost more, {a} or {b}?",
        "gift": "Which present was more expensive, {a} or {b}?",
        "doctor": "Whose copay was higher, {a} or {b}?",
    }
    by_person: dict[str, list[str]] = {}
    for ev in events:
        if ev.person and ev.person in ev.statement:
            by_person.setdefault(ev.person, []).append(ev.turn_id)
    for person in r.sample(sorted(by_person), 3):
        out.append(("list", f"What have I done with {person} lately?", person, by_person[person]))
    for theme in themes:
        out.append(("list", LISTS[theme].format(pet=u.pet), theme, [ev.turn_id for ev in events if ev.theme == theme]))
    for theme in themes:
        if theme in compare:
            a, b = r.sample([ev for ev in events if ev.theme == theme], 2)
            out.append(("two_turn", compare[theme].format(a=a.label, b=b.label), "", [a.turn_id, b.turn_id]))
    r.shuffle(out)
    return [{"query": wrap(r, q), "type": qtype, "answer": answer, "relevant": rel} for qtype, q, answer, rel in out]


def generate(seed: int = DEFAULT_SEED):
    rng = random.Random(seed)
    users = []
    for index in range(N_USERS):
        u, n_sessions, events, updates, themes = build_user(rng.randrange(2**32), index)
        turns = render(u, n_sessions, events)
        users.append((u.uid, turns, questions_for(u, events, updates, themes)))
    order = list(range(N_USERS))
    random.Random(seed + 1).shuffle(order)
    test_users = {users[i][0] for i in order[:TEST_USERS]}
    return users, test_users


def write(out: Path, seed: int = DEFAULT_SEED) -> dict:
    users, test_users = generate(seed)
    splits = {name: {"turns": [], "queries": [], "qrels": []} for name in ("dev", "test")}
    for uid, turns, questions in users:
        split = splits["test" if uid in test_users else "dev"]
        split["turns"].extend(turns)
        for number, q in enumerate(questions, start=1):
            qid = f"{uid}-q{number:03d}"
            split["queries"].append(
                {"user": uid, "id": qid, "query": q["query"], "type": q["type"], "answer": q["answer"]}
            )
            split["qrels"].append({"id": qid, "relevant": q["relevant"]})
    stats = {"seed": seed, "splits": {}}
    for name, split in splits.items():
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        for what, rows in split.items():
            with (folder / f"{what}.jsonl").open("w", encoding="utf-8") as handle:
                for row in rows:
                    handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        stats["splits"][name] = {
            "users": len({t["user"] for t in split["turns"]}),
            "sessions": len({t["session"] for t in split["turns"]}),
            "turns": len(split["turns"]),
            "queries": len(split["queries"]),
            "by_type": dict(sorted(Counter(q["type"] for q in split["queries"]).items())),
            "two_evidence_turns": sum(1 for q in split["qrels"] if len(q["relevant"]) > 1),
        }
    (out / "stats.json").write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")
    return stats


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    print(json.dumps(write(args.out, args.seed), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
