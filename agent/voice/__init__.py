"""Voice calls: the browser's audio in and out, the offline speech models, and the two kinds of call.

audio.py           WebRTC's audio format, levels, conversion to mono at a rate (one resampler for all)
mic.py, speaker.py the WebRTC <-> AgentSession audio adapters
local_stt.py       faster-whisper tiny.en as a livekit STT; local_tts.py: Piper as a livekit TTS
local_call.py      a call through the offline pipeline in this process
livekit_bridge.py  a call relayed into a LiveKit room, where the agent worker talks
calls.py           the VoiceCall protocol the Voice page uses, and one call per browser session
latency.py         per-turn latency of a call, from its events
"""
