"""The offline demo brain: a deterministic, rule-based stand-in for an LLM (see agent/brain/llm.py).

facts.py     the slot a phrase names and the facts a statement holds (also used by post-session extraction)
patterns.py  the phrasings it recognises
names.py     the user's name in what they say
intents.py   classify(): one utterance -> an intent and its tool calls
replies.py   what it says, written from the tools' results
llm.py       OfflineBrain, the livekit llm.LLM that puts it all on the normal function-calling path
"""
