"""Benchmarks: `python -m bench` (or `make bench`) writes docs/BENCHMARKS.md.

- voice: the offline voice pipeline end to end with Piper-recorded utterances played in real
  time as WebRTC-shaped frames; end of user speech -> first agent audio, and where the time goes.
- recall: the agent's per-turn recall step (embedding + hybrid SQL) on a realistic user.
- scale: the hybrid search SQL on a throwaway database with many users and memories.
"""
