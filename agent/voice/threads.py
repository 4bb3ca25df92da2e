"""How many CPU threads each stage of the offline voice pipeline may use.

The models' own defaults each take every core (onnxruntime and torch size their pools to the
machine, CTranslate2 was given 2), so on a 2-core machine a Whisper decode, a Piper sentence and a
query embedding running at once ask for 6 threads and slow each other down. Each stage gets a fixed
share instead, and every model runs on its own single worker thread (local_stt.py, local_tts.py), so
the process never runs more than one decode per model at a time whatever the number of calls.

On 2 cores: the final/speculative Whisper decode (the critical path of a turn) gets both cores, and
so does Piper, which runs after it in a turn (its first piece 1.7x faster than on one thread; its
idle threads do not spin, local_tts.py); interim decodes and torch one each, Silero one (livekit's
plugin fixes it).
`VOICE_CPU_CORES` overrides the core count the budget is computed for.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ThreadBudget:
    cores: int
    whisper: int  # the decode whose transcript ends the user's turn (final or speculative)
    whisper_interim: int  # live partial transcripts while the user speaks
    piper: int  # onnxruntime intra-op threads of the Piper voice
    torch: int  # sentence-transformers embeddings (recall, memory writes)
    silero: int = 1  # fixed by livekit-plugins-silero


def thread_budget(cores: int | None = None) -> ThreadBudget:
    if cores is None:
        configured = os.environ.get("VOICE_CPU_CORES", "").strip()
        cores = int(configured) if configured.isdigit() and int(configured) > 0 else (os.cpu_count() or 1)
    return ThreadBudget(
        cores=cores,
        whisper=min(2, cores) if cores <= 4 else 4,
        whisper_interim=1,
        piper=min(2, cores),
        torch=1 if cores <= 2 else 2,
    )


_applied: ThreadBudget | None = None
_apply_lock = threading.Lock()


def apply_process_budget(budget: ThreadBudget | None = None) -> ThreadBudget:
    """Set torch's intra-op pool to the budget (process-wide; idempotent). The other stages read
    their share when their model is loaded."""
    global _applied
    budget = budget or thread_budget()
    import torch

    with _apply_lock:
        # torch keeps the count per thread once a thread has run torch work, and reads the process-wide
        # value when a thread starts its first: set it every time, from whichever thread applies the budget
        torch.set_num_threads(budget.torch)
        if _applied != budget:
            _applied = budget
            log.info("voice thread budget: %s", budget)
    return budget
