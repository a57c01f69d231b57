"""Does the Docker daemon answer? Asked once when a run starts (evalkit.isolation), without docker-py."""

from __future__ import annotations

from typing import TYPE_CHECKING

import os
import socket

from evalkit.lazy_modules import later
from evalkit.sandbox import silence

if TYPE_CHECKING:  # the real modules, for the type checkers
    from evalkit.sandbox import dockerclient as dockerclient_code
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    dockerclient_code = later("evalkit.sandbox.dockerclient")


def daemon_answers(timeout: float = silence.ANSWER_S) -> bool:
    """Whether the Docker daemon of $DOCKER_HOST answers ``GET /_ping`` within ``timeout`` seconds: plain HTTP on
    its socket, so that a run's start (a no-op run included) does not pay for importing docker-py; TLS and ssh
    hosts ask docker-py. The answer, or its absence, is recorded for this process's later calls
    (evalkit.sandbox.silence)."""
    host = silence.docker_host()
    if os.environ.get("DOCKER_TLS_VERIFY") or not host.startswith(("unix://", "tcp://")):
        return dockerclient_code.docker_available(again=True)
    try:
        if host.startswith("unix://"):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            sock.connect(host[len("unix://"):])
        else:
            hostport = host[len("tcp://"):].split("/", 1)[0]
            name, _, port = hostport.rpartition(":")
            sock = socket.create_connection((name or hostport, int(port or 2375)), timeout=timeout)
        with sock:
            sock.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            reply = b""
            while len(reply) < 4096:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                reply += chunk
    except TimeoutError:
        silence.note_silent()
        return False
    except (OSError, ValueError):
        return False
    status = reply.split(b"\r\n", 1)[0].split()
    answered = len(status) >= 2 and status[1] == b"200"
    if answered:
        silence.note_answered()
    return answered
