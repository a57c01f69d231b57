"""Loopback stand-ins for a Docker daemon in trouble: one that fails (a real HTTP server on 127.0.0.1, port 0, that
answers ``/_ping`` and ``/version`` as a daemon does, then HTTP 500 to every other request, so docker-py sees a daemon
that answers and then fails: a full disk, a broken storage driver), one that is hung (accepts, never answers) and one
that hangs after its ping."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FAILURE = "scripted daemon failure"
"""The message of every failed answer (docker-py puts it in its exception)."""


class FailingDaemon(BaseHTTPRequestHandler):
    """Answers its ping and version, then fails every other request (HTTP 500)."""

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if path.endswith("/_ping"):
            body, kind = b"OK", "text/plain"
        elif path.endswith("/version"):
            body, kind = json.dumps({"ApiVersion": "1.43", "Version": "24.0.0"}).encode(), "application/json"
        else:
            self.send_response(500)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(json.dumps({"message": FAILURE}).encode())
            return
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_DELETE = do_GET

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def failing_daemon() -> Iterator[str]:
    """A failing daemon for the duration: its ``DOCKER_HOST`` (tcp://127.0.0.1:PORT)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), FailingDaemon)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"tcp://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class StallingDaemon(FailingDaemon):
    """Answers its ping and version, then holds every other request without an answer until the server stops."""

    stop = threading.Event()

    def do_GET(self) -> None:
        if self.path.split("?")[0].endswith(("/_ping", "/version")):
            super().do_GET()
        else:
            self.stop.wait()

    do_POST = do_DELETE = do_GET


@contextmanager
def stalling_daemon() -> Iterator[str]:
    """A daemon that answers its ping and API version, then hangs (a daemon that hung mid-run): its ``DOCKER_HOST``."""
    handler = type("Stalling", (StallingDaemon,), {"stop": threading.Event()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"tcp://127.0.0.1:{server.server_address[1]}"
    finally:
        handler.stop.set()
        server.shutdown()
        server.server_close()


class SilentServer:
    """A running `silent_server`: its address and the connections it accepted so far."""

    def __init__(self, host: str, held: list[socket.socket]) -> None:
        self.host = host
        self._held = held

    @property
    def connections(self) -> int:
        """Connections accepted so far (a client that sent nothing made none)."""
        return len(self._held)


@contextmanager
def silent_server() -> Iterator[SilentServer]:
    """A server that is hung for the duration (a Docker daemon, a git host): a real socket on 127.0.0.1 (port 0) that
    accepts every connection and never answers (the kernel completes the handshake; nothing is read or written).
    Its ``host`` is the address as a ``DOCKER_HOST`` (``tcp://127.0.0.1:PORT``)."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=128)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:  # closed: the context ended
                return
            held.append(conn)  # kept open, never read: the client waits for an answer that does not come

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield SilentServer(f"tcp://127.0.0.1:{listener.getsockname()[1]}", held)
    finally:
        stop.set()
        listener.close()
        for conn in held:
            conn.close()
