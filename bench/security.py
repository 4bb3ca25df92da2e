"""`python -m bench.security [--hostile-examples N] [--skip 1,5,8]`: the 13 probes of the
hardening review (docs/SECURITY.md), run again against a throwaway embedded database.

Each probe does what the attacker or the unlucky operator did, counts what got through,
and prints one row: the probe, the count measured before the hardening (from the review),
and the count now. Nothing here asserts; the tests do (tests/core/test_database_roles.py,
test_refresh_tokens.py, test_sign_in_limits.py, test_outage_recovery.py,
test_service_limits.py, test_hostile_input.py, tests/agent/test_worker.py). Probe 1's second
local account needs root (useradd, runuser); without it that part is reported as skipped.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

# A throwaway DATA_DIR and the embedded defaults, decided before anything imports core.config.
_DATA_DIR = Path(tempfile.mkdtemp(prefix="mp-bench-security-"))
# Registered before pgserver's own exit hook, so it runs after it: pgserver stops the
# server and deletes pg/, then the secrets and reports left in DATA_DIR go too.
atexit.register(shutil.rmtree, _DATA_DIR, ignore_errors=True)
os.environ["DATA_DIR"] = str(_DATA_DIR)
for _name in ("DATABASE_URL", "SUPABASE_URL", "SUPABASE_ANON_KEY", "SUPABASE_JWT_SECRET", "DEMO_USER_ID"):
    os.environ[_name] = ""
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import argparse  # noqa: E402 - after the settings above
import contextlib  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import math  # noqa: E402
import multiprocessing  # noqa: E402
import re  # noqa: E402
import stat  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from collections import defaultdict  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402

from agent import plugins  # noqa: E402 - the worker module imports livekit: plugins first, on this thread

plugins.register()

import psycopg  # noqa: E402
from psycopg.conninfo import conninfo_to_dict  # noqa: E402

from core import (  # noqa: E402
    config,
    db,
    embedded_pg,
    embeddings,
    identity,
    livekit_tokens,
    maintenance,
    memories,
    profiles,
    sessions,
)
from core.db import Scope  # noqa: E402
from core.errors import (  # noqa: E402
    AuthError,
    ConfigurationError,
    DatabaseUnavailable,
    InvalidInput,
    NotFound,
    RateLimited,
)
from core.private_files import secret_file  # noqa: E402
from core.seed import seed_all  # noqa: E402

PROJECT_ROOT = Path(__file__).resolve().parent.parent
PSQL = Path(embedded_pg._pgserver.POSTGRES_BIN_PATH) / "psql"
PASSWORD = "correct horse battery"
EVAL_CLI = [sys.executable, "-m", "core.eval_retrieval"]
UNIT = [1.0] + [0.0] * (embeddings.DIMENSIONS - 1)

ROWS: list[tuple[str, str, str]] = []  # (probe, before, after)


def row(probe: str, before: str, after: str) -> None:
    ROWS.append((probe, before, after))
    print(f"  {probe}: before {before} | now {after}", flush=True)


def _user():
    session = identity.sign_in_anonymously()
    verified = identity.verify(session.access_token)
    return session, verified, Scope.for_user(verified)


def _server(data_dir: Path | None = None):
    return db._embedded_servers[((data_dir or config.get_settings().data_dir) / "pg").resolve()]


def _backdate(token: str, column: str, interval: str) -> None:
    with db.admin_connection() as conn:
        conn.execute(
            f"update auth.refresh_tokens set {column} = {column} - interval '{interval}' where token_hash = %s",
            (identity.hash_refresh_token(token),),
        )


def _refreshes(token: str) -> bool:
    try:
        identity.refresh(token)
        return True
    except AuthError:
        return False


# ---------------------------------------------------------------------------
# 1. local superuser
# ---------------------------------------------------------------------------


def _stranger_connections(stranger: str, server) -> tuple[int, int]:
    """(connections that got in, attempts): every role, with its URI and without a password file."""
    got_in = attempts = 0
    for role in embedded_pg.ROLES:
        uri = server.uri(role)
        parts = conninfo_to_dict(uri)
        bare = f"host={parts['host']} port={parts['port']} dbname={parts['dbname']} user={role}"
        for conninfo in (uri, bare):
            attempts += 1
            result = subprocess.run(
                ["runuser", "-u", stranger, "--", str(PSQL), "-w", "-X", "-At", "-c", "select 1", conninfo],
                capture_output=True,
                text=True,
                timeout=30,
                cwd="/",
            )
            got_in += result.returncode == 0
    return got_in, attempts


def probe_1() -> None:
    if os.geteuid() == 0 and shutil.which("useradd") and shutil.which("runuser"):
        stranger = f"mpprobe{uuid.uuid4().hex[:8]}"
        subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", stranger], check=True)
        long_base = Path(tempfile.mkdtemp(prefix="mp-long-"))
        long_dir = long_base / ("deeply-nested-data-directory-" * 3).rstrip("-") / "data"
        try:
            got, tried = _stranger_connections(stranger, _server())
            db.start_embedded(long_dir / "pg", cleanup_mode="delete")
            long_server = _server(long_dir)
            got_long, tried_long = _stranger_connections(stranger, long_server)
            socket_mode = stat.S_IMODE(os.lstat(long_server.endpoint.socket_dir).st_mode)
            row(
                "1. a second local Unix account (`runuser -u <stranger> psql`) connects",
                "as superuser with a DATA_DIR path over ~90 characters",
                f"{got} of {tried} connections (short path), {got_long} of {tried_long} (path of "
                f"{len(str(long_dir))} characters; socket directory mode {socket_mode:o})",
            )
        finally:
            subprocess.run(["userdel", stranger], capture_output=True)
            server = db._embedded_servers.pop((long_dir / "pg").resolve(), None)
            if server is not None:
                server.cleanup()
            shutil.rmtree(long_base, ignore_errors=True)
    else:
        row("1. a second local Unix account connects", "superuser", "skipped (needs root for useradd/runuser)")

    with db.pooled_connection(db.app_url()) as conn:
        login, superuser = conn.execute(
            "select current_user, rolsuper from pg_roles where rolname = current_user"
        ).fetchone()
    # SQL smuggled into a user's transaction tries to leave row level security
    _, a, scope_a = _user()
    _, b, scope_b = _user()
    memories.remember(scope_b, "bank_pin", "B's PIN is 4711", embed=lambda _t: UNIT)
    reached = refused = 0
    escapes = [
        "reset role",
        "set role service_role",
        f"set role {embedded_pg.OWNER_ROLE}",
        f"set role {embedded_pg.SERVICE_ROLE}",
        "set local role none",
    ]
    for escape in [*escapes, "claims"]:
        try:
            with db.transaction(scope_a) as cur:
                if escape == "claims":
                    claims = json.dumps({**a.claims, "sub": str(b.user_id)})
                    cur.execute("select set_config('request.jwt.claims', %s, true)", (claims,))
                else:
                    cur.execute(escape)
                cur.execute("select count(*) as n from public.memories where user_id = %s", (b.user_id,))
                reached += cur.fetchone()["n"]
        except psycopg.Error:
            refused += 1
    row(
        "1. the app's pool logs in as; other user's rows reached by `reset role`, `set role "
        "service_role`/owner/service login, swapped claims",
        "postgres (superuser); RLS one injection away",
        f"{login} (superuser: {superuser}); {reached} rows reached ({refused} of {len(escapes) + 1} "
        f"attempts refused outright)",
    )


# ---------------------------------------------------------------------------
# 2-3. refresh tokens
# ---------------------------------------------------------------------------


def probe_2() -> None:
    session = identity.sign_in_anonymously()
    _backdate(session.refresh_token, "session_started_at", "400 days")
    _backdate(session.refresh_token, "created_at", "400 days")
    backdated = _refreshes(session.refresh_token)

    anonymous = identity.sign_in_anonymously()
    stolen = identity.refresh(anonymous.refresh_token)  # copied while anonymous
    browser = identity.refresh(stolen.refresh_token)
    _backdate(stolen.refresh_token, "rotated_at", "1 minute")
    identity.upgrade_to_email(browser, f"probe-{uuid.uuid4().hex[:8]}@example.com", PASSWORD)
    still = sum(_refreshes(t) for t in (anonymous.refresh_token, stolen.refresh_token, browser.refresh_token))
    row("2. a refresh token backdated 400 days refreshes", "yes", "yes" if backdated else "no (session_expired)")
    row(
        "2. tokens issued while anonymous that still refresh after the upgrade to email",
        "all",
        f"{still} of 3",
    )
    row(
        "2. the cookie holding the refresh token",
        "readable by page scripts",
        "still readable by page scripts (no HttpOnly from Streamlit); SameSite=Strict, Secure over https, "
        "tokens expire (see the limits)",
    )


def probe_3() -> None:
    email = f"devices-{uuid.uuid4().hex[:10]}@example.com"
    identity.upgrade_to_email(identity.sign_in_anonymously(), email, PASSWORD)
    laptop = identity.sign_in_with_password(email, PASSWORD)
    devices = [identity.sign_in_with_password(email, PASSWORD) for _ in range(3)]
    identity.refresh(laptop.refresh_token)
    _backdate(laptop.refresh_token, "rotated_at", "1 minute")  # presented again later: a replay
    replay_refused = not _refreshes(laptop.refresh_token)
    logged_out = sum(not _refreshes(d.refresh_token) for d in devices)
    row(
        "3. other devices of the user logged out by one replayed refresh token",
        "every device",
        f"{logged_out} of {len(devices)} (the replay itself refused: {'yes' if replay_refused else 'no'})",
    )


# ---------------------------------------------------------------------------
# 4. sign-in floods
# ---------------------------------------------------------------------------


def _flood(count: int, client_for) -> dict[str, int]:
    outcome = {"ok": 0, "throttled": 0, "failed": 0}

    def one(i: int) -> str:
        try:
            identity.sign_in_anonymously(client=client_for(i))
            return "ok"
        except RateLimited:
            return "throttled"
        except Exception:
            return "failed"

    with ThreadPoolExecutor(max_workers=count) as pool:
        for result in pool.map(one, range(count)):
            outcome[result] += 1
    return outcome


def probe_4() -> None:
    pool = config.get_settings().db_pool_max_size
    for count, before in ((300, "8 to 66 failed (three runs)"), (500, "205 failed")):
        results = []
        for run in range(3 if count == 300 else 1):
            started = time.perf_counter()
            outcome = _flood(count, lambda i, run=run, count=count: f"10.{count % 256}.{run}.{i}")
            results.append((outcome, time.perf_counter() - started))
        row(
            f"4. {count} concurrent anonymous sign-ins from {count} addresses",
            before,
            "; ".join(f"{o['failed']} failed, {o['throttled']} throttled ({s:.1f} s)" for o, s in results)
            + f" — pool of {pool} connections",
        )
    one_client = _flood(500, lambda i: "10.250.0.1")
    row(
        "4. 500 concurrent anonymous sign-ins from one address",
        "(not measured; no throttle)",
        f"{one_client['ok']} signed in, {one_client['throttled']} told to slow down, {one_client['failed']} failed",
    )
    made = tried = 0
    started = time.perf_counter()
    while time.perf_counter() - started < 1.2:
        tried += 1
        try:
            identity.sign_in_anonymously(client="10.251.0.1")
            made += 1
        except RateLimited:
            pass
    row("4. users one cookie-less script makes in 1.2 s (one address)", "40", f"{made} (of {tried} attempts)")

    idle = []
    for _ in range(200):
        session = identity.sign_in_anonymously()
        idle.append(session.user_id)
    with db.admin_connection() as conn:
        conn.execute(
            "update auth.users set created_at = now() - interval '45 days', last_sign_in_at = now() - "
            "interval '45 days' where id = any(%s)",
            (idle,),
        )
        conn.execute("update public.profiles set last_seen_at = null where id = any(%s)", (idle,))
    started = time.perf_counter()
    removed = maintenance.cleanup()["anonymous_users"]
    elapsed = time.perf_counter() - started
    with db.admin_connection() as conn:
        left = conn.execute("select count(*) from auth.users where id = any(%s)", (idle,)).fetchone()[0]
    row(
        "4. abandoned anonymous users (idle 45 days) left after cleanup",
        "2,616 accumulated, no cleanup",
        f"{left} of 200 (`python -m core cleanup` removed {removed} idle users in {elapsed:.2f} s)",
    )


# ---------------------------------------------------------------------------
# 5. outage recovery
# ---------------------------------------------------------------------------


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def _sign_in_path() -> None:
    session = identity.sign_in_anonymously()
    identity.verify(session.access_token)
    identity.refresh(session.refresh_token)


def probe_5() -> None:
    _, verified, user_scope = _user()
    service_scope = Scope.service(verified.user_id)
    paths = {
        "user scope": lambda: memories.list_memories(user_scope),
        "service scope": lambda: sessions.list_sessions(service_scope),
        "sign-in + verify + refresh": _sign_in_path,
        "ping": db.ping,
    }
    events: dict[str, list[tuple[float, str]]] = defaultdict(list)
    done = threading.Event()

    def hammer(name, call):
        while not done.is_set():
            try:
                call()
                events[name].append((time.monotonic(), "ok"))
            except DatabaseUnavailable:
                events[name].append((time.monotonic(), "unavailable"))
                time.sleep(0.05)
            except Exception as exc:
                events[name].append((time.monotonic(), f"error {type(exc).__name__}"))
                time.sleep(0.05)

    records = _Records()
    db_log = logging.getLogger(db.__name__)
    db_log.addHandler(records)
    db_log.setLevel(logging.WARNING)
    threads = [threading.Thread(target=hammer, args=item, daemon=True) for item in paths.items() for _ in range(3)]
    for thread in threads:
        thread.start()
    time.sleep(1.0)
    server = _server()
    stop_at = time.monotonic()
    embedded_pg.pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=server.pgdata, user=server.system_user)
    down_at = time.monotonic()
    while not db._server_alive(server) and time.monotonic() < down_at + 30:
        time.sleep(0.02)  # the callers revive it; this only watches
    back_at = time.monotonic()
    deadline = down_at + 30
    while time.monotonic() < deadline and not all(
        any(t > down_at and o == "ok" for t, o in events[name]) for name in paths
    ):
        time.sleep(0.05)
    time.sleep(0.3)
    done.set()
    for thread in threads:
        thread.join(timeout=30)
    db_log.removeHandler(records)
    recovery = {
        name: min((t - stop_at for t, o in events[name] if t > down_at and o == "ok"), default=math.inf)
        for name in paths
    }
    untyped = sum(1 for name in paths for _, o in events[name] if o.startswith("error"))
    restarts = sum("had stopped; it was started again" in m for m in records.messages)
    lock_races = sum("unacquired lock" in m for m in records.messages)
    row(
        "5. seconds until each path works again after the server stops under load (12 callers)",
        "verify/sign-in/ping never (page still down after 24 s); data calls 10 s",
        ", ".join(f"{name} {seconds:.1f}" for name, seconds in recovery.items())
        + f" (the server itself was back after {back_at - stop_at:.1f}); restarts {restarts}, "
        f"lock races {lock_races}, untyped errors {untyped}",
    )


# ---------------------------------------------------------------------------
# 6. reports
# ---------------------------------------------------------------------------


def _spool() -> Path:
    return config.get_settings().data_dir / "pending_reports"


def _saved_during_an_outage(user_id, session_id: str, report: dict) -> None:
    """Save a report while the database cannot be reached: the app keeps it on disk for a retry."""
    from agent import save_report

    os.environ["DATABASE_URL"] = "postgresql://nobody@127.0.0.1:9/unreachable?connect_timeout=1"
    config.reload_settings()
    try:
        assert save_report(user_id, session_id, report) is None
    finally:
        os.environ["DATABASE_URL"] = ""
        config.reload_settings()


def probe_6() -> None:
    from agent import save_report

    _, verified, _ = _user()
    nan_id = f"nan-{uuid.uuid4().hex}"
    # kept on disk during an outage, in this order, ahead of five good reports
    _saved_during_an_outage(verified.user_id, nan_id, {"score": float("nan")})
    _saved_during_an_outage(verified.user_id, f"huge-{uuid.uuid4().hex}", {"playground": {"blob": "x" * 6_000_000}})
    _saved_during_an_outage(uuid.uuid4(), f"orphan-{uuid.uuid4().hex}", {"x": 1})
    kept = len(list(_spool().glob("*.json")))
    good = [f"good-{i}-{uuid.uuid4().hex}" for i in range(5)]
    for session_id in good:  # each save also retries what was kept
        save_report(verified.user_id, session_id, {"turns": 2})
    scope = Scope.service(verified.user_id)
    stored = 0
    for session_id in good:
        with contextlib.suppress(NotFound):
            stored += sessions.get_session(scope, session_id).report == {"turns": 2}
    try:
        nan_stored = sessions.get_session(scope, nan_id).report
    except NotFound:
        nan_stored = "not stored"
    rejected = list((_spool() / "rejected").glob("*.json"))
    reasons = [p.with_suffix(".reason.txt").read_text().strip() for p in rejected]
    row(
        "6. later reports blocked by refused ones (NaN, 6 MB, unknown user, kept during an outage ahead of 5 good)",
        "every later save raised",
        f"{5 - stored} blocked: {stored} of 5 saved; the NaN one stored as {nan_stored}; {kept} kept for a retry, "
        f"{len(rejected)} moved to rejected/ with their reason ({'; '.join(r[:70] for r in reasons)}); "
        f"{len(list(_spool().glob('*.json')))} left pending",
    )


# ---------------------------------------------------------------------------
# 7. JWT secret
# ---------------------------------------------------------------------------


def _create_secret(args) -> str:
    path, barrier = args
    barrier.wait()
    return secret_file(Path(path), what="race secret")


def probe_7() -> None:
    context = multiprocessing.get_context("fork")
    workdir = Path(tempfile.mkdtemp(prefix="mp-secret-race-"))
    failures = 0
    try:
        with context.Pool(3) as pool:
            manager = context.Manager()
            for race in range(150):
                barrier = manager.Barrier(3)
                path = workdir / f"secret-{race}"
                try:
                    values = pool.map(_create_secret, [(str(path), barrier)] * 3)
                    failures += len(set(values)) != 1 or values[0] != path.read_text().strip()
                except Exception:
                    failures += 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    row("7. JWT-secret creation races of 3 processes that failed", "37 of 150", f"{failures} of 150")
    os.environ["SUPABASE_JWT_SECRET"] = "x"
    config.reload_settings()
    try:
        identity.jwt_secret()
        accepted = "accepted"
    except ConfigurationError:
        accepted = "refused with one sentence"
    finally:
        os.environ["SUPABASE_JWT_SECRET"] = ""
        config.reload_settings()
    row("7. a configured SUPABASE_JWT_SECRET of 1 character", "accepted", accepted)


# ---------------------------------------------------------------------------
# 8. hostile input (the Hypothesis suite, and the eval CLI's broken files)
# ---------------------------------------------------------------------------


def probe_8(examples: int) -> None:
    env = {**os.environ, "HOSTILE_INPUT_EXAMPLES": str(examples)}
    env.pop("DATA_DIR", None)  # the suite makes its own
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/core/test_hostile_input.py", "-q", "-p", "no:cacheprovider"],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    summary = re.search(r"hostile input: .*", result.stdout)
    counts = re.search(
        r"(\d+) cases .*?(\d+) service calls: (\d+) results, (\d+) typed errors, (\d+) other",
        summary[0] if summary else "",
    )
    cases, calls, _, typed, other = (int(x) for x in counts.groups()) if counts else (0, 0, 0, 0, -1)
    outcome = re.findall(r"\d+ (?:passed|failed)", result.stdout)
    row(
        "8. hostile calls through the public services ending in an exception that is not the project's own",
        "64 of 1,090",
        f"{other} of {calls:,} ({cases:,} Hypothesis cases, {typed:,} typed errors; "
        f"{', '.join(outcome)}, {time.perf_counter() - started:.0f} s)",
    )
    cli_cases = _eval_cli_cases()
    row(
        "8. eval CLI on broken lines (deep nesting, surrogates, NUL in user, 5,000-digit number)",
        "tracebacks or exit 1",
        ", ".join(f"{name}: exit {code}{'' if tb == 0 else ', traceback'}" for name, code, tb in cli_cases),
    )


def _eval_cli_cases() -> list[tuple[str, int, int]]:
    memory = {"id": "m1", "user": "u1", "memory_type": "drink", "content": "oat milk"}
    query = {"id": "q1", "user": "u1", "query": "what do I drink?"}
    cases = {
        "deep": (json.dumps(memory), "[" * 100_000 + "]" * 100_000),
        "surrogate query": (json.dumps(memory), json.dumps({**query, "query": "caf\ud800"})),
        "surrogate content": (json.dumps({**memory, "content": "\udfff milk"}), json.dumps(query)),
        "NUL user": (json.dumps({**memory, "user": "u\x001"}), json.dumps(query)),
        "huge number": (
            '{"id": ' + "9" * 5000 + ', "user": "u1", "memory_type": "d", "content": "x"}',
            json.dumps(query),
        ),
    }
    out = []
    workdir = Path(tempfile.mkdtemp(prefix="mp-eval-probe-"))
    try:
        for name, (memories_line, queries_line) in cases.items():
            (workdir / "m.jsonl").write_text(memories_line + "\n")
            (workdir / "q.jsonl").write_text(queries_line + "\n")
            result = subprocess.run(
                [*EVAL_CLI, "--memories", str(workdir / "m.jsonl"), "--queries", str(workdir / "q.jsonl")],
                cwd=PROJECT_ROOT,
                capture_output=True,
                text=True,
                timeout=300,
            )
            out.append((name, result.returncode, result.stderr.count("Traceback")))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return out


# ---------------------------------------------------------------------------
# 9. per-user limits
# ---------------------------------------------------------------------------


def probe_9() -> None:
    settings = config.get_settings()
    _, _, scope = _user()
    refused = 0
    for i in range(100):
        try:
            profiles.update_profile(scope, "preferences", {f"key_{i}": "v" * 7000})
        except InvalidInput:
            refused += 1
    size = len(json.dumps(profiles.get_profile(scope).preferences).encode())
    row(
        "9. preferences after 100 merges of 7 kB",
        "712 kB",
        f"{size / 1000:.1f} kB ({refused} merges refused; cap {settings.max_preferences_bytes:,} bytes)",
    )

    _, verified, scope = _user()
    vector = db.vector_literal(UNIT)
    with db.admin_connection() as conn, conn.cursor() as cur:
        cur.executemany(
            "insert into public.memories (user_id, memory_type, content, embedding, updated_at) "
            "values (%s, %s, %s, %s::extensions.vector, now() - make_interval(secs => %s))",
            [(verified.user_id, f"fact_{i:05d}", f"fact number {i} " + "x" * 60, vector, i) for i in range(20_000)],
        )
    over = 0
    try:
        memories.remember(scope, "one_more", "past the cap", embed=lambda _t: UNIT)
        over = 1
    except InvalidInput:
        pass
    loaded = profiles.preload(Scope.service(verified.user_id))
    text = loaded.as_context()
    row(
        "9. memories a user can add beyond the cap (MAX_MEMORIES_PER_USER)",
        "no cap",
        f"{over} (cap {settings.max_memories_per_user:,}; rows written past it by other paths are not deleted)",
    )
    row(
        "9. preload (prompt) size with 20,000 memories",
        "1.4 MB",
        f"{len(text.encode()) / 1000:.1f} kB ({len(loaded.memories)} memories listed, "
        f"{loaded.omitted:,} left to search)",
    )


# ---------------------------------------------------------------------------
# 10. the worker and garbage metadata
# ---------------------------------------------------------------------------


def probe_10() -> None:
    from agent import JobRefused, resolve_user_id

    garbage = [
        "garbage",
        None,
        "null",
        "[1, 2, 3]",
        json.dumps({"user_id": "x" * 1_000_000}),
        "x" * 1_000_000,
        json.dumps({"user_id": str(uuid.uuid4())}),  # a well-formed id of nobody
        json.dumps({"user_id": "../../etc"}),
        "{" * 10_000,
    ]
    records = _Records()
    logging.getLogger("agent.worker").addHandler(records)
    acted = 0
    for metadata in garbage:
        try:
            resolve_user_id(metadata, allow_demo=False)
            acted += 1
        except JobRefused:
            pass
    logging.getLogger("agent.worker").removeHandler(records)
    longest = max((len(m) for m in records.messages), default=0)
    _, real, _ = _user()
    ok = resolve_user_id(json.dumps({"user_id": str(real.user_id)}), allow_demo=False)[0] == real.user_id
    demo = resolve_user_id("garbage", allow_demo=True)[1]
    row(
        "10. jobs with garbage metadata the worker runs for the demo user (start/dev)",
        "all (and logged the whole 1 MB)",
        f"{acted} of {len(garbage)} (refused; longest log line {longest} characters); a real user's job runs: "
        f"{'yes' if ok else 'no'}; console mode uses the {demo} user",
    )


# ---------------------------------------------------------------------------
# 11. concurrent upserts
# ---------------------------------------------------------------------------


def probe_11() -> None:
    runs = []
    for _ in range(3):
        _, verified, scope = _user()
        barrier = threading.Barrier(50)
        results, errors = [], []

        def upsert(i, scope=scope, barrier=barrier, results=results, errors=errors):
            barrier.wait()
            try:
                results.append(memories.remember(scope, "favorite_color", f"colour {i}", embed=lambda _t: UNIT))
            except Exception as exc:
                errors.append(exc)

        threads = [threading.Thread(target=upsert, args=(i,)) for i in range(50)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        with db.admin_connection() as conn:
            count = conn.execute(
                "select count(*) from public.memories where user_id = %s and memory_type = 'favorite_color'",
                (verified.user_id,),
            ).fetchone()[0]
        runs.append((sum(r.created for r in results), count, len(errors)))
    row(
        "11. `created: true` among 50 concurrent remember() calls on one slot (3 runs)",
        "up to 8 (always 1 row)",
        ", ".join(f"{created} created / {count} row" + (f" / {e} errors" if e else "") for created, count, e in runs),
    )


# ---------------------------------------------------------------------------
# 12. password sign-in
# ---------------------------------------------------------------------------


def probe_12() -> None:
    email = f"timing-{uuid.uuid4().hex[:8]}@example.com"
    identity.upgrade_to_email(identity.sign_in_anonymously(), email, PASSWORD)

    def timed(address: str) -> float:
        started = time.perf_counter()
        with contextlib.suppress(AuthError):
            identity.sign_in_with_password(address, "not the password", client=str(uuid.uuid4()))
        return (time.perf_counter() - started) * 1000

    for _ in range(2):  # warm up
        timed(email)
    known_ms, unknown_ms = [], []
    for _ in range(15):  # interleaved, so a change in the machine's load falls on both
        known_ms.append(timed(email))
        unknown_ms.append(timed(f"nobody-{uuid.uuid4().hex[:8]}@example.com"))
    known, unknown = statistics.median(known_ms), statistics.median(unknown_ms)
    row(
        "12. wrong-password sign-in, known vs unknown email (median of 15)",
        "43 ms vs 4 ms",
        f"{known:.0f} ms vs {unknown:.0f} ms",
    )
    checked = throttled = 0
    started = time.perf_counter()
    while time.perf_counter() - started < 5:
        try:
            identity.sign_in_with_password(email, f"guess-{checked}", client="203.0.113.77")
        except RateLimited:
            throttled += 1
            time.sleep(0.01)
            continue
        except AuthError:
            pass
        checked += 1
    row(
        "12. password guesses checked in 5 s from one thread (one address, one email)",
        "113",
        f"{checked} ({throttled} attempts told to slow down)",
    )


# ---------------------------------------------------------------------------
# 13. files and sharp edges
# ---------------------------------------------------------------------------


def probe_13() -> None:
    from agent import flush_pending_reports

    _, verified, _ = _user()
    _saved_during_an_outage(verified.user_id, f"mode-{uuid.uuid4().hex}", {"turns": 1, "transcript": "…"})
    path = max(_spool().glob("*.json"), key=lambda p: p.stat().st_mtime)
    data_dir = config.get_settings().data_dir
    modes = {
        "pending report": stat.S_IMODE(path.stat().st_mode),
        "pending_reports/": stat.S_IMODE(path.parent.stat().st_mode),
        "DATA_DIR": stat.S_IMODE(data_dir.stat().st_mode),
        "jwt_secret": stat.S_IMODE((data_dir / "jwt_secret").stat().st_mode),
    }
    flush_pending_reports()
    row(
        "13. file modes",
        "reports 0644 in a 0755 DATA_DIR",
        ", ".join(f"{name} {mode:04o}" for name, mode in modes.items()),
    )
    workdir = Path(tempfile.mkdtemp(prefix="mp-secret-mode-"))
    try:
        secret = workdir / "jwt_secret"
        secret.write_text("k" * 64)
        secret.chmod(0o644)
        records = _Records()
        files_log = logging.getLogger("memory_playground.files")
        files_log.addHandler(records)
        files_log.setLevel(logging.WARNING)
        secret_file(secret, what="JWT secret")
        files_log.removeHandler(records)
        after = stat.S_IMODE(secret.stat().st_mode)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    row(
        "13. a pre-existing 0644 jwt_secret",
        "used without a word",
        f"made {after:04o}; {len(records.messages)} warning logged",
    )
    try:
        Scope(uuid.uuid4())
        default_scope = "a service scope (bypasses RLS)"
    except (TypeError, InvalidInput):
        default_scope = "refused: the caller must choose for_user or service"
    os.environ.update(LIVEKIT_URL="wss://example.invalid", LIVEKIT_API_KEY="key", LIVEKIT_API_SECRET="s" * 40)
    config.reload_settings()
    try:
        _, verified, _ = _user()
        livekit_tokens.mint_user_token(verified, room_name="room-1\n")
        newline = "accepted"
    except InvalidInput:
        newline = "refused"
    finally:
        for name in ("LIVEKIT_URL", "LIVEKIT_API_KEY", "LIVEKIT_API_SECRET"):
            os.environ.pop(name, None)
        config.reload_settings()
    row("13. `Scope(uid)` with no kind", "a service scope (bypasses RLS)", default_scope)
    row("13. a room name with a trailing newline", "accepted", newline)


PROBES = {
    "1": probe_1,
    "2": probe_2,
    "3": probe_3,
    "4": probe_4,
    "5": probe_5,
    "6": probe_6,
    "7": probe_7,
    "9": probe_9,
    "10": probe_10,
    "11": probe_11,
    "12": probe_12,
    "13": probe_13,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.security", description=__doc__.split("\n\n")[0])
    parser.add_argument("--hostile-examples", type=int, default=30, help="Hypothesis cases per test in probe 8")
    parser.add_argument("--skip", default="", help="comma-separated probe numbers to leave out, e.g. 5,8")
    args = parser.parse_args(argv)
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    logging.basicConfig(level=logging.ERROR)
    config.reload_settings()
    print(f"throwaway DATA_DIR {_DATA_DIR}", flush=True)
    db.start_embedded(_DATA_DIR / "pg", cleanup_mode="delete")
    db.migrate(echo=lambda *_: None)
    seed_all(echo=lambda *_: None)
    started = time.perf_counter()
    try:
        for number in [str(n) for n in range(1, 14)]:
            if number in skip:
                continue
            print(f"probe {number}…", flush=True)
            if number == "8":
                probe_8(args.hostile_examples)
            else:
                PROBES[number]()
    finally:
        db.close_pools()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{len(ROWS)} measurements in {time.perf_counter() - started:.0f} s; {os.cpu_count()} cores, load {load}\n")
    print("| probe | before | now |\n| --- | --- | --- |")
    for probe, before, after in ROWS:
        print(f"| {probe} | {before} | {after} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
