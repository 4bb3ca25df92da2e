"""The worker entry point (dispatch metadata -> user), model selection from
settings, and the `python -m agent` command line."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import uuid

import pytest
from livekit.agents import inference
from livekit.agents.testing import fake_job_context
from livekit.plugins import openai

from agent import events, model_factory, worker
from agent.brain.llm import OfflineBrain
from agent.event_bus import EventBus, RoomTextStreamSink
from agent.events import EVENTS_TOPIC, decode_event
from agent.session import PlaygroundSession
from agent.voice import local_stt, local_tts
from core import config, conversations, db, memories, memory_changes, session_deletions, sessions, turn_indexer
from core.errors import NotFound
from tests.support.app import PROJECT_ROOT, free_port
from tests.support.llm_requests import (
    NO_RECALL_SKIPS,
    assert_agent_requests,
    assert_recall_carries,
    first_request_for,
    last_user_text,
    system_message,
)

# --- dispatch metadata -------------------------------------------------------------


def test_valid_metadata_gives_that_user(new_user, caplog):
    user_id = new_user().user_id
    with caplog.at_level(logging.WARNING, logger="agent.worker"):
        assert worker.resolve_user_id(json.dumps({"user_id": str(user_id)})) == (user_id, "metadata")
    assert caplog.records == []


_REFUSED = [
    None,
    "",
    "   ",
    "not json",
    "null",
    "[]",
    json.dumps([{"user_id": "x"}]),
    json.dumps({"user": "x"}),
    json.dumps({"user_id": "not-a-uuid"}),
    json.dumps({"user_id": 42}),
    json.dumps({"user_id": None}),
    json.dumps({"user_id": str(uuid.uuid4())}),  # well formed, but no such user
    "[" * 100_000,  # nested past the recursion limit
    json.dumps({"user_id": "x", "pad": "a" * 1_000_000}),  # 1 MB
    "line one\nFAKE LOG LINE: user=admin",  # newlines must not forge log lines
]


@pytest.mark.parametrize("metadata", _REFUSED, ids=range(len(_REFUSED)))
def test_metadata_without_a_valid_existing_user_refuses_the_job(metadata, database_uri, caplog):
    with caplog.at_level(logging.WARNING, logger="agent.worker"), pytest.raises(worker.JobRefused):
        worker.resolve_user_id(metadata)
    [record] = caplog.records
    assert record.levelname == "ERROR" and record.getMessage().startswith("refusing the job: ")
    assert len(record.getMessage()) < 400  # an excerpt, never the whole value
    assert "\n" not in record.getMessage()


@pytest.mark.parametrize("metadata", [None, "not json", json.dumps({"user_id": str(uuid.uuid4())})])
def test_console_mode_acts_for_the_demo_user_instead(metadata, demo_user_id, caplog):
    with caplog.at_level(logging.WARNING, logger="agent.worker"):
        assert worker.resolve_user_id(metadata, allow_demo=True) == (demo_user_id, "demo")
    assert "console mode: acting for the demo user" in caplog.text


def test_demo_user_id_setting_wins(monkeypatch, demo_user_id):
    chosen = uuid.uuid4()
    monkeypatch.setenv("DEMO_USER_ID", str(chosen))
    config.reload_settings()
    try:
        assert worker.resolve_user_id(None, allow_demo=True) == (chosen, "demo")
    finally:
        monkeypatch.delenv("DEMO_USER_ID")
        config.reload_settings()


async def test_job_start_preloads_the_dispatched_user(new_user):
    user = new_user()
    memories.remember(user.scope, "favorite_color", "teal")
    with fake_job_context(job_metadata=json.dumps({"user_id": str(user.user_id)})) as ctx:
        start = await worker.begin_job(ctx)
        preload = await start.preload
    assert (start.user_id, start.source) == (user.user_id, "metadata")
    assert [m.memory_type for m in preload.memories] == ["favorite_color"]


async def test_job_start_without_metadata_acts_for_the_demo_user_only_in_console_mode(demo_user_id, monkeypatch):
    monkeypatch.setenv(worker.DEMO_MODE_ENV, "1")
    with fake_job_context(job_metadata="") as ctx:
        start = await worker.begin_job(ctx)
        preload = await start.preload
    assert (start.user_id, start.source) == (demo_user_id, "demo")
    assert preload.profile.id == demo_user_id


async def test_entrypoint_refuses_a_job_without_a_user_and_never_connects(database_uri, monkeypatch):
    monkeypatch.delenv(worker.DEMO_MODE_ENV, raising=False)
    with fake_job_context(job_metadata=json.dumps({"user_id": str(uuid.uuid4())})) as ctx:
        connected = []
        monkeypatch.setattr(ctx, "connect", lambda *a, **k: connected.append(1))
        shutdowns = []
        monkeypatch.setattr(ctx, "shutdown", lambda reason="": shutdowns.append(reason))
        await worker.entrypoint(ctx)
    assert connected == []
    with pytest.raises(RuntimeError, match="No AgentSession"):
        ctx.primary_session  # noqa: B018 - no session was ever started for anyone
    assert len(shutdowns) == 1 and shutdowns[0].startswith("refused: no user ")


# --- model selection ----------------------------------------------------------------

_MODEL_VARS = (
    "LIVEKIT_URL",
    "LIVEKIT_API_KEY",
    "LIVEKIT_API_SECRET",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "LLM_MODEL",
    "STT_MODEL",
    "TTS_MODEL",
)


@pytest.fixture
def model_env(monkeypatch):
    """Set model env vars for one test; the settings cache is restored afterwards."""
    for name in _MODEL_VARS:
        monkeypatch.setenv(name, "")

    def apply(**values):
        for name, value in values.items():
            monkeypatch.setenv(name, value)
        return config.reload_settings()

    yield apply
    for name in _MODEL_VARS:
        monkeypatch.setenv(name, "")
    config.reload_settings()


def test_no_credentials_means_the_offline_brain(model_env):
    settings = model_env()
    assert model_factory.llm_backend(settings) == "offline" and model_factory.speech_backend(settings) == "offline"
    assert isinstance(model_factory.build_llm(settings), OfflineBrain)
    described = model_factory.describe_models(settings)
    assert described.llm == "Offline demo brain (rule-based)" and described.offline_brain
    assert "OPENAI_API_KEY" in described.help and "LIVEKIT_API_KEY" in described.help
    assert described.stt.startswith("faster-whisper") and described.tts.startswith("Piper")


def test_openai_compatible_endpoint(model_env):
    settings = model_env(OPENAI_BASE_URL="http://localhost:11434/v1", LLM_MODEL="llama3.1")
    assert model_factory.llm_backend(settings) == "openai"
    assert model_factory.speech_backend(settings) == "offline"  # Ollama has no speech endpoints
    llm = model_factory.build_llm(settings)
    assert isinstance(llm, openai.LLM) and llm.model == "llama3.1"
    assert llm._strict_tool_schema is False  # `strict` schemas are OpenAI's alone
    assert model_factory.is_openai_endpoint(model_env(OPENAI_BASE_URL="https://api.openai.com/v1"))
    assert model_factory.describe_models(settings).llm == "OpenAI-compatible: llama3.1 at http://localhost:11434/v1"
    assert model_factory.describe_models(settings).help is None


def test_openai_key_uses_openai_for_speech_too(model_env):
    settings = model_env(OPENAI_API_KEY="sk-test")
    assert (model_factory.llm_backend(settings), model_factory.speech_backend(settings)) == ("openai", "openai")
    assert model_factory.build_llm(settings)._strict_tool_schema is True
    assert isinstance(model_factory.build_stt(settings), openai.STT)
    assert isinstance(model_factory.build_tts(settings), openai.TTS)


def test_livekit_credentials_use_livekit_inference(model_env):
    settings = model_env(
        LIVEKIT_URL="wss://example.livekit.cloud",
        LIVEKIT_API_KEY="key",
        LIVEKIT_API_SECRET="s" * 40,
        OPENAI_API_KEY="sk-test",
        LLM_MODEL="openai/gpt-4.1-mini",
    )
    assert model_factory.llm_backend(settings) == "livekit"
    llm = model_factory.build_llm(settings)
    assert isinstance(llm, inference.LLM) and llm.model == "openai/gpt-4.1-mini"
    assert isinstance(model_factory.build_stt(settings), inference.STT)
    assert model_factory.describe_models(settings).llm == "LiveKit Inference: openai/gpt-4.1-mini"


def test_offline_speech_uses_the_local_adapters(model_env):
    settings = model_env()
    assert isinstance(model_factory.build_stt(settings), local_stt.LocalWhisperSTT)
    assert isinstance(model_factory.build_tts(settings), local_tts.LocalPiperTTS)


def test_the_local_stt_beam_comes_from_the_settings(model_env, monkeypatch):
    assert model_factory.build_stt(model_env()).beam_size == 1  # greedy: the latency goal's default
    assert model_factory.build_stt(model_env(STT_BEAM_SIZE="5")).beam_size == 5
    assert model_factory.build_stt(model_env()).redecode_below == 0.65  # unsure decodes get the beam
    assert model_factory.build_stt(model_env(STT_REDECODE_BELOW="0")).redecode_below == 0
    monkeypatch.delenv("STT_BEAM_SIZE")
    monkeypatch.delenv("STT_REDECODE_BELOW")
    model_env()  # later tests get the default back


# --- the command line ----------------------------------------------------------------


def _run(args, *, input_text=None, timeout=300):
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "agent", *args],
        cwd=PROJECT_ROOT,
        env=env,
        input=input_text,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.slow
@pytest.mark.parametrize("command", ["console", "dev", "start", "download-files"])
def test_livekit_cli_commands_have_help(command):
    result = _run([command, "--help"], timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Usage" in result.stdout


_NO_LIVEKIT = ("LIVEKIT_URL", "LIVEKIT_API_KEY", "LIVEKIT_API_SECRET")


def _run_without_livekit(args, *, extra_env=None, timeout=120):
    env = {k: v for k, v in os.environ.items() if k not in _NO_LIVEKIT}
    env.update(PYTHONPATH=str(PROJECT_ROOT), HF_HUB_OFFLINE="1", **(extra_env or {}))
    return subprocess.run(
        [sys.executable, "-m", "agent", *args],
        cwd=PROJECT_ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.slow
@pytest.mark.parametrize("command", ["dev", "start", "connect"])
def test_a_worker_command_without_livekit_names_the_settings_to_set(command):
    """livekit's CLI printed a ValueError traceback about LIVEKIT_URL alone and exited 0."""
    result = _run_without_livekit([command])
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    assert "LIVEKIT_URL, LIVEKIT_API_KEY, LIVEKIT_API_SECRET" in result.stderr

    only_url = _run_without_livekit([command], extra_env={"LIVEKIT_URL": "ws://127.0.0.1:1"})
    assert only_url.returncode == 2
    assert "set LIVEKIT_API_KEY, LIVEKIT_API_SECRET " in only_url.stderr


@pytest.mark.slow
@pytest.mark.parametrize("command", ["start", "dev"])
def test_a_worker_on_a_database_without_the_schema_says_to_apply_the_migrations(command, tmp_path):
    """A fresh DATA_DIR: the worker registered with LiveKit and then failed every job on a missing relation."""
    livekit = {
        "LIVEKIT_URL": f"ws://127.0.0.1:{free_port()}",
        "LIVEKIT_API_KEY": "devkey",
        "LIVEKIT_API_SECRET": "secret-that-is-long-enough-for-hs256-0123456789",
    }
    result = _run_without_livekit([command], extra_env={"DATA_DIR": str(tmp_path), **livekit})
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    total = len(db.migration_files())
    said = result.stderr.strip().splitlines()[-1]
    assert said.startswith(f"python -m agent {command}: The database is missing {total} of this version's {total} ")
    assert said.endswith("run `make db` (it applies them), then start again."), said
    assert "does not answer" not in result.stderr  # refused before it tried the LiveKit server


@pytest.mark.slow
def test_a_worker_whose_livekit_server_does_not_answer_says_which_setting_to_check(database_uri):
    """(The test database has the schema: a worker without it is refused first, the test above.)"""
    env = {
        **os.environ,
        "PYTHONPATH": str(PROJECT_ROOT),
        "HF_HUB_OFFLINE": "1",
        "LIVEKIT_URL": f"ws://127.0.0.1:{free_port()}",
        "LIVEKIT_API_KEY": "devkey",
        "LIVEKIT_API_SECRET": "secret-that-is-long-enough-for-hs256-0123456789",
    }
    worker_process = subprocess.Popen(
        [sys.executable, "-m", "agent", "start"],
        cwd=PROJECT_ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first_line = worker_process.stderr.readline()
    finally:
        worker_process.kill()
        worker_process.wait(timeout=30)
    assert f"LiveKit server at LIVEKIT_URL={env['LIVEKIT_URL']} does not answer" in first_line, first_line
    assert "check LIVEKIT_URL" in first_line


@pytest.mark.slow
def test_console_without_portaudio_says_what_to_install():
    try:
        import sounddevice  # noqa: F401
    except OSError:
        pass
    else:
        pytest.skip("PortAudio is installed here: the console would open the sound devices")
    result = _run_without_livekit(["console"])
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and "PortAudio" in result.stderr and "libportaudio2" in result.stderr


def test_the_worker_commands_usage_names_the_program_as_typed():
    """click took the program name from a rewritten argv[0]: "Usage: python -m agent.python -m agent"."""
    result = _run_without_livekit(["no-such-command"])
    assert result.returncode == 2
    assert "Usage: python -m agent [OPTIONS]" in result.stderr, result.stderr


def test_top_level_help_lists_chat_and_the_worker_commands():
    result = _run(["--help"], timeout=60)
    assert result.returncode == 0
    for word in ("chat", "dev", "start", "console", "download-files"):
        assert word in result.stdout


@pytest.mark.slow
def test_terminal_chat_remembers_recalls_forgets_and_looks_up_orders(new_user):
    user = new_user()
    lines = [
        "my favorite color is teal",
        "what is my favorite color?",
        "forget my favorite color",
        "what is my favorite color?",
        "where is order 1002?",
        "where is order 4321?",
    ]
    result = _run(["chat", "--user-id", str(user.user_id)], input_text="\n".join(lines) + "\n")
    out = result.stdout
    assert result.returncode == 0, result.stderr + out
    assert "Offline demo brain (rule-based)" in out
    assert "agent> Got it, I'll remember that your favorite color is teal." in out
    assert "agent> You told me your favorite color is teal." in out
    assert "agent> Done, I've forgotten your favorite color, and removed 3 past messages that mentioned it." in out
    assert "agent> I don't remember your favorite color yet." in out
    assert "agent> Order 1002 is shipped" in out
    assert "Order 4321 not found" in out
    assert "[tool] remember_detail(memory_type='favorite_color', content='teal')" in out
    assert "[tool] lookup_order(order_id='4321') -> ERROR Order 4321 not found." in out
    # retrieval scores per hit: ranks and each branch's RRF share
    # (the default fusion: 0.5 / 0.5, k = 2, so each branch's rank 1 is worth 0.5 / 3)
    assert "favorite_color: teal  rrf=0.3333 (vector #1 0.1667 + text #1 0.1667) *" in out
    assert "session " in out and " saved" in out


def test_terminal_chat_rejects_a_bad_user_id():
    result = _run(["chat", "--user-id", "not-a-uuid"], timeout=120)
    assert result.returncode == 2 and "Not a valid user id" in result.stderr


# --- what the worker publishes and saves -----------------------------------------------


class _FakeParticipant:
    """The edge of LiveKit: records what would go out on the room's text streams."""

    def __init__(self, fail_first: int = 0) -> None:
        self.sent: list[tuple[str, str]] = []
        self.fail_first = fail_first

    async def send_text(self, text, *, topic="", destination_identities=None, **_):
        if self.fail_first:
            self.fail_first -= 1
            raise ConnectionError("room is reconnecting")
        self.sent.append((topic, text))


class _FakeRoom:
    def __init__(self, participant) -> None:
        self.local_participant = participant


async def test_room_sink_sends_every_event_in_order_on_the_events_topic():
    participant = _FakeParticipant(fail_first=1)
    sink = RoomTextStreamSink(_FakeRoom(participant))
    bus = EventBus("lk-job-1", [sink])
    bus.begin_user_turn("msg-1", "where is order 1001?")
    bus.emit(events.tool_call("lookup_order", {"order_id": "1001"}, output="{}", error=None, duration_ms=3.2))
    bus.metric("recall_ms", 12.5)
    bus.finish_turn()
    await sink.aclose()
    assert sink.failures == 1  # the first send failed; the rest still went out, in order
    assert {topic for topic, _ in participant.sent} == {EVENTS_TOPIC}
    decoded = [decode_event(text) for _, text in participant.sent]
    assert [e["type"] for e in decoded] == ["tool_call", "metric", "turn_done"]
    assert [e["seq"] for e in decoded] == [1, 2, 3] and all(e["turn"] == 1 for e in decoded)


def test_decode_event_rejects_what_is_not_an_event():
    for payload in ("nope", "[]", '{"type": "tool_call"}', '{"type": "gossip", "ts": 1, "session_id": "s", "turn": 0}'):
        with pytest.raises(ValueError):
            decode_event(payload)


async def test_worker_report_is_livekits_session_report_plus_ours(new_user):
    user = new_user()
    with fake_job_context(job_id="job-report-1", job_metadata=json.dumps({"user_id": str(user.user_id)})) as ctx:
        start = await worker.begin_job(ctx)
        ps = PlaygroundSession(
            start.user_id, mode="worker", session_id=f"lk-{ctx.job.id}", greet=False, room_name=ctx.room.name
        )
        await ps.start(preload=await start.preload)
        await ps.run_text("my favorite color is teal")
        await ps.finish(base_report=lambda: ctx.make_session_report(ps.session).to_dict())
    stored = sessions.get_session(user.scope, "lk-job-report-1").report
    assert stored["job_id"] == "job-report-1" and stored["user_turns"] == 1
    assert stored["playground"]["mode"] == "worker"
    assert stored["playground"]["memories_written"][0]["memory_type"] == "favorite_color"


async def test_entrypoint_runs_a_job_and_saves_its_report_at_shutdown(new_user, monkeypatch):
    """The whole job in a fake job context: no LiveKit server here, and no speech models needed."""
    user = new_user()
    for builder in ("build_stt", "build_tts", "build_vad"):
        monkeypatch.setattr(worker, builder, lambda: None)
    with fake_job_context(job_id="job-entry-1", job_metadata=json.dumps({"user_id": str(user.user_id)})) as ctx:
        await worker.entrypoint(ctx)
        session = ctx.primary_session
        assert session.current_agent.user_id == user.user_id
        session.output.set_audio_enabled(False)
        await session.run(user_input="where is order 1001?")
        for callback in ctx._shutdown_callbacks:  # what the job does when the room closes
            await callback("room closed")
    record = sessions.get_session(user.scope, "lk-job-entry-1")
    assert record.report["job_id"] == "job-entry-1"
    assert record.report["playground"]["user_id"] == str(user.user_id)
    assert record.report["playground"]["mode"] == "worker"


async def test_a_job_the_user_said_nothing_in_leaves_no_session(new_user, monkeypatch):
    """A call is kept from the caller's first words, as a chat is (agent.session.PlaygroundSession.kept): a room
    left after the greeting alone leaves no report and no turn on the Sessions page."""
    user = new_user()
    for builder in ("build_stt", "build_tts", "build_vad"):
        monkeypatch.setattr(worker, builder, lambda: None)
    with fake_job_context(job_id="job-silent-1", job_metadata=json.dumps({"user_id": str(user.user_id)})) as ctx:
        await worker.entrypoint(ctx)
        for callback in ctx._shutdown_callbacks:
            await callback("room closed")
    assert sessions.list_sessions(user.scope) == []
    assert conversations.list_turns(user.scope, "lk-job-silent-1") == []


async def test_a_job_with_the_local_whisper_is_told_the_users_words_and_learns_new_ones(new_user, monkeypatch):
    """STT_MODEL=local beside a LiveKit server: the job's Whisper is prompted with, and respells toward,
    the dispatched user's words; a memory written during the job reaches it, and so does a deletion
    made by another process."""
    user = new_user()
    memories.remember(user.scope, "partner", "Thibault")
    stt = local_stt.LocalWhisperSTT()
    monkeypatch.setattr(worker, "build_stt", lambda: stt)
    for builder in ("build_tts", "build_vad"):
        monkeypatch.setattr(worker, builder, lambda: None)
    monkeypatch.setattr(memory_changes, "_feed", None)  # the job starts this process's feed; stopped below
    with fake_job_context(job_id="job-words-1", job_metadata=json.dumps({"user_id": str(user.user_id)})) as ctx:
        await worker.entrypoint(ctx)
        assert stt.prompt.endswith("Thibault.")
        assert stt.respell("My partner Fibault called.") == "My partner Thibault called."
        session = ctx.primary_session
        session.output.set_audio_enabled(False)
        await session.run(user_input="my favorite color is periwinkle")
        for _ in range(200):  # refreshed off the turn, after the remember_detail call
            if "periwinkle" in stt.prompt:
                break
            await asyncio.sleep(0.05)
        assert stt.prompt.endswith("Thibault, periwinkle.")

        # the app's Memories page is another process: its change comes through the database
        with db.admin_connection() as conn:
            conn.execute("delete from public.memories where user_id = %s and content = 'Thibault'", (user.user_id,))
        for _ in range(200):
            if "Thibault" not in stt.prompt:
                break
            await asyncio.sleep(0.05)
        assert stt.prompt.endswith(", periwinkle.") and "Thibault" not in stt.prompt
        assert stt.respell("My partner Fibault called.") == "My partner Fibault called."
        for callback in ctx._shutdown_callbacks:
            await callback("room closed")
        memory_changes.stop_following()


async def test_a_job_ends_when_its_owner_deletes_its_session_in_the_app(new_user, monkeypatch):
    """The app's Sessions page is another process: the deletion comes through the database, and the job
    ends (its room closes) instead of talking on into a session that keeps nothing."""
    user = new_user()
    for builder in ("build_stt", "build_tts", "build_vad"):
        monkeypatch.setattr(worker, builder, lambda: None)
    monkeypatch.setattr(memory_changes, "_feed", None)  # the job starts this process's feed; stopped below
    shutdowns: list[str] = []
    with fake_job_context(job_id="job-deleted-1", job_metadata=json.dumps({"user_id": str(user.user_id)})) as ctx:
        ctx._on_shutdown = shutdowns.append  # what ctx.shutdown asks of the job's process
        await worker.entrypoint(ctx)
        session = ctx.primary_session
        await session.run(user_input="my favorite color is teal")
        assert await asyncio.to_thread(turn_indexer.flush_queued)
        session_deletions.notify(user.user_id, "lk-some-other-job")  # another session of the same user
        session_deletions.notify(uuid.uuid4(), "lk-job-deleted-1")  # the same id under another user
        await asyncio.sleep(0.2)
        assert shutdowns == []

        await asyncio.to_thread(sessions.delete_session, user.scope, "lk-job-deleted-1")  # as the user (RLS)
        for _ in range(200):
            if shutdowns:
                break
            await asyncio.sleep(0.05)
        assert shutdowns == [worker.EndWhenDeleted.REASON]
        # the caller's page is told why, through the room's events topic, before the agent leaves
        said = [e for e in session.current_agent.bus.events if e["type"] == "error"]
        assert [(e["kind"], e["message"]) for e in said] == [("session_deleted", worker.EndWhenDeleted.MESSAGE)]
        for callback in ctx._shutdown_callbacks:  # the job's end: its report is not written
            await callback(shutdowns[0])
        memory_changes.stop_following()
    with pytest.raises(NotFound):
        sessions.get_session(user.scope, "lk-job-deleted-1")


def test_local_models_can_be_forced_beside_livekit_credentials(model_env):
    # a self-hosted `livekit-server --dev` has no inference gateway: keep every model local
    settings = model_env(
        LIVEKIT_URL="ws://127.0.0.1:7880",
        LIVEKIT_API_KEY="devkey",
        LIVEKIT_API_SECRET="s" * 40,
        LLM_MODEL="offline",
        STT_MODEL="local",
        TTS_MODEL="Local",
    )
    assert model_factory.llm_backend(settings) == "offline"
    assert isinstance(model_factory.build_llm(settings), OfflineBrain)
    assert isinstance(model_factory.build_stt(settings), local_stt.LocalWhisperSTT)
    assert isinstance(model_factory.build_tts(settings), local_tts.LocalPiperTTS)
    described = model_factory.describe_models(settings)
    assert described.offline_brain and described.stt.startswith("faster-whisper") and described.tts.startswith("Piper")


def test_one_speech_model_forced_local_leaves_the_other_hosted(model_env):
    settings = model_env(
        LIVEKIT_URL="wss://example.livekit.cloud", LIVEKIT_API_KEY="key", LIVEKIT_API_SECRET="s" * 40, TTS_MODEL="local"
    )
    assert model_factory.speech_backend(settings, "stt") == "livekit"
    assert model_factory.speech_backend(settings, "tts") == "offline"
    assert isinstance(model_factory.build_stt(settings), inference.STT)
    described = model_factory.describe_models(settings)
    assert described.stt.startswith("LiveKit Inference") and described.tts.startswith("Piper")


async def test_entrypoint_runs_a_job_with_the_openai_plugin_against_an_llm_endpoint(
    new_user, monkeypatch, model_env, llm_server
):
    """The job path (metadata -> preload -> turns -> report) with the real openai plugin talking HTTP to an
    OpenAI-compatible server: only the LiveKit room is faked (no LiveKit server can run here)."""
    user = new_user()
    memories.remember(user.scope, "home_city", "Lisbon")  # something for the preload
    for builder in ("build_stt", "build_tts", "build_vad"):
        monkeypatch.setattr(worker, builder, lambda: None)
    for name, value in NO_RECALL_SKIPS.items():
        monkeypatch.setenv(name, value)
    model_env(**llm_server.env())
    try:
        with fake_job_context(job_id="job-llm-1", job_metadata=json.dumps({"user_id": str(user.user_id)})) as ctx:
            await worker.entrypoint(ctx)
            session = ctx.primary_session
            assert isinstance(session.llm, openai.LLM)
            session.output.set_audio_enabled(False)  # a text-only participant: no speech models needed
            await session.run(user_input="my favorite color is teal")
            await session.run(user_input="what is my favorite color?")
            for callback in ctx._shutdown_callbacks:  # the room closes
                await callback("room closed")
    finally:
        for name in NO_RECALL_SKIPS:
            monkeypatch.delenv(name)
        config.reload_settings()

    section = sessions.get_session(user.scope, "lk-job-llm-1").report["playground"]
    assert section["mode"] == "worker" and section["models"]["llm_backend"] == "openai"
    assert section["errors"] == []
    answers = [t["text"] for t in section["transcript"] if t["role"] == "assistant"]
    assert answers[-1] == "You told me your favorite color is teal."
    assert memories.recall(user.scope, "favorite_color").content == "teal"
    requests = llm_server.chat_requests()
    assert_agent_requests(requests)
    assert "- home_city: Lisbon" in system_message(requests[0])  # the preload, before the first word
    assert last_user_text(requests[0]).startswith("<instructions>\nGreet the user")
    assert_recall_carries(first_request_for(requests, "what is my favorite color?"), "- favorite_color: teal")
    # the worker stored every turn of the job in the conversation tier as it happened (read as the user)
    stored = conversations.list_turns(user.scope, "lk-job-llm-1")
    said = [(t.speaker, t.content) for t in stored]
    assert ("user", "my favorite color is teal") in said and ("user", "what is my favorite color?") in said
    assert said[-1] == ("assistant", "You told me your favorite color is teal.")
    assert [t.turn_index for t in stored] == list(range(len(stored)))


def test_a_base_url_with_credentials_is_never_shown_with_them(model_env):
    """Visitors see where the LLM is (sidebar, chat header, error messages, `make doctor`): a user name,
    password or `api-key=` put into OPENAI_BASE_URL must not be part of it."""
    import httpx

    from agent import llm_failures
    from core import doctor

    secret_url = "https://alice:s3cr3t@llm.internal.example:8443/v1?api-key=XYZ#frag"
    settings = model_env(OPENAI_BASE_URL=secret_url, LLM_MODEL="m")
    shown = "https://llm.internal.example:8443/v1"
    assert model_factory.describe_models(settings).llm == f"OpenAI-compatible: m at {shown}"
    assert model_factory.llm_location(settings) == shown
    refused = httpx.ConnectError("connection refused")
    message = llm_failures.describe(refused, settings)
    assert shown in message
    endpoint = doctor._llm_endpoint(settings)
    assert endpoint.label == shown and endpoint.base_url == secret_url  # the client still gets the real one
    for text in (model_factory.describe_models(settings).llm, message, endpoint.label):
        assert "alice" not in text and "s3cr3t" not in text and "XYZ" not in text and "frag" not in text
