"""A local OpenAI-compatible chat server for tests: real HTTP, a scripted model, every request recorded.

No instruction-tuned model can run here, so the real-LLM paths (the openai
plugin, our request shaping, error handling, extraction) are proven against
this stand-in at the network edge. It speaks the Chat Completions protocol as
OpenAI, vLLM, Ollama, LM Studio and llama.cpp's server do:

* ``GET /v1/models``; ``POST /v1/chat/completions``, streaming (SSE: a role
  chunk, content or ``tool_calls`` deltas with the arguments split across
  chunks, a ``finish_reason`` chunk, a usage chunk when
  ``stream_options.include_usage`` is set, ``data: [DONE]``) and not streaming;
  chunked transfer encoding, as the real servers use.
* Bearer-token auth (401 with OpenAI's error body), unknown models (404
  ``model_not_found``), OpenAI's own checks on tool messages (400), and, unless
  ``check_templates=False``, the rules the strictest common chat templates
  enforce (400, worded as vLLM and llama.cpp word them): one system message and
  only first; a user turn present; user and assistant turns alternating once
  tool calls and tool results are set aside (Mistral-style).
* Faults on demand (``fail(...)``): ``unauthorized``, ``rate_limited`` (429),
  ``server_error`` (500), ``slow`` (no answer for ``slow_seconds``), ``cut``
  (the stream stops mid-answer without a terminating chunk),
  ``malformed_arguments`` (a tool call whose arguments are not JSON),
  ``unknown_tool`` (a call to a tool the request did not offer). "Unreachable"
  is :meth:`OpenAIStandIn.stop`.

The scripted model is deterministic. It picks tool calls for the latest user
message with the offline brain's intent rules (``agent.brain.intents.classify``),
answers from the tool results in the conversation (``agent.brain.replies.compose_reply``),
greets by the name in the system prompt, and answers the post-session fact
extraction prompt (``agent/extraction.py``) with JSON. A per-turn recall block
(``<recall>…</recall>``) at the start of a user message is read past, like a
model reading context.

Usage::

    with OpenAIStandIn() as server:               # 127.0.0.1, free port, background thread
        env = server.env()                        # OPENAI_BASE_URL, OPENAI_API_KEY, LLM_MODEL
        ... run the CLI / streamlit with env ...
        server.chat_requests()                    # JSON bodies of every chat completion request
        server.fail("unauthorized")               # every later request, until server.clear()
        server.fail("cut", times=1)               # only the next text answer
        server.fail("rate_limited", times=2, when="order 1001")  # the next 2 requests for that message
        server.say("Noted: tulip-88.", when="wifi password")   # the next answer to that message

``python -m tests.support.openai_standin [--port N]`` serves it for manual runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agent.brain.facts import parse_facts
from agent.brain.intents import classify
from agent.brain.replies import compose_reply, follow_up
from agent.prompts import stated_today

DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_API_KEY = "sk-standin-test-key"
FAULTS = ("unauthorized", "rate_limited", "server_error", "slow", "cut", "malformed_arguments", "unknown_tool")
EXTRACTION_MARKER = "list at most 5 lasting facts about the user"
ARGUMENT_PIECE = 7  # characters of tool-call arguments per streamed delta


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON, or None
    ts: float = field(default_factory=time.time)
    status: int | None = None  # what the stand-in answered
    answer_tool_calls: list[dict[str, Any]] = field(default_factory=list)  # the calls it answered with
    answer_text: str | None = None  # the text it answered with (in full, even when the stream was cut)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list((self.body or {}).get("messages") or [])


class TemplateError(ValueError):
    """A request a strict chat template (or OpenAI itself) refuses."""


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def check_messages(messages: list[dict[str, Any]], *, templates: bool = True) -> None:
    """Raise TemplateError for what OpenAI rejects, and (templates=True) what strict chat templates reject."""
    if not messages:
        raise TemplateError("'messages' must contain at least one message.")
    pending: set[str] = set()
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            if message.get("tool_call_id") not in pending:
                raise TemplateError(
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceding message with 'tool_calls'."
                )
            pending.discard(message["tool_call_id"])
            continue
        if pending:
            raise TemplateError(
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(sorted(pending))}"
            )
        if role == "assistant" and message.get("tool_calls"):
            pending = {call["id"] for call in message["tool_calls"]}
        if templates and role in ("system", "developer") and index != 0:
            raise TemplateError("System message must be at the beginning.")
    if pending:
        raise TemplateError("An assistant message with 'tool_calls' must be followed by tool messages.")
    if not templates:
        return
    if not any(m.get("role") == "user" for m in messages):
        raise TemplateError("No user query found in messages.")
    turns = [
        m["role"]
        for m in messages
        if m.get("role") in ("user", "assistant") and not (m["role"] == "assistant" and m.get("tool_calls"))
    ]
    for index, role in enumerate(turns):
        if role != ("user" if index % 2 == 0 else "assistant"):
            raise TemplateError("Conversation roles must alternate user/assistant/user/assistant/...")


# ---------------------------------------------------------------------------
# the scripted model
# ---------------------------------------------------------------------------


def user_words(content: Any) -> str:
    """The latest words of a user message: past any recall block, the last paragraph (user messages
    merged after a failed turn hold both)."""
    text = _text(content)
    if "</recall>" in text:
        text = text.rsplit("</recall>", 1)[1]
    return text.strip().rsplit("\n\n", 1)[-1].strip()


def _tool_results(messages: list[dict[str, Any]], after: int) -> list[tuple[str, dict, str, bool]]:
    calls: dict[str, tuple[str, dict]] = {}
    results = []
    for message in messages[after + 1 :]:
        for call in message.get("tool_calls") or []:
            try:
                args = json.loads(call["function"]["arguments"] or "{}")
            except ValueError:
                args = {}
            calls[call["id"]] = (call["function"]["name"], args if isinstance(args, dict) else {})
        if message.get("role") == "tool" and message.get("tool_call_id") in calls:
            name, args = calls[message["tool_call_id"]]
            output = _text(message.get("content"))
            try:
                is_error = not isinstance(json.loads(output), (dict, list))
            except ValueError:
                is_error = True  # our tools answer JSON; anything else is an error text
            results.append((name, args, output, is_error))
    return results


def _greeting(system_text: str) -> str:
    match = re.search(r"^The user's name is (.+?)\.$", system_text, re.M)
    if match:
        return f"Welcome back, {match.group(1)}! What can I do for you today?"
    return "Hi! I'm the Kestrel Coffee assistant. Tell me about yourself, or ask about an order or our coffee."


def _extraction_answer(prompt: str) -> str:
    facts = []
    for line in prompt.splitlines():
        if line.startswith("- "):
            said = line[2:].strip()
            facts += [
                {
                    "memory_type": f.memory_type,
                    "content": f.content,
                    "confidence": round(f.confidence, 2),
                    "evidence": said,
                }
                for f in parse_facts(said)
            ]
    return json.dumps(facts)


def _today(system_text: str) -> date | None:
    """Today's date as the system prompt states it (a model knows no other); None when it does not."""
    return stated_today(system_text)


def script(body: dict[str, Any]) -> tuple[list[tuple[str, dict]], str]:
    """(tool calls, text) the scripted model answers `body` with; exactly one of them is non-empty."""
    messages = body.get("messages") or []
    offered = {tool["function"]["name"] for tool in body.get("tools") or [] if tool.get("type") == "function"}
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    system_text = _text(messages[0].get("content")) if messages and messages[0].get("role") == "system" else ""
    if not users:
        return [], _greeting(system_text)
    last = users[-1]
    said = user_words(messages[last].get("content"))
    if EXTRACTION_MARKER in _text(messages[last].get("content")) and not offered:
        return [], _extraction_answer(_text(messages[last].get("content")))
    results = _tool_results(messages, last)
    if results:
        more = [(name, args) for name, args in follow_up(said, results, _today(system_text)) if name in offered]
        return (more, "") if more else ([], compose_reply(said, results))
    if re.search(r"\bgreet the user\b", said, re.I):
        return [], _greeting(system_text)
    intent = classify(said, _today(system_text))
    calls = [(name, args) for name, args in intent.calls if name in offered]
    if calls:
        return calls, ""
    if intent.name == "identity":
        return [], "I'm a scripted stand-in for a language model, served over the OpenAI API for tests."
    return [], intent.reply or "I can't use my tools for that right now."


# ---------------------------------------------------------------------------
# the server
# ---------------------------------------------------------------------------


class OpenAIStandIn:
    def __init__(
        self,
        *,
        models: tuple[str, ...] = (DEFAULT_MODEL,),
        api_key: str | None = DEFAULT_API_KEY,
        check_templates: bool = True,
        host: str = "127.0.0.1",
        port: int = 0,
        slow_seconds: float = 30.0,
    ) -> None:
        self.models = tuple(models)
        self.api_key = api_key
        self.check_templates = check_templates
        self.slow_seconds = slow_seconds
        self._address = (host, port)
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._faults: list[dict[str, Any]] = []  # armed by fail(), checked in order
        self._sayings: list[tuple[str, str]] = []  # armed by say(): (words of the message, the answer)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._release = threading.Event()  # ends `slow` waits early when the server stops
        self._connections: set = set()  # open client sockets, closed by stop() like a real shutdown
        self.port: int | None = None

    # ---- lifecycle -------------------------------------------------------------

    def start(self) -> OpenAIStandIn:
        if self._httpd is not None:
            return self
        address = (self._address[0], self.port or self._address[1])  # a restart keeps its port
        self._httpd = ThreadingHTTPServer(address, _handler_for(self))
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._release.clear()
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="openai-standin", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening: clients now get 'connection refused' (the unreachable case)."""
        httpd, self._httpd = self._httpd, None
        self._release.set()
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        with self._lock:
            connections, self._connections = list(self._connections), set()
        for connection in connections:  # kept-alive connections would otherwise still be served
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def __enter__(self) -> OpenAIStandIn:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._httpd is not None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def env(self, *, model: str | None = None, api_key: str | None = None) -> dict[str, str]:
        """Settings that point the app, the CLI or the worker at this server."""
        return {
            "OPENAI_BASE_URL": self.base_url,
            "OPENAI_API_KEY": api_key or self.api_key or "not-needed",
            "LLM_MODEL": model or self.models[0],
        }

    # ---- faults ------------------------------------------------------------------

    def fail(self, fault: str, *, times: int | None = None, when: str | None = None) -> None:
        """Answer later requests with `fault`: all of them, or the next `times` that it applies to;
        with `when`, only requests whose latest user words contain that text. ``cut`` applies only
        to text answers and ``malformed_arguments`` only to tool calls; the rest to any chat request
        (``unauthorized`` to /v1/models too). Several armed faults are checked in order."""
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; one of {FAULTS}")
        with self._lock:
            self._faults.append({"fault": fault, "times": times, "when": when})

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()
            self._sayings.clear()

    def say(self, text: str, *, when: str) -> None:
        """Answer the next message whose words contain `when` with `text`, no tool called: what a model may
        say that the scripted one would not (a secret said back in words of its own)."""
        with self._lock:
            self._sayings.append((when, text))

    def _take_saying(self, said: str) -> str | None:
        with self._lock:
            for armed in self._sayings:
                if armed[0].lower() in said.lower():
                    self._sayings.remove(armed)
                    return armed[1]
        return None

    def _take_fault(self, *, chat: bool, said: str = "", answer: str = "text") -> str | None:
        with self._lock:
            for armed in self._faults:
                fault = armed["fault"]
                if not chat and fault != "unauthorized":
                    continue
                if armed["when"] is not None and armed["when"].lower() not in said.lower():
                    continue
                if (fault == "cut" and answer != "text") or (fault == "malformed_arguments" and answer != "tools"):
                    continue
                if armed["times"] is not None:
                    armed["times"] -= 1
                    if armed["times"] <= 0:
                        self._faults.remove(armed)
                return fault
        return None

    # ---- records -------------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == "POST" and r.path.endswith("/chat/completions")]

    def reset(self) -> None:
        with self._lock:
            self._requests.clear()

    def wait_for_requests(self, count: int, timeout: float = 60.0) -> list[RecordedRequest]:
        deadline = time.monotonic() + timeout
        while len(self.chat_requests()) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"expected {count} chat requests, got {len(self.chat_requests())}")
            time.sleep(0.05)
        return self.chat_requests()


def _error_body(message: str, type_: str, code: str | None = None, param: str | None = None) -> dict:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def _handler_for(server: OpenAIStandIn):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "openai-standin/1"

        def log_message(self, *args) -> None:  # quiet: tests read the records instead
            pass

        def setup(self) -> None:
            super().setup()
            with server._lock:
                server._connections.add(self.connection)

        def finish(self) -> None:
            with server._lock:
                server._connections.discard(self.connection)
            with contextlib.suppress(OSError):
                super().finish()

        def handle(self) -> None:
            # the client may give up (its timeout), or the server be stopped, mid-answer
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                super().handle()

        # ---- plumbing ------------------------------------------------------------

        def _read_body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if not raw:
                return None
            try:
                return json.loads(raw)
            except ValueError:
                return {"_unparsed": raw.decode("utf-8", "replace")}

        def _json(self, status: int, payload: Any, record: RecordedRequest) -> None:
            record.status = status
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def _event(self, payload: Any) -> None:
            self._chunk(b"data: " + (payload if isinstance(payload, bytes) else json.dumps(payload).encode()) + b"\n\n")

        def _start(self, method: str) -> RecordedRequest:
            body = self._read_body() if method == "POST" else None
            record = RecordedRequest(
                method=method,
                path=self.path.split("?")[0],
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
            )
            server._record(record)
            return record

        def _authorized(self, record: RecordedRequest) -> bool:
            if server.api_key is None:
                return True
            return record.headers.get("authorization") == f"Bearer {server.api_key}"

        # ---- routes ----------------------------------------------------------------

        def do_GET(self) -> None:
            record = self._start("GET")
            if not self._authorized(record) or server._take_fault(chat=False) == "unauthorized":
                return self._unauthorized(record)
            if record.path.rstrip("/") == "/v1/models":
                return self._json(
                    200,
                    {
                        "object": "list",
                        "data": [
                            {"id": model, "object": "model", "created": 1700000000, "owned_by": "standin"}
                            for model in server.models
                        ],
                    },
                    record,
                )
            self._json(404, _error_body(f"Invalid URL (GET {record.path})", "invalid_request_error"), record)

        def do_POST(self) -> None:
            record = self._start("POST")
            if record.path.rstrip("/") != "/v1/chat/completions":
                return self._json(
                    404, _error_body(f"Invalid URL (POST {record.path})", "invalid_request_error"), record
                )
            if not self._authorized(record):
                return self._unauthorized(record)
            body = record.body if isinstance(record.body, dict) else {}
            model = body.get("model")
            if model not in server.models:
                return self._json(
                    404,
                    _error_body(
                        f"The model `{model}` does not exist or you do not have access to it.",
                        "invalid_request_error",
                        "model_not_found",
                    ),
                    record,
                )
            try:
                check_messages(body.get("messages") or [], templates=server.check_templates)
            except TemplateError as exc:
                return self._json(400, _error_body(str(exc), "invalid_request_error"), record)
            calls, text = script(body)
            users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
            said = user_words(users[-1].get("content")) if users else ""
            saying = server._take_saying(said) if body.get("messages", [{}])[-1].get("role") == "user" else None
            if saying is not None:
                calls, text = [], saying
            fault = server._take_fault(chat=True, said=said, answer="tools" if calls else "text")
            if fault == "unauthorized":
                return self._unauthorized(record)
            if fault == "rate_limited":
                return self._json(
                    429,
                    _error_body(
                        "Rate limit reached for requests. Please try again in 20s.", "requests", "rate_limit_exceeded"
                    ),
                    record,
                )
            if fault == "server_error":
                return self._json(
                    500, _error_body("The server had an error while processing your request.", "server_error"), record
                )
            if fault == "slow":
                server._release.wait(server.slow_seconds)
                if not server.running:
                    return
            if fault == "malformed_arguments" and calls:
                # what small models do: key=value pairs instead of JSON (beyond any JSON repair)
                calls = [(name, ", ".join(f"{k}={v}" for k, v in args.items()) or "none") for name, args in calls]
            elif fault == "unknown_tool":
                calls, text = [("transfer_to_billing", {"reason": "user asked"})], ""
            if body.get("stream"):
                self._stream(record, body, calls, text, cut=fault == "cut")
            else:
                self._complete(record, body, calls, text)

        def _unauthorized(self, record: RecordedRequest) -> None:
            self._json(
                401,
                _error_body(
                    "Incorrect API key provided. You can find your API key at "
                    "https://platform.openai.com/account/api-keys.",
                    "invalid_request_error",
                    "invalid_api_key",
                ),
                record,
            )

        # ---- answers --------------------------------------------------------------------

        @staticmethod
        def _tool_calls(record: RecordedRequest, calls) -> list[dict[str, Any]]:
            record.answer_tool_calls = [
                {
                    "id": f"call_{uuid.uuid4().hex[:16]}",
                    "type": "function",
                    "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)},
                }
                for name, args in calls
            ]
            return record.answer_tool_calls

        @staticmethod
        def _usage(body, text: str, calls) -> dict[str, int]:
            prompt = len(json.dumps(body.get("messages") or [])) // 4
            completion = max(1, (len(text) + len(json.dumps(calls))) // 4)
            return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

        def _complete(self, record, body, calls, text) -> None:
            tool_calls = self._tool_calls(record, calls)
            record.answer_text = None if tool_calls else text
            message: dict[str, Any] = {"role": "assistant", "content": None if tool_calls else text}
            if tool_calls:
                message["tool_calls"] = tool_calls
            self._json(
                200,
                {
                    "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body["model"],
                    "system_fingerprint": "fp_standin",
                    "choices": [
                        {
                            "index": 0,
                            "message": message,
                            "logprobs": None,
                            "finish_reason": "tool_calls" if tool_calls else "stop",
                        }
                    ],
                    "usage": self._usage(body, text, calls),
                },
                record,
            )

        def _stream(self, record, body, calls, text, *, cut: bool) -> None:
            record.status = 200
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            base = {
                "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": body["model"],
                "system_fingerprint": "fp_standin",
            }

            def chunk(delta: dict, finish: str | None = None) -> None:
                self._event(
                    {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
                )

            chunk({"role": "assistant", "content": ""})
            tool_calls = self._tool_calls(record, calls)
            for index, call in enumerate(tool_calls):
                arguments = call["function"]["arguments"]
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": call["id"],
                                "type": "function",
                                "function": {"name": call["function"]["name"], "arguments": ""},
                            }
                        ]
                    }
                )
                for start in range(0, len(arguments), ARGUMENT_PIECE):
                    chunk(
                        {
                            "tool_calls": [
                                {"index": index, "function": {"arguments": arguments[start : start + ARGUMENT_PIECE]}}
                            ]
                        }
                    )
            record.answer_text = text if not tool_calls else None
            if not tool_calls:
                words = re.findall(r"\S+\s*", text) or [""]
                for index, word in enumerate(words):
                    chunk({"content": word})
                    if cut and index >= min(2, len(words) - 1):
                        # the connection drops mid-answer: no terminating chunk, no [DONE]
                        self.wfile.flush()
                        self.close_connection = True
                        self.connection.shutdown(2)
                        return
            chunk({}, "tool_calls" if tool_calls else "stop")
            if (body.get("stream_options") or {}).get("include_usage"):
                self._event({**base, "choices": [], "usage": self._usage(body, text, calls)})
            self._event(b"[DONE]")
            self._chunk(b"")  # end of the chunked body

    return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve the scripted OpenAI-compatible stand-in.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--api-key", default=DEFAULT_API_KEY)
    args = parser.parse_args(argv)
    server = OpenAIStandIn(models=(args.model,), api_key=args.api_key, port=args.port).start()
    print(" ".join(f"{k}={v}" for k, v in server.env().items()), flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
