"""Settings, read once from the environment, `.env` and `.streamlit/secrets.toml`.

Every setting has an embedded default so a fresh clone runs with no accounts and
no network. The embedded-vs-hosted choice is made here and nowhere else.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, ValidationError, field_validator
from pydantic_core import PydanticUseDefault
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from core.errors import PlaygroundError

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SECRETS_TOML = PROJECT_ROOT / ".streamlit" / "secrets.toml"
MIGRATIONS_DIR = PROJECT_ROOT / "supabase" / "migrations"
LOCAL_SHIM_DIR = PROJECT_ROOT / "supabase" / "local"
SEED_DIR = PROJECT_ROOT / "supabase" / "seed"


Backend = Literal["livekit", "openai", "offline"]
# LLM_MODEL / STT_MODEL / TTS_MODEL set to one of these force the local model whatever else is configured.
LOCAL_MODEL_NAMES = ("offline", "local")
DEFAULT_INFERENCE_LLM = "openai/gpt-4.1-mini"
DEFAULT_INFERENCE_STT = "deepgram/nova-3"
DEFAULT_INFERENCE_TTS = "cartesia/sonic-2"
DEFAULT_OPENAI_LLM = "gpt-4.1-mini"
DEFAULT_OPENAI_STT = "gpt-4o-mini-transcribe"
DEFAULT_OPENAI_TTS = "gpt-4o-mini-tts"


class Settings(BaseSettings):
    """Each field is read from the env var of the same name (upper case) or the
    same key in `.streamlit/secrets.toml`; env wins."""

    model_config = SettingsConfigDict(
        env_file=PROJECT_ROOT / ".env",
        env_file_encoding="utf-8",
        extra="ignore",
        case_sensitive=False,
    )

    # --- storage -----------------------------------------------------------
    data_dir: Path = Field(PROJECT_ROOT / ".data", description="Embedded database, JWT secret, demo user id.")
    database_url: str | None = Field(
        None,
        description="Any Postgres with pgvector; unset = embedded server. "
        "User scopes connect with it (a role that can `set role authenticated`).",
    )
    service_database_url: str | None = Field(
        None,
        description="The service scope, sign-in and the session "
        "store (a role that can `set role service_role`); "
        "default DATABASE_URL.",
    )
    admin_database_url: str | None = Field(
        None, description="Migrations, seeding and `cleanup` (the schema owner); default DATABASE_URL."
    )
    db_pool_max_size: int = Field(8, ge=1, le=100)

    # --- auth --------------------------------------------------------------
    supabase_url: str | None = Field(None, description="Hosted auth: https://<ref>.supabase.co")
    supabase_anon_key: str | None = None
    supabase_jwt_secret: str | None = Field(None, description="Embedded issuer secret; generated if unset.")
    access_token_ttl_seconds: int = Field(3600, ge=60, le=7 * 24 * 3600)
    # Embedded issuer: a sign-in's refresh tokens stop working this long after the sign-in,
    # however often they were used, and after this long without use.
    refresh_token_lifetime_days: float = Field(30.0, gt=0, le=3650)
    refresh_token_inactivity_days: float = Field(14.0, gt=0, le=3650)
    # A refresh token exchanged less than this long ago may be presented again (two tabs or app
    # processes renewing at once) and gets a sibling; later it is a replay and ends its family.
    refresh_token_reuse_seconds: float = Field(10.0, ge=0, le=300)
    # New anonymous identities per client address (what Streamlit reports; one bucket for
    # local connections): a burst, then this many per minute.
    anon_signin_burst: int = Field(20, ge=1, le=100_000)
    anon_signin_per_minute: float = Field(20.0, gt=0, le=1_000_000)
    # `python -m core cleanup` (run by `make run`) deletes anonymous users idle this long.
    anon_user_retention_days: float = Field(30.0, gt=0, le=36500)
    # The app server runs that job again this often while it is up (0: never; then schedule it yourself).
    maintenance_interval_hours: float = Field(24.0, ge=0, le=8760)

    # --- limits per user ----------------------------------------------------
    max_memories_per_user: int = Field(1000, ge=1, le=1_000_000)
    max_preferences_bytes: int = Field(16_384, ge=256, le=1_000_000)
    # The preload (read before the agent's first word) holds the most recently updated
    # memories, at most this many and within this many tokens (~4 characters each).
    preload_max_memories: int = Field(50, ge=0, le=10_000)
    preload_token_budget: int = Field(1500, ge=0, le=200_000)

    # --- retrieval ---------------------------------------------------------
    embedding_model: str | None = Field(None, description="Name or path of a 384-d sentence-transformers model.")
    # Fusion of the vector and text branches (memories and conversation turns): weight / (k + rank).
    # Chosen on the conversational dev set (docs/RETRIEVAL.md).
    rrf_vector_weight: float = Field(0.5, ge=0.0, le=10.0)
    rrf_text_weight: float = Field(0.5, ge=0.0, le=10.0)
    rrf_k: int = Field(2, ge=1, le=10_000)
    # Knowledge search fuses with its own weights and k: in a small shared corpus the text branch
    # is noisier, so it mostly decides between close vector matches (codes, model names).
    knowledge_rrf_vector_weight: float = Field(0.7, ge=0.0, le=10.0)
    knowledge_rrf_text_weight: float = Field(0.3, ge=0.0, le=10.0)
    knowledge_rrf_k: int = Field(5, ge=1, le=10_000)
    # Per-turn recall waits this long for its search; a slower search is skipped for that turn
    # (and the retrieval event says so) so the reply is never held up by it.
    recall_budget_ms: float = Field(250.0, gt=0, le=60_000)
    # How much the per-turn recall may add in front of the user's message (slots first, then past
    # conversation turns), in tokens estimated at four characters each.
    recall_token_budget: int = Field(400, ge=50, le=20_000)
    # From this many turns a user's past-turn vector search reads an HNSW index of their own turns, which
    # the maintenance job (`python -m core cleanup`) builds; below it, an exact scan is as fast.
    vector_index_min_turns: int = Field(10_000, ge=1, le=100_000_000)

    demo_user_id: str | None = Field(None, description="Default user for the worker console and `agent chat`.")

    # --- agent / models -----------------------------------------------------
    agent_name: str = "memory-playground"
    livekit_url: str | None = None
    livekit_api_key: str | None = None
    livekit_api_secret: str | None = None
    openai_api_key: str | None = None
    openai_base_url: str | None = None
    llm_model: str | None = None
    # Seconds to wait for the LLM (connect, and each wait for the next streamed bytes). A local
    # server loads the model on its first request, and a CPU works through our instructions and
    # tool schemas before the first token: 60 s covers a cold 7-8B model on a laptop.
    llm_timeout_seconds: float = Field(60.0, gt=0, le=600)
    llm_max_retries: int = Field(
        1,
        ge=0,
        le=10,
        description="Retries of a failed LLM request (connection errors, timeouts, 429, 5xx) before the turn fails.",
    )
    stt_model: str | None = None
    # Local Whisper's beam: 5 gets names and numbers right more often but costs ~80 ms a turn on 2 cores.
    stt_beam_size: int = Field(1, ge=1, le=10)
    # A greedy decode less sure than this (mean token probability) is decoded again with a beam of 5:
    # names and numbers come out right more often, and only the unsure turns pay the ~400 ms; 0 = never.
    stt_redecode_below: float = Field(0.65, ge=0, le=1)
    # Local Whisper's weights: "auto" keeps int8 where the CPU has VNNI and uses float32 elsewhere,
    # where int8 heard far more words wrong at the same speed (core/ctranslate2_cpu.py).
    stt_compute_type: Literal["auto", "int8", "float32"] = "auto"
    tts_model: str | None = None
    # JSON list of RTCIceServer objects for the browser <-> app WebRTC call; unset = loopback/LAN only.
    voice_ice_servers: str | None = None

    @field_validator("*", mode="before")
    @classmethod
    def _blank_is_unset(cls, value):
        # An empty line in .env (`DATABASE_URL=`, `RRF_K=`) means "not set": the default (None for the
        # optional ones), not an empty string that a number setting would refuse.
        if isinstance(value, str) and not value.strip():
            raise PydanticUseDefault()
        return value

    @field_validator("data_dir", mode="after")
    @classmethod
    def _absolute_data_dir(cls, value: Path) -> Path:
        return value if value.is_absolute() else (PROJECT_ROOT / value)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (
            init_settings,
            env_settings,
            dotenv_settings,
            _LowerCaseToml(settings_cls, toml_file=SECRETS_TOML),
        )

    # --- derived choices ----------------------------------------------------
    @property
    def embedded_database(self) -> bool:
        return self.database_url is None

    @property
    def hosted_auth(self) -> bool:
        return bool(self.supabase_url and self.supabase_anon_key)

    @property
    def livekit_configured(self) -> bool:
        return bool(self.livekit_url and self.livekit_api_key and self.livekit_api_secret)

    @property
    def mode_label(self) -> str:
        return "hosted" if (not self.embedded_database or self.hosted_auth) else "embedded"


def base_url_fix(url: str | None) -> str | None:
    """What to write instead of an OPENAI_BASE_URL without http:// or https:// (None when it has one):
    "localhost:11434/v1" reads as scheme "localhost", and every request fails as "unsupported protocol"."""
    if not url or urlsplit(url.strip()).scheme in ("http", "https"):
        return None
    return f"OPENAI_BASE_URL needs http:// or https:// in front, e.g. http://{url.strip().split('://')[-1]}"


def shown_url(url: str) -> str:
    """A configured URL as pages, reports and error messages show it: scheme, host, port and path, never a
    user name, password, query (an `api-key=`) or fragment someone put into it; visitors see these."""
    parts = urlsplit(url.strip())
    if not parts.scheme or not parts.hostname:
        return "the configured URL"  # not a URL we can take apart: say nothing of its text
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # a port that is not a number
        port = ""
    return urlunsplit((parts.scheme, host + port, parts.path, "", "")).rstrip("/")


def _forced_local(name: str | None) -> bool:
    return (name or "").strip().lower() in LOCAL_MODEL_NAMES


def llm_backend(settings: Settings | None = None) -> Backend:
    """Which LLM the settings select: LiveKit Inference, an OpenAI-compatible endpoint, or the offline brain."""
    settings = settings or get_settings()
    if _forced_local(settings.llm_model):
        return "offline"
    if settings.livekit_configured:
        return "livekit"
    if settings.openai_api_key or settings.openai_base_url:
        return "openai"
    return "offline"


def speech_backend(settings: Settings | None = None, kind: Literal["stt", "tts"] | None = None) -> Backend:
    """STT/TTS: hosted when there is a service that offers them, else local."""
    settings = settings or get_settings()
    if kind is not None and _forced_local(getattr(settings, f"{kind}_model")):
        return "offline"
    if settings.livekit_configured:
        return "livekit"
    if settings.openai_api_key and not settings.openai_base_url:
        return "openai"  # a base URL usually means Ollama & co., which have no speech endpoints
    return "offline"


class _LowerCaseToml(TomlConfigSettingsSource):
    """secrets.toml keys are usually written UPPER_CASE like env vars."""

    def __call__(self):
        return {key.lower(): value for key, value in super().__call__().items()}


@functools.cache
def get_settings() -> Settings:
    return Settings()


def settings_problem(exc: ValidationError) -> str:
    """What is wrong with the settings, one clause per setting, named as the operator writes it
    (pydantic's own text names the field in lower case and ends in a link)."""
    problems = []
    for error in exc.errors():
        name = str(error["loc"][0]).upper() if error.get("loc") else "a setting"
        problems.append(f"{name}: {error['msg']} (got {error.get('input')!r})")
    return "; ".join(problems) + "; fix it in the environment, .env or .streamlit/secrets.toml."


def check_settings() -> Settings:
    """The settings, or a PlaygroundError saying which setting does not parse (for the command lines)."""
    try:
        return get_settings()
    except ValidationError as exc:
        raise PlaygroundError(settings_problem(exc)) from None


def reload_settings() -> Settings:
    """Forget the cached settings (tests change env vars between cases)."""
    get_settings.cache_clear()
    return get_settings()
