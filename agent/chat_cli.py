"""``python -m agent chat``: talk to the agent in the terminal.

The same agent, tools, recall and reports as the Streamlit chat page (it runs
through ``agent.runtime``). After each reply it prints the tool calls and the
retrievals with their scores. Lines starting with ``/`` are commands
(``/help``). Reads stdin, so it also works with piped input::

    printf 'my favorite color is teal\\nwhat is my favorite color?\\n' | python -m agent chat
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import uuid

from agent.conversation import Conversation, TurnResult
from agent.model_factory import describe_models, llm_wait_seconds
from agent.runtime import AgentRuntime, get_runtime
from core import identity
from core.config import check_settings
from core.db import parse_user_id, require_migrated
from core.errors import PlaygroundError
from core.retrieval import RrfParams
from core.seed import demo_user_id

HELP = """commands:
  /help                 this help
  /rrf VW TW K          set the fusion weights and k, e.g. /rrf 0.5 0.5 60
  /events               print every event of the last turn as JSON
  /quit                 end the session (the report is saved); Ctrl-D works too"""


def _short(text: str | None, limit: int = 110) -> str:
    text = (text or "").replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def format_turn(turn: TurnResult) -> list[str]:
    """The lines printed after a reply: tool calls, then retrievals with per-hit scores, then timings."""
    lines = []
    for call in turn.tool_calls:
        args = ", ".join(f"{k}={v!r}" for k, v in call["arguments"].items())
        outcome = f"ERROR {call['error']}" if call["error"] else _short(call["output"], 90)
        lines.append(f"  [tool] {call['name']}({args}) -> {outcome}  ({call['duration_ms']:.0f} ms)")
    for event in turn.retrievals:
        label = f"{event['source']}/{event['trigger']}"
        if event.get("skipped"):
            lines.append(f"  [retrieval] {label}: skipped ({event.get('skip_reason')})")
            continue
        params = event.get("params") or {}
        extra = f" w_vec={params['vector_weight']} w_text={params['text_weight']} k={params['k']}" if params else ""
        lines.append(
            f"  [retrieval] {label} mode={event.get('mode')}{extra} "
            f"{len(event['hits'])} hit(s) in {event['latency_ms']:.0f} ms"
            + (f" (degraded: {event['degraded_reason']})" if event.get("degraded_reason") else "")
        )
        injected = set(event.get("injected") or [])
        for index, hit in enumerate(event["hits"][:5], start=1):
            if event["source"] in ("memories", "conversations"):
                vr = f"#{hit['vector_rank']}" if hit["vector_rank"] is not None else "-"
                tr = f"#{hit['text_rank']}" if hit["text_rank"] is not None else "-"
                mark = " *" if str(hit["id"]) in injected else ""
                # a slot by its name; a past turn by when it was said and who said it
                name = hit.get("memory_type") or f"{str(hit.get('created_at'))[:10]} {hit.get('speaker')}"
                # a past turn is also ranked with the turn after it (a hybrid search's third list)
                cr = f" + in context #{hit['context_rank']} {hit['context_rrf']:.4f}" if hit.get("context_rank") else ""
                lines.append(
                    f"     {index}. {name}: {_short(hit['content'], 50)}  rrf={hit['rrf_score']:.4f} "
                    f"(vector {vr} {hit['vector_rrf']:.4f}{cr} + text {tr} {hit['text_rrf']:.4f}){mark}"
                )
            else:
                lines.append(f"     {index}. {hit['title']}  similarity={hit['similarity']:.3f}")
    timing = ", ".join(f"{k}={v:.0f}ms" for k, v in turn.timings.items() if k.endswith("_ms"))
    lines.append(f"  [timing] {timing}")
    return lines


def _resolve_user(args: argparse.Namespace) -> uuid.UUID:
    if args.new_user:
        return identity.sign_in_anonymously().user_id
    if args.user_id:
        return parse_user_id(args.user_id)
    return demo_user_id()


class _OneLine(logging.Formatter):
    """Log lines without tracebacks: the terminal gets sentences, not stack dumps."""

    def formatException(self, ei) -> str:  # noqa: N802 - logging's naming
        return ""

    def format(self, record: logging.LogRecord) -> str:
        record.exc_text = None
        return super().format(record).rstrip()


def _quiet_logging() -> None:
    # Errors reach the user as the sentences printed with each turn; livekit logs its own
    # version of the same failures (with tracebacks), so it stays silent here.
    handler = logging.StreamHandler()
    handler.setFormatter(_OneLine("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.ERROR, handlers=[handler], force=True)
    for noisy in ("livekit", "livekit.agents", "livekit.plugins"):
        logging.getLogger(noisy).setLevel(logging.CRITICAL)


def _problems(chat: Conversation, turn: int) -> list[str]:
    events, _ = chat.events_since(0)
    return list(dict.fromkeys(e["message"] for e in events if e["type"] == "error" and e["turn"] == turn))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m agent chat", description="Text chat with the Memory Playground agent in the terminal."
    )
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--user-id", help="act for this existing user (default: the demo user)")
    who.add_argument("--new-user", action="store_true", help="sign in a brand-new anonymous user")
    parser.add_argument("--quiet", action="store_true", help="print replies only, no tool calls or scores")
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds to wait for one reply (default: from LLM_TIMEOUT_SECONDS and LLM_MAX_RETRIES)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    _quiet_logging()
    try:
        check_settings()  # a value that does not parse is a startup error with its name
        require_migrated()  # a fresh DATA_DIR: one sentence, not "relation auth.users does not exist"
        user_id = _resolve_user(args)
        models = describe_models()
    except PlaygroundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    timeout = args.timeout or llm_wait_seconds(calls=4)
    print(f"Memory Playground agent: LLM {models.llm}; user {user_id}")
    if models.offline_brain:
        print(f"  ({models.help})")
    print("Type a message, /help for commands, Ctrl-D to end.\n")
    runtime = get_runtime()
    chat = _open(runtime, user_id, timeout)
    if chat is None:
        runtime.shutdown(timeout=10)
        return 2
    _converse(chat, timeout=timeout, quiet=args.quiet)
    exit_code = _close(chat, timeout)
    runtime.shutdown(timeout=10)
    return exit_code


def _open(runtime: AgentRuntime, user_id: uuid.UUID, timeout: float) -> Conversation | None:
    """The started conversation (its greeting printed), or None after saying why it could not start."""
    chat = runtime.open_conversation(f"cli-{uuid.uuid4().hex}", user_id)
    try:
        greeting = chat.ready.result(timeout=timeout)
    except Exception as exc:  # the session could not start: say why, no traceback
        message = (
            str(exc) if isinstance(exc, PlaygroundError) else f"the agent could not start ({type(exc).__name__}: {exc})"
        )
        print(f"error: {message}", file=sys.stderr)
        return None
    if greeting:
        print(f"agent> {greeting}\n")
    for problem in _problems(chat, 0):
        print(f"  error: {problem}\n")
    return chat


def _converse(chat: Conversation, *, timeout: float, quiet: bool) -> None:
    """Read lines until end of input or /quit: commands, or turns with what the agent did."""
    interactive = sys.stdin.isatty()
    last_turn: TurnResult | None = None
    while True:
        if interactive:
            print("you> ", end="", flush=True)
        line = sys.stdin.readline()
        if not line:
            return
        text = line.strip()
        if not text:
            continue
        if not interactive:
            print(f"you> {text}")
        if text.startswith("/"):
            if not _command(chat, text, last_turn):
                return
            continue
        last_turn = _turn(chat, text, timeout=timeout, quiet=quiet) or last_turn


def _command(chat: Conversation, text: str, last_turn: TurnResult | None) -> bool:
    """Run one /command; False when it ends the conversation."""
    command, *rest = text.split()
    if command in ("/quit", "/exit"):
        return False
    if command == "/help":
        print(HELP)
    elif command == "/rrf":
        try:
            vw, tw, k = float(rest[0]), float(rest[1]), int(rest[2])
            params = chat.set_rrf(RrfParams(vw, tw, k))
            print(f"  RRF now vector_weight={params.vector_weight} text_weight={params.text_weight} k={params.k}")
        except (IndexError, ValueError) as exc:
            print(f"  usage: /rrf VECTOR_WEIGHT TEXT_WEIGHT K ({exc})")
    elif command == "/events":
        for event in last_turn.events if last_turn else []:
            print(json.dumps(event, ensure_ascii=False))
    else:
        print(f"  unknown command {command}; /help lists them")
    return True


def _turn(chat: Conversation, text: str, *, timeout: float, quiet: bool) -> TurnResult | None:
    try:
        turn = chat.send(text).result(timeout=timeout)
    except PlaygroundError as exc:
        print(f"  error: {exc}")
        return None
    except TimeoutError:
        print(f"  error: no reply within {timeout:.0f} s; the turn goes on in the background (--timeout)")
        return None
    if turn.reply:
        print(f"agent> {turn.reply}")
    for problem in dict.fromkeys(turn.problems + ([turn.error] if turn.error else [])):
        print(f"  error: {problem}")
    if not quiet:
        for out in format_turn(turn):
            print(out)
    print()
    return turn


def _close(chat: Conversation, timeout: float) -> int:
    print("ending the session...")
    try:
        chat.close().result(timeout=timeout)
    except Exception as exc:  # report and exit non-zero
        print(f"error while saving the session: {exc}", file=sys.stderr)
        return 1
    ps = chat.playground_session
    if not chat.kept:
        print(f"session {chat.session_id} not kept: nothing was said in it")
        return 0
    saved = ps is not None and ps.record is not None
    print(f"session {chat.session_id} {'saved' if saved else 'NOT saved (kept on disk for a retry)'}")
    return 0
