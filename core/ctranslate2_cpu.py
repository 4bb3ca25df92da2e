"""Which CPU instructions CTranslate2 (Whisper's runtime) uses for its own kernels.

CTranslate2 leaves its matrix products to MKL, which uses AVX-512 where the CPU has it, but runs the rest
of a decode (quantising activations, layer norms, softmax) with AVX2 unless `CT2_FORCE_CPU_ISA` says
otherwise, even on a CPU with AVX-512. With AVX-512 a Whisper tiny.en decode was ~9% faster on this
project's 2-core Xeon, with the same transcripts (docs/VOICE.md). CTranslate2 reads the variable once,
when the process creates its first model, so every place that creates one calls this first.
"""

from __future__ import annotations

import os
from pathlib import Path

ISA_VARIABLE = "CT2_FORCE_CPU_ISA"
# the extensions CTranslate2's AVX-512 kernels use; forcing AVX512 on a CPU without them fails
AVX512_FLAGS = frozenset({"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"})


def use_avx512_where_available(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Ask CTranslate2 for AVX-512 when every extension it needs is there; True when it will use it.
    A value the operator set is kept; a CPU without them (or a system without /proc/cpuinfo) keeps the default."""
    if ISA_VARIABLE in os.environ:
        return os.environ[ISA_VARIABLE].strip().upper() == "AVX512"
    try:
        lines = cpuinfo.read_text().splitlines()
    except OSError:
        return False
    flags = next((line.split(":", 1)[1].split() for line in lines if line.startswith("flags")), [])
    if not AVX512_FLAGS.issubset(flags):
        return False
    os.environ[ISA_VARIABLE] = "AVX512"
    return True
