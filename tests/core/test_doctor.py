"""`python -m core.doctor`, run as users run it (a subprocess with their settings), against the
test database and local stand-ins for the services that cannot run here: the OpenAI-compatible
server (tests/support/openai_standin.py), Supabase Auth (tests/support/supabase_standin.py) and LiveKit's
RoomService API (below; tokens are checked with livekit's own TokenVerifier)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from core import doctor
from core.config import Settings
from core.db import admin_connection
from tests.support.app import PROJECT_ROOT, free_port
from tests.support.openai_standin import OpenAIStandIn

LIVEKIT_KEY = "APIdoctorTestKey"
LIVEKIT_SECRET = "doctor-test-secret-that-is-long-enough-for-livekit"


def run_doctor(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "core.doctor", *args],
        cwd=PROJECT_ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_json(*args: str, env: dict | None = None) -> tuple[int, dict]:
    done = run_doctor("--json", *args, env=env)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout)


def rows(report: dict) -> dict[str, dict]:
    return {row["name"]: row for row in report["checks"]}


def auth_user_count() -> int:
    with admin_connection() as conn:
        return conn.execute("select count(*) from auth.users").fetchone()[0]


# ---------------------------------------------------------------------------
# The embedded default
# ---------------------------------------------------------------------------


def test_healthy_embedded_configuration_passes_every_check(database_uri):
    users_before = auth_user_count()
    code, report = run_json()
    checks = rows(report)
    assert code == 0 and report["healthy"], report
    assert [row["name"] for row in report["checks"]] == [
        "database",
        "auth",
        "embeddings",
        "llm",
        "stt",
        "tts",
        "livekit",
    ]
    database = checks["database"]
    assert database["status"] == "ok"
    assert database["details"]["server_version"].startswith("18")
    assert database["details"]["pgvector"]
    assert database["details"]["pending_migrations"] == []
    assert database["details"]["tables_without_rls"] == []
    assert {"memories", "knowledge", "profiles", "orders", "sessions"} <= set(database["details"]["public_tables"])
    assert checks["auth"]["status"] == "ok" and "embedded issuer" in checks["auth"]["summary"]
    assert auth_user_count() == users_before  # the test user was deleted again
    embeddings = checks["embeddings"]
    assert embeddings["status"] == "ok" and embeddings["details"]["dimensions"] == 384
    assert embeddings["details"]["schema_columns"]["memories.embedding"] == 384
    assert checks["llm"]["status"] == "skipped"
    assert "offline demo brain — not an LLM" in checks["llm"]["summary"]
    # the local voice models are loaded and run: Whisper transcribes what Piper said
    assert checks["tts"]["status"] == "ok" and checks["tts"]["details"]["audio_seconds"] > 0.5
    assert checks["stt"]["status"] == "ok" and "check" in checks["stt"]["details"]["heard"].lower()
    assert checks["livekit"]["status"] == "skipped" and "not configured" in checks["livekit"]["summary"]


def test_wrong_database_url_fails_with_the_setting_to_fix(database_uri):
    done = run_doctor("--only", "auth", env={"DATABASE_URL": f"postgresql://postgres@127.0.0.1:{free_port()}/postgres"})
    assert done.returncode == 1, done.stdout
    assert "Traceback" not in done.stdout + done.stderr
    database_line = next(line for line in done.stdout.splitlines() if line.startswith("Database"))
    assert "FAILED" in database_line and "cannot connect" in database_line
    assert "fix: check DATABASE_URL" in done.stdout
    assert "password" not in done.stdout.lower().replace("user, password, database name", "")
    auth_line = next(line for line in done.stdout.splitlines() if line.startswith("Auth"))
    assert "FAILED" in auth_line
    assert "fix the database row first" in done.stdout
    assert "2 check(s) failed: Database, Auth" in done.stdout


def test_an_embedding_model_that_does_not_load_fails_its_row(database_uri):
    code, report = run_json("--only", "embeddings", env={"EMBEDDING_MODEL": "/nonexistent/model"})
    embeddings = rows(report)["embeddings"]
    assert code == 1 and embeddings["status"] == "failed"
    assert "/nonexistent/model" in embeddings["summary"]
    assert "EMBEDDING_MODEL" in embeddings["fix"]
    assert rows(report)["database"]["status"] == "ok"  # run first, since the embeddings check reads the schema


def test_a_table_without_row_level_security_fails_the_database_row(database_uri):
    with admin_connection() as conn:
        conn.execute("create table public.doctor_unprotected (id int)")
    try:
        code, report = run_json("--only", "database")
    finally:
        with admin_connection() as conn:
            conn.execute("drop table public.doctor_unprotected")
    database = rows(report)["database"]
    assert code == 1 and database["status"] == "failed"
    assert database["details"]["tables_without_rls"] == ["doctor_unprotected"]
    assert "public.doctor_unprotected" in database["summary"] and "row level security" in database["fix"]


# ---------------------------------------------------------------------------
# LLM: an OpenAI-compatible server
# ---------------------------------------------------------------------------


def test_llm_at_a_healthy_endpoint_completes_and_round_trips_a_tool_call(openai_standin):
    code, report = run_json("--only", "llm", env=openai_standin.env())
    llm = rows(report)["llm"]
    assert code == 0, llm
    assert llm["status"] == "ok" and llm["details"]["model"] == "gpt-4o-mini"
    assert llm["details"]["available_models"] == ["gpt-4o-mini"]
    assert llm["details"]["completion_text"]
    assert llm["details"]["tool_arguments"] == {"order_id": "1003"}
    assert "1003" in llm["details"]["tool_answer"]  # the model answered from the tool result
    assert "tool call round trip" in llm["summary"] and "completion in" in llm["summary"]

    assert next((r.method, r.path) for r in openai_standin.requests) == ("GET", "/v1/models")
    completion, ask_tool, answer_tool = openai_standin.chat_requests()
    assert completion.body["stream"] is True and "tools" not in completion.body
    assert ask_tool.body["tool_choice"] == "required"
    assert [tool["function"]["name"] for tool in ask_tool.body["tools"]] == ["lookup_order"]
    assistant, tool_message = answer_tool.messages[-2:]
    assert tool_message["role"] == "tool"
    assert tool_message["tool_call_id"] == assistant["tool_calls"][0]["id"]
    # the arguments went back exactly as the stand-in streamed them (in pieces)
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"order_id": "1003"}
    assert all(r.headers["authorization"] == f"Bearer {openai_standin.api_key}" for r in openai_standin.requests)


@pytest.mark.parametrize(
    "case, env_change, summary_part, fix_part",
    [
        ("401", {"OPENAI_API_KEY": "sk-wrong"}, "refused the API key (401)", "check OPENAI_API_KEY"),
        ("404", {"LLM_MODEL": "no-such-model"}, "model 'no-such-model' not found", "set LLM_MODEL"),
    ],
)
def test_llm_refusals_name_the_setting_to_fix(openai_standin, case, env_change, summary_part, fix_part):
    done = run_doctor("--only", "llm", env={**openai_standin.env(), **env_change})
    assert done.returncode == 1, done.stdout
    assert "Traceback" not in done.stdout + done.stderr
    assert "LLM         FAILED" in done.stdout
    flat = " ".join(done.stdout.split())
    assert summary_part in flat and f"fix: {fix_part}" in flat
    if case == "404":
        assert "it serves gpt-4o-mini" in flat


def test_llm_endpoint_stopped_fails_with_the_base_url_to_check(openai_standin):
    env = openai_standin.env()
    openai_standin.stop()
    done = run_doctor("--only", "llm", env=env)
    flat = " ".join(done.stdout.split())
    assert done.returncode == 1
    assert "cannot reach http://127.0.0.1" in flat and "fix: check OPENAI_BASE_URL" in flat


def test_llm_base_url_without_a_scheme_says_to_write_it_in_front():
    # "localhost:11434/v1" failed with httpx's "unsupported protocol 'localhost://'" and "check OPENAI_BASE_URL"
    code, report = run_json("--only", "llm", env={"OPENAI_BASE_URL": "localhost:11434/v1", "LLM_MODEL": "llama3.1"})
    llm = rows(report)["llm"]
    assert code == 1 and llm["status"] == "failed"
    assert llm["fix"] == "OPENAI_BASE_URL needs http:// or https:// in front, e.g. http://localhost:11434/v1"


@pytest.mark.parametrize(
    "fault, summary_part, fix_part",
    [
        ("rate_limited", "rate limiting or out of quota (429)", "OPENAI_API_KEY"),
        ("malformed_arguments", "tool arguments that are not a JSON object", "tool calling"),
        ("unknown_tool", "called an unknown tool 'transfer_to_billing'", "tool calling"),
    ],
)
def test_llm_misbehaviour_fails_the_row(openai_standin, fault, summary_part, fix_part):
    openai_standin.fail(fault)
    code, report = run_json("--only", "llm", env=openai_standin.env())
    llm = rows(report)["llm"]
    assert code == 1 and llm["status"] == "failed"
    assert summary_part in llm["summary"] and fix_part in llm["fix"]


def test_llm_that_never_answers_times_out_instead_of_hanging(openai_standin):
    openai_standin.fail("slow")  # holds every chat request for 30 s
    started = time.monotonic()
    code, report = run_json("--only", "llm", "--timeout", "2", env=openai_standin.env())
    llm = rows(report)["llm"]
    assert time.monotonic() - started < 25
    assert code == 1 and "did not answer in time" in llm["summary"] and "LLM_TIMEOUT_SECONDS" in llm["fix"]


def test_quick_check_lists_models_and_sends_no_completion(openai_standin):
    code, report = run_json("--only", "llm", "--quick", env=openai_standin.env())
    assert code == 0 and rows(report)["llm"]["status"] == "ok"
    assert openai_standin.chat_requests() == []
    code, report = run_json("--only", "llm", "--quick", env={**openai_standin.env(), "LLM_MODEL": "llama3.1"})
    assert code == 1 and "set LLM_MODEL to one of the models" in rows(report)["llm"]["fix"]


def test_llm_through_livekit_inference_sends_a_livekit_token(database_uri):
    """With LiveKit credentials the agent's LLM is LiveKit Inference (OpenAI-compatible); point the
    gateway URL at the stand-in and check what it received."""
    from livekit import api

    with OpenAIStandIn(models=("openai/gpt-4.1-mini",), api_key=None) as server:
        env = {
            "LIVEKIT_URL": "wss://example.invalid",
            "LIVEKIT_API_KEY": LIVEKIT_KEY,
            "LIVEKIT_API_SECRET": LIVEKIT_SECRET,
            "LIVEKIT_INFERENCE_URL": server.base_url,
        }
        code, report = run_json("--only", "llm", env=env)
        assert code == 0, report
        assert rows(report)["llm"]["summary"].startswith("openai/gpt-4.1-mini at LiveKit Inference")
        bearer = server.requests[0].headers["authorization"].removeprefix("Bearer ")
    claims = api.TokenVerifier(LIVEKIT_KEY, LIVEKIT_SECRET).verify(bearer)
    assert claims.inference is not None and claims.inference.perform


# ---------------------------------------------------------------------------
# Auth: Supabase
# ---------------------------------------------------------------------------


def test_supabase_auth_healthy_signs_in_anonymously_and_signs_out(database_uri, supabase_standin):
    users_before = auth_user_count()
    code, report = run_json("--only", "auth", env=supabase_standin.env())
    auth = rows(report)["auth"]
    assert code == 0 and auth["status"] == "ok", auth
    assert report["mode"] == "hosted"
    assert supabase_standin.paths()[:3] == ["GET /auth/v1/settings", "POST /auth/v1/signup", "GET /auth/v1/user"]
    assert "POST /auth/v1/logout" in supabase_standin.paths()
    test_user = auth["details"]["test_user_id"]
    assert supabase_standin.users[test_user]["is_anonymous"]
    assert [s for s in supabase_standin.sessions.values() if s["user_id"] == test_user] == []  # signed out
    assert auth_user_count() == users_before  # and not left in the local auth.users mirror


def test_supabase_quick_check_creates_no_user(database_uri, supabase_standin):
    code, report = run_json("--only", "auth", "--quick", env=supabase_standin.env())
    assert code == 0 and "anonymous sign-ins enabled" in rows(report)["auth"]["summary"]
    assert supabase_standin.paths() == ["GET /auth/v1/settings"] and supabase_standin.users == {}


@pytest.mark.parametrize(
    "breakage, summary_part, fix_part",
    [
        ("anonymous_disabled", "anonymous sign-ins are disabled", "enable anonymous sign-ins"),
        ("wrong_key", "refused the anon key (401", "check SUPABASE_ANON_KEY"),
        ("down", "not reachable at http://127.0.0.1", "check SUPABASE_URL"),
        ("half_configured", "SUPABASE_ANON_KEY is not set", "set SUPABASE_ANON_KEY too"),
    ],
)
def test_supabase_auth_broken_fails_with_the_setting_to_fix(
    database_uri, supabase_standin, breakage, summary_part, fix_part
):
    env = supabase_standin.env()
    if breakage == "anonymous_disabled":
        supabase_standin.anonymous_sign_ins = False
    elif breakage == "wrong_key":
        env["SUPABASE_ANON_KEY"] = "not-the-anon-key"
    elif breakage == "down":
        supabase_standin.stop()
    elif breakage == "half_configured":
        env["SUPABASE_ANON_KEY"] = ""
    done = run_doctor("--only", "auth", env=env)
    flat = " ".join(done.stdout.split())
    assert done.returncode == 1, done.stdout
    assert "Traceback" not in done.stdout + done.stderr
    assert "Auth FAILED" in flat and summary_part in flat and f"fix: {fix_part}" in flat


def test_supabase_refusing_the_sign_in_itself_is_reported(database_uri, supabase_standin):
    """/settings says yes but the sign-in is refused (e.g. sign-ups turned off): the full check notices."""
    supabase_standin.disable_signup = True
    code, report = run_json("--only", "auth", env=supabase_standin.env())
    auth = rows(report)["auth"]
    assert code == 1 and auth["summary"].startswith("an anonymous sign-in failed")
    assert "sign up" in auth["fix"]


# ---------------------------------------------------------------------------
# LiveKit
# ---------------------------------------------------------------------------


class LiveKitApiStandIn:
    """RoomService.ListRooms over Twirp, checking the bearer token as livekit-server does:
    signed with the project's secret, issued by its key, with the roomList grant."""

    def __init__(self, key: str = LIVEKIT_KEY, secret: str = LIVEKIT_SECRET):
        from livekit import api

        verifier = api.TokenVerifier(key, secret)
        self.requests: list[str] = []
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                standin.requests.append(self.path)
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    claims = verifier.verify(self.headers.get("Authorization", "").removeprefix("Bearer "))
                    allowed = bool(claims.video and claims.video.room_list)
                except Exception:
                    allowed = False
                if self.path != "/twirp/livekit.RoomService/ListRooms":
                    status, body = 404, {"code": "bad_route", "msg": "no handler"}
                elif not allowed:
                    status, body = 401, {"code": "unauthenticated", "msg": "invalid token"}
                else:
                    status, body = 200, {"rooms": [{"name": "mp-existing", "sid": "RM_1"}]}
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"ws://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def livekit_api():
    standin = LiveKitApiStandIn()
    yield standin
    standin.close()


def livekit_env(url: str, secret: str = LIVEKIT_SECRET) -> dict[str, str]:
    return {"LIVEKIT_URL": url, "LIVEKIT_API_KEY": LIVEKIT_KEY, "LIVEKIT_API_SECRET": secret}


def test_livekit_credentials_mint_a_verified_token_and_reach_the_api(livekit_api):
    code, report = run_json("--only", "livekit", env=livekit_env(livekit_api.url))
    livekit = rows(report)["livekit"]
    assert code == 0, livekit
    assert livekit["details"]["agent_name"] == "memory-playground"
    assert livekit["details"]["rooms"] == 1
    assert "verifies with TokenVerifier" in livekit["summary"]
    assert livekit_api.requests == ["/twirp/livekit.RoomService/ListRooms"]


def test_livekit_api_unreachable_or_refusing_fails_the_row(livekit_api):
    code, report = run_json("--only", "livekit", env=livekit_env(f"ws://127.0.0.1:{free_port()}"))
    livekit = rows(report)["livekit"]
    assert code == 1 and "not reachable" in livekit["summary"] and "LIVEKIT_URL" in livekit["fix"]

    # a secret that is not the server's: the token still verifies locally, the server refuses it
    code, report = run_json(
        "--only", "livekit", env=livekit_env(livekit_api.url, secret="another-secret-of-the-same-length-xx")
    )
    livekit = rows(report)["livekit"]
    assert code == 1 and "refused the credentials (401)" in livekit["summary"]
    assert "LIVEKIT_API_KEY and LIVEKIT_API_SECRET" in livekit["fix"]


def test_livekit_half_configured_fails_and_unconfigured_is_skipped(database_uri):
    code, report = run_json("--only", "livekit", env={"LIVEKIT_URL": "wss://example.livekit.cloud"})
    livekit = rows(report)["livekit"]
    assert code == 1 and "LIVEKIT_API_KEY and LIVEKIT_API_SECRET not set" in livekit["summary"]
    code, report = run_json("--only", "livekit")
    assert code == 0 and rows(report)["livekit"]["status"] == "skipped"


# ---------------------------------------------------------------------------
# In-process: deadlines and the background runner the sidebar uses
# ---------------------------------------------------------------------------


def test_a_check_that_hangs_becomes_a_failed_row_at_its_deadline(monkeypatch):
    release = threading.Event()

    def hang(ctx):
        release.wait(60)
        return doctor.CheckResult("livekit", doctor.OK, "never")

    stuck = doctor._Check("livekit", "LiveKit", ("LIVEKIT_URL",), hang, lambda ctx: 0.5)
    monkeypatch.setattr(doctor, "CHECKS", [c if c.name != "livekit" else stuck for c in doctor.CHECKS])
    started = time.monotonic()
    report = doctor.run_checks(Settings(), only=["livekit"])
    release.set()
    assert time.monotonic() - started < 5
    row = report.result("livekit")
    assert row.failed and row.summary == "no answer within 0.5 s" and "LIVEKIT_URL" in row.fix


def test_background_checks_never_block_the_caller(database_uri):
    runner = doctor.BackgroundChecks()
    assert runner.start(doctor.QUICK)
    assert runner.running and not runner.start(doctor.QUICK)  # one run at a time
    report = runner.wait(120)
    assert report is not None and not runner.running
    assert report.depth == doctor.QUICK and report.healthy


def test_the_checks_import_neither_streamlit_nor_livekit_agents(database_uri, livekit_api):
    """core/ stays free of the app and the agent framework: run every check, full depth, with LiveKit
    configured (livekit.api is the server SDK, which is allowed), then look at what was imported."""
    code = (
        "import json, sys; from core import doctor; r = doctor.run_checks(); "
        "print(json.dumps({'failed': [c.name for c in r.failed], 'modules': sorted(m for m in sys.modules "
        "if m.split('.')[0] == 'streamlit' or m.startswith('livekit.agents') or m.startswith('livekit.plugins')"
        " or m.startswith('agent'))}))"
    )
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        **livekit_env(livekit_api.url),
        "LLM_MODEL": "offline",
        "STT_MODEL": "local",
        "TTS_MODEL": "local",
    }
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"failed": [], "modules": []}, done.stderr[-2000:]
