"""How CTranslate2 (Whisper's runtime) should compute on this CPU: which instructions its own kernels
use, and whether the model's weights stay int8.

CTranslate2 leaves its matrix products to MKL, which uses AVX-512 where the CPU has it, but runs the rest
of a decode (quantising activations, layer norms, softmax) with AVX2 unless `CT2_FORCE_CPU_ISA` says
otherwise, even on a CPU with AVX-512. With AVX-512 a Whisper tiny.en decode was ~9% faster on this
project's 2-core Xeon, with the same transcripts (docs/VOICE.md). CTranslate2 reads the variable once,
when the process creates its first model, so every place that creates one calls this first.

int8 weights are only as good as the CPU's int8 dot products: with VNNI they are exact, but on an
AVX2-only CPU (an AMD EPYC 7002/7003, older Intel) Whisper tiny.en heard 85% of the domain test words
wrong with int8 and 46% with float32, at the same speed (docs/VOICE.md), so int8 is the choice only
where VNNI is.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

ISA_VARIABLE = "CT2_FORCE_CPU_ISA"
# the extensions CTranslate2's AVX-512 kernels use; forcing AVX512 on a CPU without them fails
AVX512_FLAGS = frozenset({"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"})
# either gives exact 8-bit dot products (without them, 8-bit products go through 16-bit sums that saturate)
INT8_DOT_PRODUCT_FLAGS = frozenset({"avx512_vnni", "avx_vnni"})
CPUINFO = Path("/proc/cpuinfo")


@cache  # read once: the sidebar's model labels ask on every page run
def cpu_flags(cpuinfo: Path = CPUINFO) -> frozenset[str]:
    """The first CPU's flags; empty where /proc/cpuinfo cannot be read (not Linux)."""
    try:
        lines = cpuinfo.read_text().splitlines()
    except OSError:
        return frozenset()
    return frozenset(next((line.split(":", 1)[1].split() for line in lines if line.startswith("flags")), []))


def use_avx512_where_available(cpuinfo: Path = CPUINFO) -> bool:
    """Ask CTranslate2 for AVX-512 when every extension it needs is there; True when it will use it.
    A value the operator set is kept; a CPU without them (or a system without /proc/cpuinfo) keeps the default."""
    if ISA_VARIABLE in os.environ:
        return os.environ[ISA_VARIABLE].strip().upper() == "AVX512"
    if not AVX512_FLAGS.issubset(cpu_flags(cpuinfo)):
        return False
    os.environ[ISA_VARIABLE] = "AVX512"
    return True


def whisper_compute_type(configured: str = "auto", cpuinfo: Path = CPUINFO) -> str:
    """The compute type to load Whisper with: the configured one (STT_COMPUTE_TYPE), or for "auto" int8
    where the CPU has VNNI and float32 elsewhere (and where the flags cannot be read: slower at worst, never wrong)."""
    if configured != "auto":
        return configured
    return "int8" if INT8_DOT_PRODUCT_FLAGS & cpu_flags(cpuinfo) else "float32"
