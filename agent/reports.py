"""Session reports: what happened in one conversation, saved to ``sessions``.

The report is livekit's ``SessionReport.to_dict()`` (from
``ctx.make_session_report()`` in the worker; built the same way from the
``AgentSession`` for in-process sessions) plus a ``playground`` section::

    {
      ...livekit keys: job_id, room, events, chat_history, usage, duration_ms, user_turns, ...
      "playground": {
        "version": 1, "session_id", "user_id", "mode": "text" | "voice" | "worker",
        "models": {...describe_models()...},
        "started_at", "ended_at" (epoch seconds), "duration_s", "ended_by" (e.g. "the app stopped"), "turns",
        "transcript": [{"turn", "role", "text", "ts"}],
        "tool_calls": [tool_call events], "retrievals": [retrieval events],
        "errors": [error events: a failed model call, a tool call the model got wrong, ...],
        "metrics": [metric events], "metrics_summary": {name: {"count", "mean", "p50", "p95", "max"}},
        "memories_written": [{"action", "memory_type", "content", "previous_content", "turn", "source", "ts"}],
        "profile_updates": [...], "extraction": {"method", "facts", "dropped"},
        "events": [every event, see agent/events.py]
      }
    }

Saving goes through ``core.sessions.save_report`` (service scope; it retries
connection failures). If it still fails, the report is written to
``DATA_DIR/pending_reports/`` (owner-only files) and retried by :func:`flush_pending` on the
next save or start, so a report is never silently lost; one the database refuses goes to
``pending_reports/rejected/`` with the reason and never blocks the others.
"""

from __future__ import annotations

import json
import logging
import statistics
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from livekit.agents.voice.report import SessionReport

from agent.events import Event, of_type
from core import sessions
from core.config import get_settings
from core.db import Scope, parse_user_id
from core.erasure import pending_reports_dir
from core.errors import DatabaseUnavailable, InvalidInput, PlaygroundError, SessionDeleted
from core.private_files import private_dir, write_private
from core.text import sanitize_json

log = logging.getLogger(__name__)
REPORT_VERSION = 1
_spool_lock = threading.Lock()


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def summarize_metrics(events: list[Event]) -> dict[str, dict[str, float]]:
    by_name: dict[str, list[float]] = {}
    for event in of_type(events, "metric"):
        by_name.setdefault(event["name"], []).append(float(event["value"]))
    return {
        name: {
            "count": len(values),
            "mean": round(statistics.fmean(values), 2),
            "p50": round(_percentile(values, 0.5), 2),
            "p95": round(_percentile(values, 0.95), 2),
            "max": round(max(values), 2),
        }
        for name, values in sorted(by_name.items())
    }


def playground_section(
    *,
    session_id: str,
    user_id: uuid.UUID,
    mode: str,
    events: list[Event],
    started_at: float,
    ended_at: float,
    memories_written: list[dict[str, Any]],
    profile_updates: list[dict[str, Any]] | None = None,
    extraction: dict[str, Any] | None = None,
    models: dict[str, Any] | None = None,
    ended_by: str | None = None,
) -> dict:
    transcript = [
        {"turn": e["turn"], "role": e["role"], "text": e["text"], "ts": e["ts"]}
        for e in of_type(events, "transcript")
        if e.get("final", True)
    ]
    return {
        "version": REPORT_VERSION,
        "session_id": session_id,
        "user_id": str(user_id),
        "mode": mode,
        "models": models or {},
        "started_at": started_at,
        "ended_at": ended_at,
        "duration_s": round(max(0.0, ended_at - started_at), 3),
        "ended_by": ended_by,  # why it was closed (Conversation.close_reason: "ended", "the app stopped", …)
        "turns": max((e["turn"] for e in events), default=0),
        "transcript": transcript,
        "tool_calls": of_type(events, "tool_call"),
        "retrievals": of_type(events, "retrieval"),
        "metrics": of_type(events, "metric"),
        "errors": of_type(events, "error"),
        "metrics_summary": summarize_metrics(events),
        "memories_written": list(memories_written),
        "profile_updates": list(profile_updates or []),
        "extraction": extraction or {"method": None, "facts": [], "dropped": []},
        "events": list(events),
    }


def livekit_report(session, *, session_id: str, room_name: str | None = None) -> dict[str, Any]:
    """The same dict ``ctx.make_session_report(session).to_dict()`` gives, for a session without a job."""
    started = session._started_at  # what JobContext.make_session_report reads too
    report = SessionReport(
        job_id=session_id,
        room_id="",
        room=room_name or "in-process",
        options=session.options,
        events=list(session._recorded_events),
        chat_history=session.history.copy(),
        model_usage=session.usage.model_usage,
        started_at=started,
        agent_name=get_settings().agent_name,
    )
    if started:
        report.duration = report.timestamp - started
    return report.to_dict()


def _spool_dir() -> Path:
    return pending_reports_dir()


def _rejected_dir() -> Path:
    return _spool_dir() / "rejected"


def _spool(user_id: uuid.UUID, session_id: str, report: dict, room_name, started_at, ended_at) -> Path:
    """Keep a report on disk for a retry: owner-only (0600 in a 0700 directory), since it holds a transcript."""
    payload = {
        "user_id": str(user_id),
        "session_id": session_id,
        "room_name": room_name,
        "started_at": started_at.isoformat() if started_at else None,
        "ended_at": ended_at.isoformat() if ended_at else None,
        "report": sanitize_json(report),
    }
    path = _spool_dir() / f"{uuid.uuid4().hex}.json"
    private_dir(_spool_dir())
    return write_private(path, json.dumps(payload, ensure_ascii=False, allow_nan=False))


def _reject(path: Path, reason: str) -> Path:
    """Move a kept report the database will never accept aside, with the reason next to it."""
    private_dir(_rejected_dir())
    target = _rejected_dir() / path.name
    path.replace(target)
    write_private(target.with_suffix(".reason.txt"), f"{reason}\n")
    return target


def _epoch_to_dt(value: float | None) -> datetime | None:
    return datetime.fromtimestamp(value, tz=UTC) if value else None


def save(
    user_id: uuid.UUID | str,
    session_id: str,
    report: dict[str, Any],
    *,
    room_name: str | None = None,
    started_at: float | None = None,
    ended_at: float | None = None,
) -> sessions.SessionRecord | None:
    """Save one report (blocking). On failure it is logged and kept on disk for a retry; returns None then.
    A report the database refuses for what it holds (too large even without the raw events) goes to
    pending_reports/rejected/ with the reason, so it never blocks the reports after it."""
    user_id = parse_user_id(user_id)
    started, ended = _epoch_to_dt(started_at), _epoch_to_dt(ended_at)
    try:
        record = sessions.save_report(
            Scope.service(user_id), session_id, report, room_name=room_name, started_at=started, ended_at=ended
        )
    except SessionDeleted:
        # its owner deleted it while it ran (here or in another process): what it said last goes with it
        log.info("session %s was deleted by its owner while it ran; its report is not kept", session_id)
        return None
    except InvalidInput as exc:
        # too large or otherwise unstorable: keep a slimmer copy rather than nothing
        log.error("session report %s rejected (%s); saving it without the raw livekit events", session_id, exc)
        slim = {k: v for k, v in report.items() if k not in ("events", "chat_history")}
        slim.setdefault("playground", {}).pop("events", None)
        try:
            return sessions.save_report(
                Scope.service(user_id), session_id, slim, room_name=room_name, started_at=started, ended_at=ended
            )
        except DatabaseUnavailable as second:
            path = _spool(user_id, session_id, slim, room_name, started, ended)
            log.error("session report %s could not be saved (%s); kept in %s for a retry", session_id, second, path)
            return None
        except PlaygroundError as second:
            path = _reject(_spool(user_id, session_id, report, room_name, started, ended), str(second))
            log.error("session report %s cannot be stored (%s); moved to %s", session_id, second, path)
            return None
    except Exception as exc:
        path = _spool(user_id, session_id, report, room_name, started, ended)
        log.error("session report %s could not be saved (%s); kept in %s for a retry", session_id, exc, path)
        return None
    flush_pending()
    return record


def flush_pending() -> int:
    """Retry reports kept on disk after a failed save; returns how many were saved now.
    Stops at the first outage; a report the database refuses is moved to rejected/ and the
    next one is tried, so one bad report never blocks the others."""
    directory = _spool_dir()
    if not directory.is_dir():
        return 0
    saved = 0
    with _spool_lock:
        for path in sorted(directory.glob("*.json")):
            try:
                payload = json.loads(path.read_text(encoding="utf-8"))
                sessions.save_report(
                    Scope.service(payload["user_id"]),
                    payload["session_id"],
                    payload["report"],
                    room_name=payload.get("room_name"),
                    started_at=datetime.fromisoformat(payload["started_at"]) if payload.get("started_at") else None,
                    ended_at=datetime.fromisoformat(payload["ended_at"]) if payload.get("ended_at") else None,
                )
            except DatabaseUnavailable as exc:
                log.warning("pending session report %s still not saved: %s", path.name, exc)
                break  # the database is still down; try again later
            except SessionDeleted:
                log.info("pending session report %s is of a session its owner deleted; dropped", path.name)
                path.unlink(missing_ok=True)
                continue
            except OSError as exc:
                log.warning("pending session report %s could not be read: %s", path.name, exc)
                continue
            except (PlaygroundError, ValueError, KeyError, TypeError, RecursionError) as exc:
                target = _reject(path, f"{type(exc).__name__}: {exc}")
                log.error("pending session report %s is refused (%s); moved to %s", path.name, exc, target)
                continue
            except Exception as exc:  # a database error no check foresaw: still never block the rest
                target = _reject(path, f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc) else ''}")
                log.error(
                    "pending session report %s is refused by the database (%s); moved to %s", path.name, exc, target
                )
                continue
            path.unlink(missing_ok=True)
            saved += 1
    return saved
