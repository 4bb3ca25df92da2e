"""Generate the conversational retrieval set in docs/eval/conversations/ (seeded, deterministic).

    .venv/bin/python docs/eval/make_conversations.py [--seed 20261123] [--out docs/eval/conversations]

Each fictional user talks to the assistant over many sessions spread across months. Most turns are
the things people really say to an assistant: greetings, small talk, requests for help with emails,
recipes, workouts and trips, and the assistant's answers. In between, users mention facts about their
lives (a dog they adopted, a trail they hiked, a flight number, the name of a new manager). Questions
ask for those facts later, the way people ask ("what was that trail I did with Nora?", "when did I
start the pottery class?"), and each question is labelled with the turn(s) holding the answer.

Retrieval is meant to be hard in the ways real conversations are hard:
  * the assistant's own replies and the help requests reuse the topic words of the facts (dogs, trails,
    flights, doctors), so a word overlap is not an answer;
  * many facts have a distractor: a second trail a friend recommended, a restaurant the user disliked;
  * paraphrase questions avoid the words of their evidence turn ("the animal we took in" for "we adopted
    a beagle called Pepper");
  * "when did I ..." questions need the turn (its session date answers them), "two-turn" questions need
    two turns from different sessions.

Outputs, split by user (a user's whole conversation is in one split):
  {out}/dev/turns.jsonl, queries.jsonl, qrels.jsonl and {out}/test/... ; {out}/stats.json.
turns:   {"user", "id", "session", "turn", "speaker", "date", "content"}
queries: {"user", "id", "query", "type", "answer"}
qrels:   {"id", "relevant": [turn ids]}
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_SEED = 20261123
DEFAULT_OUT = Path(__file__).resolve().parent / "conversations"
N_USERS = 24
TEST_USERS = 10  # the rest are dev

# ---------------------------------------------------------------------------
# Vocabularies
# ---------------------------------------------------------------------------

FIRST_NAMES = [
    "Aaliyah",
    "Aaron",
    "Abby",
    "Adele",
    "Adrian",
    "Aiko",
    "Alba",
    "Alejandro",
    "Amara",
    "Amir",
    "Ana",
    "Andre",
    "Anika",
    "Arjun",
    "Astrid",
    "Ava",
    "Bea",
    "Ben",
    "Bianca",
    "Bilal",
    "Bo",
    "Bruno",
    "Caleb",
    "Camila",
    "Carmen",
    "Cass",
    "Chidi",
    "Chloe",
    "Clara",
    "Colin",
    "Dana",
    "Dario",
    "Dev",
    "Diego",
    "Elena",
    "Eli",
    "Elif",
    "Emeka",
    "Emil",
    "Esme",
    "Ezra",
    "Farah",
    "Felix",
    "Fern",
    "Finn",
    "Freya",
    "Gabe",
    "Gemma",
    "Gio",
    "Grace",
    "Hana",
    "Hugo",
    "Ian",
    "Imani",
    "Ines",
    "Isaac",
    "Ivy",
    "Jada",
    "Jonah",
    "Jules",
    "Kai",
    "Kamala",
    "Kenji",
    "Kira",
    "Lars",
    "Leah",
    "Leila",
    "Leo",
    "Lena",
    "Lina",
    "Luca",
    "Lucia",
    "Luis",
    "Mae",
    "Malik",
    "Mara",
    "Marco",
    "Maria",
    "Marta",
    "Mateo",
    "Maya",
    "Mei",
    "Milo",
    "Mina",
    "Moses",
    "Nadia",
    "Nate",
    "Nia",
    "Nico",
    "Nina",
    "Noor",
    "Nora",
    "Olu",
    "Omar",
    "Oscar",
    "Paloma",
    "Pia",
    "Priya",
    "Quinn",
    "Rafa",
    "Rhea",
    "Rosa",
    "Ruben",
    "Ruth",
    "Sam",
    "Sana",
    "Sasha",
    "Selin",
    "Seth",
    "Shira",
    "Silas",
    "Sofia",
    "Sunil",
    "Tara",
    "Teo",
    "Theo",
    "Tomas",
    "Uma",
    "Vera",
    "Wes",
    "Willa",
    "Xavi",
    "Yara",
    "Yusuf",
    "Zara",
    "Zoe",
]
LAST_NAMES = [
    "Abara",
    "Alvarez",
    "Bauer",
    "Becker",
    "Bianchi",
    "Brennan",
    "Castillo",
    "Chen",
    "Costa",
    "Dahl",
    "Delgado",
    "Dubois",
    "Eriksen",
    "Farouk",
    "Fischer",
    "Garcia",
    "Goldberg",
    "Haddad",
    "Hansen",
    "Herrera",
    "Horvath",
    "Ibarra",
    "Ito",
    "Jansen",
    "Kaur",
    "Kim",
    "Kowalski",
    "Larsen",
    "Lindgren",
    "Lopez",
    "Mahler",
    "Marsh",
    "Mendes",
    "Moreau",
    "Murphy",
    "Nakamura",
    "Nguyen",
    "Novak",
    "Okafor",
    "Olsen",
    "Ortiz",
    "Park",
    "Patel",
    "Petrov",
    "Quinn",
    "Rahman",
    "Reyes",
    "Rossi",
    "Sato",
    "Schmidt",
    "Silva",
    "Sokolov",
    "Suzuki",
    "Tanaka",
    "Torres",
    "Vance",
    "Vargas",
    "Weber",
    "Whitfield",
    "Yilmaz",
    "Zhang",
]
CITIES = """Lisbon Porto Barcelona Valencia Seville Madrid Rome Florence Naples Bologna Vienna Prague Budapest Krakow
Berlin Hamburg Munich Copenhagen Stockholm Oslo Helsinki Dublin Edinburgh Amsterdam Brussels Lyon Marseille Nice
Athens Istanbul Marrakesh Reykjavik Tokyo Kyoto Osaka Seoul Taipei Hanoi Bangkok Singapore Bali Sydney Melbourne
Auckland Vancouver Montreal Toronto Chicago Boston Austin Denver Portland Seattle Nashville Savannah Honolulu
Mexico_City Oaxaca Lima Cusco Bogota Santiago""".replace("_", " ").split()
HOME_CITIES = [
    "Denver",
    "Portland",
    "Austin",
    "Chicago",
    "Minneapolis",
    "Seattle",
    "Boston",
    "Atlanta",
    "Phoenix",
    "Pittsburgh",
    "Sacramento",
    "Raleigh",
    "Madison",
    "Tucson",
    "Baltimore",
    "Columbus",
    "Richmond",
    "Albuquerque",
    "Boise",
    "Cleveland",
    "Louisville",
    "Omaha",
    "Spokane",
    "Burlington",
]
JOBS = [
    "nurse",
    "software developer",
    "high school teacher",
    "accountant",
    "graphic designer",
    "pharmacist",
    "civil engineer",
    "paralegal",
    "physical therapist",
    "sous chef",
    "product manager",
    "electrician",
    "veterinary technician",
    "marketing analyst",
    "librarian",
    "data analyst",
    "dental hygienist",
    "architect",
    "UX researcher",
    "logistics coordinator",
    "social worker",
    "lab technician",
    "project manager",
    "barista and part-time student",
]
COMPANIES = [
    "Northwind",
    "Brightline",
    "Halcyon",
    "Kestrel",
    "Lumen",
    "Meridian",
    "Orchard",
    "Pinecrest",
    "Quartzline",
    "Redwood",
    "Solstice",
    "Tidewater",
    "Umbra",
    "Verity",
    "Willowbrook",
    "Zephyr",
    "Bluefin",
    "Copperleaf",
    "Driftwood",
    "Evergreen",
    "Foxglove",
    "Granite",
    "Harbor",
    "Ironwood",
    "Juniper",
    "Larkspur",
    "Moonrise",
    "Nimbus",
    "Oakridge",
    "Palisade",
]
COMPANY_SUFFIX = [
    "Health",
    "Labs",
    "Logistics",
    "Partners",
    "Studio",
    "Analytics",
    "Foods",
    "Energy",
    "Media",
    "Robotics",
    "Insurance",
    "Design",
]

TRAIL_A = [
    "Eagle",
    "Cedar",
    "Hidden",
    "Lost",
    "Granite",
    "Whispering",
    "Bear",
    "Coyote",
    "Silver",
    "Maple",
    "Raven",
    "Juniper",
    "Falcon",
    "Aspen",
    "Sunset",
    "Thunder",
    "Copper",
    "Elk",
    "Heron",
    "Lantern",
]
TRAIL_B = [
    "Creek",
    "Lake",
    "Canyon",
    "Peak",
    "Meadow",
    "Pines",
    "Hollow",
    "Springs",
    "Ridge",
    "Falls",
    "Bluff",
    "Gulch",
    "Basin",
    "Point",
    "Notch",
]
TRAIL_C = ["Trail", "Loop", "Trail", "Loop", "Path", "Trail"]
REST_ADJ = [
    "Little",
    "Golden",
    "Blue",
    "Crooked",
    "Salty",
    "Hungry",
    "Copper",
    "Velvet",
    "Rusty",
    "Lucky",
    "Wild",
    "Quiet",
    "Green",
    "Smoky",
    "Silver",
]
REST_NOUN = [
    "Fig",
    "Lantern",
    "Spoon",
    "Olive",
    "Anchor",
    "Pepper",
    "Kettle",
    "Radish",
    "Heron",
    "Ember",
    "Basil",
    "Juniper",
    "Sparrow",
    "Lemon",
    "Barrel",
]
CUISINES = [
    ("Thai", ["green curry", "pad see ew", "khao soi", "larb"]),
    ("Ethiopian", ["doro wat", "misir wat", "tibs", "shiro"]),
    ("Peruvian", ["lomo saltado", "ceviche", "aji de gallina"]),
    ("Korean", ["bibimbap", "kimchi jjigae", "bulgogi", "japchae"]),
    ("Italian", ["cacio e pepe", "osso buco", "mushroom risotto", "gnocchi"]),
    ("Lebanese", ["shawarma plate", "kibbeh", "fattoush", "manakish"]),
    ("Mexican", ["mole poblano", "tacos al pastor", "chilaquiles", "pozole"]),
    ("Vietnamese", ["pho", "bun cha", "banh xeo", "com tam"]),
    ("Japanese", ["tonkotsu ramen", "katsu curry", "okonomiyaki", "chirashi"]),
    ("Indian", ["lamb rogan josh", "masala dosa", "butter chicken", "chana masala"]),
    ("Georgian", ["khachapuri", "khinkali", "lobio"]),
    ("Greek", ["moussaka", "spanakopita", "souvlaki"]),
]
PETS = [
    (
        "dog",
        [
            "beagle",
            "border collie",
            "corgi",
            "greyhound",
            "labrador mix",
            "dachshund",
            "pit bull mix",
            "golden retriever",
            "shiba inu",
            "australian shepherd",
        ],
    ),
    ("cat", ["tabby", "maine coon", "siamese", "tuxedo cat", "ragdoll", "calico"]),
    ("rabbit", ["lop-eared rabbit", "dwarf rabbit"]),
    ("parrot", ["cockatiel", "budgie", "green-cheeked conure"]),
]
PET_NAMES = [
    "Pepper",
    "Biscuit",
    "Mochi",
    "Juniper",
    "Waffles",
    "Olive",
    "Ziggy",
    "Pickles",
    "Noodle",
    "Clementine",
    "Bowie",
    "Marlowe",
    "Tofu",
    "Pretzel",
    "Luna",
    "Hazel",
    "Chester",
    "Dumpling",
    "Rosie",
    "Bruno",
    "Miso",
    "Gus",
    "Fig",
    "Nacho",
    "Poppy",
    "Sprout",
    "Remy",
    "Kiwi",
    "Mabel",
    "Otis",
]
BOOK_A = [
    "Salt",
    "Glass",
    "Winter",
    "Paper",
    "River",
    "Silent",
    "Burning",
    "Hollow",
    "Crimson",
    "Distant",
    "Iron",
    "Velvet",
    "Orchard",
    "Lighthouse",
    "Ash",
]
BOOK_B = [
    "Garden",
    "Cartographer",
    "Archive",
    "Sisters",
    "Harbor",
    "Kingdom",
    "Clockmaker",
    "Tide",
    "Season",
    "Orchestra",
    "Inheritance",
    "Migration",
    "Ferryman",
    "Atlas",
]
BAND_A = [
    "Velvet",
    "Neon",
    "Paper",
    "Midnight",
    "Golden",
    "Static",
    "Lunar",
    "Electric",
    "Wooden",
    "Crystal",
    "Silver",
    "Analog",
]
BAND_B = [
    "Foxes",
    "Harbors",
    "Satellites",
    "Orchards",
    "Tigers",
    "Lanterns",
    "Pilots",
    "Ghosts",
    "Parade",
    "Machines",
    "Comets",
    "Saints",
]
VENUES = [
    "the Fillmore",
    "the Ogden",
    "Red Rocks",
    "the Paramount",
    "the Blue Note",
    "the Armory",
    "the Riverside Amphitheater",
    "the Crystal Ballroom",
    "the Moon Room",
    "the Old Mill",
]
CARS = [
    "Subaru Outback",
    "Toyota RAV4",
    "Honda Civic",
    "Mazda CX-5",
    "Kia Niro",
    "Hyundai Ioniq 5",
    "Volvo XC40",
    "Ford Maverick",
    "Tesla Model 3",
    "Volkswagen ID.4",
    "Chevy Bolt",
    "Toyota Prius",
    "Honda CR-V",
    "Nissan Leaf",
]
COLORS = [
    "dark green",
    "silver",
    "deep blue",
    "white",
    "charcoal grey",
    "burgundy",
    "sand beige",
    "black",
    "bright red",
    "teal",
]
CLASSES = [
    ("pottery", ["wheel throwing", "glazing"]),
    ("Spanish", ["conversation", "grammar"]),
    ("guitar", ["fingerpicking", "chords"]),
    ("salsa dancing", ["footwork", "turns"]),
    ("watercolor", ["landscapes", "washes"]),
    ("woodworking", ["joinery", "a cutting board"]),
    ("Italian", ["verbs", "conversation"]),
    ("rock climbing", ["bouldering", "belaying"]),
    ("bread baking", ["sourdough", "shaping"]),
    ("jazz piano", ["voicings", "scales"]),
    ("improv", ["scene work", "warmups"]),
    ("Japanese", ["kana", "keigo"]),
]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
SPECIALTIES = [
    ("dermatologist", "a mole on my shoulder"),
    ("dentist", "a cracked molar"),
    ("physical therapist", "my knee"),
    ("cardiologist", "my heart rhythm"),
    ("allergist", "the hay fever"),
    ("eye doctor", "new glasses"),
    ("orthopedist", "my wrist"),
    ("ENT", "my sinuses"),
]
GADGETS = [
    ("noise-cancelling headphones", ["Sony WH-1000XM5", "Bose QuietComfort Ultra", "Sennheiser Momentum 4"]),
    ("robot vacuum", ["Roborock S8", "iRobot Roomba j7", "Eufy X10"]),
    ("e-reader", ["Kindle Paperwhite", "Kobo Libra 2", "Kobo Clara"]),
    ("espresso machine", ["Breville Bambino", "Gaggia Classic", "De'Longhi Dedica"]),
    ("smartwatch", ["Garmin Forerunner 265", "Apple Watch SE", "Pixel Watch 2"]),
    ("stand mixer", ["KitchenAid Artisan", "Kenwood Chef"]),
    ("air fryer", ["Ninja Foodi", "Cosori Pro"]),
]
RETURN_REASONS = [
    "the battery died after two days",
    "it was way too loud",
    "the app kept crashing",
    "it scratched the first week",
    "it stopped charging",
    "it didn't fit on the counter",
]
ALLERGENS = ["cashews", "shellfish", "sesame", "penicillin", "kiwi", "latex", "mango", "walnuts"]
SYMPTOMS = ["hives", "my lips swelled up", "my throat got itchy", "a rash on my arms"]
MEDS = [
    ("sertraline", "50 milligrams"),
    ("lisinopril", "10 milligrams"),
    ("levothyroxine", "75 micrograms"),
    ("metformin", "500 milligrams"),
    ("vitamin D", "2000 units"),
    ("iron tablets", "65 milligrams"),
]
SHOWS = [
    "Slow Horses",
    "The Bear",
    "Severance",
    "Shrinking",
    "Reservation Dogs",
    "Only Murders in the Building",
    "Blue Eye Samurai",
    "Pachinko",
    "Dark",
    "Mr. Robot",
    "The Expanse",
    "Fleabag",
]
PODCASTS = [
    "Hidden Brain",
    "99% Invisible",
    "Radiolab",
    "Song Exploder",
    "Reply All",
    "Planet Money",
    "The Moth",
    "Ologies",
    "Science Vs",
    "Decoder Ring",
]
RACES = [
    "Turkey Trot",
    "Bridge Run",
    "Harbor Half",
    "Color Dash",
    "Riverfront 10K",
    "Midnight Mile",
    "Trail Challenge",
    "Spring Classic",
]
PLANTS = ["cherry tomatoes", "jalapenos", "basil", "snap peas", "zucchini", "strawberries", "kale", "sunflowers"]
HOLIDAY_GIFTS = [
    "a leather journal",
    "a pottery class voucher",
    "noise-cancelling earbuds",
    "a cast iron skillet",
    "a vintage film camera",
    "concert tickets",
    "a weighted blanket",
    "a bonsai tree",
    "a bread-making kit",
    "a telescope",
]
SECRET_INGREDIENTS = [
    "a spoon of miso",
    "a pinch of cinnamon",
    "fish sauce",
    "orange zest",
    "smoked paprika",
    "a splash of espresso",
    "brown butter",
    "anchovies",
    "cardamom",
    "a bay leaf",
]
DISHES = [
    "chili",
    "banana bread",
    "lasagna",
    "apple pie",
    "chicken soup",
    "empanadas",
    "dumplings",
    "meatballs",
    "carrot cake",
    "stew",
]
RELATIVES = [
    ("grandmother", "her"),
    ("grandfather", "his"),
    ("aunt", "her"),
    ("uncle", "his"),
    ("mom", "her"),
    ("dad", "his"),
]
SIBLINGS = [("sister", "she", "her"), ("brother", "he", "his")]
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
NEIGHBORHOODS = [
    "Riverside",
    "Oak Park",
    "the Heights",
    "Old Town",
    "Eastgate",
    "Millbrook",
    "Southside",
    "Westview",
    "Cedar Hill",
    "the Arts District",
    "Lakeshore",
    "Northgate",
]
CHARITIES = [
    "the food bank",
    "the animal shelter",
    "the library's literacy program",
    "the community garden",
    "the soup kitchen",
    "a youth soccer league",
]
LANG_APPS = ["Duolingo", "Babbel", "Memrise", "Busuu"]
AIRLINES = [
    ("TAP", "TP"),
    ("Delta", "DL"),
    ("United", "UA"),
    ("Lufthansa", "LH"),
    ("KLM", "KL"),
    ("Air Canada", "AC"),
    ("Iberia", "IB"),
    ("JetBlue", "B6"),
    ("Alaska", "AS"),
    ("Icelandair", "FI"),
]
HOTELS_A = ["Casa", "Hotel", "The", "Villa", "Pension", "Maison"]
HOTELS_B = [
    "Azul",
    "Lumen",
    "Riverside",
    "Marais",
    "Oliveira",
    "Harbor House",
    "Belvedere",
    "Linden",
    "Solana",
    "Bellview",
]

# ---------------------------------------------------------------------------
# Filler: the bulk of real conversations
# ---------------------------------------------------------------------------

GREETINGS = [
    "hey",
    "Hi!",
    "Good morning",
    "morning :)",
    "Hello again",
    "hey there",
    "Hi, it's me again",
    "Evening!",
    "yo",
    "Hi hi",
    "good afternoon",
    "Hey, got a minute?",
    "hello",
    "back again lol",
]
AGENT_GREETINGS = [
    "Hi {name}! What can I do for you today?",
    "Good to hear from you, {name}. How's it going?",
    "Hey {name}! How are things?",
    "Hello {name}, I'm here. What's on your mind?",
    "Hi {name}, nice to see you again. What are we working on?",
    "Hey! How has your day been so far?",
]
SMALL_TALK = [
    ("It's pouring rain here again.", "Perfect weather for staying in with something warm to drink."),
    ("Finally some sun today!", "That's great, a bit of sunshine makes everything easier."),
    ("Ugh, long day at work.", "Sorry to hear that. Want to talk about it or would a distraction help more?"),
    ("I'm so tired today, barely slept.", "That's rough. Maybe an early night tonight if you can manage it?"),
    ("Not much going on, just relaxing.", "Sounds nice. Everyone needs a slow day now and then."),
    ("I think I'm coming down with a cold.", "Take it easy, drink lots of fluids and rest if you can."),
    ("Traffic was a nightmare this morning.", "Commutes like that drain the energy out of a day."),
    ("I made way too much coffee this morning.", "There are worse problems to have! Iced coffee later?"),
    ("The neighbors are having a party again.", "Hopefully it winds down at a reasonable hour."),
    ("I can't believe it's already the weekend.", "The weeks really fly by. Any plans?"),
    ("Feeling pretty good today actually.", "Love to hear that! What's putting you in a good mood?"),
    ("It's freezing outside.", "Bundle up! Maybe a good day for soup."),
    ("My phone died halfway through the day, so annoying.", "That's frustrating. A small power bank can help."),
    ("Just got back from a walk.", "Nice, a walk is a great reset."),
    ("I've been procrastinating all afternoon.", "It happens. Want to pick one small task to start with?"),
    ("Work is slow this week.", "Enjoy the breather while it lasts."),
    ("I need a vacation.", "Even a long weekend somewhere quiet can help. Anything in mind?"),
    ("Spent the whole morning cleaning.", "That feeling of a clean place afterwards is worth it."),
    ("My back hurts from sitting all day.", "Try getting up every hour and doing a couple of gentle stretches."),
    ("I finally finished my taxes.", "Congratulations, that's a big weight off."),
    ("The internet keeps dropping today.", "Restarting the router often helps, annoying as it is."),
    ("Had the best sandwich for lunch.", "A good sandwich can make a whole day better."),
    ("I'm trying to drink more water.", "Good goal! Keeping a bottle on your desk makes it easier."),
    ("Monday again...", "Let's make it a gentle one. What's first on your list?"),
]
ACKS = [
    "thanks!",
    "ok cool",
    "perfect, thank you",
    "that helps",
    "got it",
    "nice",
    "haha fair",
    "makes sense",
    "great, thanks so much",
    "ok",
    "love it",
    "awesome",
    "thank you!",
    "hmm ok",
    "good idea",
    "will do",
]
AGENT_ACKS = [
    "You're welcome!",
    "Anytime.",
    "Glad that helps.",
    "Happy to help!",
    "Of course.",
    "Let me know if you need anything else.",
    "Sure thing.",
]
CLOSINGS = [
    "ok that's all for now, bye!",
    "gotta run, talk later",
    "thanks, that's everything",
    "later!",
    "ok I'll let you go",
    "bye for now",
    "talk tomorrow",
    "that's it for today, thanks",
]
AGENT_CLOSINGS = [
    "Bye {name}, talk soon!",
    "Take care, {name}!",
    "Have a good one!",
    "Catch you later.",
    "Talk soon!",
    "Anytime. Have a great rest of your day.",
]

# Help requests with the assistant's answer: topical words of the facts without their values.
HELP = [
    (
        "Can you help me write a short text to my landlord about the leaking sink?",
        'Sure: "Hi, the kitchen sink has started leaking under the cabinet. Could someone take a look this week? '
        'Thanks!" Want it more formal?',
    ),
    (
        "How long should I boil eggs for soft yolks?",
        "About six and a half minutes in boiling water, then straight "
        "into ice water. Seven minutes if you like them a little firmer.",
    ),
    (
        "What's a good stretch for lower back pain?",
        "Try knee-to-chest stretches and cat-cow, holding each for "
        "thirty seconds. If the pain is sharp or lasts, check with a doctor.",
    ),
    (
        "Give me a packing list for a weekend hike.",
        "Layers, rain jacket, two liters of water, snacks, map, "
        "headlamp, first aid kit, sunscreen, and broken-in boots. Check the trail conditions before you go.",
    ),
    (
        "How do I get a dog to stop pulling on the leash?",
        "Stop walking whenever the leash goes tight and reward "
        "the dog when it comes back to your side. Short, frequent sessions work best.",
    ),
    ("Convert 5 miles to kilometers.", "5 miles is about 8 kilometers (8.05 km)."),
    (
        "Suggest a quick vegetarian dinner.",
        "A chickpea curry with spinach takes about twenty minutes: onion, "
        "garlic, curry paste, a can of chickpeas, coconut milk and a few handfuls of spinach.",
    ),
    (
        "Explain compound interest like I'm five.",
        "You get interest on your money, and then next time you also "
        "get interest on that interest, so it grows faster and faster.",
    ),
    (
        "What should I look for when buying a used car?",
        "Service records, rust, tire wear, warning lights, and a "
        "test drive on the highway. Having a mechanic inspect it is worth the money.",
    ),
    (
        "How do I keep basil alive indoors?",
        "Give it a sunny window, water when the top of the soil is dry, and "
        "pinch off the flower buds so it keeps making leaves.",
    ),
    (
        "Any tips for sleeping better?",
        "Keep a regular bedtime, dim screens an hour before bed, keep the room cool, and avoid caffeine after lunch.",
    ),
    (
        "What's a polite way to decline a meeting?",
        "\"Thanks for the invite! I can't make this one, but please "
        "send me the notes and I'll follow up on anything that needs me.\"",
    ),
    (
        "How much should I tip at a restaurant in the US?",
        "Eighteen to twenty percent is standard for sit-down service; more for exceptional service.",
    ),
    (
        "Recommend a good podcast for a long drive.",
        "Narrative shows work well for drives. Try a true story or "
        "history series so you can follow along without looking at anything.",
    ),
    (
        "What's the best way to learn vocabulary in a new language?",
        "Spaced repetition flashcards, a few minutes every day, plus reading short texts you enjoy.",
    ),
    (
        "How do I clean a cast iron pan?",
        "Hot water and a brush, no soaking. Dry it on the stove and rub in a thin layer of oil while it's warm.",
    ),
    (
        "What are some good stretches after running?",
        "Calf stretches against a wall, a standing quad stretch, "
        "hamstring stretches and a hip flexor lunge, about thirty seconds each.",
    ),
    (
        "Can you remind me how to make a flight check-in easier?",
        "Check in online 24 hours before, save the boarding pass to your phone, and keep your passport with the phone.",
    ),
    (
        "What's a nice gift for someone who likes cooking?",
        "A good chef's knife, a nice olive oil set, a cookbook from a cuisine they love, or a cooking class together.",
    ),
    (
        "How do I introduce a new cat to my apartment?",
        "Start it in one quiet room with litter, food and water, "
        "then let it explore the rest of the place over a few days.",
    ),
    (
        "Draft an out of office message for me.",
        "\"Thanks for your email. I'm out of the office until Monday with "
        'limited access to email. For urgent matters please contact the team inbox."',
    ),
    (
        "What's the difference between a latte and a flat white?",
        "A flat white has less milk and a thinner layer of microfoam, so the coffee tastes stronger.",
    ),
    (
        "How many calories does a 30 minute run burn?",
        "Roughly 300 to 400 for most adults, depending on weight and pace.",
    ),
    (
        "Tips for a first pottery class?",
        "Wear clothes you don't mind getting muddy, trim your nails, and expect "
        "your first pieces to collapse, that's part of it.",
    ),
    (
        "What should I ask at a job interview?",
        "Ask what success looks like in the first six months, how the team "
        "works together, and what the biggest challenge is right now.",
    ),
    (
        "How do I get rid of fruit flies?",
        "A small bowl of apple cider vinegar with a drop of dish soap traps them. "
        "Take out the compost and rinse the sink drain too.",
    ),
    ("What can I cook with leftover rice?", "Fried rice, rice pudding, stuffed peppers, or crispy rice cakes."),
    (
        "How often should I water tomato plants?",
        "Deeply two or three times a week, more in a heat wave. Water the soil, not the leaves.",
    ),
    (
        "Remind me what a good resting heart rate is.",
        "For most adults, 60 to 100 beats per minute; fit people are often lower.",
    ),
    (
        "Write a birthday message for a coworker.",
        '"Happy birthday! Thanks for making work more fun. Hope you get a great day and some cake."',
    ),
    (
        "How do I fix a squeaky door?",
        "A bit of silicone spray or even olive oil on the hinge pin, then swing the door a few times.",
    ),
    (
        "Is it ok to run every day?",
        "Many people do, but mix in easy days and listen to your body; rest days help avoid injuries.",
    ),
    ("What's a good beginner houseplant?", "Pothos, snake plants and ZZ plants are very forgiving."),
    (
        "How should I prepare for a long flight?",
        "Drink water, walk the aisle every couple of hours, bring layers "
        "and a neck pillow, and download shows in advance.",
    ),
    (
        "Give me an idea for a weekend with friends.",
        "A picnic and a board game afternoon, a short day hike, or a potluck where everyone brings one dish.",
    ),
    (
        "How do I politely remind someone they owe me money?",
        '"Hey, just a quick reminder about the money from dinner last week, no rush, whenever works this week."',
    ),
    (
        "What are signs a dog is stressed?",
        "Yawning, lip licking, a tucked tail, pacing, and turning away. Give them space and a quiet spot.",
    ),
    (
        "Best way to store fresh herbs?",
        "Stand them in a glass of water in the fridge with a bag loosely over the "
        "top, except basil, which stays on the counter.",
    ),
    (
        "Help me plan a budget for groceries.",
        "Track a month of receipts, set a weekly amount, plan meals around "
        "what you already have, and shop with a list.",
    ),
    (
        "How long does it take to get used to new glasses?",
        "Usually a few days to two weeks. If headaches last, ask the eye doctor to check the prescription.",
    ),
    (
        "What's a good warm-up before climbing?",
        "Light cardio for five minutes, arm circles, and a few easy routes before trying anything hard.",
    ),
    (
        "Can you recommend a novel for the beach?",
        "Something with momentum: a mystery or an adventure story you can pick up and put down easily.",
    ),
    (
        "How do I start a sourdough starter?",
        "Mix equal weights of flour and water, discard half and feed it daily; it's usually ready in about a week.",
    ),
    ("Remind me how to say thank you in Japanese.", "Arigato, or arigato gozaimasu to be more polite."),
    (
        "What should I bring to a housewarming?",
        "A plant, a nice bottle of something, good coffee, or a small kitchen item they'll actually use.",
    ),
    ("How do I make my apartment less echoey?", "Rugs, curtains, bookshelves and soft furniture absorb sound."),
]
FOLLOW_UPS = [
    ("Make it shorter?", "Sure, here's a shorter version: same idea, fewer words."),
    ("Can you say that again more simply?", "Of course: do the simplest version first and build from there."),
    ("Why is that?", "Mostly because it's the easiest way to be consistent, which matters more than details."),
    ("Any other options?", "A couple more: keep it simple, or ask someone who has done it before for their tips."),
    ("What if that doesn't work?", "Then try a different approach for a week and see which one sticks."),
]

# Help requests with slots, so the same request is rarely word for word the same.
PRODUCE = [
    "peaches",
    "asparagus",
    "sweet corn",
    "heirloom tomatoes",
    "mushrooms",
    "apples",
    "leeks",
    "radishes",
    "blueberries",
    "butternut squash",
    "fennel",
    "green beans",
]
ROOMS = ["bedroom", "kitchen", "hallway", "bathroom", "office", "living room"]
UNITS = [
    ("miles", "kilometers", 1.609),
    ("pounds", "kilograms", 0.4536),
    ("cups", "milliliters", 236.6),
    ("feet", "meters", 0.3048),
    ("ounces", "grams", 28.35),
    ("gallons", "liters", 3.785),
]
PHRASES = [
    "where is the train station",
    "the bill, please",
    "nice to meet you",
    "I'm allergic to nuts",
    "how much does this cost",
    "a table for two",
]
LANGUAGES = ["Spanish", "French", "Italian", "German", "Portuguese", "Japanese"]


def help_exchange(rng, persona):
    """A request the user makes and the assistant's answer, from a template with slots."""
    form = rng.randrange(12)
    if form == 0:
        a, b, factor = pick(rng, UNITS)
        n = rng.randrange(2, 40)
        return f"Convert {n} {a} to {b}.", f"{n} {a} is about {n * factor:,.1f} {b}."
    if form == 1:
        veg, temp = pick(rng, PRODUCE), pick(rng, [400, 425, 375])
        return (
            f"How long should I roast {veg} at {temp}?",
            f"Roughly 20 to 35 minutes at {temp}F depending on size; toss them halfway through.",
        )
    if form == 2:
        name, minutes = pick(rng, FIRST_NAMES), rng.randrange(5, 40, 5)
        return (
            f"Write a text to {name} saying I'll be {minutes} minutes late.",
            f'"Hey {name}, running about {minutes} minutes behind, sorry! See you soon."',
        )
    if form == 3:
        cuisine = pick(rng, CUISINES)[0]
        return (
            f"What's an easy {cuisine} dish for a weeknight?",
            f"A simple {cuisine}-style stir of vegetables, a protein and a good sauce works; want a recipe?",
        )
    if form == 4:
        n = rng.randrange(10, 45, 5)
        return (
            f"Give me a {n}-minute workout I can do at home.",
            f"Circuit for {n} minutes: squats, push-ups, lunges, plank, jumping jacks, 40 seconds each with "
            "20 seconds rest.",
        )
    if form == 5:
        phrase, lang = pick(rng, PHRASES), pick(rng, LANGUAGES)
        return (
            f"How do you say '{phrase}' in {lang}?",
            f"In {lang} that's usually said a little differently, but here's a natural way to put it.",
        )
    if form == 6:
        pct, amount = rng.randrange(5, 30), rng.randrange(20, 400)
        return f"What's {pct} percent of {amount}?", f"{pct}% of {amount} is {pct * amount / 100:g}."
    if form == 7:
        species = pick(rng, PETS)[0]
        names = rng.sample(PET_NAMES, 3)
        return (
            f"My coworker wants name ideas for a {species}, any suggestions?",
            f"How about {names[0]}, {names[1]} or {names[2]}?",
        )
    if form == 8:
        city, month = pick(rng, CITIES), pick(rng, MONTHS)
        return (
            f"What's the weather usually like in {city} in {month}?",
            f"It varies year to year, but pack layers for {city} in {month} and check the forecast a week out.",
        )
    if form == 9:
        room, color = pick(rng, ROOMS), pick(rng, COLORS)
        return (
            f"Would {color} work for a small {room}?",
            "It can, especially with good light. Try a sample patch on two walls first.",
        )
    if form == 10:
        produce = pick(rng, PRODUCE)
        return (
            f"What can I make with a lot of {produce}?",
            f"Roast them, make a soup, or add {produce} to a frittata or a salad.",
        )
    return pick(rng, HELP)


def life_chatter(rng, persona):
    """Everyday news that nobody asks about later: the realistic haystack around the facts."""
    partner, friend = persona["partner"], pick(rng, FIRST_NAMES)
    relative, poss = pick(rng, RELATIVES)
    options = [
        (
            f"Went to the farmers market with {partner}, got {pick(rng, PRODUCE)} and fresh bread.",
            "Lovely way to spend a morning. Farmers markets are the best this time of year.",
        ),
        (
            f"My {relative} called today, sounds like {poss} garden is doing great.",
            "That's nice to hear. Calls like that brighten the day.",
        ),
        (
            f"Cooked {pick(rng, DISHES)} for dinner, it turned out {pick(rng, ['great', 'a bit salty', 'okay'])}.",
            "Cooking at home is always a win, even when it's not perfect.",
        ),
        (
            f"We're thinking about repainting the {pick(rng, ROOMS)} {pick(rng, COLORS)}.",
            "A fresh coat of paint changes a room so much.",
        ),
        (f"Ran {rng.randrange(2, 9)} miles before work this morning.", "Great way to start the day!"),
        (f"{friend} is visiting from {pick(rng, CITIES)} next week.", "How fun! Any plans while they're in town?"),
        ("Had a dentist cleaning, no cavities!", "Nice, that's always a relief."),
        (f"Booked a table at {_restaurant(rng)} for Friday with {friend}.", "Sounds like a nice evening."),
        (
            f"Watched a documentary about {pick(rng, ['octopuses', 'the deep sea', 'bees', 'volcanoes', 'chess'])} "
            "last night.",
            "Documentaries are great for falling down a rabbit hole.",
        ),
        (f"{partner} and I took a long walk by the river after dinner.", "That sounds peaceful."),
        ("Work was chaos today, three meetings back to back.", "Ugh. Hopefully tomorrow is calmer."),
        ("Cleaned out the garage finally, found old photos from college.", "Ooh, fun find. Any good ones?"),
        (f"{friend} lent me a tent for the summer, so camping might happen.", "Camping season! Nice."),
        ("The car needs new tires soon, not looking forward to that bill.", "Tires are pricey but worth it."),
        (
            f"I bought {pick(rng, ['a new rug', 'plants for the balcony', 'a new lamp', 'better pillows'])} today.",
            "Small upgrades at home make a real difference.",
        ),
        (
            f"{partner} got me into {pick(rng, ['chess', 'birdwatching', 'crosswords', 'bouldering'])} lately.",
            "That's a fun thing to share.",
        ),
        ("Took the day off, just reading in the park.", "Sounds like exactly what you needed."),
        (f"My {relative} is visiting for the holidays.", "That's nice. Time with family around the holidays."),
    ]
    return pick(rng, options)


# ---------------------------------------------------------------------------
# Facts: what users mention once and ask about later
# ---------------------------------------------------------------------------


@dataclass
class Fact:
    kind: str
    values: dict
    part1: str  # evidence turn (user)
    reply1: str  # the assistant's answer (no answer values)
    part2: str | None = None  # a second evidence turn, later (two-turn facts)
    reply2: str | None = None
    distractor: str | None = None  # a similar turn that is not the answer
    distractor_reply: str | None = None
    questions: list = field(default_factory=list)  # (type, text, parts needed, answer)


def pick(rng: random.Random, options):
    return options[rng.randrange(len(options))]


GENERIC = "generic"  # marks a question that only makes sense if the user mentioned this kind of thing once


def pick_unique(rng: random.Random, options, persona, key):
    """A choice this user has not had yet for `key` (two trips never go to one city)."""
    used = persona.setdefault("used", {}).setdefault(key, set())
    fresh = [o for o in options if repr(o) not in used] or list(options)
    choice = pick(rng, fresh)
    used.add(repr(choice))
    return choice


def _trail(rng):
    return f"{pick(rng, TRAIL_A)} {pick(rng, TRAIL_B)} {pick(rng, TRAIL_C)}"


def _restaurant(rng):
    form = rng.randrange(3)
    if form == 0:
        return f"The {pick(rng, REST_ADJ)} {pick(rng, REST_NOUN)}"
    if form == 1:
        return f"{pick(rng, REST_NOUN)} & {pick(rng, REST_NOUN)}"
    return f"{pick(rng, FIRST_NAMES)}'s {pick(rng, ['Kitchen', 'Table', 'Cantina', 'Bistro', 'Noodle Bar'])}"


def _book(rng):
    return f"The {pick(rng, BOOK_A)} {pick(rng, BOOK_B)}"


def _band(rng):
    return f"The {pick(rng, BAND_A)} {pick(rng, BAND_B)}"


def _company(rng):
    return f"{pick(rng, COMPANIES)} {pick(rng, COMPANY_SUFFIX)}"


def _person(rng, taken: set):
    while True:
        name = pick(rng, FIRST_NAMES)
        if name not in taken:
            taken.add(name)
            return name


def _money(rng, low, high, step):
    return rng.randrange(low // step, high // step + 1) * step


def _fmt_money(amount):
    return f"${amount:,}"


def _hotel(rng):
    return f"{pick(rng, HOTELS_A)} {pick(rng, HOTELS_B)}"


def fact_pet(rng, p):
    species, breeds = pick(rng, PETS)
    breed, name, age = pick(rng, breeds), pick(rng, PET_NAMES), rng.randrange(1, 8)
    other_name = pick(rng, [n for n in PET_NAMES if n != name])
    friend = _person(rng, p["taken"])
    ev = pick(
        rng,
        [
            f"Big news, we adopted a {breed} from the shelter today! {name} is {age} and already asleep on the couch.",
            f"So we finally did it, there's a {species} in the house now. A {age}-year-old {breed} named {name}.",
            f"Meet {name}! Rescue {breed}, {age} years old, came home with us this afternoon.",
        ],
    )
    reply = pick(
        rng,
        [
            "That's wonderful, congratulations! How are the first hours going?",
            "Oh that's so exciting. Give the new family member lots of quiet time to settle in.",
            "Congrats! The first few days are a big adjustment, go easy on yourselves.",
        ],
    )
    dis = pick(
        rng,
        [
            f"My friend {friend} has a {species} called {other_name}, they might do playdates.",
            f"{friend} keeps sending me photos of {friend}'s {species} {other_name}, it's adorable.",
        ],
    )
    qs = [
        (
            "name",
            pick(
                rng,
                [
                    f"What's the name of my {species} again?",
                    f"what did we name the {species}?",
                    f"remind me what my {species} is called",
                ],
            ),
            [1],
            name,
        ),
        (
            "paraphrase",
            pick(
                rng,
                [
                    "What did we call the animal we brought home from the rescue?",
                    "whats the name of my new furry friend",
                    "What name did we give the little guy we adopted?",
                ],
            ),
            [1],
            name,
        ),
        ("fact", f"What breed is {name}?", [1], breed),
        ("when", pick(rng, [f"When did we adopt {name}?", f"when did {name} come home with us?"]), [1], None),
    ]
    return Fact(
        "pet",
        {"name": name, "breed": breed, "species": species},
        ev,
        reply,
        distractor=dis,
        distractor_reply="Playdates are a great way to socialize them.",
        questions=qs,
    )


def fact_hike(rng, p):
    trail, other = _trail(rng), _trail(rng)
    miles = rng.randrange(4, 15)
    hours = rng.randrange(3, 8)
    friend = _person(rng, p["taken"])
    ev = pick(
        rng,
        [
            f"Did the {trail} with {friend} on Saturday, {miles} miles and it took us about {hours} hours.",
            f"We hiked the {trail} yesterday! {miles} miles round trip, my legs are dead.",
            f"{friend} and I finally tackled the {trail}. {hours} hours, {miles} miles, totally worth it.",
        ],
    )
    reply = pick(
        rng,
        [
            "That sounds like a great day outside. Were the views worth the climb?",
            "Nice work! Make sure to stretch and drink plenty of water today.",
            "Wow, that's a solid hike. How was the weather up there?",
        ],
    )
    dis = pick(
        rng,
        [
            f"Someone at work said the {other} is even prettier in the fall, maybe next time.",
            f"I keep seeing photos of the {other}, it's on my list now.",
        ],
    )
    qs = [
        (
            "name",
            pick(
                rng,
                [
                    f"What was the name of the trail I hiked with {friend}?",
                    f"which trail did {friend} and I actually do, not the one on my list?",
                ],
            ),
            [1],
            trail,
        ),
        (
            "paraphrase",
            pick(
                rng,
                [
                    "How far was that long walk in the mountains I did?",
                    "what distance did I cover on that big outdoor day with my friend?",
                ],
            ),
            [1],
            f"{miles} miles",
            GENERIC,
        ),
        (
            "paraphrase",
            pick(
                rng,
                [
                    f"How many miles did {friend} and I cover that day in the mountains?",
                    f"how long was that outing with {friend}?",
                ],
            ),
            [1],
            f"{miles} miles",
        ),
        ("fact", f"Who did I do the {trail} with?", [1], friend),
        ("when", pick(rng, [f"When did I hike the {trail}?", f"when was my hike on the {trail}?"]), [1], None),
        ("fact", "Which trail did someone at work recommend?", ["d"], other, GENERIC),
    ]
    return Fact(
        "hike",
        {"trail": trail},
        ev,
        reply,
        distractor=dis,
        distractor_reply="Fall colours on a trail are hard to beat.",
        questions=qs,
    )


def fact_doctor(rng, p):
    specialty, reason = pick_unique(rng, SPECIALTIES, p, "specialty")
    doctor = f"Dr. {pick(rng, LAST_NAMES)}"
    day, hour = pick(rng, WEEKDAYS[:5]), rng.randrange(8, 17)
    time = f"{hour if hour <= 12 else hour - 12}{'am' if hour < 12 else 'pm'}"
    ev = pick(
        rng,
        [
            f"Booked the {specialty} for {reason}, it's {doctor}, next {day} at {time}.",
            f"Finally got an appointment with a {specialty} about {reason}. {doctor}, {day} {time}.",
        ],
    )
    reply = pick(
        rng,
        [
            "Good that you got it booked. Want me to remind you the day before?",
            "Glad that's scheduled. Write down any questions you want to ask beforehand.",
        ],
    )
    qs = [
        ("name", pick(rng, [f"What's my {specialty}'s name?", f"who was the {specialty} I booked?"]), [1], doctor),
        (
            "fact",
            pick(rng, [f"When is my appointment with {doctor}?", f"what day do I see {doctor}?"]),
            [1],
            f"{day} at {time}",
        ),
        ("paraphrase", f"Who am I seeing about {reason}?", [1], doctor),
        ("paraphrase", "which doctor did I set up that visit with?", [1], doctor, GENERIC),
    ]
    return Fact("doctor", {"doctor": doctor}, ev, reply, questions=qs)


def fact_car(rng, p):
    car, color = pick(rng, CARS), pick(rng, COLORS)
    price = _money(rng, 14000, 46000, 500)
    ev = pick(
        rng,
        [
            f"Bought a {color} {car} today! Paid {_fmt_money(price)} after a lot of haggling.",
            f"The new car is in the driveway, a used {color} {car}. {_fmt_money(price)} all in.",
        ],
    )
    reply = "Congratulations on the new ride! Did you get a chance to take it on the highway yet?"
    part2 = pick(
        rng,
        [
            "The car's check engine light came on already, it's at the dealer until Friday.",
            "Had to take the car back in, the check engine light came on. Dealer says a sensor.",
        ],
    )
    reply2 = "That's annoying so soon after buying. At least it should be covered."
    qs = [
        ("fact", pick(rng, ["What car did I buy?", "which car did I end up getting?"]), [1], f"{color} {car}"),
        (
            "number",
            pick(rng, [f"How much did I pay for the {car}?", "how much did the new car cost me?"]),
            [1],
            _fmt_money(price),
        ),
        ("paraphrase", "What colour is my new vehicle?", [1], color),
        (
            "two_turn",
            "What car did I buy and what went wrong with it afterwards?",
            [1, 2],
            f"{car}; the check engine light",
        ),
    ]
    return Fact("car", {"car": car}, ev, reply, part2=part2, reply2=reply2, questions=qs)


def fact_friend_job(rng, p):
    friend = _person(rng, p["taken"])
    company, job = _company(rng), pick(rng, JOBS)
    ev = pick(
        rng,
        [
            f"My old roommate {friend} just started as a {job} at {company}.",
            f"Had coffee with {friend}, apparently {friend} is a {job} at {company} now.",
        ],
    )
    reply = "It's nice to catch up with old friends. Are they enjoying the new role?"
    qs = [
        ("name", f"Where does {friend} work now?", [1], company),
        ("fact", pick(rng, [f"What does {friend} do for a living?", f"what's {friend}'s job?"]), [1], job),
        ("paraphrase", f"Which of my friends just joined {company}?", [1], friend),
    ]
    return Fact("friend_job", {"friend": friend}, ev, reply, questions=qs)


def fact_sibling(rng, p):
    sib, _subj, poss = pick(rng, SIBLINGS)
    sib_name = _person(rng, p["taken"])
    fiance = _person(rng, p["taken"])
    month = pick(rng, MONTHS)
    city = pick(rng, CITIES)
    ev = pick(
        rng,
        [
            f"My {sib} {sib_name} got engaged last night! {poss.capitalize()} partner is {fiance}.",
            f"Huge family news: {sib_name}, my {sib}, is engaged to {fiance}!",
        ],
    )
    reply = "That's lovely news, congratulations to them! Was it a surprise?"
    part2 = pick(
        rng,
        [
            f"{sib_name}'s wedding is going to be in {city} in {month}, I need to book flights.",
            f"They set the date, {month} in {city}. I'm in charge of the toast somehow.",
        ],
    )
    reply2 = "How exciting! Start thinking about the toast early, it helps."
    qs = [
        ("name", f"Who is my {sib} engaged to?", [1], fiance),
        ("paraphrase", f"Who is {sib_name} going to marry?", [1], fiance),
        ("fact", f"Where is {sib_name}'s wedding?", [2], city),
        (
            "two_turn",
            f"Who is {sib_name} marrying, and when and where is the wedding?",
            [1, 2],
            f"{fiance}; {month} in {city}",
        ),
    ]
    return Fact("sibling", {"sib": sib_name}, ev, reply, part2=part2, reply2=reply2, questions=qs)


def fact_restaurant(rng, p):
    name, bad = _restaurant(rng), _restaurant(rng)
    cuisine, dishes = pick_unique(rng, CUISINES, p, "cuisine")
    dish = pick(rng, dishes)
    ev = pick(
        rng,
        [
            f"Went to {name} last night, it's {cuisine}. The {dish} was unreal, I'm going back.",
            f"New favorite spot: {name}. Amazing {cuisine} food, get the {dish}.",
        ],
    )
    reply = pick(
        rng,
        [
            "That sounds delicious. Always good to find a new favorite place.",
            "Yum. Was it busy? Places like that fill up fast once people find them.",
        ],
    )
    dis = pick(
        rng,
        [
            f"Tried {bad} for lunch, honestly overpriced and the service was slow.",
            f"Don't ever let me go back to {bad}, the food was cold.",
        ],
    )
    qs = [
        ("name", f"What was the {cuisine} place I loved?", [1], name),
        ("name", "what's the name of that restaurant I said was my new favorite?", [1], name, GENERIC),
        ("fact", f"What should I order at {name}?", [1], dish),
        (
            "paraphrase",
            pick(rng, ["Where did I have that incredible dinner?", "which place had the food I raved about?"]),
            [1],
            name,
            GENERIC,
        ),
        ("paraphrase", f"Which spot serves the {cuisine} food I couldn't stop talking about?", [1], name),
        ("fact", "Which place did I say was overpriced?", ["d"], bad, GENERIC),
    ]
    return Fact(
        "restaurant",
        {"name": name},
        ev,
        reply,
        distractor=dis,
        distractor_reply="That's disappointing. Not every place lives up to the hype.",
        questions=qs,
    )


def fact_book(rng, p):
    title = _book(rng)
    author = f"{pick(rng, FIRST_NAMES)} {pick(rng, LAST_NAMES)}"
    friend = _person(rng, p["taken"])
    ev = pick(
        rng,
        [
            f"Started reading {title} by {author}, {friend} lent it to me. Can't put it down.",
            f"{friend} gave me {title} for my birthday, it's by {author}, about halfway through.",
        ],
    )
    reply = "Nice! It's great when a book grabs you like that. What's it about?"
    qs = [
        (
            "name",
            pick(rng, ["What book am I reading?", "what was that novel I couldn't put down?"]),
            [1],
            title,
            GENERIC,
        ),
        ("name", f"What's the book {friend} gave me?", [1], title),
        ("fact", f"Who wrote {title}?", [1], author),
        ("paraphrase", "Who lent me that novel?", [1], friend, GENERIC),
        ("paraphrase", f"Which friend passed me the {author} novel?", [1], friend),
    ]
    return Fact("book", {"title": title}, ev, reply, questions=qs)


def fact_trip(rng, p):
    city = pick_unique(rng, CITIES, p, "city")
    airline, code = pick(rng, AIRLINES)
    flight = f"{code} {rng.randrange(100, 2999)}"
    month = pick(rng, MONTHS)
    hotel = _hotel(rng)
    nights = rng.randrange(3, 11)
    ev = pick(
        rng,
        [
            f"Booked my flights to {city} for {month}! {airline}, flight {flight}.",
            f"It's official, I'm going to {city} in {month}. Flying {airline} {flight}.",
        ],
    )
    reply = pick(
        rng,
        [
            "How exciting! Do you want help putting together an itinerary?",
            "Amazing, that's going to be a great trip. Remember to check passport dates.",
        ],
    )
    part2 = pick(
        rng,
        [
            f"For {city} we're staying at {hotel}, {nights} nights near the old town.",
            f"Booked the hotel for the trip: {hotel}, {nights} nights.",
        ],
    )
    reply2 = "Nice choice, staying central makes it easy to walk everywhere."
    qs = [
        ("number", f"What's my flight number to {city}?", [1], flight),
        ("number", "what was my flight number again?", [1], flight, GENERIC),
        ("fact", f"Which hotel am I staying at in {city}?", [2], hotel),
        ("paraphrase", "Where am I flying to on my big trip?", [1], city, GENERIC),
        ("paraphrase", f"Where am I off to in {month}?", [1], city),
        (
            "two_turn",
            f"For the trip I booked for {month}, which airline am I flying and where am I staying?",
            [1, 2],
            f"{airline}; {hotel}",
        ),
    ]
    return Fact("trip", {"city": city}, ev, reply, part2=part2, reply2=reply2, questions=qs)


def fact_race(rng, p):
    race = f"{pick(rng, p['home_city_list'])} {pick(rng, RACES)}"
    minutes, seconds = rng.randrange(22, 130), rng.randrange(0, 60)
    finish = f"{minutes // 60}:{minutes % 60:02d}:{seconds:02d}" if minutes >= 60 else f"{minutes}:{seconds:02d}"
    ev = pick(
        rng,
        [
            f"Ran the {race} this morning, finished in {finish}! New personal best.",
            f"{race} done. {finish}. My calves are screaming.",
        ],
    )
    reply = "Congratulations, that's a real achievement! How are you feeling?"
    qs = [
        (
            "number",
            pick(rng, [f"What was my time at the {race}?", "what was my finish time in that race?"]),
            [1],
            finish,
        ),
        ("paraphrase", "How fast did I do that run where I set a personal record?", [1], finish, GENERIC),
        ("when", f"When did I run the {race}?", [1], None),
    ]
    return Fact("race", {"race": race}, ev, reply, questions=qs)


def fact_move(rng, p):
    hood = pick(rng, NEIGHBORHOODS)
    rent = _money(rng, 1100, 3400, 25)
    floor = rng.randrange(2, 15)
    ev = pick(
        rng,
        [
            f"Signed the lease on the new apartment in {hood}! {_fmt_money(rent)} a month, "
            f"{floor}th floor with a balcony.",
            f"We're moving to {hood}. Rent's {_fmt_money(rent)}, it's on the {floor}th floor.",
        ],
    )
    reply = "Congratulations on the new place! Moving is a lot of work, want help with a checklist?"
    qs = [
        ("number", pick(rng, ["How much is my new rent?", "what's the rent at the new place?"]), [1], _fmt_money(rent)),
        ("fact", "Which neighborhood is my new apartment in?", [1], hood),
        ("paraphrase", "What level of the building do we live on now?", [1], f"{floor}th floor"),
        ("when", "When did I sign the lease?", [1], None),
    ]
    return Fact("move", {"hood": hood}, ev, reply, questions=qs)


def fact_work_project(rng, p):
    manager = _person(rng, p["taken"])
    codename = pick(
        rng,
        [
            "Bluebird",
            "Halibut",
            "Lighthouse",
            "Sequoia",
            "Tangerine",
            "Nightjar",
            "Basalt",
            "Wren",
            "Monsoon",
            "Quokka",
            "Obsidian",
            "Marigold",
        ],
    )
    month = pick(rng, MONTHS)
    ev = pick(
        rng,
        [
            f"I got put on Project {codename} at work, my new manager is {manager}. Launch is in {month}.",
            f"Reorg news: {manager} is my manager now and I'm leading Project {codename}, due {month}.",
        ],
    )
    reply = pick(
        rng,
        [
            "That's a big step. How do you feel about working with a new manager?",
            "Congrats on the new responsibility! Want help planning the first weeks?",
        ],
    )
    qs = [
        ("name", pick(rng, ["Who's my new manager?", "what's my boss's name again?"]), [1], manager),
        ("fact", "What's the project I'm leading called?", [1], f"Project {codename}"),
        ("paraphrase", f"When does {codename} need to ship?", [1], month),
    ]
    return Fact("work_project", {"manager": manager}, ev, reply, questions=qs)


def fact_allergy(rng, p):
    allergen, symptom = pick(rng, ALLERGENS), pick(rng, SYMPTOMS)
    ev = pick(
        rng,
        [
            f"Turns out I'm allergic to {allergen}. Ate some at lunch and got {symptom}.",
            f"Well, learned the hard way that {allergen} and I don't mix, {symptom} within minutes.",
        ],
    )
    reply = "That sounds scary, I'm glad you're okay. It might be worth seeing an allergist to confirm."
    qs = [
        ("fact", "What am I allergic to?", [1], allergen),
        ("paraphrase", "What gave me that bad reaction?", [1], allergen),
        ("when", f"When did I find out about my {allergen} allergy?", [1], None),
    ]
    return Fact("allergy", {"allergen": allergen}, ev, reply, questions=qs)


def fact_class(rng, p):
    subject, topics = pick_unique(rng, CLASSES, p, "class")
    topic = pick(rng, topics)
    teacher = _person(rng, p["taken"])
    day = pick(rng, WEEKDAYS)
    ev = pick(
        rng,
        [
            f"First {subject} class tonight! The teacher, {teacher}, had us working on {topic} already.",
            f"Signed up for a {subject} class on {day}s, teacher's name is {teacher}. We started with {topic}.",
        ],
    )
    reply = "How fun! Learning something new like that is a great way to switch off."
    qs = [
        ("when", pick(rng, [f"When did I start {subject}?", f"when was my first {subject} class?"]), [1], None),
        ("name", f"Who teaches my {subject} class?", [1], teacher),
        ("paraphrase", "What's the name of the instructor for that course I signed up for?", [1], teacher, GENERIC),
        ("paraphrase", f"Who runs the {subject} lessons I go to?", [1], teacher),
    ]
    return Fact("class", {"subject": subject}, ev, reply, questions=qs)


def fact_gift(rng, p):
    partner = p["partner"]
    gift = pick(rng, HOLIDAY_GIFTS)
    month = pick(rng, MONTHS)
    ev = pick(
        rng,
        [
            f"Got {partner} {gift} for their birthday, it's in {month}. Hiding it in the closet.",
            f"Gift sorted for {partner}'s birthday: {gift}. Don't let me forget to wrap it.",
        ],
    )
    reply = "That's a thoughtful gift, I'm sure they'll love it."
    qs = [
        ("fact", f"What did I get {partner} for their birthday?", [1], gift),
        ("paraphrase", "What present did I hide in the closet?", [1], gift),
        ("fact", f"When is {partner}'s birthday?", [1], month),
    ]
    return Fact("gift", {"gift": gift}, ev, reply, questions=qs)


def fact_garden(rng, p):
    plants = rng.sample(PLANTS, 2)
    beds = rng.randrange(2, 6)
    ev = f"Spent the day in the yard, planted {plants[0]} and {plants[1]} in {beds} raised beds."
    reply = "Sounds like a productive day! They'll need steady water while they get established."
    part2 = f"The {plants[0]} are finally coming in, first harvest this weekend!"
    reply2 = "That's so satisfying after all the work."
    qs = [
        ("fact", "What did I plant in the raised beds?", [1], " and ".join(plants)),
        ("paraphrase", "What's growing in my vegetable patch?", [1], " and ".join(plants)),
        (
            "two_turn",
            "What did I plant, and which one was ready to harvest first?",
            [1, 2],
            f"{plants[0]} and {plants[1]}; {plants[0]}",
        ),
    ]
    return Fact("garden", {"plants": plants}, ev, reply, part2=part2, reply2=reply2, questions=qs)


def fact_concert(rng, p):
    band, venue = _band(rng), pick(rng, VENUES)
    friend = _person(rng, p["taken"])
    ev = pick(
        rng,
        [
            f"Saw {band} at {venue} with {friend} last night, still buzzing.",
            f"{band} live at {venue}!! {friend} got us tickets, best show all year.",
        ],
    )
    reply = "That sounds like an amazing night. Live music hits different."
    qs = [
        ("name", pick(rng, ["Which band did I see live?", "who was that band I saw in concert?"]), [1], band, GENERIC),
        ("name", f"Which band did I go see with {friend}?", [1], band),
        ("fact", f"Where did I see {band}?", [1], venue),
        ("paraphrase", "Who got the tickets for that show I loved?", [1], friend, GENERIC),
        ("paraphrase", f"Who sorted out our tickets for {band}?", [1], friend),
        ("when", f"When did I see {band}?", [1], None),
    ]
    return Fact("concert", {"band": band}, ev, reply, questions=qs)


def fact_recipe(rng, p):
    relative, poss = pick_unique(rng, RELATIVES, p, "recipe_relative")
    dish, secret = pick(rng, DISHES), pick(rng, SECRET_INGREDIENTS)
    ev = pick(
        rng,
        [
            f"My {relative} finally told me the secret to {poss} {dish}: {secret}!",
            f"Made my {relative}'s {dish} tonight. The trick is {secret}, who knew.",
        ],
    )
    reply = "Family recipes are the best. Write it down somewhere safe!"
    qs = [
        ("fact", f"What's the secret ingredient in my {relative}'s {dish}?", [1], secret),
        ("paraphrase", "What's the trick to that family recipe I was told about?", [1], secret, GENERIC),
        ("paraphrase", f"What makes my {relative}'s version taste so good?", [1], secret),
    ]
    return Fact("recipe", {"dish": dish}, ev, reply, questions=qs)


def fact_gadget(rng, p):
    kind, models = pick_unique(rng, GADGETS, p, "gadget")
    model = pick(rng, models)
    price = _money(rng, 60, 700, 5)
    reason = pick(rng, RETURN_REASONS)
    ev = pick(
        rng,
        [
            f"Ordered the {model} {kind}, {_fmt_money(price)} on sale.",
            f"Treated myself to a {kind}, went with the {model}. {_fmt_money(price)}.",
        ],
    )
    reply = "Nice, hope it makes life a little easier! Let me know how you like it."
    part2 = pick(rng, [f"Returning the {kind}, {reason}.", f"Sent the {model} back, {reason}."])
    reply2 = "That's disappointing. At least you caught it within the return window."
    qs = [
        ("fact", f"Which {kind} did I buy?", [1], model),
        ("number", f"How much did I pay for the {model}?", [1], _fmt_money(price)),
        ("paraphrase", "Why did I send back that thing I ordered?", [2], reason, GENERIC),
        ("paraphrase", f"What was wrong with the {kind} I returned?", [2], reason),
        ("two_turn", "What did I buy on sale and why did I return it?", [1, 2], f"{model}; {reason}", GENERIC),
        ("two_turn", f"Which {kind} did I get and why did it go back?", [1, 2], f"{model}; {reason}"),
    ]
    return Fact("gadget", {"model": model}, ev, reply, part2=part2, reply2=reply2, questions=qs)


def fact_parking(rng, p):
    spot = f"{pick(rng, ['B', 'C', 'P2-', 'L'])}{rng.randrange(10, 299)}"
    locker = rng.randrange(100, 999)
    ev = pick(
        rng,
        [
            f"New parking spot at work is {spot}, writing it here so I don't forget.",
            f"Note to self: my assigned parking space is {spot}.",
        ],
    )
    reply = "Noted. Anything else you want me to keep track of?"
    dis = f"My gym locker is number {locker} this month."
    qs = [
        ("number", pick(rng, ["What's my parking spot at work?", "where do I park at the office?"]), [1], spot),
        ("paraphrase", "Which space was I assigned for my car?", [1], spot),
        ("number", "What's my gym locker number?", ["d"], str(locker)),
    ]
    return Fact("parking", {"spot": spot}, ev, reply, distractor=dis, distractor_reply="Got it.", questions=qs)


def fact_medication(rng, p):
    med, dose = pick(rng, MEDS)
    doctor = f"Dr. {pick(rng, LAST_NAMES)}"
    ev = pick(
        rng,
        [
            f"{doctor} started me on {med}, {dose} every morning.",
            f"New prescription: {med}, {dose}. {doctor} wants to check in after six weeks.",
        ],
    )
    reply = "Thanks for telling me. Setting a daily reminder can help with new medications."
    qs = [
        ("fact", "What medication did I start?", [1], med),
        ("number", f"What dose of {med} am I on?", [1], dose),
        ("paraphrase", "Which pills do I take each morning now?", [1], med),
    ]
    return Fact("medication", {"med": med}, ev, reply, questions=qs)


def fact_show(rng, p):
    show, podcast = pick(rng, SHOWS), pick(rng, PODCASTS)
    friend = _person(rng, p["taken"])
    ev = f"{friend} told me I have to watch {show}, so that's my weekend sorted."
    reply = "Sounds like a plan! Cozy weekend of TV."
    dis = f"I've been listening to {podcast} on my commute, it's so good."
    qs = [
        ("fact", f"What show did {friend} tell me to watch?", [1], show),
        ("paraphrase", "What series was I told I had to see?", [1], show),
        ("fact", "Which podcast do I listen to on the way to work?", ["d"], podcast),
    ]
    return Fact(
        "show",
        {"show": show},
        ev,
        reply,
        distractor=dis,
        distractor_reply="Podcasts make a commute fly by.",
        questions=qs,
    )


def fact_volunteer(rng, p):
    charity, day = pick(rng, CHARITIES), pick(rng, WEEKDAYS)
    hours = rng.randrange(2, 5)
    ev = pick(
        rng,
        [
            f"Started volunteering at {charity} on {day}s, {hours} hours a week.",
            f"Signed up to help at {charity}, {day} mornings.",
        ],
    )
    reply = "That's a generous thing to do. I hope you find it rewarding."
    qs = [
        ("fact", "Where do I volunteer?", [1], charity),
        ("paraphrase", "Which day is my charity shift?", [1], day),
        ("when", f"When did I start volunteering at {charity}?", [1], None),
    ]
    return Fact("volunteer", {"charity": charity}, ev, reply, questions=qs)


def fact_birthday(rng, p):
    relative, _poss = pick_unique(rng, RELATIVES, p, "birthday_relative")
    month, day = pick(rng, MONTHS), rng.randrange(1, 29)
    ev = pick(
        rng,
        [
            f"Reminder for me: my {relative}'s birthday is {month} {day}.",
            f"Can't forget this year, {relative}'s birthday is on {month} {day}.",
        ],
    )
    reply = "Got it. Want ideas for a present closer to the date?"
    qs = [
        ("fact", f"When is my {relative}'s birthday?", [1], f"{month} {day}"),
        ("paraphrase", f"What date do I need to call my {relative} to celebrate?", [1], f"{month} {day}"),
    ]
    return Fact("birthday", {"relative": relative}, ev, reply, questions=qs)


def fact_coffee(rng, p):
    shop = (
        f"{pick(rng, ['Bean', 'Daily', 'Third', 'North', 'Corner', 'Little', 'Common'])} "
        f"{pick(rng, ['Grind', 'Roasters', 'Cup', 'Press', 'Brew Bar', 'Coffee'])}"
    )
    drink = pick(
        rng,
        [
            "oat milk cortado",
            "iced americano",
            "honey lavender latte",
            "cardamom cappuccino",
            "cold brew with cream",
            "flat white",
        ],
    )
    ev = pick(
        rng,
        [
            f"Found a great coffee place near work, {shop}. Their {drink} is my new thing.",
            f"{shop} makes the best {drink}, I'm there every morning now.",
        ],
    )
    reply = "A good neighbourhood coffee spot is a small daily joy."
    qs = [
        ("name", "What's the coffee place I like near work?", [1], shop),
        ("fact", f"What do I usually order at {shop}?", [1], drink),
        ("paraphrase", "Where do I get my morning caffeine fix?", [1], shop),
    ]
    return Fact("coffee", {"shop": shop}, ev, reply, questions=qs)


def fact_lost(rng, p):
    item = pick_unique(rng, ["keys", "wallet", "passport", "sunglasses", "headphones", "library card"], p, "lost")
    place = pick(
        rng,
        [
            "in the freezer",
            "under the car seat",
            "in my gym bag",
            "in last winter's coat",
            "behind the couch cushions",
            "in the laundry basket",
        ],
    )
    ev = f"Found my {item} {place}, don't ask."
    reply = "Ha! The classic places things hide. Glad they turned up."
    qs = [
        ("fact", f"Where did I find my {item}?", [1], place),
        ("paraphrase", f"Where had the {item} been hiding all along?", [1], place),
    ]
    return Fact("lost", {"item": item}, ev, reply, questions=qs)


def fact_injury(rng, p):
    part = pick(rng, ["ankle", "wrist", "knee", "shoulder", "back"])
    how = pick(
        rng,
        [
            "slipped on ice",
            "fell off my bike",
            "tripped on the stairs",
            "landed wrong playing volleyball",
            "lifted a box badly",
        ],
    )
    weeks = rng.randrange(2, 8)
    ev = f"I {how} and hurt my {part}. The clinic says {weeks} weeks of rest."
    reply = "Oh no, I'm sorry. Rest, ice and elevation, and don't rush it."
    qs = [
        ("fact", f"How did I hurt my {part}?", [1], how),
        ("paraphrase", "How long do I need to take it easy after that accident?", [1], f"{weeks} weeks"),
        ("when", f"When did I hurt my {part}?", [1], None),
    ]
    return Fact("injury", {"part": part}, ev, reply, questions=qs)


def fact_budget(rng, p):
    amount = _money(rng, 250, 900, 10)
    goal = _money(rng, 1500, 12000, 500)
    purpose = pick(rng, ["a trip to Japan", "a new laptop", "an emergency fund", "a down payment", "a wedding"])
    ev = f"Setting a grocery budget of {_fmt_money(amount)} a month, saving toward {purpose}, goal {_fmt_money(goal)}."
    reply = "That's a great plan. Tracking it weekly makes it easier to stay on course."
    qs = [
        ("number", "What's my monthly grocery budget?", [1], _fmt_money(amount)),
        ("paraphrase", "What am I putting money aside for?", [1], purpose),
        ("number", f"How much do I want to save for {purpose}?", [1], _fmt_money(goal)),
    ]
    return Fact("budget", {"purpose": purpose}, ev, reply, questions=qs)


def fact_neighbor(rng, p):
    name = _person(rng, p["taken"])
    thing = pick(
        rng,
        [
            "plays drums at midnight",
            "keeps parking in my spot",
            "brought us banana bread",
            "has chickens in the backyard",
            "fixes old motorcycles in the garage",
        ],
    )
    ev = f"The new neighbor is called {name}, {name} {thing}."
    reply = "Neighbours make a big difference. Hopefully you'll get along."
    qs = [
        ("name", "What's my new neighbor's name?", [1], name),
        ("paraphrase", f"What's the deal with {name} next door?", [1], thing),
    ]
    return Fact("neighbor", {"name": name}, ev, reply, questions=qs)


def fact_language(rng, p):
    app, days = pick(rng, LANG_APPS), rng.randrange(30, 400)
    lang = pick(rng, ["Portuguese", "Korean", "German", "Turkish", "Greek", "Swedish", "French"])
    ev = f"{days} day streak on {app} learning {lang}!"
    reply = "Impressive consistency! Have you tried speaking with anyone yet?"
    qs = [
        ("fact", "Which language am I learning?", [1], lang),
        ("number", "How long was my language app streak?", [1], f"{days} days"),
        ("paraphrase", f"Which app do I use to study {lang}?", [1], app),
    ]
    return Fact("language", {"lang": lang}, ev, reply, questions=qs)


def fact_interview(rng, p):
    company, role = _company(rng), pick(rng, JOBS)
    salary = _money(rng, 55, 160, 5)
    ev = pick(
        rng,
        [
            f"Had the interview at {company} today for a {role} role. Think it went okay?",
            f"Second round at {company} done, {role} position. Fingers crossed.",
        ],
    )
    reply = "Good luck! Sending a short thank-you email today is a nice touch."
    part2 = pick(
        rng,
        [
            f"They made me an offer! {salary}k base. I'm taking it.",
            f"Got the offer from {company}, {salary}k, starting next month!",
        ],
    )
    reply2 = "Congratulations!! That's fantastic news."
    qs = [
        ("fact", "Which company did I interview with?", [1], company, GENERIC),
        ("fact", f"Which company did I interview with for the {role} job?", [1], company),
        ("number", "What salary did they offer me?", [2], f"{salary}k", GENERIC),
        ("number", f"How much did {company} offer me?", [2], f"{salary}k"),
        ("two_turn", "What role did I interview for and what was the offer?", [1, 2], f"{role}; {salary}k", GENERIC),
        (
            "two_turn",
            f"What role did I interview for at {company}, and what did they offer?",
            [1, 2],
            f"{role}; {salary}k",
        ),
    ]
    return Fact("interview", {"company": company}, ev, reply, part2=part2, reply2=reply2, questions=qs)


def fact_wedding(rng, p):
    a, b = _person(rng, p["taken"]), _person(rng, p["taken"])
    place = pick(
        rng, ["a vineyard outside town", "a lake cabin", "a barn upstate", "a rooftop downtown", "the botanical garden"]
    )
    ev = f"{a} and {b}'s wedding was today at {place}, I cried during the vows."
    reply = "Weddings are so emotional. Sounds like a beautiful day."
    qs = [
        ("fact", f"Where was {a} and {b}'s wedding?", [1], place),
        ("paraphrase", "Whose ceremony made me cry?", [1], f"{a} and {b}", GENERIC),
        ("paraphrase", f"Where did {a} tie the knot?", [1], place),
        ("when", f"When did {a} and {b} get married?", [1], None),
    ]
    return Fact("wedding", {"a": a}, ev, reply, questions=qs)


def fact_repair(rng, p):
    trade = pick_unique(rng, ["plumber", "electrician", "handyman", "roofer"], p, "trade")
    name = _person(rng, p["taken"])
    cost = _money(rng, 90, 1800, 10)
    problem = pick_unique(
        rng,
        ["the water heater", "the bathroom fan", "a leak over the kitchen", "the garbage disposal", "the porch light"],
        p,
        "problem",
    )
    ev = f"The {trade}, {name}, fixed {problem}. {_fmt_money(cost)}, ouch."
    reply = "At least it's fixed. Keep the invoice in case the problem comes back."
    qs = [
        ("name", f"What was the {trade}'s name?", [1], name),
        ("number", f"How much did fixing {problem} cost?", [1], _fmt_money(cost)),
        ("paraphrase", f"Who came to sort out {problem}?", [1], name),
    ]
    return Fact("repair", {"name": name}, ev, reply, questions=qs)


FACT_KINDS = [
    fact_pet,
    fact_hike,
    fact_doctor,
    fact_car,
    fact_friend_job,
    fact_sibling,
    fact_restaurant,
    fact_book,
    fact_trip,
    fact_race,
    fact_move,
    fact_work_project,
    fact_allergy,
    fact_class,
    fact_gift,
    fact_garden,
    fact_concert,
    fact_recipe,
    fact_gadget,
    fact_parking,
    fact_medication,
    fact_show,
    fact_volunteer,
    fact_birthday,
    fact_coffee,
    fact_lost,
    fact_injury,
    fact_budget,
    fact_neighbor,
    fact_language,
    fact_interview,
    fact_wedding,
    fact_repair,
]

# How people phrase a question to an assistant around the core question.
QUESTION_WRAPPERS = [
    "{q}",
    "{q}",
    "{q}",
    "hey, {ql}",
    "Quick question: {ql}",
    "Remind me, {ql}",
    "sorry, I forgot - {ql}",
    "{q} I can't remember",
    "do you remember {ql}",
    "Can you remind me: {ql}",
    "{q} Asking for a form I'm filling in.",
]


def wrap_question(rng, text):
    wrapper = pick(rng, QUESTION_WRAPPERS)
    lowered = text[0].lower() + text[1:]
    return wrapper.format(q=text, ql=lowered)


# ---------------------------------------------------------------------------
# Building conversations
# ---------------------------------------------------------------------------


@dataclass
class Turn:
    session: int
    turn: int
    speaker: str
    content: str
    when: dt.datetime


def user_persona(rng, index):
    taken: set = set()
    first = _person(rng, taken)
    return {
        "user": f"c{index + 1:02d}",
        "name": first,
        "partner": _person(rng, taken),
        "home_city_list": [pick(rng, HOME_CITIES)],
        "taken": taken,
    }


# Later turns on the same topic that answer none of its questions: people keep talking about their
# dog, their hikes, their trip, and a question has to find the one turn with the detail it asks for.
TOPIC_CHATTER = {
    "pet": [
        "The {species} chewed up my slippers again.",
        "Took the {species} to the vet for shots, all good.",
        "The {species} is finally sleeping through the night.",
        "Bought way too many toys for the {species}.",
        "The {species} hates the vacuum cleaner lol.",
        "Walking the {species} in the rain is not fun.",
    ],
    "hike": [
        "My legs are still sore from that hike.",
        "I want to do way more hiking this summer.",
        "Bought new hiking boots, breaking them in around the block.",
        "Looking at trail maps again...",
        "Saw a deer on my walk this morning!",
        "Should I get trekking poles for the steep trails?",
    ],
    "doctor": [
        "The waiting room at the clinic took forever.",
        "Need to call the doctor's office back about forms.",
        "Insurance finally covered that visit.",
        "Got a reminder text about my appointment.",
    ],
    "car": [
        "The car needs an oil change soon.",
        "Washed the car for the first time, it looks brand new.",
        "Still getting used to driving the new car.",
        "Finally figured out the car's bluetooth.",
    ],
    "friend_job": [
        "Catching up with old friends lately has been nice.",
        "Everyone seems to be changing jobs.",
        "We should do a reunion dinner with the old roommates.",
    ],
    "sibling": [
        "Family group chat is going crazy about the engagement.",
        "Mom is already planning outfits.",
        "Helping with wedding stuff is a full-time job.",
    ],
    "restaurant": [
        "I've been eating out too much lately.",
        "Craving that dinner from last week again.",
        "Trying to cook more at home instead of restaurants.",
        "Found a food blog with great reviews.",
    ],
    "book": [
        "Stayed up way too late reading again.",
        "My reading list keeps growing.",
        "I should join a book club.",
        "Reading before bed has really helped me sleep.",
    ],
    "trip": [
        "Need to buy a power adapter for the trip.",
        "Started a packing list for the trip.",
        "Researching things to do on the trip.",
        "Should I get travel insurance?",
        "Exchanged some money for the trip today.",
    ],
    "race": [
        "Back to training runs this week.",
        "My running shoes are worn out.",
        "Signed up for another race, apparently I'm addicted.",
        "Recovery run today, slow and easy.",
    ],
    "move": [
        "Still unpacking boxes.",
        "The new neighborhood is growing on me.",
        "Finally hung the curtains.",
        "Setting up internet at the new place took forever.",
    ],
    "work_project": [
        "Project meetings all afternoon.",
        "The deadline is stressing me out a bit.",
        "Had a good one-on-one with my manager.",
    ],
    "allergy": ["Reading every food label now.", "Carrying an antihistamine everywhere just in case."],
    "class": [
        "Practiced for an hour after class.",
        "Class was hard this week but fun.",
        "Thinking of signing up for the next level of the course.",
    ],
    "gift": ["Still need wrapping paper for the present.", "Birthday planning is fun but stressful."],
    "garden": ["Watered the garden before work.", "Something is eating my plants!", "Weeding took all morning."],
    "concert": ["Still have the songs from the show stuck in my head.", "Looking for more concerts this summer."],
    "recipe": ["Cooking family recipes makes me nostalgic.", "Wrote down a few family recipes in a notebook."],
    "gadget": ["Reading reviews before buying anything else.", "Tech stuff never works the first time lol."],
    "parking": ["Parking at work is a nightmare.", "Someone took my parking spot again."],
    "medication": ["Set a phone reminder for my pills.", "Feeling a bit better on the new meds."],
    "show": ["Binged way too many episodes last night.", "Need a new show to watch."],
    "volunteer": ["Volunteering this week was really rewarding.", "We sorted a mountain of donations."],
    "birthday": ["Need to think about birthday presents for the family.", "Family birthdays all in one month lol."],
    "coffee": ["Had two coffees today, mistake.", "Trying to cut back on coffee."],
    "lost": ["I lose everything lately.", "Bought one of those tracker tags so I stop losing stuff."],
    "injury": ["Physical therapy exercises are boring but working.", "Still limping a bit."],
    "budget": ["Tracking every expense in a spreadsheet now.", "Spent too much this weekend oops."],
    "neighbor": ["The neighbors waved today, progress.", "Quiet night on the street for once."],
    "language": ["Practiced vocabulary on the bus.", "Watched a movie with subtitles for practice."],
    "interview": ["Prepping answers for interview questions.", "Job hunting is exhausting."],
    "wedding": ["Still recovering from the wedding dancing.", "Wedding season is expensive."],
    "repair": ["Something else in the house is making a weird noise.", "Home ownership is just constant repairs."],
}

RECURRING = {
    fact_hike,
    fact_doctor,
    fact_friend_job,
    fact_restaurant,
    fact_book,
    fact_trip,
    fact_race,
    fact_class,
    fact_concert,
    fact_recipe,
    fact_gadget,
    fact_birthday,
    fact_lost,
    fact_interview,
    fact_wedding,
    fact_repair,
}
CHAT_BEFORE = [
    "Ugh, what a week.",
    "So, news!",
    "Okay so.",
    "Random update:",
    "Not much else going on, but",
    "Sorry I disappeared for a bit.",
    "Good morning!",
    "Long day, but a good one.",
    "Guess what?",
    "Quick update before I forget:",
    "Anyway.",
    "Oh, and",
    "Work has been nuts lately.",
    "It's been a weird couple of days.",
]
CHAT_AFTER = [
    "Anyway, how's your day going?",
    "Also I still need to do laundry lol.",
    "Can't wait for the weekend.",
    "Now I need a nap.",
    "Life is busy but good.",
    "Anyway, that's my news.",
    "Still processing it honestly.",
    "Remind me to drink more water this week.",
    "The weather's been all over the place too.",
    "Other than that, just work stuff.",
    "I'll tell you more later.",
    "Feeling pretty good about it.",
]


AGENT_TOPIC_REPLIES = [
    "Ha, I hear you.",
    "That sounds about right!",
    "Oh no! Hang in there.",
    "Nice, sounds like it's going well.",
    "That's good to hear.",
    "Fair enough!",
    "Makes sense. Anything I can help with?",
    "Keep me posted!",
    "Totally understandable.",
]


def chatty(rng, text):
    """People rarely state a fact alone: wrap it in some of the chatter around it."""
    roll = rng.random()
    if roll < 0.3:
        return f"{pick(rng, CHAT_BEFORE)} {text}"
    if roll < 0.6:
        return f"{text} {pick(rng, CHAT_AFTER)}"
    if roll < 0.75:
        return f"{pick(rng, CHAT_BEFORE)} {text} {pick(rng, CHAT_AFTER)}"
    return text


def build_user(rng: random.Random, index: int):
    persona = user_persona(rng, index)
    user = persona["user"]
    n_sessions = rng.randrange(9, 15)
    # Topics recur: a user who hikes talks about several hikes, with different trails and friends.
    facts = []
    for kind in rng.sample(FACT_KINDS, rng.randrange(14, 19)):
        for _ in range(pick(rng, [1, 2, 2, 3]) if kind in RECURRING else 1):
            facts.append(kind(rng, persona))
    rng.shuffle(facts)
    instances = Counter(f.kind for f in facts)
    # About half the facts are asked about; the rest are only mentioned: more haystack.
    for fact in facts[rng.randrange(10, 14) :]:
        fact.questions = []
    for fact in facts:
        # a question without a distinguishing detail is only fair if the kind came up once
        fact.questions = [q[:4] for q in fact.questions if len(q) == 4 or instances[fact.kind] == 1]

    # Place each fact's parts in sessions: part 1 early enough that a part 2 fits later.
    placements: dict[int, list] = {s: [] for s in range(n_sessions)}
    for fact in facts:
        s1 = rng.randrange(0, n_sessions - 2) if fact.part2 else rng.randrange(0, n_sessions)
        placements[s1].append(("part1", fact))
        if fact.part2:
            placements[rng.randrange(s1 + 1, n_sessions)].append(("part2", fact))
        if fact.distractor:
            placements[rng.randrange(0, n_sessions)].append(("distractor", fact))
        chatter = TOPIC_CHATTER.get(fact.kind, [])
        for line in rng.sample(chatter, min(len(chatter), rng.randrange(1, 4))):
            placements[rng.randrange(s1, n_sessions)].append(("chatter", line.format(**fact.values)))

    start = dt.datetime(2024, 1, 1, 8, 0) + dt.timedelta(days=rng.randrange(0, 60))
    day = start
    turns: list[Turn] = []
    evidence: dict[tuple[int, str], str] = {}  # (fact index, part) -> turn id
    session_dates: dict[int, dt.datetime] = {}
    for session in range(n_sessions):
        day = day + dt.timedelta(days=rng.randrange(2, 16))
        clock = day.replace(hour=rng.randrange(7, 22), minute=rng.randrange(0, 60))
        session_dates[session] = clock
        number = 0

        def say(speaker, text, session=session):
            nonlocal number, clock
            turns.append(Turn(session + 1, number, speaker, text, clock))
            number += 1
            clock = clock + dt.timedelta(seconds=rng.randrange(20, 150))
            return f"{user}-s{session + 1:02d}-t{number - 1:03d}"

        say("user", pick(rng, GREETINGS))
        say("assistant", pick(rng, AGENT_GREETINGS).format(name=persona["name"]))
        blocks = [("fact", item) for item in placements[session]]
        blocks += [("help", None)] * rng.randrange(2, 6) + [("small", None)] * rng.randrange(1, 3)
        blocks += [("life", None)] * rng.randrange(1, 5)
        rng.shuffle(blocks)
        for kind, item in blocks:
            if kind == "fact" and item[0] == "chatter":
                say("user", chatty(rng, item[1]))
                say("assistant", pick(rng, AGENT_TOPIC_REPLIES))
            elif kind == "fact":
                part, fact = item
                text = chatty(rng, {"part1": fact.part1, "part2": fact.part2, "distractor": fact.distractor}[part])
                reply = {"part1": fact.reply1, "part2": fact.reply2, "distractor": fact.distractor_reply}[part]
                turn_id = say("user", text)
                evidence[(facts.index(fact), part)] = turn_id
                say("assistant", reply)
                if rng.random() < 0.4:
                    say("user", pick(rng, ACKS))
                    say("assistant", pick(rng, AGENT_ACKS))
            elif kind == "help":
                request, answer = help_exchange(rng, persona)
                say("user", request)
                say("assistant", answer)
                if rng.random() < 0.3:
                    follow, follow_answer = pick(rng, FOLLOW_UPS)
                    say("user", follow)
                    say("assistant", follow_answer)
                if rng.random() < 0.5:
                    say("user", pick(rng, ACKS))
                    say("assistant", pick(rng, AGENT_ACKS))
            elif kind == "life":
                remark, answer = life_chatter(rng, persona)
                say("user", remark)
                say("assistant", answer)
            else:
                for _ in range(rng.randrange(1, 3)):
                    remark, answer = pick(rng, SMALL_TALK)
                    say("user", remark)
                    say("assistant", answer)
        say("user", pick(rng, CLOSINGS))
        say("assistant", pick(rng, AGENT_CLOSINGS).format(name=persona["name"]))

    # Questions: the ones whose evidence is placed; at most 3 per fact, mixed types.
    questions = []
    turn_when = {f"{user}-s{t.session:02d}-t{t.turn:03d}": t.when for t in turns}
    for fact_index, fact in enumerate(facts):
        chosen = list(fact.questions)
        rng.shuffle(chosen)
        for qtype, text, parts, answer in chosen[: rng.randrange(2, 4)]:
            keys = [(fact_index, {1: "part1", 2: "part2", "d": "distractor"}[part]) for part in parts]
            if not all(key in evidence for key in keys):
                continue
            relevant = [evidence[key] for key in keys]
            if qtype == "when":
                answer = turn_when[relevant[0]].strftime("%B %-d, %Y")
            questions.append(
                {"user": user, "query": wrap_question(rng, text), "type": qtype, "answer": answer, "relevant": relevant}
            )
    # A few questions anchored in time ("back in March"), the way people recall conversations.
    for fact_index, fact in enumerate(facts[:3]):
        if instances[fact.kind] > 1 or not fact.questions:
            continue
        turn_id = evidence[(fact_index, "part1")]
        month = turn_when[turn_id].strftime("%B")
        topic = {
            "pet": "the new pet",
            "hike": "that hike",
            "doctor": "the doctor",
            "car": "the car",
            "trip": "my trip",
            "move": "the apartment",
            "class": "the class",
            "concert": "the concert",
            "gadget": "what I ordered",
            "race": "the race",
            "restaurant": "that restaurant",
            "injury": "my injury",
            "wedding": "the wedding",
            "interview": "the interview",
        }.get(fact.kind)
        if topic:
            questions.append(
                {
                    "user": user,
                    "query": f"What did I tell you about {topic} back in {month}?",
                    "type": "dated",
                    "answer": fact.part1,
                    "relevant": [turn_id],
                }
            )
    return persona, turns, questions


def generate(seed: int = DEFAULT_SEED):
    rng = random.Random(seed)
    users = []
    for index in range(N_USERS):
        users.append(build_user(random.Random(rng.randrange(2**32)), index))
    order = list(range(N_USERS))
    random.Random(seed + 1).shuffle(order)
    test_users = {users[i][0]["user"] for i in order[:TEST_USERS]}
    return users, test_users


def write(out: Path, seed: int = DEFAULT_SEED) -> dict:
    users, test_users = generate(seed)
    splits = {"dev": {"turns": [], "queries": [], "qrels": []}, "test": {"turns": [], "queries": [], "qrels": []}}
    stats = {"seed": seed, "splits": {}}
    for persona, turns, questions in users:
        split = splits["test" if persona["user"] in test_users else "dev"]
        user = persona["user"]
        for t in turns:
            split["turns"].append(
                {
                    "user": user,
                    "id": f"{user}-s{t.session:02d}-t{t.turn:03d}",
                    "session": f"{user}-s{t.session:02d}",
                    "turn": t.turn,
                    "speaker": t.speaker,
                    "date": t.when.isoformat(),
                    "content": t.content,
                }
            )
        for number, q in enumerate(questions, start=1):
            qid = f"{user}-q{number:03d}"
            split["queries"].append(
                {"user": user, "id": qid, "query": q["query"], "type": q["type"], "answer": q["answer"]}
            )
            split["qrels"].append({"id": qid, "relevant": q["relevant"]})
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
            "two_evidence_turns": sum(1 for r in split["qrels"] if len(r["relevant"]) > 1),
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
