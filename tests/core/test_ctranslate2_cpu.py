"""Whisper's runtime is asked for AVX-512 only where the CPU has every extension it needs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from core.ctranslate2_cpu import ISA_VARIABLE, use_avx512_where_available

XEON = "processor\t: 0\nflags\t\t: fpu sse4_2 avx avx2 avx512f avx512dq avx512cd avx512bw avx512vl avx512_vnni\n"
LAPTOP = "processor\t: 0\nflags\t\t: fpu sse4_2 avx avx2 fma\n"
PARTIAL = "processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512cd\n"  # AVX-512 foundation only (Xeon Phi-like)


@pytest.fixture(autouse=True)
def no_isa_set(monkeypatch):
    """No choice made before the test, and whatever the test sets is undone after it."""
    monkeypatch.setenv(ISA_VARIABLE, "")
    monkeypatch.delenv(ISA_VARIABLE)


def _cpuinfo(tmp_path, text):
    path = tmp_path / "cpuinfo"
    path.write_text(text)
    return path


def test_a_cpu_with_avx512_gets_it(tmp_path):
    assert use_avx512_where_available(_cpuinfo(tmp_path, XEON)) is True
    assert os.environ[ISA_VARIABLE] == "AVX512"


@pytest.mark.parametrize("cpuinfo", [LAPTOP, PARTIAL, ""], ids=["avx2 only", "avx512 foundation only", "no flags"])
def test_a_cpu_without_every_extension_keeps_the_default(tmp_path, cpuinfo):
    assert use_avx512_where_available(_cpuinfo(tmp_path, cpuinfo)) is False
    assert ISA_VARIABLE not in os.environ


def test_no_cpuinfo_keeps_the_default(tmp_path):
    assert use_avx512_where_available(tmp_path / "missing") is False
    assert ISA_VARIABLE not in os.environ


@pytest.mark.parametrize(("set_by_operator", "uses_avx512"), [("AVX2", False), ("avx512", True)])
def test_the_operators_choice_is_kept(tmp_path, monkeypatch, set_by_operator, uses_avx512):
    monkeypatch.setenv(ISA_VARIABLE, set_by_operator)
    assert use_avx512_where_available(_cpuinfo(tmp_path, XEON)) is uses_avx512
    assert os.environ[ISA_VARIABLE] == set_by_operator


def test_the_apps_whisper_runs_with_avx512_on_a_cpu_that_has_it():
    """CTranslate2 reads the variable once, at the process's first model: the app's loader asks before it."""
    if not use_avx512_where_available():
        pytest.skip("this CPU has no AVX-512: CTranslate2 keeps its default")
    load = "from agent.voice.local_stt import load_model; load_model(1)"
    env = {key: value for key, value in os.environ.items() if key != ISA_VARIABLE} | {"CT2_VERBOSE": "1"}
    loaded = subprocess.run([sys.executable, "-c", load], env=env, capture_output=True, text=True, timeout=120)
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert "Selected ISA: AVX512" in loaded.stderr
