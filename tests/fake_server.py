"""A loopback stand-in for the Anthropic Messages API, for tests and benchmarks.

It is a real HTTP server on 127.0.0.1 (port 0), so the installed SDK is exercised end to end:
``POST /v1/messages``, ``POST /v1/messages/count_tokens``, ``POST /v1/messages/batches``,
``GET /v1/messages/batches/{id}`` and the JSONL results at the absolute ``results_url`` it hands out.

Replies are scripted: ``server.script`` is a queue of :class:`Reply` objects or callables
``(request_body) -> Reply`` consumed one per message request (batch items included); when it is
empty, ``server.responder`` answers (by default ``ragas_reply`` for ragas' metric prompts, else
"ok"; ``with_ragas(responder)`` adds the ragas answers to a custom responder). Token counts are
deterministic (characters // 4), so a count-tokens estimate and the usage of the real call agree.
"""

from __future__ import annotations

import collections
import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from evalkit.llm.calls import prompt_text_of

CHARS_PER_TOKEN = 4


@dataclass
class Reply:
    """One scripted answer to a message request."""

    text: str = "ok"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    error_type: str = "api_error"
    error_message: str = "scripted error"
    hang: bool = False
    """Block until the server closes (a request that never answers: the client must time out)."""
    delay_s: float = 0.0
    stop_reason: str = "end_turn"
    raw: bytes | None = None
    """Send these bytes as the body instead of a message (a malformed answer), with ``content_type``."""
    content_type: str = "application/json"
    truncate: bool = False
    """Announce the whole body's length, send half of it and close the connection."""
    cache_read: int = 0
    """Input tokens the answer reports as read from the prompt cache (``usage.cache_read_input_tokens``)."""
    cache_write: int = 0
    """Input tokens the answer reports as written to the prompt cache (``usage.cache_creation_input_tokens``)."""


def ok(text: str) -> Reply:
    return Reply(text=text)


def error(status: int, *, retry_after: float | None = None, error_type: str | None = None,
          message: str = "scripted error") -> Reply:
    types = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error",
             529: "overloaded_error"}
    headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
    return Reply(status=status, headers=headers, error_type=error_type or types.get(status, "api_error"),
                 error_message=message)


def hang() -> Reply:
    return Reply(hang=True)


def text_of(body: dict[str, Any]) -> str:
    """All prompt text of a messages request: system blocks, then message contents (as evalkit counts it)."""
    return prompt_text_of(body.get("system"), body.get("messages", []))


RAGAS_INPUT_MARKER = "Now perform the same with the following input\ninput: "
_STOP = frozenset({"the", "and", "with", "for", "are", "was", "not", "from", "that", "this", "use", "line", "its",
                   "into", "where", "which", "when", "their", "them", "there", "then", "than", "has", "have"})


def _words(text: str) -> set[str]:
    return {w.strip(".") for w in re.findall(r"[a-z0-9@._]+", text.lower()) if len(w.strip(".")) > 2} - _STOP


def _overlap(part: str, whole: str) -> float:
    """Share of ``part``'s content words that occur in ``whole`` (0 when ``part`` has none)."""
    words = _words(part)
    return len(words & _words(whole)) / len(words) if words else 0.0


def ragas_input(body: dict[str, Any]) -> dict[str, Any] | None:
    """The input object of a ragas 0.4 collection-metric prompt (``BasePrompt.to_string``), or None."""
    text = text_of(body)
    at = text.find(RAGAS_INPUT_MARKER)
    if at == -1:
        return None
    try:
        obj, _ = json.JSONDecoder().raw_decode(text, at + len(RAGAS_INPUT_MARKER))
    except json.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def ragas_reply(body: dict[str, Any]) -> Reply | None:
    """A deterministic, lexical stand-in for a judge answering ragas' faithfulness, context relevance
    and answer relevancy prompts (reasoning, then a fenced JSON object); None for any other prompt.

    - statements: the answer split into sentences;
    - NLI verdicts: 1 when 60 % of a statement's content words occur in the context;
    - context relevance: 2 when every context line shares two content words with the question, 1 when
      some line does, else 0;
    - answer relevance: the question "How should <response>" (noncommittal when it says "no hint").
    """
    data = ragas_input(body)
    if data is None:
        return None
    keys = set(data)
    if {"question", "answer"} <= keys:
        sentences = [s.strip() for s in re.split(r"(?<=[.!?;])\s+", str(data["answer"])) if s.strip()]
        answer: dict[str, Any] = {"statements": sentences}
    elif {"context", "statements"} <= keys:
        context = str(data["context"])
        answer = {"statements": [
            {"statement": st, "reason": f"{100 * _overlap(st, context):.0f}% of its words are in the context",
             "verdict": int(_overlap(st, context) >= 0.6)} for st in data["statements"]]}
    elif {"user_input", "context"} <= keys:
        question = _words(str(data["user_input"]))
        lines = [line for line in str(data["context"]).splitlines() if line.strip()]
        relevant = sum(len(_words(line) & question) >= 2 for line in lines)
        answer = {"rating": 2 if lines and relevant == len(lines) else 1 if relevant else 0}
    elif "response" in keys:
        response = str(data["response"])
        answer = {"question": f"How should {response.rstrip('.')}?",
                  "noncommittal": int("no hint" in response.lower() or "i don't know" in response.lower())}
    else:
        return None
    return Reply(text="Checked word by word.\n```json\n" + json.dumps(answer) + "\n```")


def with_ragas(responder: Callable[[dict[str, Any]], Reply]) -> Callable[[dict[str, Any]], Reply]:
    """``responder`` that answers ragas' metric prompts with ``ragas_reply`` first."""
    def respond(body: dict[str, Any]) -> Reply:
        return ragas_reply(body) or responder(body)

    return respond


def input_tokens_of(body: dict[str, Any]) -> int:
    return len(text_of(body)) // CHARS_PER_TOKEN


def output_tokens_of(text: str) -> int:
    return max(1, len(text) // CHARS_PER_TOKEN)


class FakeAnthropic:
    """The server. Use as a context manager; ``base_url`` goes to the client."""

    def __init__(self, *, latency_s: float = 0.0, polls_to_end: int = 2,
                 responder: Callable[[dict[str, Any]], Reply] | None = None) -> None:
        self.latency_s = latency_s
        self.polls_to_end = polls_to_end
        self.responder = responder or with_ragas(lambda body: Reply(text="ok"))
        self.script: collections.deque[Reply | Callable[[dict[str, Any]], Reply]] = collections.deque()
        self.counts: collections.Counter[str] = collections.Counter()
        self.requests: list[dict[str, Any]] = []
        self.batches: dict[str, dict[str, Any]] = {}
        self.batch_custom_ids: collections.Counter[str] = collections.Counter()
        """How many times each custom_id was submitted in a batch (paid once each when all are 1)."""
        self._lock = threading.Lock()
        self._release = threading.Event()
        self._ids = itertools.count(1)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self.handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        """The request handler (another API's stand-in overrides this and keeps the rest: tests/fake_openai.py)."""
        return _handler_for(self)

    # -- lifecycle --------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> Any:
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._release.set()
        if self._thread is not None:  # shutdown() waits for serve_forever: only when it runs
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- scripting --------------------------------------------------------------------------
    def push(self, *replies: Reply | Callable[[dict[str, Any]], Reply]) -> None:
        with self._lock:
            self.script.extend(replies)

    def message_calls(self) -> int:
        """Messages answered, whether sent alone or inside a batch."""
        return self.counts["messages"] + self.counts["batch_items"]

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            item = self.script.popleft() if self.script else self.responder
        return item(body) if callable(item) else item

    def _message(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        return {
            "id": f"msg_{next(self._ids):06d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "unknown"),
            "content": [{"type": "text", "text": reply.text}],
            "stop_reason": reply.stop_reason,
            "stop_sequence": None,
            "usage": {
                "input_tokens": input_tokens_of(body),
                "output_tokens": output_tokens_of(reply.text),
                "cache_creation_input_tokens": reply.cache_write,
                "cache_read_input_tokens": reply.cache_read,
            },
        }

    @staticmethod
    def _error_body(reply: Reply) -> dict[str, Any]:
        return {"type": "error", "error": {"type": reply.error_type, "message": reply.error_message}}

    # -- batches ----------------------------------------------------------------------------
    def _batch_view(self, batch: dict[str, Any]) -> dict[str, Any]:
        ended = batch["polls"] >= self.polls_to_end
        n = len(batch["results"])
        succeeded = sum(1 for r in batch["results"] if r["result"]["type"] == "succeeded")
        return {
            "id": batch["id"],
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": {
                "processing": 0 if ended else n,
                "succeeded": succeeded if ended else 0,
                "errored": (n - succeeded) if ended else 0,
                "canceled": 0,
                "expired": 0,
            },
            "created_at": "2025-01-01T00:00:00Z",
            "expires_at": "2025-01-02T00:00:00Z",
            "ended_at": "2025-01-01T01:00:00Z" if ended else None,
            "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": f"{self.base_url}/v1/messages/batches/{batch['id']}/results" if ended else None,
        }

    def _create_batch(self, body: dict[str, Any]) -> dict[str, Any]:
        results = []
        for item in body["requests"]:
            params = item["params"]
            reply = self._next_reply(params)
            with self._lock:
                self.counts["batch_items"] += 1
                self.batch_custom_ids[item["custom_id"]] += 1
            if reply.status == 200:
                result = {"type": "succeeded", "message": self._message(params, reply)}
            else:
                result = {"type": "errored", "error": self._error_body(reply)}
            results.append({"custom_id": item["custom_id"], "result": result})
        batch = {"id": f"msgbatch_{next(self._ids):06d}", "polls": 0, "results": results}
        with self._lock:
            self.batches[batch["id"]] = batch
        return self._batch_view(batch)


def _handler_for(server: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body are separate writes: avoid 40 ms delayed-ACK stalls

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
            return

        def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None,
                  content_type: str = "application/json", cut: int | None = None) -> None:
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", content_type)
            if cut is None:
                self.send_header("content-length", str(len(data)))
            self.send_header("request-id", f"req_{next(server._ids):06d}")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data if cut is None else data[:cut])

        def _log(self, endpoint: str, body: Any) -> None:
            with server._lock:
                server.counts[endpoint] += 1
                server.requests.append({"endpoint": endpoint, "method": self.command, "path": self.path,
                                        "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})

        def do_POST(self) -> None:  # noqa: N802 - http.server API
            length = int(self.headers.get("content-length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            path = self.path.split("?")[0]
            if path == "/v1/messages":
                self._log("messages", body)
                reply = server._next_reply(body)
                if reply.hang:
                    server._release.wait()
                    return
                if server.latency_s or reply.delay_s:
                    time.sleep(server.latency_s + reply.delay_s)
                if reply.raw is not None:
                    self._send(reply.status, reply.raw, reply.headers, content_type=reply.content_type)
                    return
                if reply.status != 200:
                    self._send(reply.status, server._error_body(reply), reply.headers)
                    return
                if reply.truncate:
                    data = json.dumps(server._message(body, reply)).encode()
                    self._send(200, data, {**reply.headers, "content-length": str(len(data))}, cut=len(data) // 2)
                    self.close_connection = True
                    return
                self._send(200, server._message(body, reply), reply.headers)
            elif path == "/v1/messages/count_tokens":
                self._log("count_tokens", body)
                self._send(200, {"input_tokens": input_tokens_of(body)})
            elif path == "/v1/messages/batches":
                self._log("batch_create", body)
                self._send(200, server._create_batch(body))
            else:
                self._send(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})

        def do_GET(self) -> None:  # noqa: N802 - http.server API
            parts = self.path.split("?")[0].strip("/").split("/")
            batch = server.batches.get(parts[3]) if len(parts) >= 4 and parts[:3] == ["v1", "messages", "batches"] else None
            if batch is None:
                self._log("not_found", None)
                self._send(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})
            elif len(parts) == 4:
                self._log("batch_retrieve", None)
                with server._lock:
                    batch["polls"] += 1
                self._send(200, server._batch_view(batch))
            elif len(parts) == 5 and parts[4] == "results":
                self._log("batch_results", None)
                lines = "".join(json.dumps(r) + "\n" for r in batch["results"]).encode()
                self._send(200, lines, content_type="application/binary")
            else:
                self._send(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})

    return Handler
