"""Whisper's runtime is asked for AVX-512 only where the CPU has every extension it needs, and keeps its
weights int8 only where the CPU multiplies 8-bit numbers exactly (VNNI)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from core.ctranslate2_cpu import ISA_VARIABLE, use_avx512_where_available, whisper_compute_type

XEON = "processor\t: 0\nflags\t\t: fpu sse4_2 avx avx2 avx512f avx512dq avx512cd avx512bw avx512vl avx512_vnni\n"
LAPTOP = "processor\t: 0\nflags\t\t: fpu sse4_2 avx avx2 fma\n"
ALDER_LAKE = "processor\t: 0\nflags\t\t: fpu sse4_2 avx avx2 fma avx_vnni\n"  # VNNI without AVX-512
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


@pytest.mark.parametrize(
    ("cpuinfo", "compute_type"),
    [(XEON, "int8"), (ALDER_LAKE, "int8"), (LAPTOP, "float32"), (PARTIAL, "float32"), ("", "float32")],
    ids=["avx512 vnni", "avx vnni", "avx2 only", "avx512 without vnni", "no flags"],
)
def test_whisper_keeps_int8_weights_only_where_the_cpu_has_vnni(tmp_path, cpuinfo, compute_type):
    assert whisper_compute_type("auto", _cpuinfo(tmp_path, cpuinfo)) == compute_type


def test_whisper_without_cpuinfo_computes_in_float32(tmp_path):
    assert whisper_compute_type("auto", tmp_path / "missing") == "float32"


@pytest.mark.parametrize("configured", ["int8", "float32"])
def test_a_configured_compute_type_is_kept_on_any_cpu(tmp_path, configured):
    for cpuinfo in (XEON, LAPTOP):
        assert whisper_compute_type(configured, _cpuinfo(tmp_path, cpuinfo)) == configured


@pytest.mark.parametrize("configured", ["auto", "int8"])
def test_the_apps_whisper_loads_with_the_chosen_compute_type(configured):
    """The loader and the sidebar's label follow STT_COMPUTE_TYPE, and "auto" follows this CPU."""
    expected = whisper_compute_type(configured)
    load = (
        "from agent.voice.local_stt import load_model; from agent.model_factory import describe_models; "
        "model = load_model(1); print(model.model.compute_type); print(describe_models().stt)"
    )
    env = os.environ | {"STT_COMPUTE_TYPE": configured}
    loaded = subprocess.run([sys.executable, "-c", load], env=env, capture_output=True, text=True, timeout=120)
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    compute_type, label = loaded.stdout.strip().splitlines()[-2:]
    assert compute_type == {"int8": "int8_float32"}.get(expected, expected)  # int8 weights, float32 elsewhere
    assert label == f"faster-whisper tiny.en (local, {expected})"
