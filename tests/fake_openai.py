"""A loopback OpenAI-compatible Chat Completions server for tests (real HTTP on 127.0.0.1, port 0).

``POST /v1/chat/completions`` answers from ``script`` (a queue of ``Reply`` objects or callables
``(body) -> Reply``), then from ``responder``. It records every request (body, headers, the bearer
key and the monotonic time it arrived) so tests can check what was sent, with which key and when.
Keys in ``refused_keys`` get 401. Usage counts are deterministic (characters // 4); ``cached_tokens``
is reported as ``prompt_tokens_details.cached_tokens`` when set.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from fake_server import CHARS_PER_TOKEN, FakeAnthropic, Reply

STOP = {"end_turn": "stop", "max_tokens": "length"}


def windows(times: list[float], width: float) -> int:
    """The most requests in any window of ``width`` seconds (``times``: when each arrived)."""
    times = sorted(times)
    return max(sum(1 for u in times[i:] if u - t < width) for i, t in enumerate(times))


def prompt_text(body: dict[str, Any]) -> str:
    return "".join(str(m.get("content", "")) for m in body.get("messages", []))


class FakeOpenAI(FakeAnthropic):
    """The server; a context manager. ``base_url`` (with /v1) goes to the settings. Scripting, the request
    log and the lifecycle are FakeAnthropic's; only the routes and the bodies differ."""

    def __init__(self, *, responder: Callable[[dict[str, Any]], Reply] | None = None, model: str | None = None,
                 cached_tokens: int = 0, latency_s: float = 0.0) -> None:
        super().__init__(latency_s=latency_s, responder=responder or (lambda body: Reply(text="ok")))
        self.model = model
        """Model id to report (default: the requested one)."""
        self.cached_tokens = cached_tokens
        self.refused_keys: set[str] = set()

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _handler_for(self)

    @property
    def base_url(self) -> str:
        return super().base_url + "/v1"

    @property
    def calls(self) -> int:
        return len(self.requests)

    def keys_used(self) -> list[str]:
        return [r["key"] for r in self.requests]

    def completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        prompt = len(prompt_text(body)) // CHARS_PER_TOKEN
        usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": max(1, len(reply.text) // CHARS_PER_TOKEN)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if self.cached_tokens:
            usage["prompt_tokens_details"] = {"cached_tokens": min(self.cached_tokens, prompt)}
        return {"id": f"chatcmpl-{next(self._ids)}", "object": "chat.completion", "created": 0,
                "model": self.model or body.get("model", "unknown"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.text},
                             "finish_reason": STOP.get(reply.stop_reason, reply.stop_reason)}],
                "usage": usage}


def _handler_for(server: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
            return

        def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None,
                  content_type: str = "application/json") -> None:
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            try:
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                self.close_connection = True

        def do_POST(self) -> None:  # noqa: N802 - http.server API
            arrived = time.monotonic()
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
            auth = self.headers.get("authorization", "")
            key = auth.removeprefix("Bearer ")
            with server._lock:
                server.requests.append({"path": self.path, "body": body, "key": key, "at": arrived,
                                        "headers": {k.lower(): v for k, v in self.headers.items()}})
            if self.path != "/v1/chat/completions":
                self._send(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
                return
            if key in server.refused_keys:
                self._send(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                           "code": "invalid_api_key"}})
                return
            reply = server._next_reply(body)
            if server.latency_s or reply.delay_s:
                time.sleep(server.latency_s + reply.delay_s)
            if reply.raw is not None:
                self._send(reply.status, reply.raw, reply.headers, content_type=reply.content_type)
            elif reply.status != 200:
                self._send(reply.status, {"error": {"message": reply.error_message, "type": reply.error_type}},
                           reply.headers)
            else:
                self._send(200, server.completion(body, reply), reply.headers)

    return Handler
