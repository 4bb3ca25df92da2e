"""Settings: env beats .streamlit/secrets.toml, blank means unset, one place decides the mode."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from core import config

HOSTED_VARS = (
    "DATABASE_URL",
    "SUPABASE_URL",
    "SUPABASE_ANON_KEY",
    "SUPABASE_JWT_SECRET",
    "LIVEKIT_URL",
    "LIVEKIT_API_KEY",
    "LIVEKIT_API_SECRET",
    "RRF_K",
    "RRF_VECTOR_WEIGHT",
    "RRF_TEXT_WEIGHT",
    "KNOWLEDGE_RRF_VECTOR_WEIGHT",
    "KNOWLEDGE_RRF_TEXT_WEIGHT",
    "KNOWLEDGE_RRF_K",
    "AGENT_NAME",
    "LLM_MODEL",
    "EMBEDDING_MODEL",
    "DEMO_USER_ID",
)


@pytest.fixture
def env(monkeypatch, tmp_path):
    """A clean slate: no .env, an empty secrets.toml in tmp_path, every setting blank.

    Restores the environment and the cached settings afterwards so other test
    files see exactly what conftest set up."""
    secrets_toml = tmp_path / "secrets.toml"
    secrets_toml.write_text("")
    monkeypatch.setattr(config, "SECRETS_TOML", secrets_toml)
    monkeypatch.setitem(config.Settings.model_config, "env_file", None)  # a developer's .env must not leak in
    for name in HOSTED_VARS:
        monkeypatch.delenv(name, raising=False)
    try:
        yield monkeypatch, secrets_toml
    finally:
        monkeypatch.undo()
        config.reload_settings()


def test_embedded_defaults(env):
    settings = config.reload_settings()
    assert settings.database_url is None and settings.embedded_database is True
    assert settings.hosted_auth is False and settings.livekit_configured is False
    assert settings.mode_label == "embedded"
    assert (settings.rrf_vector_weight, settings.rrf_text_weight, settings.rrf_k) == (0.5, 0.5, 2)
    assert (
        settings.knowledge_rrf_vector_weight,
        settings.knowledge_rrf_text_weight,
        settings.knowledge_rrf_k,
    ) == (0.7, 0.3, 5)
    assert settings.agent_name == "memory-playground"


def test_secrets_toml_is_read_with_upper_or_lower_case_keys(env):
    _, secrets_toml = env
    secrets_toml.write_text('RRF_K = 7\nagent_name = "from-toml"\nLIVEKIT_URL = "wss://toml.example"\n')
    settings = config.reload_settings()
    assert settings.rrf_k == 7
    assert settings.agent_name == "from-toml"
    assert settings.livekit_url == "wss://toml.example"


def test_env_beats_secrets_toml(env):
    monkeypatch, secrets_toml = env
    secrets_toml.write_text('RRF_K = 7\nAGENT_NAME = "from-toml"\nRRF_TEXT_WEIGHT = 0.9\n')
    monkeypatch.setenv("RRF_K", "9")
    monkeypatch.setenv("AGENT_NAME", "from-env")
    settings = config.reload_settings()
    assert settings.rrf_k == 9 and settings.agent_name == "from-env"
    assert settings.rrf_text_weight == 0.9  # not in env: the file still counts


def test_blank_env_var_is_unset(env):
    monkeypatch, _secrets_toml = env
    for name in ("DATABASE_URL", "SUPABASE_URL", "SUPABASE_ANON_KEY", "LLM_MODEL"):
        monkeypatch.setenv(name, "   ")
    settings = config.reload_settings()
    assert settings.database_url is None and settings.supabase_url is None and settings.llm_model is None
    assert settings.embedded_database is True and settings.hosted_auth is False
    assert settings.mode_label == "embedded"


def test_a_blank_number_setting_is_its_default(env):
    # .env.example writes unset settings as `NAME=`: a blank number setting stopped every command and the app
    monkeypatch, _secrets_toml = env
    for name in ("DB_POOL_MAX_SIZE", "RRF_K", "RRF_VECTOR_WEIGHT", "LLM_TIMEOUT_SECONDS", "AGENT_NAME", "DATA_DIR"):
        monkeypatch.setenv(name, " ")
    settings = config.reload_settings()
    assert (settings.db_pool_max_size, settings.rrf_k, settings.rrf_vector_weight) == (8, 2, 0.5)
    assert settings.llm_timeout_seconds == 60.0 and settings.agent_name == "memory-playground"
    assert settings.data_dir == config.PROJECT_ROOT / ".data"


def test_blank_env_var_also_masks_the_toml_value(env):
    # conftest relies on this: blanking a variable turns a hosted setting off wherever it came from
    monkeypatch, secrets_toml = env
    secrets_toml.write_text('DATABASE_URL = "postgresql://toml@db.example/postgres"\n')
    assert config.reload_settings().database_url == "postgresql://toml@db.example/postgres"
    monkeypatch.setenv("DATABASE_URL", "")
    assert config.reload_settings().database_url is None


def test_blank_value_in_secrets_toml_is_unset(env):
    _, secrets_toml = env
    secrets_toml.write_text('SUPABASE_URL = ""\nSUPABASE_ANON_KEY = " "\n')
    settings = config.reload_settings()
    assert settings.supabase_url is None and settings.hosted_auth is False


@pytest.mark.parametrize(
    "values,label,embedded_db,hosted_auth",
    [
        ({}, "embedded", True, False),
        ({"DATABASE_URL": "postgresql://u:p@db.example:5432/postgres"}, "hosted", False, False),
        ({"SUPABASE_URL": "https://ref.supabase.co", "SUPABASE_ANON_KEY": "anon"}, "hosted", True, True),
        ({"SUPABASE_URL": "https://ref.supabase.co"}, "embedded", True, False),  # no key: still embedded auth
        ({"SUPABASE_ANON_KEY": "anon"}, "embedded", True, False),
        ({"SUPABASE_JWT_SECRET": "s" * 40}, "embedded", True, False),
        (
            {"LIVEKIT_URL": "wss://x.livekit.cloud", "LIVEKIT_API_KEY": "k", "LIVEKIT_API_SECRET": "s"},
            "embedded",
            True,
            False,
        ),
    ],
)
def test_mode_label(env, values, label, embedded_db, hosted_auth):
    monkeypatch, _ = env
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    settings = config.reload_settings()
    assert settings.mode_label == label
    assert settings.embedded_database is embedded_db
    assert settings.hosted_auth is hosted_auth


def test_mode_can_come_from_secrets_toml(env):
    _, secrets_toml = env
    secrets_toml.write_text('SUPABASE_URL = "https://ref.supabase.co"\nSUPABASE_ANON_KEY = "anon"\n')
    assert config.reload_settings().mode_label == "hosted"


@pytest.mark.parametrize(
    "present,configured",
    [
        (("LIVEKIT_URL", "LIVEKIT_API_KEY", "LIVEKIT_API_SECRET"), True),
        (("LIVEKIT_URL", "LIVEKIT_API_KEY"), False),
        (("LIVEKIT_API_KEY", "LIVEKIT_API_SECRET"), False),
    ],
)
def test_livekit_configured_needs_all_three(env, present, configured):
    monkeypatch, _ = env
    for name in present:
        monkeypatch.setenv(name, "value")
    assert config.reload_settings().livekit_configured is configured


def test_relative_data_dir_is_under_the_project(env):
    monkeypatch, _ = env
    monkeypatch.setenv("DATA_DIR", "some/relative/dir")
    assert config.reload_settings().data_dir == config.PROJECT_ROOT / "some" / "relative" / "dir"
    monkeypatch.setenv("DATA_DIR", "/tmp/absolute-data")
    assert config.reload_settings().data_dir == Path("/tmp/absolute-data")


@pytest.mark.parametrize(
    "name,value",
    [
        ("RRF_K", "0"),
        ("RRF_K", "ten"),
        ("RRF_VECTOR_WEIGHT", "-1"),
        ("RRF_TEXT_WEIGHT", "11"),
        ("ACCESS_TOKEN_TTL_SECONDS", "5"),
        ("STT_BEAM_SIZE", "0"),
        ("STT_REDECODE_BELOW", "1.5"),
        ("STT_COMPUTE_TYPE", "int16"),  # CTranslate2 refuses it on CPUs without MKL's int16 support
    ],
)
def test_out_of_range_values_are_refused(env, name, value):
    monkeypatch, _ = env
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError, match=name.lower()):
        config.reload_settings()


_STREAMLIT_RUN = ["streamlit", "run", "streamlit_app.py", "--server.headless=true", "--server.address=127.0.0.1"]


@pytest.mark.parametrize(
    "command",
    [["core", "status"], ["core", "migrate"], ["core.doctor", "--quick"], ["agent", "chat"], _STREAMLIT_RUN],
    ids=lambda command: " ".join(command[:2]),
)
def test_a_setting_that_does_not_parse_is_one_line_naming_it_on_every_command_line(command):
    # `make run`, `make doctor` and `make test` start with `python -m core migrate`: an operator's typo there
    # printed pydantic's traceback (lower-case field names, a link) instead of what to set; `streamlit run`
    # by hand printed it too, as the server's lifespan failed
    bad = {**os.environ, "RRF_VECTOR_WEIGHT": "abc", "RRF_K": "0"}
    if command is _STREAMLIT_RUN:
        with socket.socket() as free:  # a port no other server of the run holds
            free.bind(("127.0.0.1", 0))
            command = [*command, f"--server.port={free.getsockname()[1]}"]
    done = subprocess.run(
        [sys.executable, "-m", *command],
        env=bad,
        cwd=config.PROJECT_ROOT,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and "pydantic.dev" not in done.stderr
    message = done.stderr.strip().splitlines()[-1]
    assert "RRF_VECTOR_WEIGHT" in message and "'abc'" in message and "RRF_K" in message
    assert "fix it in the environment, .env or .streamlit/secrets.toml" in message


def test_settings_are_cached_until_reloaded(env):
    monkeypatch, _ = env
    first = config.reload_settings()
    monkeypatch.setenv("AGENT_NAME", "changed")
    assert config.get_settings() is first and first.agent_name == "memory-playground"
    assert config.reload_settings().agent_name == "changed"


def test_restored_after_each_test():
    # runs after the cases above: conftest's test settings are back in force
    settings = config.get_settings()
    assert settings.embedded_database is True and settings.hosted_auth is False
    assert settings.data_dir != config.PROJECT_ROOT / ".data"
