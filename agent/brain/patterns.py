"""The phrasings the offline brain recognises, as regular expressions (used by agent/brain/intents.py).

Each list is tried in order; the first pattern that matches wins. Named groups
carry what the intent needs: `id` (an order number), `rest` (what follows
"forget" or "remember"), `q` (a search), `s` (a slot's words), `v` (a value).
"""

from __future__ import annotations

import re

# fmt: off
LANGUAGES = ("english", "spanish", "french", "german", "italian", "portuguese", "japanese", "chinese",
              "mandarin", "korean", "dutch", "hindi", "arabic", "swedish", "polish", "russian", "turkish")
TIMEZONE_NAMES = {
    "pacific": "America/Los_Angeles", "mountain": "America/Denver", "central": "America/Chicago",
    "eastern": "America/New_York", "utc": "UTC", "gmt": "Europe/London", "london": "Europe/London",
    "paris": "Europe/Paris", "berlin": "Europe/Berlin", "tokyo": "Asia/Tokyo", "sydney": "Australia/Sydney",
}

QUESTION_START = re.compile(
    r"^(what|what's|whats|where|where's|when|when's|who|who's|whom|which|why|how|how's|is|are|am|do|does|did|"
    r"can|could|would|will|should|shall|may|have|has|tell me|remind me|any|anything)\b", re.I)


def is_question(text: str) -> bool:
    """Asked, not told: a question mark, or a question's first word ("where does Ana live")."""
    text = text.strip()
    return text.endswith("?") or QUESTION_START.match(text) is not None

IDENTITY = [
    re.compile(r"\b(what|who) (are|r) (you|u)\b", re.I),
    re.compile(r"\bare (you|u) (an? |the )?(real |actual )?(ai|bot|robot|human|person|llm|language model|chatgpt|"
               r"gpt|machine|program|rule[- ]based|offline)\b", re.I),
    re.compile(r"\b(which|what) (llm|model|language model|ai model|brain|ai)\b.*\b(are you|is this|do you|running|"
               r"use)\b", re.I),
    re.compile(r"\b(which|what) (llm|language model|ai model|brain)\b", re.I),
    re.compile(r"\b(configure|set up|setup|switch to|plug in|connect|hook up)\b.*\b(llm|model|openai|ollama|gpt|"
               r"brain)\b", re.I),
    re.compile(r"\b(real|actual|proper|better|smarter) (llm|model|language model|ai)\b", re.I),
    re.compile(r"\b(offline|demo) brain\b", re.I),
    re.compile(r"\bhow do you work\b|\bwhat can you do\b|\bare you smart\b|\bintroduce yourself\b", re.I),
]
ORDER_NUMBER = re.compile(r"(?:\border\b|#)\s*(?:number|no\.?|num|id)?\s*[:#]?\s*(?P<id>[A-Za-z]*\d[\w-]*)", re.I)
ORDERISH = re.compile(r"\b(order|package|parcel|shipment|delivery|shipped|ship|arrive|arrived|track|tracking|"
                       r"status|deliver|delivered)\b", re.I)
ORDERISH_BARE = re.compile(r"\b(order|package|parcel|shipment|shipped|arrive|arrived|track|tracking|status|"
                            r"delivered)\b", re.I)
BARE_NUMBER = re.compile(r"(?<![\w$.])#?(?P<id>\d{3,8})(?![\w.%])")
FORGET = re.compile(r"^(?:(?:hey|ok|okay|please|and|also|now)[, ]+)*(?:can you |could you |would you |i want you to |"
                     r"i'd like you to )?(?:please )?(?:forget|delete|erase|remove|wipe|clear|unlearn|"
                     r"stop remembering|don't remember|do not remember|no longer remember)\b(?P<rest>.*)$", re.I)
LIST = [
    re.compile(r"\bwhat (?:do|did|else do) you (?:know|remember|have) (?:about|on) me\b", re.I),
    re.compile(r"\bwhat (?:have|did) you (?:remembered|saved|stored|learned|learnt|noted|memorized|kept)\b", re.I),
    re.compile(r"\b(?:list|show|read|give|tell)(?: me)?(?: all)?(?: of)? (?:my|your) (?:memories|memory|notes|"
               r"facts)\b", re.I),
    re.compile(r"\b(?:list|show|tell me|give me|read me)\b.*"
               r"\b(?:everything|all|what) you (?:know|remember|have)\b", re.I),
    re.compile(r"\beverything you (?:know|remember) about me\b", re.I),
    re.compile(r"\bwhat(?:'s| is) in (?:my|your) memor(?:y|ies)\b", re.I),
    re.compile(r"\bwhat do you know\??$", re.I),
    re.compile(r"\bhow (?:many (?:memories|things|facts|details)|much(?: stuff)?)(?: do you| have you)? (?:have|know|"
               r"remember|kept|saved|stored|got)(?: (?:about|on|of) me)?\b", re.I),
    re.compile(r"^(?:my )?memories\??$", re.I),
]
SEARCH = [
    re.compile(r"\bsearch (?:my |your )?memor(?:y|ies) (?:for|about) (?P<q>.+)$", re.I),
    re.compile(r"\b(?:look up|find|search for) (?P<q>.+?) in (?:my |your )?memor(?:y|ies)\b", re.I),
    re.compile(r"\bwhat (?:do|did) you (?:know|remember) about (?!me\b)(?P<q>.+)$", re.I),
    re.compile(r"\bdo you (?:know|remember) anything about (?!me\b)(?P<q>.+)$", re.I),
    re.compile(r"\bwhat (?:did|have) i (?:tell|told|say|said) (?:you )?about (?P<q>.+)$", re.I),
    re.compile(r"\banything (?:in (?:my|your) memor(?:y|ies) )?about (?P<q>.+?) (?:in (?:my|your) memor(?:y|ies)|"
               r"saved|remembered)\b", re.I),
]
# "Hi, ", "Hey there! ", "Good morning. " before what the message says
GREETING = r"(?:(?:hi|hello|hey|hiya|good (?:morning|afternoon|evening))(?: there| again)?[,!. ]+)?"
NAME = [
    # the name ends at a comma: "my name is Ada, I live in Denver" (the rest is read for facts)
    re.compile(r"^" + GREETING + r"(?:please |you can |just |from now on,? )?"
               r"call me (?P<v>[\w'. -]+)(?:[,;].*)?$", re.I),
    re.compile(r"^" + GREETING + r"(?:my name is(?: now)?|my name's|i go by|i'm called|i am called|"
               r"the name's) (?P<v>[\w'. -]+)(?:[,;].*)?$", re.I),
    re.compile(r"^(?:(?:ok|okay|actually|please)[,! ]+)?(?:please )?(?:change|update|set|switch) my (?:first )?name "
               r"(?:to|as) (?P<v>[\w'. -]+)(?:[,;].*)?$", re.I),
]
# "I'm Dana", also as the first of several statements ("Hi, I'm Dana. I just adopted a corgi"); a capitalised
# word that says how or what the user is ("I'm Sorry, …", "I'm Back!", "I'm Italian") is not a name
NOT_A_NAME = (
    "Fine", "Good", "Great", "Ok", "Okay", "Well", "Tired", "Bored", "Back", "Here", "Sorry", "Done", "Confused",
    "Lost", "Curious", "Interested", "Happy", "Sad", "Glad", "Excited", "Hungry", "Busy", "Ready", "Going", "Gonna",
    "About", "Testing", "New", "Not", "So", "Very", "Just", "Also", "Still", "Really", "Sure", "Afraid", "Home",
    "Trying", "Looking", "Calling", "Writing", "Alright", "Cool", "Stuck", "Worried", "Late", "Early", "Vegan",
    "Vegetarian", "American", "British", "English", "Irish", "Scottish", "Welsh", "Canadian", "Australian",
    "Italian", "French", "German", "Spanish", "Portuguese", "Brazilian", "Mexican", "Indian", "Chinese", "Japanese",
    "Korean", "Dutch", "Swedish", "Polish", "Russian", "Turkish", "Greek", "Swiss", "Danish", "Norwegian",
    "Finnish", "Austrian", "Belgian", "Nigerian", "Kenyan", "Egyptian", "Argentinian", "Colombian", "Chilean",
    "Vietnamese", "Thai", "Filipino", "Ukrainian", "Czech", "Hungarian", "Romanian", "Catholic", "Jewish", "Muslim",
)
# said after a name, and no part of it: "my name's Ada by the way", "call me Mia from now on"
AFTER_A_NAME = r"(?:by the way|btw|fyi|from now on|for short|if you like|if you want|if you don't mind|instead)"
IM_NAME = re.compile(r"^(?i:" + GREETING + r"(?:i'm|i am) )(?!(?:" + "|".join(NOT_A_NAME) + r")\b)"
                     r"(?P<v>[A-Z][a-z]+)(?:(?:[.!,;]|\s+and\b|(?i:\s+" + AFTER_A_NAME + r"\b))\s*.*)?$")
EMAIL = re.compile(r"\b(?:my )?(?:e-?mail|email address) (?:is|=|:)?\s*(?P<v>[^\s@]+@[^\s@]+\.[A-Za-z]{2,})", re.I)
TIMEZONE = [
    re.compile(r"\b(?:my )?time ?zone (?:is|=|:)\s*(?P<v>[A-Za-z_]+(?:/[A-Za-z_+-]+)*)", re.I),
    re.compile(r"\bi(?:'m| am) (?:in|on) (?:the )?(?P<v>[A-Za-z_]+(?:/[A-Za-z_+-]+)*) (?:time ?zone|time)\b", re.I),
    re.compile(r"\bset my time ?zone to (?P<v>[A-Za-z_]+(?:/[A-Za-z_+-]+)*)", re.I),
]
LANGUAGE = [
    re.compile(r"\bmy (?:preferred )?language is (?P<v>\w+)", re.I),
    re.compile(r"\b(?:please )?(?:speak|talk to me|talk|reply|answer|respond|write)"
               r"(?: to me)?(?: in)? (?P<v>\w+)", re.I),
    re.compile(r"\bi(?:'d)? prefer (?:to speak |speaking )?(?P<v>\w+)(?: as my language)?$", re.I),
    re.compile(r"\bset my (?:preferred )?language to (?P<v>\w+)", re.I),
]
UNITS = re.compile(r"\b(?:i prefer|use|please use|set my units to) (?P<v>metric|imperial)(?: units)?\b", re.I)
_KEEP = (r"(?:remember|note|keep in mind|don't forget|do not forget|make a note|memorize|save|store)")
REMEMBER = re.compile(r"^(?:(?:hey|ok|okay|and|also|oh)[, ]+)*(?:please |can you |could you |would you )?" + _KEEP +
                      r"(?: (?:that|this|this fact))?[,:]?\s+(?P<rest>.+)$", re.I)
# the same said with nothing to remember ("Remember that", "can you remember something for me?")
REMEMBER_NOTHING = re.compile(r"^(?:(?:hey|ok|okay|and|also|oh)[, ]+)*(?:please )?(?:can you |could you |would you )?"
                              + _KEEP + r"(?: (?:that|this|this fact|it|something|a thing))?(?: for me)?[,:]?$", re.I)
RECALL = [
    (re.compile(r"\bdo you (?:still )?(?:remember|know|recall) (?P<q>(?:what|where|when|who|which|how|if|whether|"
                r"my)\b.*)$", re.I), None),
    (re.compile(r"\b(?:can|could) you (?:remind me|tell me|recall|remember)(?: of| about)? (?P<q>(?:what|where|when|"
                r"who|which|my)\b.*)$", re.I), None),
    (re.compile(r"\bremind me (?:of |what |about )?(?P<q>(?:what |where |when |who )?.*\bmy\b.*)$", re.I), None),
    (re.compile(r"\bwhere do i (?:live|stay|reside)\b|\bwhere(?:'s| is) (?:my )?home\b|"
                r"\bwhat city do i live in\b", re.I), "home_city"),
    (re.compile(r"\bwhere am i (?:originally )?from\b|\bwhere(?:'s| is) my hometown\b|\bwhere did i grow up\b|"
                r"\bwhat(?:'s| is) my hometown\b", re.I), "hometown"),
    (re.compile(r"\bwhere was i born\b|\bwhere(?:'s| is) my birthplace\b|\bwhat(?:'s| is) my place of birth\b", re.I),
     "birthplace"),
    (re.compile(r"\bwhere do i work\b|\bwho do i work for\b|\bwhat company do i work (?:at|for)\b", re.I), "employer"),
    (re.compile(r"\bwhat do i do(?: for (?:work|a living))?\??$|\bwhat(?:'s| is) my job\b", re.I), "job"),
    (re.compile(r"\bwhat (?:car|vehicle) do i (?:drive|have|own)\b|\bwhat do i drive\b", re.I), "car"),
    (re.compile(r"\bwhat am i allergic to\b|\bam i allergic to anything\b|\bwhat (?:are )?my allergies\b|"
                r"\bdo i have (?:any )?allergies\b", re.I), "allergies"),
    (re.compile(r"\bwho am i\b|\bwhat(?:'s| is) my name\b|\bdo you know my name\b|"
                r"\bwhat do you call me\b", re.I), "name"),
    (re.compile(r"\bwhat do i (?:usually |normally |always )?(?:drink|order)\b", re.I), "favorite_drink"),
    (re.compile(r"\b(?:what|which|who|when|where)(?:'s|s| is| was| are| were)? (?:my|"
                r"me) (?P<s>[\w' -]+?)(?: again)?\??$", re.I), "?"),
    (re.compile(r"\b(?:tell me|remind me) (?:what )?my (?P<s>[\w' -]+?)(?: is| was)?(?: again)?\??$", re.I), "?"),
    (re.compile(r"^my (?P<s>[\w' -]+?)\?$", re.I), "?"),
    # "how's my order?": its status, not the usual order (a coffee) kept as a memory
    (re.compile(r"\bhow(?:'s| is| are) my (?P<s>order|package|parcel|shipment|delivery)s?"
                r"(?: (?:doing|going|coming along|looking))?\??$", re.I), "?"),
]
# a statement about oneself that is not a fact to keep: a request, a feeling of the moment, a support issue
NOT_ABOUT_ME = re.compile(r"^(?:i|i'm|i am|i've|i have|i'd|my|we|we're)\b.*?\b(?:want|wanna|need|like to know|"
                          r"would like|'d like|"
                          r"wonder|wondering|question|looking for|looking at|trying|tried|think|guess|hope|mean|meant|"
                          r"said|asked|see|understand|agree|forgot|got it|not sure|don't know|do not know|can't find|"
                          r"cannot find|ordered|order|package|parcel|delivery|shipment|subscription|account|refund|"
                          r"return|warranty|password|just (?:saying|asking|checking|wondering|curious)|bad|mistake)\b|"
                          r"^(?:i'm|i am) (?:just |so |very |really |a bit |kind of )?(?:fine|good|great|ok|okay|well|"
                          r"tired|bored|back|here|sorry|done|confused|lost|curious|interested|happy|sad|glad|excited|"
                          r"hungry|busy|ready|going|gonna|about|testing|new)\b|"
                          r"^i(?:'ll| will| would| could| should| must| can(?!'t))\b", re.I)
# A reference to something said in an earlier conversation: search the conversation tier.
_EARLIER = (r"(?:last (?:week|time|month|night|weekend|year)|yesterday|earlier|before|the other day|"
            r"a while (?:ago|back)|\w+ (?:days|weeks|months) ago|previously|once|"
            r"in (?:an?|our|my|the) (?:earlier|previous|last|past|other) "
            r"(?:conversation|chat|session|call)s?)")
# "what did we talk about last time?": the whole of the last conversation, not a search in all of them
LAST_CONVERSATION = re.compile(
    r"^(?:(?:hey|so|ok|okay)[, ]+)?(?:(?:can|could) you )?(?:remind me )?(?:what (?:did|have) we (?:talk|talked|chat|"
    r"chatted|speak|spoken|discuss|discussed)(?: about)?|what we (?:talked|chatted|spoke|discussed)(?: about)?|"
    r"what was our last (?:conversation|chat|call) about|"
    r"where did we leave (?:off|it)|(?:sum up|summari[sz]e|recap) our last (?:conversation|chat|call|session))"
    r"(?: (?:last time|the last time|before|earlier|yesterday|the other day|previously|last|"
    r"(?:in|during) (?:our|the) (?:last|previous) (?:conversation|chat|call|session)))?[?.!]*$",
    re.I,
)
# "what did we talk about on Monday?": the conversations of the days named (agent/brain/intents.py checks
# that what follows is only a time it can place)
CONVERSATIONS_ON = re.compile(
    r"^(?:(?:hey|so|ok|okay)[, ]+)?(?:(?:can|could) you )?(?:remind me |tell me )?(?:what (?:did|have) we (?:talk|"
    r"talked|chat|chatted|speak|spoken|discuss|discussed)(?: about)?|what we (?:talked|chatted|spoke|discussed)"
    r"(?: about)?|what was our (?:conversation|chat|call) about) (?P<when>[^?.!]+)[?.!]*$",
    re.I,
)
# this conversation, not an earlier one: answered from what was said in it (no tool)
THIS_CONVERSATION = re.compile(
    r"^(?:(?:hey|so|ok|okay)[, ]+)?(?:(?:can|could) you )?(?:remind me )?(?:"
    r"what (?:did|have) we (?:talk|talked|chat|chatted|speak|spoken|discuss|discussed)(?: about)? "
    r"(?:today|so far|just now|in this (?:conversation|chat|session))|"
    r"(?:sum up|summari[sz]e|recap) (?:this|our|the) (?:conversation|chat|session)(?: so far)?)[?.!]*$",
    re.I,
)
PAST_CONVERSATION = [
    re.compile(r"\bsearch (?:our |my )?(?:past |previous |earlier |old )?(?:conversations|chats|transcripts|sessions)"
               r"(?: for| about)? (?P<q>.+)$", re.I),
    re.compile(r"\b(?:that|the|those) [\w' -]+? (?:i|we) (?:mentioned|told you about|talked about|brought up|"
               r"discussed|spoke about|was telling you about)\b", re.I),
    re.compile(r"\b(?:i|we) (?:mentioned|mention|told you|tell you|said|say|talked about|talk about|brought up|"
               r"discussed|spoke about)\b.*\b" + _EARLIER
               + r"\b", re.I),
    re.compile(r"\b(?:did|have) (?:i|we) (?:ever )?(?:mention|mentioned|bring up|brought up|discuss|discussed)\b|"
               r"\b(?:did|have) (?:i|we) ever (?:talk|talked|tell|told)\b", re.I),
    re.compile(r"\bwhat (?:did|have) we (?:talk|talked|chat|chatted|speak|spoken) about\b", re.I),
]
PROCEDURAL = re.compile(r"^(?:how (?:do|can|should|would) i|can i|could i|should i|do i need|will i|may i|"
                         r"am i able|is it possible|what happens if i|what if i|what should i|how long|how much|"
                         r"how many|how often|why does|why is|why do)\b", re.I)
# asking after the agent: "how are you?", "how's it going?", "how's your day going?" (it was searched in the shop's
# documents until 2026-12-07)
HOW_ARE_YOU = re.compile(r"\bhow are (?:you|u)\b|\bhow(?:'s| is) it going\b|\bhow(?:'re| are) you doing\b|"
                         r"\bhow(?:'s| is| was| has) (?:your|ur) (?:day|morning|afternoon|evening|night|week|weekend)"
                         r"\b|\bhow(?:'ve| have) you been\b|\bhow(?:'re| are) things\b|\bwhat's up\b|\bsup\b", re.I)
# what the agent cannot do: said so ("tell me a joke" was a search of the user's memories: "I don't remember you
# telling me that")
CANT_DO = re.compile(r"^(?:(?:can|could|would|will) you (?:please )?)?(?:book|buy|call|phone|e-?mail|text|send|"
                     r"schedule|set (?:an? )?(?:alarm|reminder|timer)|play|sing|translate|draw)\b|"
                     r"^(?:(?:can|could) you )?(?:tell|give|write) me (?:a|an|another) "
                     r"(?:joke|story|poem|riddle|song)\b", re.I)
SMALLTALK = [
    re.compile(r"^(?:hi|hello|hey|yo|hiya|howdy|greetings|good (?:morning|afternoon|evening|day))\b[\w ,!.]*$", re.I),
    re.compile(r"\b(?:thanks|thank you|thx|ty|cheers|much appreciated)\b", re.I),
    re.compile(r"^(?:bye|goodbye|good night|see you|see ya|later|talk (?:to you )?later|ttyl)\b", re.I),
    re.compile(r"^(?:ok|okay|cool|great|nice|awesome|sure|got it|alright|all right|yes|no|yep|nope|yeah|fine|perfect|"
               r"wow|lol|haha|hmm|i see|makes sense|sounds good|good|interesting)[.!? ]*$", re.I),
    HOW_ARE_YOU,
    re.compile(r"\bnice to (?:meet|see) you\b|\byou(?:'re| are) (?:great|awesome|helpful|funny|the best)\b", re.I),
    CANT_DO,
]

# fmt: on


# the shop's products, whose problems the knowledge base answers
PRODUCT = r"(?:machine|grinder|espresso|kestrel|tamper|pitcher|filter|steam wand|boiler|app)"
# asking for help with what was said before, or why it is so ("My coffee tastes sour. Why?")
ASKS_FOR_HELP = re.compile(
    r"\b(?:what (?:should|do|can) i do|what now|what does (?:it|that|this) mean|how (?:do|can) i (?:fix|stop|"
    r"solve|clear|reset|get rid of)|why)\b",
    re.I,
)


def order_id_in(text: str) -> str | None:
    """The order number `text` names ("order 1001", "#1001", a bare number after an order word), or None."""
    match = ORDER_NUMBER.search(text)
    if match and re.search(r"\d", match.group("id")):
        return match.group("id").strip("-")
    if ORDERISH_BARE.search(text):
        bare = BARE_NUMBER.search(text)
        if bare:
            return bare.group("id")
    # "and 1003?" after an order's answer: a number alone is an order's (it was a search of the shop's documents)
    alone = re.fullmatch(r"(?:and|what about|how about|also|now)?[ ,]*#?(?P<id>\d{3,8})\s*[?.!]?", text.strip(), re.I)
    return alone.group("id") if alone else None
